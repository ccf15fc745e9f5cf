"""Each seed's job (shared/seeds/*.txt), done the bytelens way.

- 003: one buffer seen as int32 and int16; an external buffer; the 3-byte
  buffer that cannot be int16 while its 2-byte prefix can; float arrays
  A, B, C in one phase and int arrays D, E over the same bytes in another;
  ten bytes written as int16 and read as int32.
- 000/001/004: a C library fills an array in place through its address, and
  arrays move between numpy and a DLPack consumer/producer without copies.
- 002: a transposed view handed back to numpy without a copy.
"""

import ctypes
import struct

import numpy as np
import pytest

import bytelens as bl
from _support import NUMPY2, address_of


# --- seed 003: the same bytes as int32 and int16 ------------------------------------


def test_int32_0x11223344_reads_as_int16_halves():
    buf = bl.Buffer(16)
    ints32 = buf.view("<i4")
    assert len(ints32) == 4
    ints16 = buf.view("<i2")
    assert len(ints16) == 8
    ints32[0] = 0x11223344
    assert ints16[0] == 0x3344 and ints16[1] == 0x1122
    assert ints16.tolist() == [13124, 4386, 0, 0, 0, 0, 0, 0]
    assert np.shares_memory(ints32, ints16)
    assert bytes(memoryview(buf))[:4] == bytes.fromhex("44332211")


def test_big_endian_halves_come_high_first():
    buf = bl.Buffer(4)
    buf.view(">i4")[0] = 0x11223344
    assert buf.view(">i2").tolist() == [0x1122, 0x3344]
    assert buf.view("<i2").tolist() == [0x2211, 0x4433]


def test_external_bytearray_is_written_through_a_float_view():
    external = bytearray(8)
    buf = bl.Buffer.wrap(external)
    floats32 = buf.view("<f4")
    floats32[0] = 1
    assert external == bytearray.fromhex("0000803f00000000")
    assert buf.address == address_of(np.frombuffer(external, np.uint8))


def test_three_byte_buffer_is_not_int16_but_its_prefix_is():
    buf = bl.Buffer(3)
    with pytest.raises(bl.LayoutError) as e:
        buf.view("<i2")
    assert not isinstance(e.value, (bl.AlignmentError, bl.BoundsError))
    assert "3" in str(e.value) and "2" in str(e.value)
    with pytest.raises(bl.LayoutError):
        buf.view(np.int16)

    two_byte_prefix = buf.view("<i2", shape=(1,))
    two_byte_prefix[0] = 1
    assert buf.view("|i1").tolist() == [1, 0, 0]
    assert np.shares_memory(two_byte_prefix, buf.view("|u1"))

    # The same through a Layout: the 3 bytes, sliced to 2, reinterpreted.
    prefix = bl.Layout("|i1", (3,)).slice(0, None, 2).reinterpret("<i2")
    assert prefix.shape == (1,)
    assert buf.view(prefix).tolist() == [1]
    with pytest.raises(bl.LayoutError):
        bl.Layout("|i1", (3,)).reinterpret("<i2")


def test_ten_bytes_as_int16_then_int32():
    """The multiprocessing answer: int16 0..4 written, the first 8 bytes read as int32."""
    buf = bl.Buffer(10)
    arr = buf.view("<i2")
    assert arr.sum() == 0 and len(arr) == 5
    arr[:] = range(len(arr))
    total = buf.view("<i4", shape=(2,)).sum()
    assert total == 262146
    assert list(bytes(memoryview(buf))) == [0, 0, 1, 0, 2, 0, 3, 0, 4, 0]


# --- seed 003: arrays A, B, C as float32 in one phase, D, E as int32 in another ----------


def phases():
    return (
        bl.Plan()
        .struct(A=("f4", (3,)), B=("f4", 2), C="f4")
        .union(D=("i4", (2,)), E=np.dtype("<i4"))
    )


def test_plan_offsets_and_size():
    plan = phases()
    assert plan.offsets == {"A": 0, "B": 12, "C": 20, "D": 0, "E": 8}
    assert plan.nbytes == 24
    assert plan.align == 4
    fields = plan.fields
    assert [f[0] for f in fields] == ["A", "B", "C", "D", "E"]
    assert fields[0] == ("A", "<f4", (3,), 0, 0)
    assert fields[1] == ("B", "<f4", (2,), 12, 0)
    assert fields[2] == ("C", "<f4", (), 20, 0)
    assert fields[3] == ("D", "<i4", (2,), 0, 1)
    assert fields[4] == ("E", "<i4", (), 8, 1)


def test_plan_is_immutable():
    empty = bl.Plan()
    one = empty.struct(A=("f4", 4))
    two = one.struct(B="f8")
    assert empty.offsets == {} and empty.nbytes == 0
    assert one.offsets == {"A": 0} and one.nbytes == 16
    assert two.offsets == {"A": 0, "B": 16} and two.nbytes == 24 and two.align == 8


def test_floats_written_in_one_phase_are_ints_in_the_other():
    plan = phases()
    buf = bl.Buffer(plan.nbytes)
    arrays = buf.arrays(plan)
    assert set(arrays) == {"A", "B", "C", "D", "E"}
    for name, arr in arrays.items():
        assert arr.flags.c_contiguous and arr.flags.writeable
        assert np.shares_memory(arr, np.asarray(memoryview(buf)))
        assert address_of(arr) == buf.address + plan.offsets[name]
    assert arrays["A"].shape == (3,) and arrays["A"].dtype == np.float32
    assert arrays["C"].shape == () and arrays["E"].shape == ()
    assert arrays["D"].dtype == np.int32

    arrays["A"][:] = [1.5, -2.0, 0.25]
    arrays["B"][:] = [3.0, 4.0]
    arrays["C"][()] = 5.0
    raw = bytes(memoryview(buf))
    assert raw == struct.pack("<6f", 1.5, -2.0, 0.25, 3.0, 4.0, 5.0)
    # Phase two reads the same bytes as int32.
    assert arrays["D"].tolist() == list(struct.unpack("<2i", raw[:8]))
    assert int(arrays["E"]) == struct.unpack("<i", raw[8:12])[0] == 1048576000
    # ...and writes them.
    arrays["D"][:] = [7, -7]
    assert arrays["A"][:2].view(np.int32).tolist() == [7, -7]
    assert bytes(memoryview(buf))[:8] == struct.pack("<2i", 7, -7)


def test_mixed_dtypes_are_padded_and_rounded():
    plan = bl.Plan().struct(tag="u1", value="f8", flag="?")
    assert plan.offsets == {"tag": 0, "value": 8, "flag": 16}
    assert plan.align == 8 and plan.nbytes == 24
    assert plan.padding() == [(1, 8), (17, 24)]
    assert plan.padding(0) == [(1, 8), (17, 24)]
    union = plan.union(x=("u2", 3))
    assert union.padding(1) == [(6, 24)]
    assert union.nbytes == 24


def test_arrays_needs_a_buffer_big_enough():
    plan = phases()
    with pytest.raises(bl.LayoutError):
        bl.Buffer(plan.nbytes - 4).arrays(plan)


def test_plan_wgsl():
    plan = bl.Plan("Particles").struct(pos=("f4", (8, 3)), id=("u4", (8,)))
    assert plan.wgsl() == (
        "// bytelens plan: 128 bytes, storage address space\n"
        "struct Particles {\n"
        "    pos: array<array<f32, 3>, 8>, // offset 0, 96 bytes\n"
        "    id: array<u32, 8>, // offset 96, 32 bytes\n"
        "}\n"
    )
    two = phases().wgsl()
    assert "struct Plan0 {" in two and "struct Plan1 {" in two
    assert "A: array<f32, 3>" in two and "D: array<i32, 2>" in two
    with pytest.raises(ValueError):
        bl.Plan().struct(counts=("i2", 4)).wgsl()  # WGSL has no int16


@pytest.mark.parametrize("build", [
    lambda: bl.Plan().struct(A="f4").struct(A="i4"),  # repeated name
    lambda: bl.Plan().struct(A="f4").union(A="i4"),  # repeated across alternatives
    lambda: bl.Plan().struct(A="c8"),  # unsupported dtype
    lambda: bl.Plan("2fast"),  # not an identifier
])
def test_plan_errors(build):
    with pytest.raises(ValueError):
        build()


# --- seeds 000/001/004: a C library fills an array in place, no copy -------------------


def test_c_library_fills_the_view_through_its_address():
    buf = bl.Buffer(64)
    m = buf.view("<f4", shape=(4, 4))
    assert address_of(m) == buf.address
    assert buf.address % 64 == 0

    # "Call the C library": memset, then a ctypes float array over the same address.
    ctypes.memset(buf.address, 0xFF, buf.nbytes)
    assert np.isnan(m).all()
    c_floats = (ctypes.c_float * 16).from_address(buf.address)
    for i in range(16):
        c_floats[i] = i * 0.5
    assert m.tolist() == (np.arange(16, dtype=np.float32) * 0.5).reshape(4, 4).tolist()

    # And memmove from C-owned memory into the middle of the buffer.
    src = (ctypes.c_float * 4)(9, 8, 7, 6)
    ctypes.memmove(buf.address + 16, src, 16)
    assert m[1].tolist() == [9, 8, 7, 6]


def test_ctypes_sees_writes_made_through_numpy():
    buf = bl.Buffer(16)
    v = buf.view("<i4")
    v[:] = [1, 2, 3, -4]
    c_ints = (ctypes.c_int32 * 4).from_address(buf.address)
    assert list(c_ints) == [1, 2, 3, -4]


# --- numpy <-> DLPack, both ways, no copies --------------------------------------------


def test_numpy_consumes_a_buffer_without_copying():
    buf = bl.Buffer(32)
    buf.view("<i4")[:] = np.arange(8)
    arr = np.from_dlpack(buf)
    assert arr.dtype == np.uint8 and arr.shape == (32,)
    assert address_of(arr) == buf.address
    assert np.shares_memory(arr, buf.view("|u1"))
    assert arr.view("<i4").tolist() == list(range(8))
    buf.view("<i4")[0] = 100
    assert arr[0] == 100
    if NUMPY2:  # versioned capsule: writable
        assert arr.flags.writeable
        arr[4] = 42
        assert buf.view("<i4")[1] == 42
    else:  # numpy 1.26 takes the legacy capsule and marks it read-only
        assert not arr.flags.writeable


NUMPY_2 = int(np.__version__.split(".")[0]) >= 2


def test_buffer_from_numpy_dlpack_without_copying():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    buf = bl.Buffer.from_dlpack(a)
    assert buf.address == address_of(a)
    assert buf.nbytes == a.nbytes
    m = buf.view("<f4", shape=(3, 4))
    assert np.shares_memory(m, a)
    if not NUMPY_2:
        # numpy 1.26 exports legacy capsules, which cannot say whether the memory
        # may be written: bytelens, like numpy 2, treats them as read-only.
        assert buf.readonly and not m.flags.writeable
        a[0, 0] = 7
        assert m[0, 0] == 7
        return
    assert not buf.readonly
    m[2, 3] = -1
    assert a[2, 3] == -1
    a[0, 0] = 7
    assert m[0, 0] == 7


def test_round_trip_numpy_buffer_numpy():
    a = np.arange(10, dtype=np.int64)
    b = bl.Buffer.from_dlpack(a)
    if not NUMPY_2:
        # b is read-only (numpy 1.26 sends a legacy capsule), and read-only memory
        # goes out only in versioned capsules, which numpy 1.26 cannot take
        # (numpy 1.26 refuses read-only arrays the same way); the buffer protocol works.
        with pytest.raises(BufferError, match="versioned"):
            np.from_dlpack(b)
        back = np.asarray(b).view(np.int64)
        c = bl.Buffer.wrap(b.view("<i8"))
    else:
        back = np.from_dlpack(b).view(np.int64)
        c = bl.Buffer.from_dlpack(b.view("<i8"))
    assert np.shares_memory(a, back)
    assert back.tolist() == list(range(10))
    assert c.address == b.address == address_of(a)


def test_from_dlpack_covers_the_bytes_a_strided_tensor_spans():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    sub = base[1:3, 2:5]  # rows 1..2, columns 2..4
    buf = bl.Buffer.from_dlpack(sub)
    assert buf.address == address_of(sub)
    assert buf.nbytes == (6 + 3) * 4  # from [1, 2] through [2, 4] inclusive
    again = buf.view("<i4", shape=(2, 3), strides=(24, 4))
    assert again.tolist() == sub.tolist()
    assert np.shares_memory(again, base)


def test_from_dlpack_of_a_reversed_tensor_starts_at_its_lowest_byte():
    base = np.arange(5, dtype=np.int16)
    rev = base[::-1]
    buf = bl.Buffer.from_dlpack(rev)
    assert buf.address == address_of(base)
    assert buf.nbytes == 10
    assert buf.view("<i2").tolist() == [0, 1, 2, 3, 4]


def test_from_dlpack_of_a_read_only_array():
    a = np.arange(4, dtype=np.float64)
    a.setflags(write=False)
    if NUMPY2:
        buf = bl.Buffer.from_dlpack(a)
        assert buf.readonly
        assert buf.address == address_of(a)
        v = buf.view("<f8")
        assert not v.flags.writeable
        with pytest.raises(ValueError):
            v[0] = 1
    else:
        # numpy 1.26 cannot signal read-only over DLPack, so it refuses to export.
        with pytest.raises(BufferError):
            bl.Buffer.from_dlpack(a)


# --- seed 002: a transposed view handed back to numpy without a copy ----------------------


def test_transposed_view_goes_back_to_numpy_without_a_copy():
    buf = bl.Buffer(24)
    m = buf.view("<f4", shape=(2, 3))
    m[:] = [[1, 2, 3], [4, 5, 6]]
    t = buf.view("<f4", shape=(3, 2), strides=(4, 12))
    assert t.strides == (4, 12)
    assert t.flags.f_contiguous and not t.flags.c_contiguous
    assert np.shares_memory(t, m)
    assert np.asarray(t) is t
    assert t.tolist() == m.T.tolist()
    assert t.sum(axis=0).tolist() == [6.0, 15.0]
    assert (t @ np.ones(2, np.float32)).tolist() == [5.0, 7.0, 9.0]
    # A memoryview of it (what Cython keeps) and back: still the same memory.
    back = np.asarray(memoryview(t))
    assert np.shares_memory(back, m) and back.strides == (4, 12)
    back[2, 0] = -3
    assert m[0, 2] == -3
    # The Layout way gives the same array.
    lt = buf.view(bl.Layout("<f4", (2, 3)).transpose())
    assert lt.strides == t.strides and np.array_equal(lt, t)


def test_4d_transpose_of_the_seed():
    """out_image.transpose(1, 0, 2, 3) over a bytelens buffer."""
    buf = bl.Buffer(2 * 3 * 4 * 5 * 8)
    x = buf.view("<f8", shape=(2, 3, 4, 5))
    x[...] = np.arange(x.size).reshape(x.shape)
    y = buf.view(bl.Layout("<f8", (2, 3, 4, 5)).permute((1, 0, 2, 3)))
    assert np.shares_memory(x, y)
    assert np.array_equal(y, x.transpose(1, 0, 2, 3))
    assert y.strides == x.transpose(1, 0, 2, 3).strides
