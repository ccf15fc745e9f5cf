"""Edge cases a review from a newcomer's seat turned up, kept fixed."""

import ctypes
import pickle

import numpy as np
import pytest

import bytelens as bl


def test_memoryview_obj_keeps_the_memory_counted():
    buf = bl.Buffer(32)
    m = memoryview(buf)
    owner = m.obj  # what keeps the memory alive: not buf itself
    m.release()
    assert buf.exports == 1
    with pytest.raises(BufferError):
        buf.close()
    assert bytes(memoryview(owner)) == bytes(32)  # it exports the same bytes
    del owner
    buf.close()
    assert buf.closed


def test_pickle_buffer_keeps_the_memory_counted():
    buf = bl.Buffer(32)
    pb = pickle.PickleBuffer(buf)
    with pytest.raises(BufferError):
        buf.close()
    assert pb.raw().nbytes == 32
    del pb
    buf.close()


@pytest.mark.parametrize(
    "make",
    [lambda: (ctypes.c_int32 * 4)(1, 2, 3, 4), lambda: ctypes.c_double(2.5)],
    ids=["array", "scalar"],
)
def test_ctypes_objects_wrap_without_copying(make):
    obj = make()
    buf = bl.Buffer.wrap(obj)
    assert buf.address == ctypes.addressof(obj)
    assert buf.nbytes == ctypes.sizeof(obj)
    assert bytes(bl.Buffer.from_bytes(obj).view("|u1")) == bytes(obj)


def test_wrap_of_an_array_with_the_most_dimensions():
    a = np.zeros((1,) * 31 + (8,), np.uint8)
    buf = bl.Buffer.wrap(a)
    assert buf.nbytes == 8 and buf.address == a.__array_interface__["data"][0]


def test_empty_views_need_no_aligned_address():
    raw = bytearray(9)
    odd = bl.Buffer.wrap(memoryview(raw)[1:])
    assert odd.address % 2 == 1
    assert odd.view("<f8", shape=0).shape == (0,)
    with pytest.raises(bl.AlignmentError):
        odd.view("<f8", shape=1)


def test_scalar_reinterpret_says_why():
    with pytest.raises(bl.LayoutError, match="0-d view of int32 can only be reinterpreted") as e:
        bl.Layout("<i4", ()).reinterpret("u1")
    assert e.value.kind == "ItemsizeMismatch"
    assert bl.Layout("<i4", ()).reinterpret("<f4").dtype == "<f4"


def test_numpy_integers_and_negative_axes_work_as_in_numpy():
    buf = bl.Buffer(64)
    assert buf.view("<i4", shape=np.int64(4)).shape == (4,)
    assert bl.Plan().struct(a=("f4", np.int64(3))).fields[0][2] == (3,)
    layout = bl.Layout("<i4", (2, 3))
    a = np.zeros((2, 3), "<i4")
    assert layout.reshape(-1).shape == a.reshape(-1).shape
    assert layout.reshape((3, -1)).shape == a.reshape(3, -1).shape
    with pytest.raises(ValueError):
        layout.reshape((-1, -1))
    with pytest.raises(ValueError):
        layout.reshape((4, -1))
    assert layout.permute((-1, 0)).strides == a.transpose(-1, 0).strides
    assert layout.index(-1, 0).shape == a[:, 0].shape
    assert layout.slice(-1, 0, 2).shape == a[:, 0:2].shape
    with pytest.raises(bl.LayoutError):
        layout.index(-3, 0)


def test_plan_messages_name_the_real_problem():
    with pytest.raises(bl.LayoutError, match="not a usable name"):
        bl.Plan("my plan")
    with pytest.raises(bl.LayoutError, match="big-endian"):
        bl.Plan().struct(a=(">f4", 2)).wgsl()


def test_out_of_band_pickle_keeps_a_large_alignment():
    buf = bl.Buffer(32, align=8192)
    oob = []
    again = pickle.loads(pickle.dumps(buf, protocol=5, buffer_callback=oob.append), buffers=oob)
    assert again.address == buf.address and again.align == 8192


def test_layout_repr_shows_read_only():
    broadcast = bl.Layout("<i4", (1, 2)).broadcast_to((3, 2)).index(0, 0)
    assert broadcast.readonly and "readonly" in repr(broadcast)
    assert "readonly" not in repr(bl.Layout("<i4", (2,)))
