"""Where two NaNs meet in a dequantised value (issue 40, item 9): a Q4_1 or
Q5_1 block whose scale `d` and minimum `m` are both NaN. gguf-py computes
`d * q + m` in numpy, whose loop keeps its first operand's NaN (the
scale's) for two blocks or more; bytelens gave the minimum's for 4 of
Q5_1's 32 values (the compiler had put `m` first). For a single block
numpy's loop keeps `m`'s instead: that one case differs, as the core's
dequant module says."""

import numpy as np
import pytest

import bytelens as bl

gguf = pytest.importorskip("gguf")
from gguf.quants import dequantize  # noqa: E402


def nan_blocks(rng, n, size):
    """`n` random blocks of `size` bytes whose first two float16s are
    random NaNs (either sign, quiet or signalling)."""
    blocks = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for at in (0, 2):
        payload = rng.integers(1, 1 << 10, size=n, dtype=np.uint16)
        sign = rng.integers(0, 2, size=n, dtype=np.uint16) << 15
        blocks[:, at : at + 2] = (sign | 0x7C00 | payload).astype("<u2").view(np.uint8).reshape(n, 2)
    return blocks


@pytest.mark.parametrize(("qtype", "size"), [("Q4_1", 20), ("Q5_1", 24)])
def test_two_nans_give_the_scales_nan_as_gguf_py_does(qtype, size):
    blocks = nan_blocks(np.random.default_rng(40), 64, size)
    with np.errstate(all="ignore"):
        expected = dequantize(blocks.reshape(-1), gguf.GGMLQuantizationType[qtype]).reshape(-1)
    got = bl.Quantized.from_blocks(qtype, blocks.reshape(-1), (64 * 32,)).dequantize().reshape(-1)
    differ = np.flatnonzero(got.view(np.uint32) != expected.view(np.uint32))
    assert differ.size == 0, f"{differ.size} of {got.size} differ, the first at {differ[:1]}"
    # The scale's NaN, quieted, its sign kept.
    d = blocks[:, :2].copy().view("<u2").reshape(-1).astype(np.uint32)
    scale = ((d & 0x8000) << 16) | 0x7FC00000 | ((d & 0x3FF) << 13)
    np.testing.assert_array_equal(got.view(np.uint32), np.repeat(scale, 32))
