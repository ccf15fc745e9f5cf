"""bytelens.Ring: batches between processes through slots in shared memory.

Producers and consumers in threads and processes, slots kept by the arrays
made from a batch, closing, timeouts and Ctrl-C in every wait, hostile
segments, and processes killed with SIGKILL at random points while filling
or holding a batch (every batch carries a checksum the consumer checks).
"""

import os
import pickle
import random
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import bytelens as bl
from _support import frameworks_required

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the ring's process tests fork and signal (Linux and macOS)"
)

N = 1 << 14


def unique(what):
    return f"bl-ring-{what}-{os.getpid()}-{random.randrange(1 << 30)}"


def batch_plan(n=N):
    return bl.Plan("batch").struct(id=("<u8", (1,)), data=("<u4", (n,)), sum=("<u8", (1,)))


def fill(slot, ident, steps=1):
    """Writes batch `ident` into the slot in `steps` parts, then its sum."""
    data = slot["data"]
    values = (np.arange(data.size, dtype=np.uint64) * 2654435761 + ident) % (1 << 32)
    slot["id"][0] = ident
    for part in np.array_split(np.arange(data.size), steps):
        data[part] = values[part]
    slot["sum"][0] = int(values.sum()) ^ ident


def check(batch):
    """The batch's id, after checking its sum: a torn batch fails here."""
    ident = int(batch["id"][0])
    total = int(batch["data"].astype(np.uint64).sum())
    assert total ^ ident == int(batch["sum"][0]), f"batch {batch.seq} (id {ident}) is torn"
    return ident


@pytest.fixture
def ring():
    made = []

    def make(what, plan=None, slots=4):
        r = bl.Ring.create(unique(what), plan if plan is not None else batch_plan(), slots)
        made.append(r)
        return r

    yield make
    for r in made:
        try:
            r.unlink()
        except FileNotFoundError:
            pass


def test_batches_pass_in_order_with_their_fields(ring):
    r = ring("order")
    assert (r.slots, r.slot_nbytes) == (4, 8 + 4 * N + 8)
    assert r.nbytes % 4096 == 0 and r.nbytes >= 4 * r.slot_nbytes
    for i in range(3):
        with r.produce() as slot:
            assert slot.nbytes == r.slot_nbytes and slot.address % 4096 == 0
            fill(slot, 100 + i)
    for i in range(3):
        with r.consume() as batch:
            assert (batch.seq, batch.redelivered) == (i, False)
            assert check(batch) == 100 + i
            assert sorted(batch.keys()) == ["data", "id", "sum"]
            assert batch["data"].dtype == np.dtype("<u4") and batch["data"].flags.writeable
    stats = r.stats()
    assert (stats["published"], stats["consumed"], stats["abandoned"]) == (3, 3, 0)
    with pytest.raises(KeyError, match=r"no field 'y' in the ring's plan \(it has: id, data, sum\)"):
        with r.produce() as slot:
            slot["y"]
    assert r.stats()["abandoned"] == 1


def test_a_kept_array_or_tensor_keeps_the_slot(ring):
    r = ring("kept", slots=1)
    with r.produce() as slot:
        fill(slot, 7)
    with r.consume() as batch:
        kept = np.from_dlpack(batch["data"])
        view = memoryview(batch.buffer)
    del view
    with pytest.raises(TimeoutError, match=rf'ring "{r.name}": waited 0.100 s for a free slot'):
        r.produce(timeout=0.1)
    assert kept[1] == (2654435761 + 7) % (1 << 32)
    del kept
    with r.produce(timeout=0) as slot:
        fill(slot, 8)
    batch = r.consume(timeout=0)
    batch.release()
    with pytest.raises(RuntimeError, match="batch 1 was released"):
        batch["data"]
    with r.produce(timeout=0):
        pass


def test_closing_ends_producers_and_drains_consumers(ring):
    r = ring("close", slots=2)
    for i in range(2):
        with r.produce() as slot:
            fill(slot, i)
    errors = []

    def blocked_producer():
        try:
            r.produce(timeout=30)
        except bl.RingClosedError as err:
            errors.append(err)

    t = threading.Thread(target=blocked_producer)
    t.start()
    time.sleep(0.1)
    start = time.monotonic()
    r.close()
    t.join()
    assert time.monotonic() - start < 5
    assert errors and errors[0].kind == "RingClosed" and r.name in str(errors[0])
    assert r.closed
    assert [check(b) for b in r] == [0, 1]  # drained, then the loop ends
    with pytest.raises(bl.RingClosedError, match="is closed"):
        r.consume(timeout=0)
    with pytest.raises(bl.RingClosedError):
        r.produce()


def test_torch_and_jax_tensors_are_the_slot_and_keep_it(ring):
    if frameworks_required():
        import jax
        import torch
    else:
        torch = pytest.importorskip("torch")
        jax = pytest.importorskip("jax")
    r = ring("frameworks", slots=1)
    with r.produce() as slot:
        fill(slot, 3)
    with r.consume() as batch:
        t = torch.from_dlpack(batch["data"])
        j = jax.dlpack.from_dlpack(batch["data"])
        assert t.data_ptr() == batch.address + 8
        total = int(t.to(torch.int64).sum())
    del j
    with pytest.raises(TimeoutError):
        r.produce(timeout=0.05)  # the tensor still reads the slot
    assert total == int(t.to(torch.int64).sum())
    del t
    r.produce(timeout=0).abandon()


def test_timeouts_and_arguments_are_checked(ring):
    r = ring("args", plan=64, slots=1)
    assert r.plan is None
    with pytest.raises(TimeoutError, match="published batch"):
        r.consume(timeout=0.05)
    with pytest.raises(ValueError, match="timeout must be seconds >= 0"):
        r.consume(timeout=-1)
    with pytest.raises(TypeError, match="plan must be a bytelens.Plan or a byte size"):
        bl.Ring.create(unique("bad"), "x")
    with pytest.raises(ValueError, match="0 slots: a ring has 1 to 65536"):
        bl.Ring.create(unique("bad"), 8, slots=0)
    with pytest.raises(FileExistsError):
        bl.Ring.create(r.name, 8)
    with r.produce() as slot:
        slot.buffer.view("<u1")[:] = 5
        with pytest.raises(KeyError, match="made with a byte size: use .buffer"):
            slot["x"]
    with r.consume() as batch:
        assert bytes(batch.buffer.view("<u1")) == b"\x05" * 64


def test_a_ring_pickles_as_its_name(ring):
    r = ring("pickle")
    other = pickle.loads(pickle.dumps(r))
    assert (other.name, other.slots, other.slot_nbytes) == (r.name, r.slots, r.slot_nbytes)
    assert other.plan.nbytes == r.slot_nbytes


def test_hostile_segments_are_refused(ring):
    plain = bl.SharedBuffer.create(unique("plain"), 1 << 16)
    try:
        with pytest.raises(ValueError, match="no ring's table"):
            bl.Ring.attach(plain.name)
    finally:
        plain.unlink()
    r = ring("hostile", slots=2)
    words = bl.SharedBuffer.attach(r.name).buffer.view("<u8")
    words[2] = 3  # the slot count
    with pytest.raises(ValueError, match="says 3 slots"):
        bl.Ring.attach(r.name)
    words[2] = 2
    words[32] = 0xFF  # slot 0's state
    with pytest.raises(RuntimeError, match="slot 0's state word is 0x00000000000000ff"):
        bl.Ring.attach(r.name)
    words[32] = 0
    del words
    bl.Ring.attach(r.name)
    # A segment too small for a ring's table (its header cut short).
    small = bl.SharedBuffer.create(unique("small"), 64)
    try:
        with pytest.raises(ValueError, match="64 bytes of data, too few for a ring's table"):
            bl.Ring.attach(small.name)
    finally:
        small.unlink()
    with pytest.raises(ValueError, match=r'"a\\u\{1\}b/" is not a usable shared-memory name'):
        bl.Ring.attach("a\x01b/")


def test_producer_processes_and_a_consumer_thread(ring):
    import multiprocessing

    r = ring("procs", slots=3)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_produce, args=(r, k, 25)) for k in range(2)]
    for w in workers:
        w.start()
    seen = []
    for _ in range(50):
        with r.consume(timeout=60) as batch:
            seen.append(check(batch))
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    assert sorted(seen) == sorted(k << 32 | i for k in range(2) for i in range(25))
    # Each producer's batches arrive in its own order.
    for k in range(2):
        mine = [s for s in seen if s >> 32 == k]
        assert mine == sorted(mine)


def _produce(r, k, n):
    for i in range(n):
        with r.produce(timeout=60) as slot:
            fill(slot, k << 32 | i, steps=4)


def _wait_readable(fd, timeout):
    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready)


def _child(body):
    """Forks a child that runs `body()` and never returns; its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(0)
    return pid


def _kill(pid):
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_processes_killed_while_filling_or_holding_lose_nothing(ring):
    """100 producers killed at random points while filling, then 100
    consumers killed while holding a batch: every batch a verifying
    consumer gets is whole, every published batch reaches it, and the ring
    goes on. The children are forked from a fresh interpreter, one without
    the threads torch or JAX start in this one (forking those may hang)."""
    r = ring("kill", plan=batch_plan(1 << 12), slots=4)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, *sys.path]))
    run = subprocess.run(
        [sys.executable, "-c", f"import test_ring; test_ring._kill_scenario({r.name!r})"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    stats = r.stats()
    print(stats, run.stdout)
    assert run.stdout.startswith("verified")
    assert stats["redelivered"] == 100
    # Most producers died filling (the rest between batches).
    assert stats["abandoned"] == stats["recovered"] - stats["redelivered"] >= 60


def _kill_scenario(name):
    import multiprocessing

    r = bl.Ring.attach(name)
    rng = random.Random(1234)
    ctx = multiprocessing.get_context("spawn")
    results, theirs = ctx.Pipe(duplex=False)
    verifier = ctx.Process(target=_verify, args=(r, theirs))
    verifier.start()
    theirs.close()
    try:
        # Producers killed at random points while filling (a fill takes
        # about 5 ms, and the child says when its first began).
        for k in range(100):
            read, write = os.pipe()
            pid = _child(lambda: _produce_forever(r, k, write))
            os.close(write)
            assert _wait_readable(read, 30)
            time.sleep(rng.uniform(0, 0.006))
            _kill(pid)
            os.close(read)
        # Consumers killed while holding a batch.
        for k in range(100):
            read, write = os.pipe()

            def hold():
                os.close(read)
                batch = r.consume(timeout=30)
                os.write(write, b"1")
                time.sleep(60)
                del batch

            pid = _child(hold)
            os.close(write)
            n = 0
            while not _wait_readable(read, 0.001):
                with r.produce(timeout=30) as slot:
                    fill(slot, 1 << 40 | k << 16 | n)
                n += 1
            _kill(pid)
            os.close(read)
        # The ring goes on.
        with r.produce(timeout=30) as slot:
            fill(slot, 1 << 50)
        time.sleep(0.2)
        r.close()
        seqs, ids = results.recv()
        verifier.join(60)
    finally:
        if verifier.is_alive():
            verifier.kill()
    stats = r.stats()
    assert verifier.exitcode == 0
    assert seqs == list(range(stats["published"])), "a published batch never arrived"
    assert 1 << 50 in ids
    print("verified", len(ids), "batches")


def _produce_forever(r, k, started):
    n = 0
    while True:
        with r.produce(timeout=30) as slot:
            if n == 0:
                os.write(started, b"1")
            slot["id"][0] = k << 16 | n
            for step in range(50):
                slot["data"][step::50] = step
                time.sleep(0.0001)
            fill(slot, k << 16 | n, steps=8)
        n += 1


def _verify(r, results):
    seqs, ids = set(), []
    for batch in r:
        ids.append(check(batch))
        seqs.add(batch.seq)
        del batch
    results.send((sorted(seqs), ids))


@pytest.mark.parametrize("wait", ["consume", "produce"])
def test_ctrl_c_interrupts_a_wait(ring, wait):
    r = ring("sigint", slots=1)
    if wait == "produce":
        r.produce().publish()  # the one slot is taken
    script = textwrap.dedent(
        f"""
        import bytelens as bl, signal, sys
        # Python's own handler even where this test's runner was started
        # with SIGINT ignored (a shell's background job), which a child inherits.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        r = bl.Ring.attach({r.name!r})
        print("waiting", flush=True)
        try:
            r.{wait}()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout.readline() == "waiting\n"
    time.sleep(0.2)
    start = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=20)
    assert (child.returncode, out) == (3, "interrupted\n")
    assert time.monotonic() - start < 2


def test_the_loop_lets_go_of_each_batch_so_a_one_slot_ring_flows(ring):
    r = ring("one-slot", slots=1)
    stuck = []

    def producer():
        try:
            for i in range(5):
                with r.produce(timeout=5) as slot:
                    fill(slot, i)
        except TimeoutError as err:
            stuck.append(err)
        r.close()

    t = threading.Thread(target=producer)
    t.start()
    ids = [check(batch) for batch in r]
    t.join()
    assert stuck == [] and ids == list(range(5))
    # A batch the loop keeps a reference to stays its holder's.
    r2 = ring("kept-batch", slots=4)
    for i in range(3):
        with r2.produce() as slot:
            fill(slot, i)
    r2.close()
    kept = []
    for batch in r2:
        kept.append(batch)
    assert [check(b) for b in kept] == [0, 1, 2]


@pytest.mark.parametrize("keep", [False, True], ids=["loop", "keeping-the-last"])
def test_two_consumers_draining_a_closed_ring_both_end(ring, keep):
    # Keeping the last batch (`last = batch`, a metric tensor) keeps its slot
    # while the loop takes the next: on a closed ring neither consumer may
    # wait for the batch the other keeps.
    r = ring("drain2", slots=4)
    script = textwrap.dedent(
        f"""
        import bytelens as bl
        r = bl.Ring.attach({r.name!r})
        print("attached", flush=True)
        n = 0
        for batch in r:
            n += 1
            if {keep!r}:
                last = batch
        print(n, flush=True)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    consumers = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    try:
        for c in consumers:
            assert c.stdout.readline() == "attached\n"
        for i in range(40):
            with r.produce(timeout=20) as slot:
                fill(slot, i)
        r.close()
        counts = [int(c.communicate(timeout=20)[0]) for c in consumers]
    finally:
        for c in consumers:
            c.kill()
            c.wait()
    assert sum(counts) == 40


@pytest.mark.parametrize("how", ["publish", "abandon"])
def test_publishing_or_abandoning_inside_the_block_is_all_the_block_does(ring, how):
    r = ring("inside")
    with r.produce() as slot:
        fill(slot, 1)
        getattr(slot, how)()
    stats = r.stats()
    assert (stats["published"], stats["abandoned"]) == ((1, 0) if how == "publish" else (0, 1))
    with pytest.raises(RuntimeError, match="already published or abandoned"):
        slot.publish()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_consumer_that_died_holding_a_batch_is_recovered_while_a_zombie(ring):
    r = ring("zombie", slots=1)
    with r.produce() as slot:
        fill(slot, 5)
    script = textwrap.dedent(
        f"""
        import os, bytelens as bl
        r = bl.Ring.attach({r.name!r})
        batch = r.consume(timeout=10)
        print("holding", flush=True)
        os._exit(0)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "holding\n"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{child.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        # Not reaped yet (this process is its parent, and waits for the batch).
        with r.consume(timeout=10) as batch:
            assert batch.redelivered and check(batch) == 5
    finally:
        child.wait()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_forked_child_leaves_its_parent_s_leases_alone(ring):
    import gc
    import warnings

    r = ring("fork", slots=1)
    with r.produce() as slot:
        fill(slot, 3)
    batch = r.consume(timeout=0)
    x = batch["data"]

    def child(code):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fork with threads (and JAX's) about
            pid = os.fork()
        if pid == 0:
            try:
                code()
                gc.collect()
            except BaseException:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0

    def drop_batch():
        nonlocal batch, x
        batch.release()
        del batch, x

    child(drop_batch)  # the child's copy of the batch goes, on its exit too
    with pytest.raises(TimeoutError):
        r.produce(timeout=0.2)  # still the parent's: nothing may overwrite it
    assert int(x[1]) == (2654435761 + 3) % (1 << 32)
    batch.release()
    del x
    slot = r.produce(timeout=0)

    def drop_slot():
        nonlocal slot
        del slot

    child(drop_slot)  # a child dropping the parent's slot abandons nothing
    fill(slot, 4)
    slot.publish()
    assert r.stats()["abandoned"] == 0
    with r.consume(timeout=0) as batch:
        assert check(batch) == 4


def test_sizes_are_refused_with_the_numbers_given():
    name = unique("sizes")
    with pytest.raises(ValueError, match=r"-1 slots: a ring has 1 to 65536") as err:
        bl.Ring.create(name, 64, -1)
    assert err.value.kind == "BadSegment" and name in str(err.value)
    with pytest.raises(ValueError, match=r"2 slots of 9223372036854775808 bytes .*more than a shared segment") as err:
        bl.Ring.create(name, 2**63, 2)
    assert err.value.kind == "BadSegment" and name in str(err.value)
    assert "18446744073709551615" not in str(err.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PID namespaces are Linux's")
def test_a_process_of_another_pid_namespace_is_refused_at_attach(ring):
    # A container sharing /dev/shm but not the PIDs: its ids are other
    # numbers, so its batches would look like a dead process's.
    new_ns = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    probe = subprocess.run([*new_ns, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no PID namespace can be made here (needs root or user namespaces): {probe.stderr.strip()}")
    r = ring("pidns")
    script = textwrap.dedent(
        f"""
        import os, bytelens as bl
        assert os.getpid() == 1
        try:
            bl.Ring.attach({r.name!r})
        except ValueError as err:
            print(err.kind, err)
        else:
            print("attached")
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([*new_ns, sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("BadSegment ring "), run.stdout
    assert r.name in run.stdout and "another PID namespace" in run.stdout and "--pid=host" in run.stdout
    assert "attached" not in run.stdout


def test_a_producer_s_arrays_cannot_outlive_its_slot_into_a_published_batch(ring):
    r = ring("kept-slot", slots=2)
    # A variable holding slot["data"] past the block would write into the
    # batch a consumer reads: the block refuses to publish, and the slot
    # goes back unpublished.
    with pytest.raises(BufferError, match=r"slot 0 cannot be published while something still refers to its memory: slot\['data'\]") as err:
        with r.produce(timeout=0) as slot:
            data = slot["data"]
            fill(slot, 1)
    assert err.value.kind == "InUse" and r.name in str(err.value)
    assert r.stats()["abandoned"] == 1 and r.stats()["published"] == 0
    del data
    # A view or tensor made from it, or a view of slot.buffer, counts too.
    slot = r.produce(timeout=0)
    fill(slot, 2)
    tail = slot["data"][1:]
    raw = slot.buffer.view("<u1")
    # tail keeps slot["data"] (its base); raw is an export of its own.
    with pytest.raises(BufferError, match=r"slot\['data'\], 1 other array, memoryview or capsule over the slot's bytes"):
        slot.publish()
    del tail, raw
    assert slot.publish() == 0  # the slot was still this producer's
    with pytest.raises(RuntimeError, match="already published or abandoned") as err:
        slot.publish()
    assert err.value.kind == "OutOfOrder"
    torch = pytest.importorskip("torch")
    with pytest.raises(BufferError, match=r"slot\['data'\]"):
        with r.produce(timeout=0) as slot:
            t = torch.from_numpy(slot["data"])
            t.fill_(7)
    del t
    with r.consume(timeout=0) as batch:
        assert check(batch) == 2


def test_binding_errors_have_their_kinds_and_the_ring_s_name(ring):
    with pytest.raises(TypeError, match="plan must be a bytelens.Plan") as err:
        bl.Ring.create(unique("kinds"), "x", 2)
    assert err.value.kind == "WrongType"
    r = ring("kinds", slots=2)
    with r.produce(timeout=0) as slot:
        with pytest.raises(KeyError, match="no field 'nope'") as err:
            slot["nope"]
        assert err.value.kind == "NoSuchArray"
        fill(slot, 3)
    batch = r.consume(timeout=0)
    batch.release()
    with pytest.raises(RuntimeError, match="batch 0 was released") as err:
        batch["data"]
    assert err.value.kind == "OutOfOrder"
    # Plan text in the segment's header damaged by something else.
    with open(f"/dev/shm/{r.name}", "r+b") as f:
        head = f.read(4096)
        at = head.index(b"data")
        f.seek(at)
        f.write(b"d\x01ta")
    with pytest.raises(bl.LayoutError, match=r"ring \"" + r.name + r"\": its stored plan cannot be read") as err:
        bl.Ring.attach(r.name)
    assert err.value.kind == "BadName"
