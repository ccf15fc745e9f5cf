"""Every conformance case in tests/vectors/*.json, run through bl.Layout and buf.view.

Mirrors core/tests/vectors.rs: the bytes go into a bytelens Buffer, the
layout is built with bl.Layout (or, without a shape, as the whole buffer via
buf.view(dtype)), the ops run through Layout's methods, then buf.view(layout)
gives a numpy array whose shape, strides, offset and values (bit-exact for
floats, NaN == NaN) must be the ones numpy computed in generate.py.

Error kinds map to exceptions: Misaligned -> AlignmentError, OutOfBounds ->
BoundsError, every other kind -> LayoutError but neither subclass; ReadOnly
(a write through a broadcast view) -> the array is not writeable.

The Python API has no opt-in for unaligned views, so a case marked
"unaligned" must fail with AlignmentError here (the values are still
checked against numpy reading the same bytes).
"""

import glob
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest

import bytelens as bl
from _support import BF16, address_of, float_bits

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors")


def _load():
    cases = []
    for path in sorted(glob.glob(os.path.join(VECTORS, "*.json"))):
        if path.endswith(("args.json", "stats.json")):  # formats of their own: test_args.py,
            continue  # and the core's and wasm's statistics tests
        with open(path) as f:
            doc = json.load(f)
        for case in doc["cases"]:
            cases.append(pytest.param(case, id=f"{os.path.basename(path)}: {case['name']}"))
    return cases


CASES = _load()


def test_the_vectors_are_there():
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(VECTORS, "*.json")))
    assert files == ["args.json", "dtypes.json", "errors.json", "seeds.json", "stats.json", "strided.json"]
    assert len(CASES) >= 64


class ReadOnlyOutcome(Exception):
    """A write through a view that numpy marks as not writeable."""


def apply(layout, op):
    kind = op["op"]
    if kind == "reinterpret":
        return layout.reinterpret(op["dtype"])
    if kind == "slice":
        return layout.slice(op["axis"], op["start"], op["stop"], op["step"])
    if kind == "index":
        return layout.index(op["axis"], op["index"])
    if kind == "transpose":
        return layout.transpose()
    if kind == "permute":
        return layout.permute(tuple(op["axes"]))
    if kind == "reshape":
        return layout.reshape(tuple(op["shape"]))
    if kind == "broadcast_to":
        return layout.broadcast_to(tuple(op["shape"]))
    raise AssertionError(f"unknown op {kind}")


def build_layout(buf, spec):
    """The case's layout, as generate.py and vectors.rs read it."""
    dtype = spec["dtype"]
    if "shape" not in spec:
        # The whole buffer as 1-D (np.frombuffer): buf.view(dtype) does the
        # divisibility check, then the Layout mirrors the array it gave.
        # (No numpy array is big-endian bfloat16: its twin '>u2' has the same layout.)
        whole = buf.view(">u2" if dtype == ">bfloat16" else dtype)
        layout = bl.Layout(dtype, whole.shape)
        assert layout.strides == whole.strides
        return layout
    strides = spec.get("strides")
    return bl.Layout(dtype, tuple(spec["shape"]), None if strides is None else tuple(strides), spec.get("offset", 0))


def run(case):
    buf = bl.Buffer.from_bytes(bytes.fromhex(case["bytes"]))
    layout = build_layout(buf, case["layout"])
    for op in case.get("ops", []):
        layout = apply(layout, op)
    arr = buf.view(layout)
    if "write" in case:
        if not arr.flags.writeable:
            with pytest.raises(ValueError):
                arr[(0,) * arr.ndim] = 0
            raise ReadOnlyOutcome()
        for ix, v in zip(np.ndindex(arr.shape), case["write"]):
            arr[ix] = float(v) if isinstance(v, str) else v
    return buf, layout, arr


#: The dtypes numpy holds as ml_dtypes' types, by every spelling the dtype
#: table gives them (numpy.dtype() parses none of them with a byte order).
ML_DTYPES = {
    spelling: np.dtype(getattr(ml_dtypes, row["ml_dtypes"]))
    for row in bl.dtypes()
    if row["ml_dtypes"]
    for spelling in row["spellings"]
}


def numpy_dtype(dtype_str):
    """The numpy dtype of a vector's dtype string (ml_dtypes' for theirs)."""
    name = dtype_str.lstrip("<>|=!")
    return ML_DTYPES[name] if name in ML_DTYPES else np.dtype(dtype_str)


def final_dtype(case):
    dtype = case["layout"]["dtype"]
    for op in case.get("ops", []):
        if op["op"] == "reinterpret":
            dtype = op["dtype"]
    return dtype


def same(got, want):
    """vectors.rs' comparison: exact for ints and bools, bit-exact for floats, NaN == NaN."""
    if isinstance(want, bool):
        return isinstance(got, bool) and got == want
    if isinstance(got, int):
        return isinstance(want, (int, str)) and not isinstance(want, bool) and got == int(want)
    if isinstance(want, str):
        return {"nan": math.isnan(got), "inf": got == math.inf, "-inf": got == -math.inf}.get(want, False)
    return float_bits(got) == float_bits(want)


def python_values(arr):
    """The elements in C order as Python bool / int / float (floats widened exactly to float64)."""
    if arr.dtype == np.bool_:
        return [bool(x) for x in arr.ravel(order="C").tolist()]
    if arr.dtype.kind in "iu":
        return [int(x) for x in arr.ravel(order="C").tolist()]
    # float16/32/64, bfloat16 (either byte order) and float8 widen to float64 exactly.
    return [float(x) for x in arr.astype(np.float64).ravel(order="C")]


def expected_exception(kind):
    return {"Misaligned": bl.AlignmentError, "OutOfBounds": bl.BoundsError}.get(kind, bl.LayoutError)


@pytest.mark.parametrize("case", CASES)
def test_vector(case):
    expect = case["expect"]
    kind = expect.get("error")

    if case.get("unaligned"):
        assert kind is None
        with pytest.raises(bl.AlignmentError):
            run(case)
        # numpy reads the same values the vector expects from the unaligned bytes.
        spec = case["layout"]
        arr = np.ndarray(tuple(spec["shape"]), dtype=numpy_dtype(spec["dtype"]), buffer=bytes.fromhex(case["bytes"]),
                         offset=spec.get("offset", 0), strides=spec.get("strides"))
        assert all(same(g, w) for g, w in zip(python_values(arr), expect["values"]))
        return

    if kind == "ReadOnly":
        with pytest.raises(ReadOnlyOutcome):
            run(case)
        return
    if kind is not None:
        cls = expected_exception(kind)
        with pytest.raises(cls) as info:
            run(case)
        if cls is bl.LayoutError:
            assert not isinstance(info.value, (bl.AlignmentError, bl.BoundsError)), (
                f"{kind} must be a plain LayoutError, got {type(info.value).__name__}: {info.value}"
            )
        # The core's error kind travels with the exception, as the vectors spell it.
        assert getattr(info.value, "kind", None) == kind
        return

    if final_dtype(case) == ">bfloat16":
        # No numpy array can be big-endian bfloat16 (test_hostile): the view is
        # refused, and the recipe in the message reads the vector's values.
        with pytest.raises(bl.LayoutError, match="big-endian bfloat16"):
            run(case)
        buf = bl.Buffer.from_bytes(bytes.fromhex(case["bytes"]))
        layout = build_layout(buf, case["layout"])
        for op in case.get("ops", []):
            layout = apply(layout, op)
        arr = buf.view(layout.reinterpret(">u2")).astype("<u2").view(BF16)
        assert list(layout.shape) == expect["shape"]
        assert all(same(g, w) for g, w in zip(python_values(arr), expect["values"], strict=True))
        return

    buf, layout, arr = run(case)
    assert list(arr.shape) == expect["shape"]
    assert list(arr.strides) == expect["strides"]
    assert list(layout.shape) == expect["shape"]
    assert list(layout.strides) == expect["strides"]
    if arr.size:
        assert address_of(arr) - buf.address == expect["offset"]
        assert layout.offset == expect["offset"]
        assert np.shares_memory(arr, np.asarray(memoryview(buf)))
    # The layout still fits, and says so.
    layout.check(buf.nbytes)
    assert layout.c_contiguous == arr.flags.c_contiguous
    assert layout.f_contiguous == arr.flags.f_contiguous
    assert layout.itemsize == arr.dtype.itemsize

    assert arr.dtype == numpy_dtype(final_dtype(case))

    got = python_values(arr)
    want = expect["values"]
    assert len(got) == len(want)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if not same(g, w)]
    assert not bad, f"values differ (index, got, expected): {bad}"
    if "bytes" in expect:
        assert bytes(memoryview(buf)).hex() == expect["bytes"]


@pytest.mark.parametrize("case", [c for c in CASES if "error" not in c.values[0]["expect"]])
def test_vector_layout_check_agrees_with_view(case):
    """Layout.check(nbytes) accepts what buf.view accepts, and refuses a buffer too short for it."""
    buf = bl.Buffer.from_bytes(bytes.fromhex(case["bytes"]))
    layout = build_layout(buf, case["layout"])
    for op in case.get("ops", []):
        layout = apply(layout, op)
    if case.get("unaligned"):
        with pytest.raises(bl.AlignmentError):
            layout.check(buf.nbytes)
    else:
        layout.check(buf.nbytes)
    if math.prod(layout.shape):
        with pytest.raises(bl.BoundsError):
            layout.check(0)
    elif layout.offset:
        with pytest.raises(bl.BoundsError):
            layout.check(layout.offset - 1)
        layout.check(layout.offset)


# --- Layout on its own ------------------------------------------------------------


def test_layout_properties():
    m = bl.Layout("<i4", (3, 4))
    assert m.dtype == "<i4"
    assert m.shape == (3, 4) and m.strides == (16, 4) and m.offset == 0 and m.itemsize == 4
    assert m.c_contiguous and not m.f_contiguous
    t = m.transpose()
    assert t.shape == (4, 3) and t.strides == (4, 16)
    assert t.f_contiguous and not t.c_contiguous
    assert m.shape == (3, 4)  # the original is unchanged
    assert bl.Layout(">f2", (2,)).dtype == ">f2"
    assert bl.Layout("uint8", (2,)).dtype == "|u1"
    assert bl.Layout(np.float64, (2,)).dtype == "<f8"
    assert bl.Layout("float32", (2,), offset=8).offset == 8
    assert bl.Layout("<u2", (3,), (-2,), 4).strides == (-2,)


def test_layout_ops_match_numpy():
    data = bytearray(range(48))
    base = np.ndarray((3, 4), dtype="<u4", buffer=data)
    buf = bl.Buffer.from_bytes(data)
    m = bl.Layout("<u4", (3, 4))
    pairs = [
        (m.slice(1, 1, None, 2), base[:, 1::2]),
        (m.slice(0, None, None, -1), base[::-1]),
        (m.index(0, -1), base[-1]),
        (m.index(1, 2), base[:, 2]),
        (m.permute((1, 0)), base.transpose(1, 0)),
        (m.reshape((2, 6)), base.reshape(2, 6)),
        (m.reshape((12,)), base.reshape(12)),
        (m.reinterpret("<u2"), base.view("<u2")),
        (m.reinterpret("|u1").slice(1, None, None, 4), base.view("|u1")[:, ::4]),
        (m.broadcast_to((2, 3, 4)), np.broadcast_to(base, (2, 3, 4))),
    ]
    for layout, want in pairs:
        got = buf.view(layout)
        assert got.shape == want.shape and got.strides == want.strides
        assert address_of(got) - buf.address == address_of(want) - address_of(base)
        assert np.array_equal(got, want)
        assert got.flags.writeable == want.flags.writeable


def test_layout_errors():
    m = bl.Layout("<u2", (3, 4))
    for call in [
        lambda: m.index(1, 4),
        lambda: m.index(0, -4),
        lambda: m.slice(0, None, None, 0),
        lambda: m.slice(2),
        lambda: m.permute((0, 0)),
        lambda: m.reshape((5,)),
        lambda: m.transpose().reshape((12,)),
        lambda: m.broadcast_to((4, 4)),
        lambda: m.transpose().reinterpret("<u4"),
        lambda: bl.Layout("<u2", (4, 3)).reinterpret("<u4"),
        lambda: bl.Layout("<i3", (1,)),
        lambda: bl.Layout("<c8", (1,)),
    ]:
        with pytest.raises(bl.LayoutError) as e:
            call()
        assert not isinstance(e.value, (bl.AlignmentError, bl.BoundsError)), e.value
    with pytest.raises(bl.BoundsError):
        bl.Layout("<i4", (2,), offset=4).check(8)
    with pytest.raises(bl.AlignmentError):
        bl.Layout("<i4", (2,), offset=2).check(16)
    bl.Layout("<i4", (2,), offset=8).check(16)
