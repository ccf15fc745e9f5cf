"""Hostile input: each test here crashed, hung or misreported before its fix.

Calls that used to crash the interpreter run in a child process, so that a
regression fails the test instead of killing the test runner.
"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import bytelens as bl
from _support import BF16, BF16_BE, run_child


# 1. np.frombuffer and np.ndarray(buffer=) keep the address with only a
# reference to the Buffer: close() must not free memory they can reach.

@pytest.mark.parametrize(
    "make",
    [
        "np.frombuffer(buf, np.uint8)",
        "np.ndarray((1 << 20,), np.uint8, buffer=buf)",
    ],
)
def test_close_keeps_memory_numpy_can_reach(make):
    code = f"""
        import gc, numpy as np, bytelens as bl
        buf = bl.Buffer(1 << 20)
        a = {make}
        buf.close()
        assert buf.closed
        for _ in range(3):
            # Other allocations may take freed memory; the array must not see them.
            junk = [bytearray(b"\\xab" * (1 << 20)) for _ in range(8)]
            a[:] = 7
            assert int(a.sum()) == 7 << 20, a.sum()
            del junk
            gc.collect()
        del buf
        gc.collect()
        a[:] = 9
        assert int(a.sum()) == 9 << 20
        print("ok")
    """
    rc, out = run_child(code)
    assert rc == 0 and out.strip().endswith("ok"), out


def test_frombuffer_of_a_memoryview_is_counted():
    """Through a memoryview, numpy keeps an export, and close() refuses."""
    buf = bl.Buffer(64)
    a = np.frombuffer(memoryview(buf), np.uint8)
    with pytest.raises(BufferError, match="1 live export"):
        buf.close()
    del a
    buf.close()


def test_close_after_frombuffer_refuses_new_views():
    buf = bl.Buffer(64)
    a = np.frombuffer(buf, np.uint8)
    buf.close()
    with pytest.raises(ValueError, match="closed"):
        buf.view("<u1")
    with pytest.raises(ValueError, match="closed"):
        memoryview(buf)
    assert a.base is buf and a.sum() == 0


def test_close_frees_at_once_without_buffer_protocol_exports():
    buf = bl.Buffer(64)
    v = buf.view("<u4")
    with pytest.raises(BufferError, match="1 live export"):
        buf.close()
    del v
    buf.close()
    assert buf.closed and "closed" in repr(buf)


def test_memory_freed_with_the_buffer_after_frombuffer():
    """The deferred free happens: the Buffer (and its memory) goes with the last array."""
    import weakref

    buf = bl.Buffer(64)
    a = np.frombuffer(buf, np.uint8)
    ref = weakref.ref(buf)
    buf.close()
    del buf
    assert ref() is not None  # the array keeps it
    del a
    assert ref() is None


# 2. Object arrays hold PyObject* pointers: no Buffer may wrap them.

@pytest.mark.parametrize(
    "obj",
    [
        lambda: np.array([object(), object()]),
        lambda: np.array([[1, "a"], [None, 2.0]], dtype=object),
        lambda: memoryview(np.array([object()])),
        lambda: np.zeros(3, dtype=[("x", "<i4"), ("o", "O")]),
    ],
)
def test_wrap_refuses_object_references(obj):
    with pytest.raises(BufferError, match="object references"):
        bl.Buffer.wrap(obj())
    with pytest.raises(BufferError, match="object references"):
        bl.Buffer.from_bytes(obj())


def test_wrap_still_takes_named_struct_fields():
    """A field named O is a name, not an object reference."""
    a = np.zeros(2, dtype=[("O", "<i4")])
    assert bl.Buffer.wrap(a).nbytes == 8


def test_writing_through_object_array_cannot_happen():
    code = """
        import numpy as np, bytelens as bl
        a = np.array([object(), object()])
        try:
            bl.Buffer.wrap(a).view("<u8")[:] = 1
        except BufferError:
            pass
        print(len(repr(a)) > 0 and "ok")
    """
    rc, out = run_child(code)
    assert rc == 0 and out.strip().endswith("ok"), out


# 4 and 9. Only regular files are mapped; nothing blocks.

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this OS")
def test_map_of_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code = f"""
        import bytelens as bl
        for mode in ("r", "r+", "c"):
            try:
                bl.Buffer.map({str(fifo)!r}, mode)
            except OSError as err:
                assert "FIFO" in str(err) and "regular files" in str(err), err
            else:
                raise SystemExit("mapped a FIFO")
        print("ok")
    """
    # Before: open() waited for a writer forever, holding the GIL.
    rc, out = run_child(code, timeout=30)
    assert rc == 0 and out.strip().endswith("ok"), out


def test_map_does_not_hold_the_gil_while_opening(tmp_path):
    """Another thread runs while map() opens a file (here a quick one)."""
    path = tmp_path / "f"
    path.write_bytes(b"\0" * 4096)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=tick)
    t.start()
    try:
        for _ in range(200):
            bl.Buffer.map(path).close()
    finally:
        stop.set()
        t.join()
    assert ticks


def test_map_of_a_directory_is_isadirectoryerror(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        bl.Buffer.map(tmp_path)


def test_map_of_a_device_is_refused():
    with pytest.raises(OSError, match="character device"):
        bl.Buffer.map("/dev/null")


# 5. Big-endian bfloat16: no numpy array can read it right, so none is made.

def test_big_endian_bf16_views_are_refused_with_a_recipe():
    buf = bl.Buffer.from_bytes(bytes.fromhex("40403f80"))
    for dtype in (">bf16", ">bfloat16", BF16_BE, bl.Layout(">bf16", (2,))):
        with pytest.raises(bl.LayoutError, match="big-endian bfloat16") as err:
            buf.view(dtype)
        assert err.value.kind == "BadDType"
    # The recipe in the message gives the right values.
    values = buf.view(">u2").astype("<u2").view(BF16)
    assert values.tolist() == [3.0, 1.0]
    # Little-endian bfloat16 is untouched.
    assert bl.Buffer.from_bytes(bytes.fromhex("40403f80")).view("<bf16").dtype == BF16


def test_big_endian_bf16_plan_fields_and_results_are_refused():
    plan = bl.Plan("P").struct(x=(">bf16", 2))
    with pytest.raises(bl.LayoutError, match="big-endian bfloat16"):
        bl.Buffer(plan.nbytes).arrays(plan)
    with pytest.raises(bl.LayoutError, match="big-endian bfloat16"):
        bl.ascontiguous(np.ones(3, np.float32), BF16_BE)


def test_big_endian_bf16_arrays_are_still_read_as_sources():
    """An array someone made with the dtype converts right: the core reads it."""
    a = np.frombuffer(bytes.fromhex("40403f80"), BF16_BE)
    assert bl.ascontiguous(a, np.float32).tolist() == [3.0, 1.0]
    assert bl.ascontiguous(a, BF16).astype(np.float32).tolist() == [3.0, 1.0]


# 10 and 11. Numbers past 64 bits and out-of-range axes are LayoutErrors
# that print the number as given; names in messages are escaped.

@pytest.mark.parametrize(
    "call",
    [
        lambda: bl.Layout("<u1", (2,), (2**63,)),
        lambda: bl.Layout("<u1", (2,), offset=2**63),
        lambda: bl.Layout("<u1", (2**64,)),
        lambda: bl.Buffer(8).view("<u1", offset=2**63),
        lambda: bl.Buffer(8).view("<u1", offset=-(2**63) - 1),
        lambda: bl.Buffer(8).view("<u1", 0, (2,), (2**70,)),
        lambda: bl.Layout("<u1", (4,)).slice(0, 2**63),
        lambda: bl.Layout("<u1", (4,)).index(0, -(2**64)),
        lambda: bl.Layout("<u1", (4,)).reshape((2**65,)),
    ],
)
def test_numbers_past_64_bits_are_layout_errors(call):
    with pytest.raises(bl.LayoutError) as err:
        call()
    assert err.value.kind == "Overflow"
    assert "is outside the range" in str(err.value)
    assert not isinstance(err.value, OverflowError)


def test_huge_numbers_are_not_written_out():
    with pytest.raises(bl.LayoutError, match="an integer of 33220 bits") as err:
        bl.Buffer(8).view("<u1", offset=10**10000)
    assert len(str(err.value)) < 300


def test_offset_message_shows_the_number():
    with pytest.raises(bl.LayoutError, match="9223372036854775808 is outside"):
        bl.Buffer(8).view("<u1", offset=2**63)


@pytest.mark.parametrize(
    "call, shown",
    [
        (lambda l: l.slice(-(2**63), 0, 1), "axis -9223372036854775808 "),
        (lambda l: l.permute([-(2**62), 0]), "axis -4611686018427387904 "),
        (lambda l: l.index(-3, 0), "axis -3 "),
        (lambda l: l.index(2, 0), "axis 2 "),
    ],
)
def test_bad_axes_print_as_given(call, shown):
    with pytest.raises(bl.LayoutError, match=shown) as err:
        call(bl.Layout("<u1", (2, 3)))
    assert err.value.kind == "BadAxis"
    assert "18446744073709551615" not in str(err.value)


def test_negative_axes_still_count_from_the_end():
    layout = bl.Layout("<u1", (2, 3))
    assert layout.slice(-1, 0, 2).shape == (2, 2)
    assert layout.permute([-1, -2]).shape == (3, 2)


@pytest.mark.parametrize(
    "name, shown",
    [("P\r\n", r'"P\r\n"'), ("P\0x", r'"P\0x"'), ('a"b', r'"a\"b"'), ("x\x1b[2J", r'"x\u{1b}[2J"')],
)
def test_names_in_messages_are_escaped(name, shown):
    with pytest.raises(bl.LayoutError) as err:
        bl.Plan(name)
    message = str(err.value)
    assert shown in message, message
    assert "\r" not in message and "\n" not in message and "\0" not in message


def test_messages_stay_short_whatever_the_argument():
    with pytest.raises(ValueError) as err:
        bl.Buffer.map("/dev/null", mode="x" * 1_000_000)
    assert len(str(err.value)) < 300
    with pytest.raises(bl.LayoutError) as err:
        bl.Buffer(8).view("\n" * 1_000_000)
    assert len(str(err.value)) < 300


# The state machine over every way of reaching memory (_stateful_memory.py),
# in a child process: reading freed memory may crash instead of failing.

def test_state_machine_over_every_way_of_reaching_memory():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_stateful_memory.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=900)
    output = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"exit status {done.returncode}\n{output}"
    assert "OK" in output
