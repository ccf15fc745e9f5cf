"""buf.view against numpy as the oracle, over hypothesis-generated layouts.

For every layout: where numpy's np.ndarray(buffer=<the same bytes>, dtype,
offset, shape, strides) stays inside the buffer and is aligned, buf.view must
give the same array (bitwise), over buf's own memory; where it would reach
outside the buffer, BoundsError; where it is in bounds but misaligned (the
offset, or the stride of an axis longer than 1, not a multiple of the
dtype's alignment), AlignmentError. Empty views touch no bytes: they are
valid at any offset from 0 to nbytes, whatever their strides.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

import bytelens as bl
from _support import (
    NUMPY2,
    BF16,
    address_of,
    aligned,
    bitwise_equal,
    byte_span,
    c_strides,
    in_bounds,
    raw,
    size_of,
)


def _dtype_specs():
    """(what is passed to buf.view, the numpy dtype the result must have)."""
    specs = []
    for code in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]:
        native = np.dtype(code)
        orders = "<>" if native.itemsize > 1 else "|"
        for order in orders:
            dt = np.dtype(order + code)
            specs += [(order + code, dt), (dt, dt)]
        specs += [(native.type, native), (native.name, native)]
    specs += [("|b1", np.dtype(bool)), ("?", np.dtype(bool)), (np.bool_, np.dtype(bool)), ("bool", np.dtype(bool))]
    specs += [
        ("bfloat16", BF16),
        ("bf16", BF16),
        (BF16.type, BF16),
        (BF16, BF16),
        # Not BF16_BE: no numpy array can be big-endian bfloat16 (test_hostile).
    ]
    # The float8 formats: ml_dtypes' types, by name, code, type and dtype
    # (one byte each, so no byte order).
    for name in ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]:
        dt = np.dtype(getattr(ml_dtypes, name))
        specs += [(name, dt), (name.removeprefix("float8_"), dt), (dt.type, dt), (dt, dt)]
    return specs


DTYPE_SPECS = _dtype_specs()
dtype_specs = st.sampled_from(DTYPE_SPECS)


lengths = st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4])  # an empty axis one time in eight


def _stride(itemsize, length=0):
    small = st.one_of(
        st.integers(-4, 4).map(lambda k: k * itemsize),  # aligned, incl. 0 and negative
        st.integers(-40, 40),  # often not a multiple of the itemsize
    )
    if length > 1:
        return small
    # Huge strides are harmless only on axes of length 0 or 1.
    return small | st.sampled_from([-(10**6), -1000, 1000, 10**6])


def _strides(itemsize, shape):
    return st.tuples(*[_stride(itemsize, n) for n in shape])


@st.composite
def any_layout(draw):
    """Anything at all: most of these are out of bounds or misaligned."""
    spec, dt = draw(dtype_specs)
    isz = dt.itemsize
    nbytes = draw(st.integers(0, 160))
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(lengths, min_size=ndim, max_size=ndim)))
    strides = draw(st.none() | st.tuples(*[_stride(isz) for _ in shape]))
    offset = draw(st.integers(0, nbytes + 2 * isz) | st.integers(0, 12).map(lambda k: k * isz))
    data = draw(st.binary(min_size=nbytes, max_size=nbytes))
    return spec, dt, data, offset, shape, strides


@st.composite
def fitting_layout(draw):
    """In bounds by construction: the buffer is sized around the layout's span."""
    spec, dt = draw(dtype_specs)
    isz = dt.itemsize
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(lengths, min_size=ndim, max_size=ndim)))
    strides = draw(st.none() | _strides(isz, shape))
    full = c_strides(shape, isz) if strides is None else strides
    if size_of(shape) == 0:
        offset = draw(st.integers(0, 24))
        nbytes = offset + draw(st.integers(0, 2 * isz))
    else:
        lo, hi = byte_span(0, shape, full, isz)  # relative to element [0, ..., 0]
        offset = -lo + draw(st.integers(0, 2 * isz))
        if draw(st.booleans()):
            offset += -offset % isz  # an aligned offset, so that more views succeed
        nbytes = offset + hi + draw(st.integers(0, 2 * isz))
    data = draw(st.binary(min_size=nbytes, max_size=nbytes))
    return spec, dt, data, offset, shape, strides


def _view(buf, spec, offset, shape, strides):
    kwargs = {"offset": offset, "shape": shape}
    if strides is not None:
        kwargs["strides"] = strides
    return buf.view(spec, **kwargs)


def check_against_numpy(spec, dt, data, offset, shape, strides):
    isz = dt.itemsize
    full = c_strides(shape, isz) if strides is None else strides
    buf = bl.Buffer.from_bytes(data)
    assert buf.nbytes == len(data)
    note(f"dtype={dt.str} nbytes={len(data)} offset={offset} shape={shape} strides={strides}")

    if not in_bounds(offset, shape, full, isz, len(data)):
        event("out of bounds")
        with pytest.raises(bl.BoundsError):
            _view(buf, spec, offset, shape, strides)
        return
    if not aligned(offset, shape, full, dt.alignment):
        event("misaligned")
        with pytest.raises(bl.AlignmentError):
            _view(buf, spec, offset, shape, strides)
        return
    event("empty view" if size_of(shape) == 0 else "view")

    got = _view(buf, spec, offset, shape, strides)
    # numpy reads the same bytes from a separate bytearray.
    expected = np.ndarray(shape, dtype=dt, buffer=bytearray(data), offset=offset, strides=full)

    assert isinstance(got, np.ndarray)
    assert got.dtype == dt
    assert got.shape == shape
    assert got.strides == full
    assert bitwise_equal(got, expected)
    if dt.kind in "biu":
        assert np.array_equal(got, expected)

    if size_of(shape) == 0:
        return
    whole = np.asarray(memoryview(buf))
    assert np.shares_memory(got, whole)
    assert address_of(got) == buf.address + offset
    # Like np.ndarray(buffer=..., strides=...), explicit strides give a writable
    # array even where a stride of 0 makes elements share bytes; only views made
    # by Layout.broadcast_to are read-only.
    assert got.flags.writeable
    if got.flags.writeable:
        # Flip the bits of element [0, ..., 0] and see the bytes of buf change.
        index = (0,) * len(shape)
        bits = raw(got)
        before = bytes(memoryview(buf))
        bits[index] = ~bits[index]
        after = bytes(memoryview(buf))
        changed = [i for i in range(len(data)) if before[i] != after[i]]
        assert changed and offset <= min(changed) and max(changed) < offset + isz


@given(any_layout())
def test_any_layout_matches_numpy(case):
    check_against_numpy(*case)


@given(fitting_layout())
def test_fitting_layout_matches_numpy(case):
    check_against_numpy(*case)


@given(dtype_specs, st.integers(0, 80), st.integers(0, 90), st.data())
def test_whole_buffer_matches_frombuffer(spec_dt, nbytes, offset, data):
    """shape=None: np.frombuffer(data, dtype, offset=offset)."""
    spec, dt = spec_dt
    raw_bytes = data.draw(st.binary(min_size=nbytes, max_size=nbytes))
    buf = bl.Buffer.from_bytes(raw_bytes)
    isz = dt.itemsize
    if offset > nbytes or (nbytes - offset) % isz:
        with pytest.raises(bl.LayoutError):
            buf.view(spec, offset=offset)
        return
    count = (nbytes - offset) // isz
    if count and offset % isz:
        with pytest.raises(bl.AlignmentError):
            buf.view(spec, offset=offset)
        return
    got = buf.view(spec, offset=offset)
    expected = np.frombuffer(bytearray(raw_bytes), dtype=dt, offset=offset)
    assert got.dtype == dt and got.shape == (count,) and got.strides == (isz,)
    assert bitwise_equal(got, expected)
    assert got.flags.c_contiguous and got.flags.writeable
    if count:
        assert address_of(got) == buf.address + offset


@pytest.mark.parametrize("spec,dt", DTYPE_SPECS, ids=[f"{type(s).__name__}:{s}" for s, _ in DTYPE_SPECS])
def test_every_dtype_spec_reads_its_bytes(spec, dt):
    data = bytes(range(1, 17))
    got = bl.Buffer.from_bytes(data).view(spec)
    assert got.dtype == dt
    assert bitwise_equal(got, np.frombuffer(data, dtype=dt))


# --- the rules the hypothesis tests rely on, spelled out --------------------------


def test_strides_of_length_one_axes_do_not_matter():
    buf = bl.Buffer.from_bytes(bytes(range(16)))
    # A stride that is misaligned, huge, or negative on a length-1 axis.
    for stride in (3, -3, 10**6, -(10**6), 0):
        v = buf.view("<i4", offset=4, shape=(1, 2), strides=(stride, 4))
        assert v.shape == (1, 2) and v.strides == (stride, 4)
        assert v.tolist() == np.frombuffer(bytes(range(16)), "<i4")[1:3].reshape(1, 2).tolist()


def test_empty_views_touch_no_bytes():
    buf = bl.Buffer(8)
    for offset in range(9):  # any offset from 0 to nbytes, aligned or not
        v = buf.view("<i8", offset=offset, shape=(0, 5), strides=(3, -(10**6)))
        assert v.shape == (0, 5) and v.size == 0
    with pytest.raises(bl.BoundsError):
        buf.view("<i8", offset=9, shape=(0,))


def test_bounds_are_checked_before_and_after():
    buf = bl.Buffer(8)
    with pytest.raises(bl.BoundsError):
        buf.view("<i4", offset=4, shape=(2,))  # bytes 4..12
    with pytest.raises(bl.BoundsError):
        buf.view("<i4", offset=0, shape=(2,), strides=(-4,))  # bytes -4..4
    assert buf.view("<i4", offset=4, shape=(2,), strides=(-4,)).shape == (2,)


def test_alignment_error_messages_name_the_numbers():
    buf = bl.Buffer(16)
    with pytest.raises(bl.AlignmentError) as e:
        buf.view("<i2", offset=3, shape=(1,))
    assert "offset 3 is not a multiple of 2, the alignment of int16" in str(e.value)
    with pytest.raises(bl.AlignmentError) as e:
        buf.view("<f4", offset=0, shape=(2,), strides=(6,))
    message = str(e.value)
    assert "6" in message and "4" in message and "float32" in message


def test_out_of_bounds_messages_name_the_bytes():
    with pytest.raises(bl.BoundsError) as e:
        bl.Buffer(7).view("<i4", shape=(2,))
    assert "0..8" in str(e.value) and "7" in str(e.value)


def test_none_is_float64_as_in_numpy():
    assert np.dtype(None) == np.float64
    assert bl.Buffer(16).view(None).dtype == np.float64


def test_error_hierarchy():
    assert issubclass(bl.LayoutError, ValueError)
    assert issubclass(bl.AlignmentError, bl.LayoutError)
    assert issubclass(bl.BoundsError, bl.LayoutError)
    assert not issubclass(bl.AlignmentError, bl.BoundsError)
    assert not issubclass(bl.BoundsError, bl.AlignmentError)


@pytest.mark.parametrize("bad", ["<c8", "complex64", np.complex128, "U4", "<i3", "f16", "", "int128",
                                 np.dtype([("a", "<i4"), ("b", "<f4")]), np.dtype(("<i4", (2,))), "O", "V4",
                                 "V2", "S2", "M8[s]", "m8[ms]", np.longdouble, object, "not a dtype", 4])
def test_unsupported_dtypes_are_layout_errors(bad):
    buf = bl.Buffer(32)
    with pytest.raises(bl.LayoutError) as e:
        buf.view(bad)
    assert not isinstance(e.value, (bl.AlignmentError, bl.BoundsError))


def test_size_not_a_multiple_is_a_layout_error():
    with pytest.raises(bl.LayoutError) as e:
        bl.Buffer(3).view("<i2")
    assert not isinstance(e.value, (bl.AlignmentError, bl.BoundsError))
    with pytest.raises(bl.LayoutError):
        bl.Buffer(8).view("<i4", offset=2)  # 6 bytes left


def test_shape_and_strides_of_different_lengths_are_refused():
    with pytest.raises(bl.LayoutError):
        bl.Buffer(64).view("<i4", shape=(2, 2), strides=(4,))


def test_negative_offset_is_refused():
    with pytest.raises((ValueError, OverflowError)):
        bl.Buffer(8).view("|u1", offset=-1, shape=(1,))


def test_zero_dimensional_view():
    buf = bl.Buffer.from_bytes(bytes.fromhex("0000803f"))
    v = buf.view("<f4", shape=())
    assert v.shape == () and v.strides == () and float(v) == 1.0
    v[()] = 2.0
    assert bytes(memoryview(buf)) == np.float32(2.0).tobytes()


# --- Layout operations against numpy's own views ---------------------------------------------

OP_DTYPES = ["|u1", "<u2", ">i2", "<i4", ">f4", "<f8", "bfloat16"]


def _np_dtype(spec):
    return BF16 if spec == "bfloat16" else np.dtype(spec)


def _numpy_reshape(arr, shape):
    if NUMPY2:
        return np.reshape(arr, shape, copy=False)
    out = arr.view()
    out.shape = shape  # numpy 1.26: raises AttributeError where a copy is needed
    return out


@st.composite
def _op(draw, ndim):
    kind = draw(st.sampled_from(["slice", "index", "transpose", "permute", "reshape", "broadcast_to",
                                 "reinterpret"]))
    axis = draw(st.integers(0, ndim))  # ndim itself is out of range
    bound = st.none() | st.integers(-6, 6)
    if kind == "slice":
        return ("slice", axis, draw(bound), draw(bound), draw(st.integers(-3, 3)))
    if kind == "index":
        return ("index", axis, draw(st.integers(-5, 5)))
    if kind == "transpose":
        return ("transpose",)
    if kind == "permute":
        if draw(st.booleans()):
            return ("permute", tuple(draw(st.permutations(range(ndim)))))
        return ("permute", tuple(draw(st.lists(st.integers(0, ndim), min_size=ndim, max_size=ndim))))
    if kind == "reshape":
        return ("reshape", tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=4))))
    if kind == "broadcast_to":
        return ("broadcast_to", tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=4))))
    return ("reinterpret", draw(st.sampled_from(OP_DTYPES)))


def _apply_numpy(arr, op):
    kind = op[0]
    if kind == "slice":
        _, axis, start, stop, step = op
        if axis >= arr.ndim:
            raise IndexError("axis")
        return arr[(slice(None),) * axis + (slice(start, stop, step),)]
    if kind == "index":
        _, axis, i = op
        if axis >= arr.ndim:
            raise IndexError("axis")
        return arr[(slice(None),) * axis + (i, Ellipsis)]  # the Ellipsis keeps a 0-d result an array
    if kind == "transpose":
        return arr.T
    if kind == "permute":
        return arr.transpose(op[1])
    if kind == "reshape":
        return _numpy_reshape(arr, op[1])
    if kind == "broadcast_to":
        return np.broadcast_to(arr, op[1])
    return arr.view(_np_dtype(op[1]))


def _apply_layout(layout, op):
    kind = op[0]
    if kind == "slice":
        return layout.slice(*op[1:])
    if kind == "index":
        return layout.index(*op[1:])
    if kind == "transpose":
        return layout.transpose()
    if kind == "permute":
        return layout.permute(op[1])
    if kind == "reshape":
        return layout.reshape(op[1])
    if kind == "broadcast_to":
        return layout.broadcast_to(op[1])
    return layout.reinterpret(op[1])


@given(st.sampled_from(OP_DTYPES), st.lists(st.integers(0, 4), min_size=0, max_size=3), st.data())
def test_layout_ops_match_numpy_views(dtype, shape, data):
    dt = _np_dtype(dtype)
    shape = tuple(shape)
    nbytes = size_of(shape) * dt.itemsize
    raw_bytes = data.draw(st.binary(min_size=nbytes, max_size=nbytes))
    storage = bytearray(raw_bytes)
    arr = np.ndarray(shape, dtype=dt, buffer=storage)
    base = address_of(arr)
    layout = bl.Layout(dtype, shape)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(_op(arr.ndim))
        note(f"op {op} on numpy shape {arr.shape} strides {arr.strides}")
        try:
            arr = _apply_numpy(arr, op)
        except (ValueError, IndexError, TypeError, AttributeError) as e:
            note(f"numpy: {e!r}")
            with pytest.raises(bl.LayoutError):
                _apply_layout(layout, op)
            return
        layout = _apply_layout(layout, op)
        assert layout.shape == arr.shape
        assert layout.itemsize == arr.dtype.itemsize
        # Strides only matter (and only have to agree) on axes longer than 1.
        long_axes = [n > 1 for n in arr.shape]
        assert [s for s, k in zip(layout.strides, long_axes) if k] == [s for s, k in zip(arr.strides, long_axes) if k]

    buf = bl.Buffer.from_bytes(raw_bytes)
    offset = address_of(arr) - base
    assert layout.offset == offset  # numpy moves the pointer of empty arrays too
    if arr.size == 0 and not 0 <= offset <= nbytes:
        # Stricter than numpy: an empty view must still start inside the buffer or
        # at its end (errors.json "zero-size view past the end"), even when numpy's
        # own indexing of an empty array moved its pointer further.
        with pytest.raises(bl.BoundsError):
            buf.view(layout)
        return
    if not aligned(offset, arr.shape, arr.strides, arr.dtype.alignment):
        with pytest.raises(bl.AlignmentError):
            buf.view(layout)
        return
    got = buf.view(layout)
    assert got.shape == arr.shape and got.dtype == arr.dtype
    assert bitwise_equal(got, arr)
    if arr.size:
        assert address_of(got) == buf.address + offset
    assert got.flags.writeable == arr.flags.writeable
    assert layout.c_contiguous == arr.flags.c_contiguous
    assert layout.f_contiguous == arr.flags.f_contiguous


@pytest.mark.parametrize("kwargs", [
    {"shape": (2**62,)},
    {"shape": (2**31, 2**31, 2**31)},
    {"shape": (2**64,)},
    {"shape": (-1,)},
    {"shape": (2,), "strides": (2**62,)},
    {"shape": (2,), "strides": (-(2**62),)},
    {"shape": (2,), "strides": (2**63,)},
    {"shape": (3, 3), "strides": (2**62, 2**62)},
    {"offset": 2**62, "shape": (1,)},
    {"offset": 2**64, "shape": (1,)},
    {"offset": 2**62},
    {"shape": (1,) * 33},
    {"shape": (2,), "strides": (4, 4)},
    {"shape": 2.5},
    {"shape": ("a",)},
])
def test_extreme_arguments_are_refused_not_crashes(kwargs):
    buf = bl.Buffer(64)
    with pytest.raises((ValueError, OverflowError, TypeError)):
        buf.view("<i4", **kwargs)
