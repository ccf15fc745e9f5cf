"""bytelens.View's DLPack export, read back by numpy and by the capsule's
own structs (ctypes): every dtype's code and width from the dtype table,
shape and strides in elements, the read-only flag, the refusals (non-native
byte order, strides that are not whole elements, a misaligned first
element), copy=True, and the buffer kept alive and unclosable meanwhile.
The framework side (torch, JAX) is test_frameworks.py."""

import doctest
import gc

import ml_dtypes
import numpy as np
import pytest

import bytelens as bl
from _support import NUMPY2, capsule_name, consume, managed_tensor, tensor_shape, tensor_strides

#: Every bytelens dtype as numpy holds it, with DLPack's (code, bits) as
#: dlpack.h (v1.1) numbers them: written out here, not read from the table.
DLPACK = {
    np.dtype("?"): (6, 8),
    np.dtype("u1"): (1, 8),
    np.dtype("i1"): (0, 8),
    np.dtype("<u2"): (1, 16),
    np.dtype("<i2"): (0, 16),
    np.dtype("<u4"): (1, 32),
    np.dtype("<i4"): (0, 32),
    np.dtype("<u8"): (1, 64),
    np.dtype("<i8"): (0, 64),
    np.dtype("<f2"): (2, 16),
    np.dtype(ml_dtypes.bfloat16): (4, 16),
    np.dtype("<f4"): (2, 32),
    np.dtype("<f8"): (2, 64),
    np.dtype(ml_dtypes.float8_e4m3fn): (10, 8),
    np.dtype(ml_dtypes.float8_e5m2): (12, 8),
    np.dtype(ml_dtypes.float8_e8m0fnu): (14, 8),
}
DTYPES = list(DLPACK)
IDS = [d.name for d in DTYPES]


def versioned():
    return {"max_version": (1, 0)}


def random_array(dtype, shape=(4, 6), seed=0):
    """An array of `dtype` with random bytes (bool: 0 or 1), over a 64-byte aligned buffer."""
    n = int(np.prod(shape))
    buf = bl.Buffer(n * dtype.itemsize)
    raw = buf.view("u1")
    raw[:] = np.random.default_rng(seed).integers(0, 256, raw.size, dtype=np.uint8)
    if dtype == np.bool_:
        raw %= 2
    return buf.view(dtype, 0, shape)


def address(a):
    return a.__array_interface__["data"][0]


def read_capsule(cap):
    """(data address, (code, bits), shape, strides, flags or None) of a live capsule."""
    mt, _ = managed_tensor(cap)
    t = mt.dl_tensor
    flags = mt.flags if capsule_name(cap) == "dltensor_versioned" else None
    assert (t.device.device_type, t.device.device_id, t.dtype.lanes, t.byte_offset) == (1, 0, 1, 0)
    return t.data or 0, (t.dtype.code, t.dtype.bits), tensor_shape(t), tensor_strides(t), flags


CASES = {
    "c": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced": lambda a: a[1:, ::2],
    "reversed": lambda a: a[::-1, ::-3],
    "broadcast": lambda a: np.broadcast_to(a[:1], (3, 6)),
    "0-d": lambda a: a[1:2, 2:3].reshape(()),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_capsule_has_the_views_dtype_shape_and_strides_in_elements(dtype, case):
    x = CASES[case](random_array(dtype))
    view = bl.View.of(x)
    for kwargs in (versioned(), {}):
        if not x.flags.writeable and not kwargs:
            with pytest.raises(BufferError, match="read-only View .* versioned"):
                view.__dlpack__(**kwargs)
            continue
        cap = view.__dlpack__(**kwargs)
        data, code, shape, strides, flags = read_capsule(cap)
        assert data == address(x)
        assert code == DLPACK[dtype]
        assert shape == x.shape
        assert strides == tuple(s // dtype.itemsize for s in x.strides)
        if kwargs:
            assert flags == (0 if x.flags.writeable else 1)  # DLPACK_FLAG_BITMASK_READ_ONLY
        else:
            assert flags is None


@pytest.mark.parametrize("case", ["c", "transposed", "sliced", "reversed"])
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d.type.__module__ == "numpy"], ids=str)
def test_numpy_imports_the_view_zero_copy_bit_for_bit(dtype, case):
    x = CASES[case](random_array(dtype))
    got = np.from_dlpack(bl.View.of(x))
    assert got.dtype == x.dtype and got.shape == x.shape and got.strides == x.strides
    assert address(got) == address(x)
    assert got.tobytes() == x.tobytes()
    assert np.shares_memory(got, x)


def test_the_memory_stays_alive_and_close_is_refused_while_a_capsule_or_consumer_holds_it():
    buf = bl.Buffer(64)
    buf.view("<i4")[:] = np.arange(16)
    layout = bl.Layout("<i4", (4, 4), offset=0)
    view = bl.View(buf, layout)
    before = buf.exports
    cap = view.__dlpack__(**versioned())
    assert buf.exports == before + 1
    with pytest.raises(BufferError, match="1 live export"):
        buf.close()
    consume(cap)
    del cap
    gc.collect()
    assert buf.exports == before
    arr = np.from_dlpack(view)
    del view
    with pytest.raises(BufferError, match="live export"):
        buf.close()
    assert arr.sum() == sum(range(16))
    del arr
    gc.collect()
    buf.close()
    assert buf.closed


def test_an_unconsumed_capsule_releases_its_export_when_dropped():
    buf = bl.Buffer(64)
    view = bl.View(buf, bl.Layout("<f4", (4, 4)))
    caps = [view.__dlpack__(**kw) for kw in (versioned(), {}) for _ in range(3)]
    assert buf.exports == 6
    del caps
    gc.collect()
    assert buf.exports == 0
    buf.close()


def test_a_view_outlives_its_buffer_object_through_the_capsule():
    a = np.arange(12, dtype="<i8").reshape(3, 4)
    expected = a.T.copy()
    view = bl.View.of(a.T)
    got = np.from_dlpack(view)
    del view, a
    gc.collect()
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: np.arange(6, dtype=">i4"), "big-endian and DLPack has no byte order"),
        (lambda: np.arange(6, dtype=">f2"), "big-endian"),
        (lambda: np.zeros(16, "u1")[1:9].view("<f8"), "is not a multiple of 8, the alignment of float64"),
    ],
)
def test_views_dlpack_cannot_describe_are_refused_naming_why(make, why):
    x = make()
    view = bl.View.of(x)
    for copy in (None, False):
        with pytest.raises(BufferError, match=why) as err:
            view.__dlpack__(copy=copy, **versioned())
        assert "copy=True" in str(err.value)
    # copy=True: a C-contiguous native copy, flagged as copied.
    cap = view.__dlpack__(copy=True, **versioned())
    data, code, shape, strides, flags = read_capsule(cap)
    assert data != address(x) and data % 64 == 0
    assert shape == x.shape and flags == 2  # DLPACK_FLAG_BITMASK_IS_COPIED
    assert strides == tuple(int(np.prod(x.shape[i + 1 :])) for i in range(x.ndim))
    back = np.from_dlpack(_Capsule(view))
    assert back.dtype.isnative and back.tolist() == x.tolist()


def test_strides_that_are_not_whole_elements_never_reach_dlpack():
    # DLPack counts strides in elements; a View cannot be made with such
    # strides at all (the core's alignment rule), so none is exported.
    x = np.lib.stride_tricks.as_strided(np.zeros(8, "<i4"), (3,), (6,))
    with pytest.raises(bl.AlignmentError, match="stride 6 of axis 0 is not a multiple of 4"):
        bl.View.of(x)


class _Capsule:
    """A producer whose __dlpack__ always asks the View for a copy."""

    def __init__(self, view):
        self.view = view

    def __dlpack__(self, **kwargs):
        kwargs.pop("copy", None)
        return self.view.__dlpack__(copy=True, **kwargs)

    def __dlpack_device__(self):
        return self.view.__dlpack_device__()


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_copy_true_copies_every_dtype_into_c_order(dtype):
    x = random_array(dtype)[::-1, 1::2].T
    cap = bl.View.of(x).__dlpack__(copy=True, **versioned())
    data, code, shape, strides, flags = read_capsule(cap)
    assert code == DLPACK[dtype] and shape == x.shape and flags == 2
    assert strides == (x.shape[1], 1)
    # The copy's bytes, read through a Buffer over the capsule's memory.
    back = bl.Buffer.from_dlpack(_Raw(cap)).view(dtype, 0, x.shape)
    assert back.tobytes() == np.ascontiguousarray(x).tobytes()


class _Raw:
    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kwargs):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_read_only_views_are_flagged_and_never_legacy():
    a = np.arange(8, dtype="<f4")
    a.flags.writeable = False
    view = bl.View.of(a)
    assert read_capsule(view.__dlpack__(**versioned()))[4] == 1
    with pytest.raises(BufferError, match="read-only View is exported only as a versioned"):
        view.__dlpack__()
    # A copy is the consumer's own, writable.
    assert read_capsule(view.__dlpack__(copy=True))[4] is None
    assert read_capsule(view.__dlpack__(copy=True, **versioned()))[4] == 2


def test_stream_and_device_arguments_are_checked():
    view = bl.View.of(np.arange(4))
    assert view.__dlpack_device__() == (1, 0)
    assert read_capsule(view.__dlpack__(dl_device=(1, 0), stream=None, **versioned()))[2] == (4,)
    with pytest.raises(BufferError, match="a CPU View takes stream=None"):
        view.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"CPU memory \(device \(1, 0\)\), not on device \(2, 0\)"):
        view.__dlpack__(dl_device=(2, 0))


def test_a_closed_buffers_view_exports_nothing():
    buf = bl.Buffer(16)
    view = bl.View(buf, bl.Layout("<i4", (4,)))
    buf.close()
    with pytest.raises(ValueError, match="closed"):
        view.__dlpack__(**versioned())


def test_the_numpy_dtypes_import_with_numpys_own_from_dlpack_after_a_pickle_round_trip():
    import pickle

    a = np.arange(24, dtype="<i2").reshape(4, 6)[:, 1::2]
    view = pickle.loads(pickle.dumps(bl.View.of(a), protocol=5))
    got = np.from_dlpack(view)
    assert got.tolist() == a.tolist() and got.strides == a.strides


# --- the dtype layer: every dtype of the table as numpy's or ml_dtypes' dtype ---------


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_every_dtype_is_viewed_by_name_by_type_and_by_dtype(dtype):
    buf = bl.Buffer(64)
    buf.view("u1")[:] = np.arange(64, dtype=np.uint8)
    for spelling in (dtype, dtype.type, dtype.name):
        got = buf.view(spelling)
        assert got.dtype == dtype and got.nbytes == 64
        assert got.view(np.uint8).tolist() == list(range(64))
    assert bl.Layout(dtype, (4,)).reinterpret(np.uint8).shape == (4 * dtype.itemsize,)
    assert bl.Layout("<u8", (2,)).reinterpret(dtype).shape == (16 // dtype.itemsize,)


def test_float8_views_reinterpret_and_ascontiguous():
    buf = bl.Buffer(8)
    buf.view("u1")[:] = [0x38, 0x40, 0x7E, 0x7F, 0x3C, 0x7B, 0x7F, 0xFF]
    assert buf.view("float8_e4m3fn").astype(np.float32)[:3].tolist() == [1.0, 2.0, 448.0]
    assert buf.view(ml_dtypes.float8_e5m2, 4, (2,)).astype(np.float32).tolist() == [1.0, 57344.0]
    assert np.isnan(buf.view("e8m0fnu")[-1].astype(np.float32))
    x = np.array([0.3, 1.0, 500.0, -2.0], np.float32)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
        want = x.astype(getattr(ml_dtypes, name))
        got = bl.ascontiguous(x, dtype=name)
        assert got.dtype == want.dtype
        assert got.view(np.uint8).tolist() == want.view(np.uint8).tolist(), name
        back = bl.ascontiguous(got, dtype=np.float32)
        assert back.tobytes() == want.astype(np.float32).tobytes()


def test_a_raw_void_byte_is_not_a_float8():
    for raw in ("V1", np.dtype("V1"), np.dtype([("a", "u1")])):
        with pytest.raises(bl.LayoutError):
            bl.Buffer(8).view(raw)


def test_big_endian_float8_is_the_same_bytes():
    # One-byte dtypes have no byte order: '>' is accepted and changes nothing.
    buf = bl.Buffer(4)
    assert buf.view(bl.Layout(">float8_e5m2", (4,))).dtype == np.dtype(ml_dtypes.float8_e5m2)


def test_dtypes_is_the_table():
    rows = bl.dtypes()
    assert [r["name"] for r in rows] == [
        "bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
        "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu",
    ]  # fmt: skip
    assert set(rows[0]) == {
        "name", "code", "spellings", "size", "kind", "ml_dtypes", "safetensors", "npy", "dlpack", "js_array", "float",
    }  # fmt: skip
    for row in rows:
        dtype = np.dtype(getattr(ml_dtypes, row["ml_dtypes"]) if row["ml_dtypes"] else row["code"])
        assert dtype in DLPACK, row
        assert (row["size"], row["kind"], row["dlpack"]) == (dtype.itemsize, dtype.kind, DLPACK[dtype])
        assert row["spellings"][0] == row["name"] == dtype.name
        assert row["npy"] == (row["ml_dtypes"] is None)
        assert (row["float"] is None) == (dtype.kind not in "f" and row["ml_dtypes"] is None)
        for spelling in row["spellings"]:
            assert bl.Buffer(8).view(spelling).dtype == dtype
    floats = {r["name"]: r["float"] for r in rows if r["float"]}
    assert floats["float8_e4m3fn"] == {
        "signed": True, "exponent_bits": 4, "mantissa_bits": 3, "bias": 7, "subnormals": True,
        "specials": "nan_only", "rounding": "nearest_even",
    }  # fmt: skip
    assert floats["float8_e8m0fnu"]["rounding"] == "nearest_away"
    assert not floats["float8_e8m0fnu"]["signed"] and not floats["float8_e8m0fnu"]["subnormals"]
    assert {r["safetensors"] for r in rows} >= {"BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0"}
    assert len({r["safetensors"] for r in rows}) == len(rows)


def test_dtypes_docstring_example_runs():
    finder = doctest.DocTestFinder()
    tests = finder.find(bl.dtypes, "dtypes", globs={})
    assert tests and tests[0].examples
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.skipif(not NUMPY2, reason="numpy 1.26 asks for legacy capsules only")
def test_numpy_asks_for_a_versioned_capsule_and_gets_a_read_only_array():
    a = np.arange(4, dtype="<i4")
    a.flags.writeable = False
    got = np.from_dlpack(bl.View.of(a))
    assert not got.flags.writeable and address(got) == address(a)
