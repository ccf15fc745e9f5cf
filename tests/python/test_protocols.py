"""Buffer construction, properties and the protocols numpy and others use to share it:
the buffer protocol (memoryview), __array_interface__, DLPack (versioned and
legacy capsules, inspected through ctypes), pickle (protocol 5 out of band,
2..4 in band), read-only flags, keeping wrapped objects alive, bfloat16."""

import ctypes
import mmap
import pickle
import weakref

import ml_dtypes
import numpy as np
import pytest

import bytelens as bl
from _support import (
    BF16,
    BF16_BE,
    DLPACK_FLAG_IS_COPIED,
    DLPACK_FLAG_READ_ONLY,
    KDL_CPU,
    KDL_UINT,
    NUMPY2,
    ArrayInterface,
    address_of,
    capsule_is_valid,
    capsule_name,
    managed_tensor,
    tensor_shape,
    tensor_strides,
)


def lowest_power_of_two_dividing(address, cap=4096):
    return min(address & -address, cap) if address else cap


# --- construction and properties --------------------------------------------------


def test_new_buffer_is_zeroed_and_aligned():
    buf = bl.Buffer(100)
    assert buf.nbytes == 100 and len(buf) == 100
    assert isinstance(buf.address, int) and buf.address % 64 == 0
    assert buf.align == 64
    assert not buf.readonly and not buf.closed
    assert buf.exports == 0
    assert bytes(memoryview(buf)) == bytes(100)


@pytest.mark.parametrize("align", [1, 2, 8, 64, 128, 4096])
def test_requested_alignment(align):
    buf = bl.Buffer(10, align=align)
    assert buf.align == align
    assert buf.address % align == 0
    assert bytes(memoryview(buf)) == bytes(10)


@pytest.mark.parametrize("align", [0, 3, 48, 100, 4097])
def test_alignment_must_be_a_power_of_two(align):
    with pytest.raises(ValueError):
        bl.Buffer(16, align=align)
    with pytest.raises((ValueError, OverflowError)):
        bl.Buffer(16, align=-align or -1)


def test_negative_size_is_refused():
    with pytest.raises((ValueError, OverflowError)):
        bl.Buffer(-1)


@pytest.mark.parametrize("nbytes", [2**62, 2**63 - 1, 2**64, 2**80])
def test_impossible_sizes_are_refused(nbytes):
    with pytest.raises((MemoryError, ValueError, OverflowError)):
        bl.Buffer(nbytes)


def test_empty_buffer():
    buf = bl.Buffer(0)
    assert buf.nbytes == 0 and len(buf) == 0
    assert memoryview(buf).nbytes == 0
    assert buf.view("<f8").shape == (0,)


def test_from_bytes_copies_into_an_aligned_buffer():
    for src in [b"0123456789", bytearray(b"0123456789"), memoryview(b"xx0123456789")[2:],
                np.frombuffer(b"0123456789", np.uint8)]:
        buf = bl.Buffer.from_bytes(src)
        assert bytes(memoryview(buf)) == b"0123456789"
        assert buf.nbytes == 10 and buf.address % 64 == 0
        assert not buf.readonly  # a copy is ours to write, even of bytes
    src = bytearray(b"abcd")
    buf = bl.Buffer.from_bytes(src)
    src[0] = ord("z")
    assert bytes(memoryview(buf)) == b"abcd"
    assert buf.address != address_of(np.frombuffer(src, np.uint8))


def test_wrap_bytearray_is_zero_copy_and_writable():
    ba = bytearray(range(16))
    buf = bl.Buffer.wrap(ba)
    assert buf.nbytes == 16 and not buf.readonly
    assert buf.address == address_of(np.frombuffer(ba, np.uint8))
    buf.view("|u1")[0] = 200
    assert ba[0] == 200
    ba[1] = 201
    assert buf.view("|u1")[1] == 201


def test_wrapped_bytearray_cannot_be_resized_under_the_buffer():
    ba = bytearray(8)
    buf = bl.Buffer.wrap(ba)
    with pytest.raises(BufferError):
        ba.extend(bytes(4096))  # would move the memory the Buffer points at
    with pytest.raises(BufferError):
        del ba[:4]
    assert len(ba) == 8 and buf.nbytes == 8
    buf.close()
    ba.extend(b"ok")  # the export is gone with the buffer
    assert len(ba) == 10


def test_wrap_bytes_is_read_only():
    data = bytes(range(8))
    buf = bl.Buffer.wrap(data)
    assert buf.readonly and buf.nbytes == 8
    mv = memoryview(buf)
    assert mv.readonly
    with pytest.raises(TypeError):
        mv[0] = 1
    mv.release()
    v = buf.view("<i2")
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 1
    with pytest.raises(ValueError):
        v.flags.writeable = True
    assert data == bytes(range(8))


def test_wrap_readonly_flag_on_writable_memory():
    ba = bytearray(8)
    buf = bl.Buffer.wrap(ba, readonly=True)
    assert buf.readonly
    assert memoryview(buf).readonly
    v = buf.view("<u4")
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 1
    assert ba == bytearray(8)


def test_wrap_read_only_numpy_array():
    a = np.arange(4, dtype=np.int32)
    a.setflags(write=False)
    buf = bl.Buffer.wrap(a)
    assert buf.readonly
    assert buf.view("<i4").tolist() == [0, 1, 2, 3]
    assert not buf.view("<i4").flags.writeable


def test_wrap_numpy_array_covers_its_bytes():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    buf = bl.Buffer.wrap(a)
    assert buf.nbytes == 48 and buf.address == address_of(a)
    buf.view("<f8", shape=(2, 3))[1, 2] = -1
    assert a[1, 2] == -1


def test_wrap_strided_numpy_array_covers_the_bytes_it_spans():
    base = np.arange(10, dtype=np.int32)
    buf = bl.Buffer.wrap(base[::2])
    assert buf.address == address_of(base)
    assert buf.nbytes == 36  # elements at bytes 0, 8, ..., 32, four bytes each
    assert buf.view("<i4", shape=(5,), strides=(8,)).tolist() == [0, 2, 4, 6, 8]
    rev = bl.Buffer.wrap(base[::-1])
    assert rev.address == address_of(base) and rev.nbytes == 40


def test_wrap_memoryview_slice():
    ba = bytearray(range(32))
    mv = memoryview(ba)[4:12]
    buf = bl.Buffer.wrap(mv)
    assert buf.nbytes == 8
    assert buf.address == address_of(np.frombuffer(ba, np.uint8)) + 4
    assert bytes(memoryview(buf)) == bytes(range(4, 12))
    assert buf.align == lowest_power_of_two_dividing(buf.address)


def test_wrapped_alignment_is_the_addresses_power_of_two():
    ba = bytearray(8192)
    base = address_of(np.frombuffer(ba, np.uint8))
    for k in range(0, 70):
        buf = bl.Buffer.wrap(memoryview(ba)[k:])
        assert buf.address == base + k
        assert buf.align == lowest_power_of_two_dividing(base + k)
    page = np.zeros(3 * 4096, np.uint8)
    start = (-address_of(page)) % 4096
    aligned_page = bl.Buffer.wrap(page[start:start + 4096])
    assert aligned_page.address % 4096 == 0 and aligned_page.align == 4096


def test_wrap_misaligned_base_refuses_aligned_views():
    ba = bytearray(64)
    buf = bl.Buffer.wrap(memoryview(ba)[1:17])
    assert buf.address % 2 == 1 and buf.align == 1
    with pytest.raises(bl.AlignmentError):
        buf.view("<i2")
    assert buf.view("|u1").shape == (16,)


def test_wrap_mmap():
    mm = mmap.mmap(-1, 4096)
    buf = bl.Buffer.wrap(mm)
    assert buf.nbytes == 4096 and not buf.readonly
    assert buf.align == 4096
    v = buf.view("<u8")
    v[1] = 0x0102030405060708
    assert mm[8:16] == bytes.fromhex("0807060504030201")
    mm[0:4] = b"\x01\x00\x00\x00"
    assert v[0] == 1
    with pytest.raises(BufferError):
        mm.close()  # bytelens holds the mmap's buffer
    del v, buf
    mm.close()


def test_wrap_keeps_the_object_alive(collect):
    a = np.arange(8, dtype=np.int64)
    ref = weakref.ref(a)
    buf = bl.Buffer.wrap(a)
    del a
    collect()
    assert ref() is not None
    assert buf.view("<i8").tolist() == list(range(8))
    del buf
    collect()
    assert ref() is None


def test_wrap_keeps_a_bytearray_alive(collect):
    class Bytes(bytearray):
        pass

    ba = Bytes(b"keep me!")
    ref = weakref.ref(ba)
    buf = bl.Buffer.wrap(ba)
    del ba
    collect()
    assert ref() is not None
    assert bytes(memoryview(buf)) == b"keep me!"
    del buf
    collect()
    assert ref() is None


def test_wrap_refuses_non_buffers():
    for obj in [123, "text", [1, 2, 3], None]:
        with pytest.raises(TypeError):
            bl.Buffer.wrap(obj)


# --- the buffer protocol ------------------------------------------------------------------


def test_memoryview():
    buf = bl.Buffer(32)
    mv = memoryview(buf)
    assert mv.format == "B" and mv.itemsize == 1 and mv.ndim == 1
    assert mv.shape == (32,) and mv.nbytes == 32
    assert not mv.readonly and mv.c_contiguous
    assert address_of(np.frombuffer(mv, np.uint8)) == buf.address
    mv[3] = 7
    assert buf.view("|u1")[3] == 7
    buf.view("|u1")[4] = 9
    assert mv[4] == 9
    mv[8:12] = bytes.fromhex("0000803f")
    assert buf.view("<f4")[2] == 1.0


def test_numpy_asarray_shares_memory():
    buf = bl.Buffer(16)
    a = np.asarray(buf)
    assert a.dtype == np.uint8 and a.shape == (16,)
    assert address_of(a) == buf.address
    a[0] = 1
    assert bytes(memoryview(buf))[0] == 1


# --- __array_interface__ -----------------------------------------------------------------


def test_array_interface():
    buf = bl.Buffer(24)
    ai = buf.__array_interface__
    assert isinstance(ai, dict)
    assert ai["version"] == 3
    assert ai["typestr"] == "|u1"
    assert tuple(ai["shape"]) == (24,)
    assert ai.get("strides") is None
    data = memoryview(ai["data"])
    assert data.nbytes == 24 and not data.readonly
    data.release()
    arr = np.asarray(ArrayInterface(ai))
    assert arr.dtype == np.uint8 and arr.shape == (24,)
    assert address_of(arr) == buf.address
    assert arr.flags.writeable
    arr[5] = 55
    assert buf.view("|u1")[5] == 55


def test_array_interface_of_read_only_buffer():
    buf = bl.Buffer.wrap(bytes(8))
    ai = buf.__array_interface__
    assert memoryview(ai["data"]).readonly
    arr = np.asarray(ArrayInterface(ai))
    assert not arr.flags.writeable
    assert address_of(arr) == buf.address


# --- DLPack --------------------------------------------------------------------------------


def test_dlpack_device():
    assert bl.Buffer(8).__dlpack_device__() == (KDL_CPU, 0)


def check_tensor(t, buf):
    assert t.data + t.byte_offset == buf.address
    assert (t.device.device_type, t.device.device_id) == (KDL_CPU, 0)
    assert t.ndim == 1
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (KDL_UINT, 8, 1)
    assert tensor_shape(t) == (buf.nbytes,)
    assert tensor_strides(t) in (None, (1,))


@pytest.mark.parametrize("max_version", [(1, 0), (1, 1), (2, 0)])
def test_versioned_capsule(max_version):
    buf = bl.Buffer(40)
    cap = buf.__dlpack__(max_version=max_version)
    assert capsule_name(cap) == "dltensor_versioned"
    assert capsule_is_valid(cap, "dltensor_versioned")
    assert not capsule_is_valid(cap, "dltensor")
    mt, _ = managed_tensor(cap)
    assert mt.version.major == 1
    assert mt.flags & DLPACK_FLAG_READ_ONLY == 0
    assert mt.flags & DLPACK_FLAG_IS_COPIED == 0
    assert mt.deleter
    check_tensor(mt.dl_tensor, buf)


@pytest.mark.parametrize("kwargs", [{}, {"max_version": None}, {"max_version": (0, 8)}])
def test_legacy_capsule(kwargs):
    buf = bl.Buffer(40)
    cap = buf.__dlpack__(**kwargs)
    assert capsule_name(cap) == "dltensor"
    assert capsule_is_valid(cap, "dltensor")
    mt, _ = managed_tensor(cap)
    assert mt.deleter
    check_tensor(mt.dl_tensor, buf)


def test_dlpack_keywords():
    buf = bl.Buffer(8)
    for kwargs in [{"stream": None}, {"dl_device": (KDL_CPU, 0)}, {"copy": False}, {"copy": None}]:
        cap = buf.__dlpack__(max_version=(1, 0), **kwargs)
        mt, _ = managed_tensor(cap)
        assert mt.dl_tensor.data + mt.dl_tensor.byte_offset == buf.address
        assert mt.flags & DLPACK_FLAG_IS_COPIED == 0
    with pytest.raises((BufferError, ValueError, TypeError)):
        buf.__dlpack__(max_version=(1, 0), dl_device=(2, 0))  # CUDA: not ours


def test_dlpack_copy_true_copies():
    buf = bl.Buffer(16)
    buf.view("|u1")[:] = range(16)
    cap = buf.__dlpack__(max_version=(1, 0), copy=True)
    mt, _ = managed_tensor(cap)
    t = mt.dl_tensor
    assert mt.flags & DLPACK_FLAG_IS_COPIED
    assert t.data + t.byte_offset != buf.address
    assert tensor_shape(t) == (16,)
    assert (ctypes.c_uint8 * 16).from_address(t.data + t.byte_offset)[:] == list(range(16))
    assert buf.exports == 0  # the copy does not pin this buffer
    del cap


def test_read_only_buffer_exports_a_read_only_tensor():
    buf = bl.Buffer.wrap(bytes(range(8)))
    cap = buf.__dlpack__(max_version=(1, 0))
    mt, _ = managed_tensor(cap)
    assert mt.flags & DLPACK_FLAG_READ_ONLY
    check_tensor(mt.dl_tensor, buf)
    del cap
    if NUMPY2:
        arr = np.from_dlpack(buf)
        assert not arr.flags.writeable
        assert arr.tolist() == list(range(8))
        del arr
    # A legacy capsule cannot carry the read-only flag, so none is made.
    with pytest.raises(BufferError, match="versioned"):
        buf.__dlpack__()
    assert buf.exports == 0
    # A copy may be written, so it can go out in a legacy capsule.
    cap = buf.__dlpack__(copy=True)
    assert capsule_name(cap) == "dltensor"


def test_from_dlpack_of_a_buffer():
    a = bl.Buffer(16)
    b = bl.Buffer.from_dlpack(a)
    assert b.address == a.address and b.nbytes == 16 and not b.readonly
    b.view("|u1")[0] = 3
    assert a.view("|u1")[0] == 3
    ro = bl.Buffer.from_dlpack(bl.Buffer.wrap(bytes(4)))
    assert ro.readonly


def test_from_dlpack_refuses_non_producers():
    with pytest.raises((TypeError, AttributeError, BufferError)):
        bl.Buffer.from_dlpack(b"not a tensor")


# --- pickle ----------------------------------------------------------------------------------


def test_pickle_5_out_of_band_is_zero_copy():
    buf = bl.Buffer(4096)
    buf.view("<i8")[:] = np.arange(512)
    bufs = []
    data = pickle.dumps(buf, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and isinstance(bufs[0], pickle.PickleBuffer)
    assert len(data) < 1024  # the bytes did not go in band
    assert memoryview(bufs[0]).nbytes == 4096
    back = pickle.loads(data, buffers=bufs)
    assert isinstance(back, bl.Buffer)
    assert back.address == buf.address and back.nbytes == 4096
    assert not back.readonly
    assert back.view("<i8").tolist() == list(range(512))
    back.view("<i8")[0] = -5
    assert buf.view("<i8")[0] == -5


def test_pickle_5_out_of_band_keeps_read_only():
    buf = bl.Buffer.wrap(bytes(range(16)))
    bufs = []
    data = pickle.dumps(buf, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and memoryview(bufs[0]).readonly
    back = pickle.loads(data, buffers=bufs)
    assert back.readonly and back.address == buf.address
    assert not back.view("|u1").flags.writeable


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_in_band_copies(protocol):
    buf = bl.Buffer(24, align=8)
    buf.view("<f8")[:] = [1.5, -0.0, np.inf]
    back = pickle.loads(pickle.dumps(buf, protocol=protocol))
    assert isinstance(back, bl.Buffer)
    assert back.nbytes == 24 and back.address != buf.address
    assert bytes(memoryview(back)) == bytes(memoryview(buf))
    assert not back.readonly
    assert back.address % 8 == 0
    back.view("|u1")[0] = 1
    assert buf.view("|u1")[0] == 0


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_in_band_keeps_read_only(protocol):
    back = pickle.loads(pickle.dumps(bl.Buffer.wrap(b"\x01\x02\x03\x04"), protocol=protocol))
    assert back.readonly
    assert bytes(memoryview(back)) == b"\x01\x02\x03\x04"


def test_pickle_5_received_as_read_only_bytes_gives_a_writable_copy():
    """As when the out-of-band data crossed a process boundary and arrived as bytes."""
    buf = bl.Buffer(32)
    buf.view("<u8")[:] = [1, 2, 3, 4]
    bufs = []
    data = pickle.dumps(buf, protocol=5, buffer_callback=bufs.append)
    received = bytes(bufs[0].raw())
    back = pickle.loads(data, buffers=[received])
    assert not back.readonly
    assert back.address != buf.address and back.address % 64 == 0
    assert back.view("<u8").tolist() == [1, 2, 3, 4]
    back.view("<u8")[0] = 9
    assert buf.view("<u8")[0] == 1 and received[0] == 1


def test_pickled_empty_buffer():
    back = pickle.loads(pickle.dumps(bl.Buffer(0), protocol=4))
    assert back.nbytes == 0


def test_out_of_band_pickle_outlives_the_original(collect):
    buf = bl.Buffer(16)
    buf.view("<u4")[:] = [1, 2, 3, 4]
    bufs = []
    data = pickle.dumps(buf, protocol=5, buffer_callback=bufs.append)
    back = pickle.loads(data, buffers=bufs)
    del buf, bufs
    collect()
    assert back.view("<u4").tolist() == [1, 2, 3, 4]


# --- bfloat16 --------------------------------------------------------------------------------


BF16_SAMPLES = np.array([0.0, -0.0, 1.0, -0.5, 3.0, 1e-3, 65504.0, 3.4e38, -1e-40, np.inf, -np.inf, 1 / 3,
                         2.0**-133], dtype=np.float32)


@pytest.mark.parametrize("spec", ["bfloat16", "bf16", ml_dtypes.bfloat16, BF16])
def test_bf16_writes_match_ml_dtypes(spec):
    buf = bl.Buffer(2 * len(BF16_SAMPLES))
    v = buf.view(spec)
    assert v.dtype == BF16 and v.shape == (len(BF16_SAMPLES),)
    v[:] = BF16_SAMPLES
    assert bytes(memoryview(buf)) == BF16_SAMPLES.astype(BF16).tobytes()


def test_bf16_reads_match_ml_dtypes():
    bits = np.array([0x3F80, 0xBF00, 0x4040, 0x7F80, 0xFF80, 0x0001, 0x8000, 0x7FC0, 0x3EAB], dtype="<u2")
    buf = bl.Buffer.from_bytes(bits.tobytes())
    v = buf.view("bfloat16")
    widened = v.astype(np.float32)
    expected = (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(widened.view(np.uint32), expected.view(np.uint32))
    assert np.array_equal(v.view("<u2"), bits)
    assert float(v[0]) == 1.0 and float(v[1]) == -0.5
    assert np.isnan(v[7])


def test_bf16_big_endian():
    buf = bl.Buffer.from_bytes(bytes.fromhex("40403f80"))
    # No numpy array can hold it (test_hostile); the layout still describes it.
    with pytest.raises(bl.LayoutError, match="big-endian bfloat16"):
        buf.view(BF16_BE)
    layout = bl.Layout(">bfloat16", (2,))
    assert (layout.dtype, layout.nbytes) == (">bfloat16", 4)
    assert buf.view(bl.Layout("<bfloat16", (2,))).astype(np.float32).tolist() == [
        float(np.frombuffer(bytes.fromhex("4040"), BF16)[0]),
        float(np.frombuffer(bytes.fromhex("3f80"), BF16)[0]),
    ]


def test_bf16_layout_dtype_string():
    assert bl.Layout("bfloat16", (1,)).dtype == "<bfloat16"
    assert bl.Layout("bfloat16", (1,)).itemsize == 2


def test_bf16_without_ml_dtypes_says_what_to_install():
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['ml_dtypes'] = None\n"  # makes `import ml_dtypes` fail
        "import bytelens as bl\n"
        "buf = bl.Buffer(8)\n"
        "assert buf.view('<f2').shape == (4,)\n"  # other dtypes are unaffected
        "try:\n"
        "    buf.view('bf16')\n"
        "except ModuleNotFoundError as err:\n"
        "    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "pip install ml-dtypes" in result.stdout
