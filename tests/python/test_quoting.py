"""The core's one quoting helper through ``_native.quoted(text, keep, style)``
writes what the Python package's own helpers write, so that they can become
calls to it:

- ``_short(text, keep)``   == ``_native.quoted(text, keep, "py_short")``
- ``_printable(text)``     == ``_native.quoted(text, 0, "py_printable")``
- ``_quote(text, keep)``   == ``_native.quoted(text, keep, "py_quote")``
- ``repr(_short(text, keep))`` == ``_native.quoted(text, keep, "py_short_repr")``
- ``repr(text)`` (of text Python and the core both know unprintable or not)
  == ``_native.quoted(text, 0, "py_repr")``

over many strings: controls, quotes, backslashes, multibyte and astral
characters, format characters, private use, noncharacters, and the lone
surrogates ``os.fsdecode`` makes of bytes that are not UTF-8. Each is
compared with the package's function and with a copy of it kept here, so
the proof stands when the package's functions call ``_native.quoted``.
"""

import unicodedata

import pytest
from hypothesis import example, given, strategies as st

from bytelens import _native
from bytelens._files._raw import _quote
from bytelens._files._report import _printable, _short


def short_reference(text: str, keep: int = 64) -> str:
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= keep else text[:keep] + "..."


UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def printable_reference(text: str) -> str:
    return "".join(
        char.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(char) in UNPRINTABLE
        else char
        for char in text
    )


def quote_reference(text: str, keep: int = 40) -> str:
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii").replace("'", "\\'")
    return "'" + (text if len(text) <= keep else text[:keep] + "...") + "'"


#: Characters each style treats specially, surrogates included.
CHOSEN = [
    "a", " ", "'", '"', "\\", "\0", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\xa0",
    "é", "\xad", "\u0600", "\u200b", "\u202e", "\u2028", "\u2029", "\ufeff", "\ue000",
    "\ufdd0", "\ufffe", "\uffff", "日", "\U0001f600", "\U000e0001", "\U000f0000",
    "\U0010ffff", "\ud800", "\udbff", "\udc80", "\udcff", "\ud83d", "\ude00",
]  # fmt: skip

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
any_char = st.characters(codec=None, exclude_categories=())
text = st.lists(st.one_of(st.sampled_from(CHOSEN), surrogates, any_char), max_size=60).map("".join)

#: Characters whose category the core decides as Python does: every
#: assigned one (the core has no Unicode database for the unassigned, Cn,
#: which it knows by the noncharacters and the empty planes).
def known(char: str) -> bool:
    n = ord(char)
    if unicodedata.category(char) != "Cn":
        return True
    return n & 0xFFFE == 0xFFFE or 0xFDD0 <= n <= 0xFDEF or 0x40000 <= n <= 0xDFFFF


known_text = st.lists(
    st.one_of(st.sampled_from(CHOSEN), surrogates, any_char.filter(known)), max_size=60
).map("".join)

keeps = st.integers(0, 80)


@given(text, keeps)
@example("\x1b[2J" * 30, 64)
@example("ab\U0001f600", 5)
@example("a\udc80b", 64)
def test_py_short_is_short(text, keep):
    got = _native.quoted(text, keep, "py_short")
    assert got == short_reference(text, keep)
    assert got == _short(text, keep)
    assert _native.quoted(text, keep, "py_short_repr") == repr(_short(text, keep))


@given(text, keeps)
@example("it's", 3)
@example("'" * 50, 40)
def test_py_quote_is_quote(text, keep):
    got = _native.quoted(text, keep, "py_quote")
    assert got == quote_reference(text, keep)
    assert got == _quote(text, keep)


@given(known_text)
@example("caf\xe9\u202e\n\udc80")
@example("\U00050000\ufdd0\ue000\u2028")
def test_py_printable_is_printable(text):
    got = _native.quoted(text, 0, "py_printable")
    assert got == printable_reference(text)
    assert got == _printable(text)


def test_py_printable_knows_every_assigned_character():
    # Every code point this Python's Unicode database assigns, and the
    # unassigned ones the core knows, in one string.
    every = "".join(chr(n) for n in range(0x110000) if known(chr(n)))
    got = _native.quoted(every, 0, "py_printable")
    assert got == printable_reference(every)
    assert got == _printable(every)


@given(st.lists(st.one_of(st.sampled_from(CHOSEN), st.characters(codec="ascii")), max_size=40).map("".join))
def test_py_repr_is_repr_where_both_agree(text):
    # The core's repr keeps U+00A0 (category Zs), which Python escapes, and
    # writes U+00AD as \u00ad, which Python writes \xad: outside those two,
    # it is repr.
    if any(c in text for c in "\xa0\xad"):
        return
    assert _native.quoted(text, 0, "py_repr") == repr(text)


def test_rust_styles():
    assert _native.quoted("x\x1b[2J", 64, "name") == '"x\\u{1b}[2J"'
    assert _native.quoted("ab\x1b", 5, "header") == '"ab\\u{"…'
    assert _native.quoted("é" * 70, 64, "argument") == '"' + "é" * 64 + '"... (70 characters)'
    assert _native.quoted("a\udc80", 64, "name") == '"a\\u{dc80}"'
    assert _native.quoted("x" * 70, 64, "name") == '"' + "x" * 64 + '"... (70 bytes)'


def test_a_style_it_lacks_is_refused():
    with pytest.raises(ValueError, match='no quoting style "short"; the styles are name, header'):
        _native.quoted("x", 1, "short")
    with pytest.raises(OverflowError):
        _native.quoted("x", -1, "py_short")
