"""Plans past WGSL's 32-bit limits and plan text with characters that
look like spaces, through the Python binding (issue 20, items 12 and 14):
the core's errors, with their numbers."""

import pytest

import bytelens as bl


def test_wgsl_refuses_counts_past_32_bits_naming_the_count():
    plan = bl.Plan("Big").struct(x=("<f4", (2**33,)))
    with pytest.raises(bl.LayoutError, match="has an axis of 8589934592; WGSL's limit is 4294967295"):
        plan.wgsl()


def test_wgsl_refuses_ends_past_32_bits():
    plan = bl.Plan("Far").struct(a="<u4", b=("<u4", (), 2**40))
    with pytest.raises(bl.LayoutError, match=f"has its end at byte {2**40 + 4}; WGSL's limit is 4294967295"):
        plan.wgsl()
    wide = bl.Plan("Wide").struct(y=("<f4", (2**16, 2**16)))
    with pytest.raises(bl.LayoutError, match="its end at byte 17179869184"):
        wide.wgsl()
    assert "array<u32, 1073741823>" in bl.Plan("Edge").struct(z=("<u4", (2**30 - 1,))).wgsl()


@pytest.mark.parametrize(("line", "char", "at"), [("x\u00a0<f4 4", "\\u{a0}", 1), ("x <f4 4\u200b", "\\u{200b}", 7)])
def test_plan_text_names_an_invisible_character(line, char, at):
    with pytest.raises(ValueError) as caught:
        bl.Plan.from_text("P\n" + line)
    assert f"has {char} at byte {at}; plan text is ASCII" in str(caught.value)
