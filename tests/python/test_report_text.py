"""``str(FileReport)`` is the Rust report's text: ``_native.report_text``
reads a :class:`bytelens.FileReport` (one ``bl.inspect`` made, or one built
by hand: it is a public dataclass) into a ``bytelens::files::Report`` and
returns its ``Display``. Each report here is compared with a copy of the
Python ``FileReport.__str__`` (and its ``_value_text``) that the binding
replaced, kept below as the reference: every kind of metadata value (GGUF
arrays of each numeric type, floats, bools, negative and big integers,
long strings with control characters, lists of strings, values of no such
kind), arrays with a shard, a compressed member, a copy, a ggml type, a
span or no dtype, no arrays, a version, paths with surrogates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import bytelens as bl
from bytelens import _native
from bytelens._files._report import COMPRESSED, ArrayInfo, _printable, _short

# --- the reference: FileReport.__str__ as the Python package wrote it ---------


def value_text_reference(value: Any) -> str:
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, list):  # GGUF strings
        head = ", ".join(f"'{_short(v, 16)}'" for v in value[:3])
        more = ", ..." if len(value) > 3 else ""
        return f"{len(value):,} strings [{head}{more}]"
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # a numpy array
        head = ", ".join(str(v) for v in value[:4])  # numpy's shortest text of each
        more = ", ..." if len(value) > 4 else ""
        return f"{len(value):,} {value.dtype.name} [{head}{more}]"
    return _short(str(value))


def text_reference(self: bl.FileReport) -> str:
    version = f" {self.version[0]}.{self.version[1]}" if self.version else ""
    count = f"{len(self.arrays)} array" + ("" if len(self.arrays) == 1 else "s")
    lines = [f"{_printable(self.path)}: {self.format}{version}, {self.size:,} bytes, {count}"]
    for key, value in self.metadata.items():
        lines.append(f"  metadata {_short(key, 40)}: {value_text_reference(value)}")
    if not self.arrays:
        return "\n".join(lines)
    sharded = any(a.shard is not None for a in self.arrays)
    rows = [("name", "dtype", "shape") + (("shard",) if sharded else ()) + ("bytes", "align", "load")]
    for a in self.arrays:
        align = "any" if a.offset == 0 else str(min(a.alignment, 1 << 20))
        span = f"{a.start}..{a.end}"
        if a.copy == COMPRESSED:  # the range is in the decompressed member
            span, align = f"{span} of {_short(a.member or '', 40)}", "-"
        if a.unavailable is not None:
            how = f"none: {_printable(a.unavailable)}"
        elif a.ggml is not None:
            how = f"{a.blocks:,} blocks, dequantised on access"
        else:
            how = "view" if a.copy is None else f"copy: {_printable(a.copy)}"
        rows.append(
            (
                _short(a.name, 40),
                _short(a.dtype, 24),
                "(" + ", ".join(map(str, a.shape)) + ("," if len(a.shape) == 1 else "") + ")",
            )
            + ((_short(a.shard or "", 40),) if sharded else ())
            + (span, align, how)
        )
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        lines.append("  " + "  ".join(cells + [row[last]]).rstrip())
    return "\n".join(lines)


def check(report: bl.FileReport) -> str:
    expected = text_reference(report)
    assert _native.report_text(report) == expected
    assert str(report) == expected
    return expected


# --- metadata -----------------------------------------------------------------

#: GGUF's numeric array types, as numpy names them.
GGUF_NUMBERS = ["<u1", "<i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f4", "<f8"]

#: Characters a file's text may hold that a terminal must not see as they are.
CHOSEN = ["a", " ", "'", '"', "\\", "\0", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "é", "\u202e", "日",
          "\U0001f600", "\ufeff"]  # fmt: skip
text = st.lists(st.one_of(st.sampled_from(CHOSEN), st.characters(codec="utf-8")), max_size=90).map("".join)

special_floats = st.sampled_from(
    [0.1, 1e-7, 1e-5, 1e-4, 1e16, 1e15, 1.5e300, -0.0, 0.0, math.nan, math.inf, -math.inf, 3.0, 2.5e-308,
     5e-324, 1 / 3, 123456789.0, 1e22, float(2**53)]
)  # fmt: skip
floats = st.one_of(special_floats, st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def gguf_arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(GGUF_NUMBERS + ["?"])))
    count = draw(st.integers(0, 7))
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # float32 rounds big float64 to inf
            data = np.array(draw(st.lists(floats, min_size=count, max_size=count)), "<f8").astype(dtype)
        if dtype.itemsize == 4:  # where numpy's versions differ: test_float32s_as_numpy_1_writes_them
            data[(abs(data) >= 1e6) & (abs(data) < 1e16)] = 0.5
    elif dtype.kind == "b":
        data = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype)
    else:
        info = np.iinfo(dtype)
        ints = st.one_of(st.sampled_from([int(info.min), int(info.max), 0, -1 if info.min else 1]),
                         st.integers(int(info.min), int(info.max)))  # fmt: skip
        data = np.array(draw(st.lists(ints, min_size=count, max_size=count)), dtype)
    if draw(st.booleans()):  # as bl.inspect hands them out: read-only
        data.flags.writeable = False
    return data


scalars = st.one_of(
    text,
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([0, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**70, -(10**70)]),
    floats,
    st.lists(text, max_size=5),
    gguf_arrays(),
)

# --- arrays -------------------------------------------------------------------

GGML = ["Q4_K", "Q8_0", "q4_0", "TQ2_0", "IQ4_XS", "F16"]


@st.composite
def array_infos(draw: st.DrawFn, sharded: bool) -> ArrayInfo:
    u64 = st.one_of(st.sampled_from([0, 1, 7, 64, 4096, 1 << 20, 3 << 20, 1 << 40, 2**63, 2**64 - 1]),
                    st.integers(0, 2**64 - 1))  # fmt: skip
    shape = tuple(draw(st.lists(st.integers(0, 2**40), max_size=4)))
    offset = draw(u64)
    kind = draw(st.sampled_from(["view", "copy", "compressed", "none", "ggml"]))
    copy = member = unavailable = ggml = None
    dtype, descr = draw(st.sampled_from([("<f4", "<f4"), ("BF16", "<bf16"), ("|b1", "|b1"), ("C64", None)]))
    if kind == "copy":
        copy = draw(text)
    elif kind == "compressed":
        copy, member = COMPRESSED, draw(text)
    elif kind == "none":
        unavailable = draw(text)
    elif kind == "ggml":
        ggml = draw(st.sampled_from(GGML))
        dtype, descr = ggml.upper(), None
    if draw(st.booleans()):
        dtype = draw(text)
    nbytes = draw(st.integers(0, 2**64 - 1 - offset))  # a file ends before 2**64
    span = None
    if draw(st.booleans()):
        start = draw(st.integers(0, 2**63))
        span = (start, start + draw(st.integers(0, 2**62)))
    strides = None if descr is None else tuple(draw(st.lists(st.integers(-(2**40), 2**40), max_size=4)))
    return ArrayInfo(
        name=draw(text),
        dtype=dtype,
        descr=descr,
        shape=shape,
        strides=strides,
        offset=offset,
        nbytes=nbytes,
        copy=copy,
        member=member,
        span=span,
        unavailable=unavailable,
        shard=draw(st.one_of(st.none(), text)) if sharded else None,
        ggml=ggml,
    )


FORMATS = ["npy", "npz", "safetensors", "gguf", "safetensors index", "raw"]


@st.composite
def reports(draw: st.DrawFn) -> bl.FileReport:
    sharded = draw(st.booleans())
    return bl.FileReport(
        path=draw(st.one_of(text, st.sampled_from(["a\udcff.npy", "\ud800", "x/\x1b[2J\n.gguf"]))),
        format=draw(st.sampled_from(FORMATS)),
        size=draw(st.integers(0, 2**64 - 1)),
        arrays=draw(st.lists(array_infos(sharded), max_size=5)),
        metadata=draw(st.dictionaries(text, scalars, max_size=6)),
        version=draw(st.one_of(st.none(), st.tuples(st.integers(0, 255), st.integers(0, 255)))),
    )


def empty(**fields: Any) -> bl.FileReport:
    return bl.FileReport(**{"path": "f.gguf", "format": "gguf", "size": 1234567, "arrays": [], **fields})


# --- the tests ----------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(reports())
def test_a_report_by_hand_is_the_text_python_wrote(report):
    check(report)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(text, scalars, min_size=1, max_size=4))
@example({"a": np.array([0.1, 1e-7, math.nan, math.inf, -math.inf, -0.0], "<f4")})
@example({"a": np.array([0.1, 1e-7, 1e16, 1e-5, 1e300], "<f8")})
@example({"b": np.array([True, False, True, True, False], "?")})
@example({"n": -5, "big": 2**64 - 1, "bigger": 2**64, "f": 0.1, "t": True, "s": "\x1b]0;x\x07" * 20})
@example({"v": ["a" * 30, "b\n", "", "d"], "w": []})
def test_every_kind_of_metadata_value(metadata):
    check(empty(metadata=metadata))


def test_each_numeric_gguf_array_type():
    for dtype in GGUF_NUMBERS:
        name = np.dtype(dtype).name
        head = "0.0, 1.0, 2.0, 3.0" if "f" in dtype else "0, 1, 2, 3"
        text = check(empty(metadata={"k": np.arange(5).astype(dtype)}))
        assert text.splitlines()[1] == f"  metadata k: 5 {name} [{head}, ...]"


def test_float32s_as_numpy_1_writes_them():
    # numpy 2.3 and later write a float32 from 1e6 up in scientific
    # (1.2345679e+08), numpy 1 positional up to 1e16, as Python's repr does a
    # float: the text is numpy 1's whichever numpy is installed. Both write
    # the float32 nearest 1e-4, which lies below it, in scientific.
    values = np.array([123456790.0, 1e6, 9.999999e15, 1e16, 1e-4, 0.00010001, -0.0, np.nan, -np.inf], "<f4")
    line = _native.report_text(empty(metadata={"k": values})).splitlines()[1]
    assert line == "  metadata k: 9 float32 [123456790.0, 1000000.0, 9999999000000000.0, 1e+16, ...]"
    line = _native.report_text(empty(metadata={"k": values[4:]})).splitlines()[1]
    assert line == "  metadata k: 5 float32 [1e-04, 0.00010001, -0.0, nan, ...]"


@pytest.mark.parametrize(
    "value, as_gguf",
    [
        (None, False),
        ((1, 2), False),
        ({"a": 1}, False),
        (b"bytes\x1b", False),
        (1 + 2j, False),
        ([1, 2], False),  # not strings
        (["a", 2], False),
        (np.array([1, 2], "<f2"), False),  # a dtype GGUF lacks
        (np.array([[1, 2], [3, 4]], "<i4"), False),  # not one axis
        (np.array(["a"]), False),
        (np.float64(0.5), False),
        (np.int64(-3), False),
        (np.bool_(True), False),
        (np.array([1, 2, 300], ">i4"), True),  # big-endian
        (np.arange(9, dtype="<i8")[::2], True),  # strided
        (np.array([0.1, 2.0], ">f4"), True),
    ],
)
def test_values_of_no_gguf_kind_are_their_str(value, as_gguf):
    # The reference raises for a list of other things than strings and for
    # numpy's scalars; it shows numpy arrays of other types or shapes by
    # their first items. A Rust report holds them as their str().
    expected = value_text_reference(value) if as_gguf else _short(str(value))
    text = _native.report_text(empty(metadata={"k": value}))
    assert text.splitlines()[1] == "  metadata k: " + expected


def test_no_arrays_and_a_version():
    assert check(empty(version=(3, 0))) == "f.gguf: gguf 3.0, 1,234,567 bytes, 0 arrays"
    assert check(empty(path="a\udcff\n", version=None)) == "a\\udcff\\n: gguf, 1,234,567 bytes, 0 arrays"


def test_every_kind_of_array():
    arrays = [
        ArrayInfo("v", "<f4", "<f4", (2, 3), (12, 4), 128, 24),
        ArrayInfo("c", "<f8", "<f8", (3,), (8,), 4, 24, copy="misaligned; read-only under r+"),
        ArrayInfo("z", "<i8", "<i8", (), (), 0, 8, copy=COMPRESSED, member="z\x1b.npy"),
        ArrayInfo("n", "C64", None, (2,), None, 64, 16, unavailable="bytelens has no dtype C64\n"),
        ArrayInfo("q", "Q4_K", None, (256, 4), None, 1 << 21, 4 * 144, ggml="Q4_K"),
        ArrayInfo("s", "<u1", "|u1", (5,), (-1,), 100, 5, span=(96, 101)),
    ]
    text = check(bl.FileReport("m.npz", "npz", 10**6, arrays, version=(1, 0)))
    assert "4 blocks, dequantised on access" in text and "0..8 of z\\x1b.npy  -" in text
    sharded = [ArrayInfo("a", "F32", "<f4", (1,), (4,), 8, 4, shard="model-00001.safetensors")] + arrays
    text = check(bl.FileReport("i.json", "safetensors index", 5, sharded, metadata={"total_size": 4}))
    assert text.splitlines()[2].split() == ["name", "dtype", "shape", "shard", "bytes", "align", "load"]


def test_the_report_of_a_file(tmp_path):
    path = tmp_path / "x.safetensors"
    bl.save(path, {"w": np.ones((2, 2), "<f4"), "b": np.arange(3, dtype="<i8")}, metadata={"k": "v\n"})
    report = bl.inspect(path)
    assert check(report) == _native.inspect_file(path)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("path", 3, "path"),
        ("format", None, "format"),
        ("size", -1, "size"),
        ("size", "3", "size"),
        ("version", (1,), "version"),
        ("version", (1, 256), "version"),
        ("arrays", [object()], "arrays"),
        ("metadata", [("a", 1)], "metadata"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(field, value, message):
    report = empty(**{field: value})
    with pytest.raises(TypeError, match=message):
        _native.report_text(report)


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", 3),
        ("dtype", None),
        ("descr", 4),
        ("shape", (1, -1)),
        ("shape", "ab"),
        ("strides", [1.5]),
        ("offset", -1),
        ("nbytes", None),
        ("copy", 1),
        ("member", b"m"),
        ("span", (1,)),
        ("unavailable", 0),
        ("shard", 0),
        ("ggml", 5),
    ],
)
def test_an_array_field_of_the_wrong_type_is_named(field, value):
    fields = {"name": "a", "dtype": "<f4", "descr": "<f4", "shape": (1,), "strides": (4,), "offset": 0, "nbytes": 4}
    array = ArrayInfo(**{**fields, field: value})
    with pytest.raises(TypeError, match=rf"\barrays\[0\]\.{field}\b"):
        _native.report_text(empty(arrays=[array]))


@pytest.mark.parametrize("field, value", [("ggml", "Q9_Z"), ("descr", "<x7"), ("nbytes", 2**63)])
def test_an_array_field_a_report_cannot_hold_is_named(field, value):
    fields = {"name": "a", "dtype": "<f4", "descr": "<f4", "shape": (1,), "strides": (4,), "offset": 2**63, "nbytes": 4}
    array = ArrayInfo(**{**fields, field: value})
    with pytest.raises(ValueError, match=rf"\barrays\[0\]\.{field}\b"):
        _native.report_text(empty(arrays=[array]))


def test_a_lone_surrogate_in_text_but_the_path_is_u_fffd():
    # A Rust string cannot hold one: the Python report showed \udcff. Only a
    # report built by hand has them (bl.inspect's come from the Rust layer),
    # but for its path, which is the caller's own.
    array = ArrayInfo("n\udcff", "<f4", "<f4", (1,), (4,), 0, 4, copy="c\ud800")
    report = bl.FileReport("p\udcff", "npy", 4, [array], metadata={"k\udcff": ["s\udcff", "\ud83d\ude00"]})
    lines = _native.report_text(report).splitlines()
    assert lines[0] == "p\\udcff: npy, 4 bytes, 1 array"
    assert lines[1] == "  metadata k\\ufffd: 2 strings ['s\\ufffd', '\\U0001f600']"
    # printable keeps U+FFFD as it is
    assert lines[3].split() == ["n\\ufffd", "<f4", "(1,)", "0..4", "any", "copy:", "c\ufffd"]
