"""Who keeps the memory alive, and when it goes.

Every numpy view, memoryview and DLPack capsule/array keeps the memory alive
whatever is deleted first; buf.close() frees eagerly but only once no export
is left (BufferError before); `exports` counts the live ones exactly; a
DLPack deleter runs once, consumed or not; and creating and dropping views
many times does not grow the process.
"""

import itertools
import mmap
import pickle
import weakref

import numpy as np
import pytest

import bytelens as bl
from _support import NUMPY2, ArrayInterface, DLPackProducer, address_of, consume, rss_bytes


def versioned_kwargs():
    return {"max_version": (1, 0)} if NUMPY2 else {}


# --- views outlive the buffer ----------------------------------------------------------


def test_view_outlives_buffer(collect):
    buf = bl.Buffer(32)
    v = buf.view("<i4")
    v[:] = range(8)
    address = buf.address
    del buf
    collect()
    assert v.tolist() == list(range(8))
    assert address_of(v) == address
    every_other = v[::2]
    del v
    collect()
    assert every_other.tolist() == [0, 2, 4, 6]
    every_other[0] = 99
    assert every_other[0] == 99


def test_memoryview_outlives_buffer(collect):
    buf = bl.Buffer.from_bytes(b"abcdefgh")
    mv = memoryview(buf)
    del buf
    collect()
    assert bytes(mv) == b"abcdefgh"
    mv[0] = ord("z")
    assert bytes(mv[:2]) == b"zb"


def test_capsule_outlives_buffer(collect):
    buf = bl.Buffer(16)
    buf.view("<u4")[:] = [5, 6, 7, 8]
    cap = buf.__dlpack__(**versioned_kwargs())
    del buf
    collect()
    arr = np.from_dlpack(DLPackProducer(cap))
    del cap
    collect()
    assert arr.view("<u4").tolist() == [5, 6, 7, 8]


def test_from_dlpack_array_outlives_buffer(collect):
    buf = bl.Buffer(8)
    buf.view("<f8")[0] = 2.5
    arr = np.from_dlpack(buf)
    del buf
    collect()
    assert arr.view("<f8")[0] == 2.5


def test_array_interface_array_outlives_buffer(collect):
    buf = bl.Buffer.from_bytes(b"\x01\x02\x03\x04")
    arr = np.asarray(ArrayInterface(buf.__array_interface__))
    del buf
    collect()
    assert arr.tolist() == [1, 2, 3, 4]


def test_plan_arrays_outlive_buffer(collect):
    plan = bl.Plan().struct(a=("f4", 2), b=("i4", 2))
    buf = bl.Buffer(plan.nbytes)
    arrays = buf.arrays(plan)
    arrays["a"][:] = [1, 2]
    del buf
    collect()
    assert arrays["a"].tolist() == [1.0, 2.0]
    assert arrays["b"].view("<f4").tolist() == [0.0, 0.0]


EXPORTS = ["view", "memoryview", "capsule", "from_dlpack"]


def make_export(buf, kind):
    if kind == "view":
        return buf.view("<i8")
    if kind == "memoryview":
        return memoryview(buf)
    if kind == "capsule":
        return buf.__dlpack__(**versioned_kwargs())
    if kind == "from_dlpack":
        return np.from_dlpack(buf)
    raise AssertionError(kind)


def read_export(obj, kind):
    if kind == "view":
        return obj.tolist()
    if kind == "memoryview":
        return np.frombuffer(obj, "<i8").tolist()
    if kind == "capsule":
        return None  # a capsule cannot be read without consuming it
    return obj.view("<i8").tolist()


def check_exports_read(live):
    # A function of its own, so that no loop variable keeps an export alive.
    for kind, obj in live.items():
        if kind != "buf" and read_export(obj, kind) is not None:
            assert read_export(obj, kind) == [0, 1, 2, 3]


@pytest.mark.parametrize("order", list(itertools.permutations(["buf"] + EXPORTS)), ids=lambda o: ",".join(o))
def test_any_deletion_order_frees_the_memory_last(order, collect):
    """A wrapped numpy array stands in for the memory: it must stay alive exactly
    as long as the buffer or any export of it does."""
    memory = np.arange(4, dtype=np.int64)
    ref = weakref.ref(memory)
    live = {"buf": bl.Buffer.wrap(memory)}
    del memory
    for kind in EXPORTS:
        live[kind] = make_export(live["buf"], kind)
    for name in order:
        del live[name]
        if live:
            assert ref() is not None, f"freed while {sorted(live)} still alive"
            check_exports_read(live)
        else:
            collect()
            assert ref() is None, "the memory outlived every holder"


# --- exports are counted exactly --------------------------------------------------------


def test_exports_count(collect):
    buf = bl.Buffer(64)
    assert buf.exports == 0
    v1 = buf.view("<i4")
    assert buf.exports == 1
    v2 = buf.view("<f8")
    assert buf.exports == 2
    mv = memoryview(buf)
    assert buf.exports == 3
    cap = buf.__dlpack__()
    assert buf.exports == 4
    arr = np.from_dlpack(buf)
    assert buf.exports == 5
    derived = v1[::2]  # a view of a view holds the first view's export, adds none
    assert buf.exports == 5
    del v1
    collect()
    assert buf.exports == 5
    del derived
    collect()
    assert buf.exports == 4
    mv.release()
    assert buf.exports == 3
    del cap
    collect()
    assert buf.exports == 2
    del arr
    collect()
    assert buf.exports == 1
    del v2
    collect()
    assert buf.exports == 0


def test_exports_of_plan_arrays(collect):
    plan = bl.Plan().struct(a="f4", b=("u1", 3)).union(c=("i2", 2))
    buf = bl.Buffer(plan.nbytes)
    arrays = buf.arrays(plan)
    assert 1 <= buf.exports <= 3
    del arrays
    collect()
    assert buf.exports == 0


def test_numpy_asarray_is_one_export(collect):
    buf = bl.Buffer(8)
    a = np.asarray(buf)
    assert buf.exports == 1
    del a
    collect()
    assert buf.exports == 0


# --- close ------------------------------------------------------------------------------------


PLAN = bl.Plan().struct(x=("u1", 8))

MAKERS = {
    "view": lambda buf: buf.view("|u1"),
    "memoryview": lambda buf: memoryview(buf),
    "legacy capsule": lambda buf: buf.__dlpack__(),
    "versioned capsule": lambda buf: buf.__dlpack__(max_version=(1, 0)),
    "np.from_dlpack": lambda buf: np.from_dlpack(buf),
    "np.asarray": lambda buf: np.asarray(buf),
    "__array_interface__": lambda buf: np.asarray(ArrayInterface(buf.__array_interface__)),
    "Buffer.from_dlpack": lambda buf: bl.Buffer.from_dlpack(buf),
    "Buffer.wrap": lambda buf: bl.Buffer.wrap(buf),
    "arrays": lambda buf: buf.arrays(PLAN),
    "pickle buffer": lambda buf: pickle.PickleBuffer(buf),
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_close_is_refused_while_an_export_lives(kind, collect):
    buf = bl.Buffer(8)
    export = MAKERS[kind](buf)
    assert buf.exports >= 1
    with pytest.raises(BufferError):
        buf.close()
    # A refused close leaves the buffer as it was.
    assert not buf.closed
    buf.view("|u1")[0] = 1
    assert bytes(memoryview(buf))[0] == 1
    del export
    collect()
    assert buf.exports == 0
    buf.close()
    assert buf.closed


def test_closed_buffer_refuses_everything():
    buf = bl.Buffer(16)
    buf.close()
    assert buf.closed
    buf.close()  # twice is fine
    assert buf.closed
    for op in [
        lambda: buf.view("<i4"),
        lambda: buf.view(bl.Layout("<i4", (1,))),
        lambda: memoryview(buf),
        lambda: buf.__dlpack__(),
        lambda: buf.__dlpack__(max_version=(1, 0)),
        lambda: np.from_dlpack(buf),
        lambda: buf.__array_interface__,
        lambda: buf.arrays(PLAN),
        lambda: bl.Buffer.wrap(buf),
        lambda: pickle.dumps(buf, protocol=4),
    ]:
        with pytest.raises(ValueError):
            op()


def test_context_manager_closes():
    with bl.Buffer(8) as b:
        assert not b.closed
        b.view("|u1")[0] = 1
        assert b.exports == 0  # the temporary view is gone
    assert b.closed
    with pytest.raises(ValueError):
        b.view("|u1")


def test_context_manager_with_an_escaping_view_refuses_to_close(collect):
    with pytest.raises(BufferError):
        with bl.Buffer(8) as b:
            kept = b.view("|u1")
    assert not b.closed
    assert kept.tolist() == [0] * 8
    del kept
    collect()
    b.close()
    assert b.closed


def test_close_releases_a_wrapped_object(collect):
    a = np.arange(4)
    ref = weakref.ref(a)
    buf = bl.Buffer.wrap(a)
    del a
    collect()
    assert ref() is not None
    buf.close()
    collect()
    assert ref() is None


def test_close_releases_a_wrapped_mmap():
    mm = mmap.mmap(-1, 4096)
    buf = bl.Buffer.wrap(mm)
    with pytest.raises(BufferError):
        mm.close()
    buf.close()
    mm.close()  # no export of the mmap is left
    assert mm.closed


def test_close_releases_a_dlpack_producer(collect):
    a = np.arange(4, dtype=np.float32)
    ref = weakref.ref(a)
    buf = bl.Buffer.from_dlpack(a)
    del a
    collect()
    assert ref() is not None
    assert buf.view("<f4").tolist() == [0, 1, 2, 3]
    buf.close()
    collect()
    assert ref() is None


def test_dlpack_buffer_keeps_its_producer_alive(collect):
    a = np.arange(4, dtype=np.float32)
    ref = weakref.ref(a)
    buf = bl.Buffer.from_dlpack(a)
    v = buf.view("<f4")
    del a, buf
    collect()
    assert ref() is not None
    assert v.tolist() == [0, 1, 2, 3]
    del v
    collect()
    assert ref() is None


# --- DLPack deleters run exactly once ------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"max_version": (1, 0)}])
def test_unconsumed_capsule_releases_its_export(kwargs, collect):
    buf = bl.Buffer(8)
    caps = [buf.__dlpack__(**kwargs) for _ in range(5)]
    assert buf.exports == 5
    del caps[0]
    collect()
    assert buf.exports == 4
    caps.clear()
    collect()
    assert buf.exports == 0
    buf.close()


def test_consumed_capsules_release_their_export_once(collect):
    buf = bl.Buffer(64)
    for _ in range(200):
        arr = np.from_dlpack(buf)
        assert buf.exports == 1
        del arr  # reference counting alone runs the deleter
        assert buf.exports == 0
    collect()
    assert buf.exports == 0
    buf.close()


@pytest.mark.parametrize("kwargs", [{}, {"max_version": (1, 0)}])
def test_consumer_protocol_by_hand(kwargs, collect):
    """Rename to used_*, call the deleter once: the export is gone, and the
    capsule's own destructor must not run the deleter again."""
    buf = bl.Buffer(8)
    cap = buf.__dlpack__(**kwargs)
    assert buf.exports == 1
    consume(cap)
    collect()
    assert buf.exports == 0
    del cap
    collect()
    assert buf.exports == 0
    buf.close()
    assert buf.closed


def test_capsule_consumed_by_numpy_after_the_buffer_is_gone(collect):
    buf = bl.Buffer(8)
    buf.view("|u1")[:] = range(8)
    cap = buf.__dlpack__(**versioned_kwargs())
    del buf
    collect()
    arr = np.from_dlpack(DLPackProducer(cap))
    assert arr.tolist() == list(range(8))
    with pytest.raises(ValueError):
        np.from_dlpack(DLPackProducer(cap))  # numpy renamed it: a capsule is consumed once
    del cap
    collect()
    assert arr.tolist() == list(range(8))


def test_buffer_from_dlpack_consumes_once(collect):
    a = bl.Buffer(16)
    for _ in range(100):
        b = bl.Buffer.from_dlpack(a)
        assert a.exports == 1
        del b
        assert a.exports == 0
    collect()
    assert a.exports == 0
    a.close()


# --- no leaks ------------------------------------------------------------------------------------


def _rss_growth(cycle, n, warmup):
    for _ in range(warmup):
        cycle()
    before = rss_bytes()
    for _ in range(n):
        cycle()
    return rss_bytes() - before


MiB = 1 << 20


def test_create_view_drop_does_not_grow():
    # 512 bytes a cycle: a leak of the memory alone would be 48 MiB.
    def cycle():
        buf = bl.Buffer(512)
        v = buf.view("<f4", shape=(8, 16))
        v[0, 0] = 1.0
        del buf

    assert _rss_growth(cycle, 100_000, 10_000) < 16 * MiB


def test_protocol_cycles_do_not_grow():
    # 4 KiB a cycle: a leak of the memory alone would be 39 MiB.
    def cycle():
        buf = bl.Buffer(4096)
        with memoryview(buf) as mv:
            mv[0] = 1
        arr = np.from_dlpack(buf)
        cap = buf.__dlpack__(max_version=(1, 0))
        other = bl.Buffer.from_dlpack(buf)
        del arr, cap, other
        back = pickle.loads(pickle.dumps(buf, protocol=4))
        del back
        buf.close()

    assert _rss_growth(cycle, 10_000, 1_000) < 16 * MiB


def test_large_buffers_are_freed():
    def cycle():
        buf = bl.Buffer(4 * MiB)
        buf.view("|u1")[::4096] = 1  # touch every page
        buf.close()

    def cycle_dropped():
        buf = bl.Buffer(4 * MiB)
        v = buf.view("<u8")
        v[::512] = 1
        del buf, v

    assert _rss_growth(cycle, 200, 20) < 32 * MiB
    assert _rss_growth(cycle_dropped, 200, 20) < 32 * MiB


def test_wrap_cycles_do_not_leak_the_wrapped_objects(collect):
    refs = []
    for _ in range(1000):
        a = np.zeros(16)
        refs.append(weakref.ref(a))
        buf = bl.Buffer.wrap(a)
        buf.view("<f8")[0] = 1
        del a, buf
    collect()
    assert sum(r() is not None for r in refs) == 0


def test_exports_from_many_threads_balance(collect):
    import threading

    buf = bl.Buffer(1024)
    errors = []

    def work(k):
        try:
            for i in range(2000):
                v = buf.view("<u4", offset=4 * (k % 4), shape=(8,))
                v[0] = i
                with memoryview(buf) as mv:
                    assert mv.nbytes == 1024
                cap = buf.__dlpack__(max_version=(1, 0))
                arr = np.from_dlpack(buf)
                del v, cap, arr
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    collect()
    assert buf.exports == 0
    buf.close()
    assert buf.closed


def test_exports_alive_at_interpreter_exit_end_cleanly():
    """Deleters that run during interpreter shutdown (or never) must not abort it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np, bytelens as bl
        buf = bl.Buffer(64)
        held = [
            np.from_dlpack(buf),                          # consumed capsule
            buf.__dlpack__(max_version=(1, 0)),           # unconsumed, versioned
            buf.__dlpack__(),                             # unconsumed, legacy
            bl.Buffer.from_dlpack(np.arange(8.0)),        # imported tensor
            buf.view("<i4"),
            memoryview(buf),
        ]
        held.append(held)                                 # a cycle, left to the final GC
        print("done", buf.exports)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["done", "5"]
    assert "panicked" not in result.stderr and "Fatal" not in result.stderr, result.stderr
