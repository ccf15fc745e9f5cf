"""bytelens' Dask deserializer fed headers and frames from elsewhere: it
either raises ValueError naming what is wrong, or returns a Buffer of
exactly the frame's bytes, and touches no byte outside the frame and the
spare bytes after it."""

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytelens as bl
from _support import run_child

_dask = pytest.importorskip("bytelens._dask")


def _block(data, spare, lead, tail=64):
    """One writable block holding `lead` guard bytes, `data`, `spare` spare
    bytes and `tail` guard bytes; the two frames as memoryviews of it."""
    block = bytearray(b"\xaa" * lead + bytes(data) + b"\x55" * spare + b"\xcc" * tail)
    view = memoryview(block)
    n = len(data)
    return block, [view[lead:lead + n], view[lead + n:lead + n + spare]]


def test_a_negative_align_does_not_move_bytes_below_the_frame():
    # It once made the pad negative and memmoved the frame 63 bytes down.
    block, frames = _block(bytes(range(1, 9)), 63, lead=64)
    before = bytes(block)
    with pytest.raises(ValueError, match='"align" is -64'):
        _dask.deserialize_buffer({"align": -64, "readonly": False}, frames)
    assert bytes(block) == before


def test_a_frame_at_the_start_of_its_allocation_with_align_minus_4096_does_not_crash():
    # It once freed a pointer below the allocation: "free(): invalid pointer".
    code = """
    import numpy as np
    from bytelens import _dask
    block = np.zeros(4096 + 8192, np.uint8)
    start = (-block.ctypes.data) % 4096
    block[start:start + 8] = np.arange(1, 9)
    view = memoryview(block)
    frames = [view[start:start + 8], view[start + 8:start + 8 + 4095]]
    try:
        _dask.deserialize_buffer({"align": -4096, "readonly": False}, frames)
    except ValueError as err:
        print("refused:", err)
    del frames, view, block
    import gc; gc.collect()
    print("alive")
    """
    code_, out = run_child(code, timeout=60)
    assert code_ == 0 and "alive" in out and "refused:" in out, out


@pytest.mark.parametrize(
    "header, says",
    [
        ({"readonly": False}, 'no "align"'),
        ({"align": 0, "readonly": False}, '"align" is 0'),
        ({"align": 3, "readonly": False}, '"align" is 3'),
        ({"align": 1 << 40, "readonly": False}, '"align" is 1099511627776'),
        ({"align": 64.0, "readonly": False}, '"align" is float'),
        ({"align": True, "readonly": False}, '"align" is bool'),
        ({"align": "64", "readonly": False}, '"align" is str'),
        ({"align": 64}, 'no "readonly"'),
        ({"align": 64, "readonly": 0}, '"readonly" is int'),
        ({"align": 64, "readonly": False, "moved": 5}, '"moved"'),
        ({"align": 64, "readonly": False, "moved": -5}, '"moved"'),
        ({"align": 64, "readonly": False, "moved": 64}, '"moved"'),
        ({"align": 64, "readonly": False, "moved": "5"}, '"moved"'),
        ({"align": 64, "readonly": False, "moved": 5, "moved_check": "0" * 32}, '"moved"'),
        ([("align", 64)], "dict"),
    ],
)
def test_bad_headers_are_value_errors_naming_the_field(header, says):
    block, frames = _block(bytes(range(1, 9)), 63, lead=3)
    before = bytes(block)
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        _dask.deserialize_buffer(header, frames)
    assert bytes(block) == before


def test_a_moved_from_the_network_is_not_read_from():
    # {"moved": 5} once returned 06 07 08 00 ... for a frame of 01..08.
    for moved in (5, -5, 1):
        block, frames = _block(bytes(range(1, 9)), 63, lead=3)
        with pytest.raises(ValueError, match='"moved"'):
            _dask.deserialize_buffer({"align": 64, "readonly": False, "moved": moved}, frames)


@pytest.mark.parametrize(
    "frames, says",
    [
        ([b"abc"], "2 frames"),
        ([b"abc", b"", b""], "2 frames"),
        ("ab", "2 frames"),
        ([b"abc", 5], "frame 1"),
        ([memoryview(np.arange(8, dtype=np.uint8))[::2], b""], "frame 0"),
    ],
)
def test_bad_frames_are_value_errors(frames, says):
    with pytest.raises(ValueError, match=says):
        _dask.deserialize_buffer({"align": 64, "readonly": False}, frames)


def test_a_recorded_move_is_found_again_and_only_for_its_frames():
    data = bytes(range(1, 201))
    block, frames = _block(data, 63, lead=3)
    header = {"align": 64, "readonly": False}
    first = _dask.deserialize_buffer(header, frames)
    assert bytes(first.view("|u1")) == data and first.address % 64 == 0
    again = _dask.deserialize_buffer(header, frames)  # moved already: found, not moved twice
    assert again.address == first.address and bytes(again.view("|u1")) == data
    assert header == {"align": 64, "readonly": False}  # the record is in the frames, not the header
    # Other frames under the same header are moved as their own.
    other, other_frames = _block(data, 63, lead=3)
    moved = _dask.deserialize_buffer(dict(header), other_frames)
    assert moved.address % 64 == 0 and bytes(moved.view("|u1")) == data


@pytest.mark.parametrize("align, pad", [(64, 3), (64, 50), (32, 3), (32, 20), (4096, 4000)])
def test_a_copied_header_does_not_move_the_frames_twice(align, pad):
    # deserialize_buffer(dict(h), frames) twice once moved the bytes again:
    # a wrong second Buffer, and the first one's bytes changed under it.
    # (Moves by `pad` leave their record after the moved bytes where the
    # spare bytes have room, else before them.)
    data = bytes(range(1, 201))
    block = np.zeros(2 * align + len(data) + align + 64, np.uint8)
    start = (-block.ctypes.data) % align + align - pad  # `pad` short of a multiple of `align`
    block[start : start + len(data)] = np.frombuffer(data, np.uint8)
    view = memoryview(block)
    frames = [view[start : start + len(data)], view[start + len(data) : start + len(data) + align - 1]]
    header = {"align": align, "readonly": False}
    first = _dask.deserialize_buffer(dict(header), frames)
    assert first.address == block.ctypes.data + start + pad  # moved in place
    second = _dask.deserialize_buffer(dict(header), frames)
    assert second.address == first.address
    assert bytes(first.view("|u1")) == data and bytes(second.view("|u1")) == data


def test_frames_moved_for_one_align_are_refused_for_another():
    data = bytes(range(1, 201))
    block = np.zeros(512, np.uint8)
    start = (-block.ctypes.data) % 128 + 64 - 5  # moved by 5 for 64, by 69 for 128
    block[start : start + 200] = np.frombuffer(data, np.uint8)
    view = memoryview(block)
    frames = [view[start : start + 200], view[start + 200 : start + 200 + 127]]
    first = _dask.deserialize_buffer({"align": 64, "readonly": False}, frames)
    before = bytes(block)
    with pytest.raises(ValueError, match='moved by an earlier deserialize for "align" 64, and the header says 128'):
        _dask.deserialize_buffer({"align": 128, "readonly": False}, frames)
    assert bytes(block) == before and bytes(first.view("|u1")) == data


@settings(max_examples=400, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=300),
    lead=st.integers(0, 200),
    spare=st.integers(0, 300),
    align=st.one_of(
        st.sampled_from([1, 2, 4, 8, 16, 64, 128, 256, 4096]),
        st.integers(-(1 << 70), 1 << 70),
        st.sampled_from([0, -1, -64, -4096, 3, 1 << 31, 1 << 62]),
        st.floats(allow_nan=True),
        st.none(),
        st.text(max_size=3),
    ),
    readonly=st.one_of(st.booleans(), st.integers(-1, 2), st.none()),
    moved=st.one_of(st.none(), st.integers(-(1 << 20), 1 << 20), st.sampled_from([0, 1, 5, 63, 64, -1])),
    check=st.one_of(st.none(), st.text(max_size=40)),
    split=st.integers(-3, 3),
    readonly_block=st.booleans(),
)
def test_arbitrary_headers_and_frames_give_the_frames_bytes_or_a_value_error(
    data, lead, spare, align, readonly, moved, check, split, readonly_block
):
    block = np.frombuffer(bytearray(b"\xaa" * lead + data + b"\x55" * spare + b"\xcc" * 64), np.uint8)
    block.flags.writeable = not readonly_block
    view = memoryview(block)
    n = len(data)
    # split moves the boundary between the frames (a frame that does not end
    # where the spare bytes start), within the block.
    cut = min(max(lead + n + split, lead), lead + n + spare)
    frames = [view[lead:lead + n], view[cut:lead + n + spare]]
    header = {"align": align, "readonly": readonly}
    if moved is not None:
        header["moved"] = moved
    if check is not None:
        header["moved_check"] = check
    before = bytes(block)
    try:
        out = _dask.deserialize_buffer(header, frames)
    except ValueError:
        assert bytes(block) == before  # refused before a byte moved
        return
    assert bytes(out.view("|u1")) == data
    # Read-only when the header says so (or when the frame's memory is: Ray's store).
    assert out.address % align == 0 and (out.readonly or not readonly)
    after = bytes(block)
    # Nothing outside the frame and the spare bytes after it was touched.
    assert after[:lead] == before[:lead] and after[lead + n + spare:] == before[lead + n + spare:]
    low = block.ctypes.data
    if n and low <= out.address < low + block.nbytes:  # in place: inside that range
        assert low + lead <= out.address and out.address + n <= low + lead + n + spare


def test_dask_still_round_trips_buffers_through_its_own_serialize():
    from distributed.protocol import deserialize, serialize

    buf = bl.Buffer(1000)
    buf.view("|u1")[:] = np.arange(1000) % 251
    header, frames = serialize(buf, serializers=("dask",))
    back = deserialize(header, frames)
    assert bytes(back.view("|u1")) == bytes(buf.view("|u1"))
    # Misaligned in one block, as Dask's TCP comm reads it: moved in place.
    raw = (ctypes.c_uint8 * (1000 + 63 + 130))()
    start = 3 + (-ctypes.addressof(raw)) % 64  # 3 bytes past a multiple of 64
    block = memoryview(raw).cast("B")
    block[start:start + 1000] = bytes(buf.view("|u1"))
    sub = serialize(buf, serializers=("dask",))[0]
    moved = deserialize(sub, [block[start:start + 1000], block[start + 1000:start + 1063]])
    assert moved.address % 64 == 0 and bytes(moved.view("|u1")) == bytes(buf.view("|u1"))
