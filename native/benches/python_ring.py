"""bytelens.Ring between processes against its anchors, measured in one run.

Run with `cargo xtask bench python ring` (which installs iceoryx2 0.10.0
into the bench's environment first). Three goal lines:

- throughput: 2 producer processes each writing 16 MiB float32 batches
  (every byte), 1 consumer summing each through `torch.from_dlpack`,
  against torch's `DataLoader(num_workers=2)` over a dataset making the
  same tensors (goal >= 2x), and against the bound: one process writing
  then summing the same bytes in a preallocated buffer (goal >= 0.7x);
- latency: 4 KiB messages ping-ponged between two processes, median round
  trip, against `multiprocessing.Pipe` (goal <= 0.2x) and iceoryx2's
  publish/subscribe, busy-polling as its examples do (goal <= 1.5x);
- memory: the consumer's and a producer's resident memory and the
  segment's pages in /dev/shm after 1,000 and after 10,000 batches (goal:
  no growth; the segment is the slots plus its table and header).

The consumer is what a training loop is: torch at its default number of
threads (producers are pinned to one). Two more lines, without goals: the
ring's own Python cost of each operation (produce, publish, consume,
release, measured in one process on a ring that never waits), and a
`bl.Loader` loop that keeps every batch's labels running to the end, once
keeping copies (memory grows by the labels) and once keeping the arrays
themselves (each keeps its batch: memory grows by the batches, as the
loader's warning says).

`--quick` runs fewer batches and round trips (a smoke test).
"""

import ctypes
import multiprocessing
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bytelens as bl  # noqa: E402
from _procs import rss_kib  # noqa: E402

QUICK = "--quick" in sys.argv
MIB16 = 16 << 20
N_FLOATS = MIB16 // 4
BATCHES = 40 if QUICK else 200
ROUND_TRIPS = 2_000 if QUICK else 20_000
MSG = 4096


def unique(what):
    return f"bl-bench-{what}-{os.getpid()}"


# Throughput ---------------------------------------------------------------

PLAN = bl.Plan("batch").struct(x=("<f4", (N_FLOATS,)))


def ring_producer(ring, first, count):
    import torch

    torch.set_num_threads(1)
    for i in range(first, first + count):
        with ring.produce() as slot:
            slot["x"].fill(float(i))


def ring_batches_per_s(torch):
    ring = bl.Ring.create(unique("tp"), PLAN, slots=int(os.environ.get("BL_SLOTS", "6")))
    try:
        ctx = multiprocessing.get_context("spawn")
        warm = 6
        per = (BATCHES + warm) // 2
        procs = [ctx.Process(target=ring_producer, args=(ring, k * per, per)) for k in range(2)]
        for p in procs:
            p.start()
        total = 0.0
        for n in range(2 * per):
            if n == warm:
                start = time.perf_counter()
            with ring.consume() as batch:
                total += float(torch.from_dlpack(batch["x"]).sum())
        elapsed = time.perf_counter() - start
        for p in procs:
            p.join()
        return (2 * per - warm) / elapsed
    finally:
        ring.unlink()


class Batches:
    """A dataset making the tensors the ring's producers write."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch

        torch.set_num_threads(1)
        return torch.empty(N_FLOATS, dtype=torch.float32).fill_(float(i))


def dataloader_batches_per_s(torch):
    from torch.utils.data import DataLoader

    warm = 6
    loader = DataLoader(
        Batches(warm + BATCHES), batch_size=None, num_workers=2, multiprocessing_context="spawn", prefetch_factor=2
    )
    total = 0.0
    for n, t in enumerate(loader):
        if n == warm:
            start = time.perf_counter()
        total += float(t.sum())
    elapsed = time.perf_counter() - start
    return BATCHES / elapsed


def bound_batches_per_s(torch):
    buf = np.empty(N_FLOATS, dtype=np.float32)
    t = torch.from_dlpack(buf)
    total = 0.0
    samples = []
    for i in range(BATCHES // 4 + 3):
        start = time.perf_counter()
        buf.fill(float(i))
        total += float(t.sum())
        samples.append(time.perf_counter() - start)
    return 1 / statistics.median(samples[3:])


# Latency ------------------------------------------------------------------


def rtt_stats(samples):
    return statistics.median(samples) * 1e6


def pipe_peer(conn):
    while True:
        msg = conn.recv_bytes()
        if not msg:
            return
        conn.send_bytes(msg)


def pipe_rtt_us():
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    peer = ctx.Process(target=pipe_peer, args=(theirs,))
    peer.start()
    msg = bytes(range(256)) * (MSG // 256)
    samples = []
    for i in range(ROUND_TRIPS + 200):
        start = time.perf_counter()
        mine.send_bytes(msg)
        mine.recv_bytes()
        samples.append(time.perf_counter() - start)
    mine.send_bytes(b"")
    peer.join()
    return rtt_stats(samples[200:])


MSG_PLAN = bl.Plan("msg").struct(x=("<u1", (MSG,)))


def ring_peer(ping, pong, n):
    for _ in range(n):
        with ping.consume() as got, pong.produce() as slot:
            slot["x"][:] = got["x"]


def ring_rtt_us():
    ping = bl.Ring.create(unique("ping"), MSG_PLAN, slots=2)
    pong = bl.Ring.create(unique("pong"), MSG_PLAN, slots=2)
    try:
        n = ROUND_TRIPS + 200
        ctx = multiprocessing.get_context("spawn")
        peer = ctx.Process(target=ring_peer, args=(ping, pong, n))
        peer.start()
        msg = np.frombuffer(bytes(range(256)) * (MSG // 256), dtype=np.uint8)
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            with ping.produce() as slot:
                slot["x"][:] = msg
            with pong.consume() as got:
                got["x"][0]
            samples.append(time.perf_counter() - start)
        peer.join()
        return rtt_stats(samples[200:])
    finally:
        ping.unlink()
        pong.unlink()


class Message(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint8 * MSG)]


def iox_service(node, iox2, name):
    return node.service_builder(iox2.ServiceName.new(name)).publish_subscribe(Message).open_or_create()


def iox_peer(prefix, n):
    import iceoryx2 as iox2

    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    sub = iox_service(node, iox2, prefix + "/ping").subscriber_builder().create()
    pub = iox_service(node, iox2, prefix + "/pong").publisher_builder().create()
    done = 0
    while done < n:
        sample = sub.receive()
        if sample is None:
            continue
        out = pub.loan_uninit().write_payload(sample.payload().contents)
        del sample
        out.send()
        done += 1


def iox_rtt_us():
    try:
        import iceoryx2 as iox2
    except ImportError:
        return None
    iox2.set_log_level_from_env_or(iox2.LogLevel.Error)
    prefix = f"bytelens-bench/{os.getpid()}"
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    pub = iox_service(node, iox2, prefix + "/ping").publisher_builder().create()
    sub = iox_service(node, iox2, prefix + "/pong").subscriber_builder().create()
    n = ROUND_TRIPS + 200
    ctx = multiprocessing.get_context("spawn")
    peer = ctx.Process(target=iox_peer, args=(prefix, n))
    peer.start()
    time.sleep(1.0)  # the peer's ports connect
    msg = Message()
    ctypes.memmove(msg.data, bytes(range(256)) * (MSG // 256), MSG)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        pub.loan_uninit().write_payload(msg).send()
        while (got := sub.receive()) is None:
            pass
        del got
        samples.append(time.perf_counter() - start)
    peer.join()
    return rtt_stats(samples[200:])


# The ring's own cost -----------------------------------------------------


def per_op_us():
    """Median microseconds of each of produce, publish, consume and release
    on a one-process ring whose every call finds what it wants at once."""
    ring = bl.Ring.create(unique("ops"), MSG_PLAN, slots=2)
    try:
        times = {"produce": [], "publish": [], "consume": [], "release": []}
        clock = time.perf_counter
        for _ in range(ROUND_TRIPS):
            t0 = clock()
            slot = ring.produce(timeout=0)
            t1 = clock()
            slot.publish()
            t2 = clock()
            batch = ring.consume(timeout=0)
            t3 = clock()
            batch.release()
            t4 = clock()
            for name, (a, b) in zip(times, ((t0, t1), (t1, t2), (t2, t3), (t3, t4))):
                times[name].append(b - a)
        return {name: statistics.median(v) * 1e6 for name, v in times.items()}
    finally:
        ring.unlink()


# Kept labels ---------------------------------------------------------------

KEEP_PLAN = bl.Plan("batch").struct(x=("<f4", (1 << 16,)), y=("<i8", (64,)))
KEEP_BATCHES = 300 if QUICK else 2_000


def keep_fill(slot, index):
    slot["x"][:] = index
    slot["y"][:] = index


def kept_labels_loop(copy):
    """Runs a loader of KEEP_BATCHES 256 KiB batches keeping each batch's
    64 labels (a copy, or the array itself): (batches seen, labels right,
    RSS growth in KiB, seconds)."""
    import warnings

    before = rss_kib(os.getpid())
    start = time.perf_counter()
    kept = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's "batches are kept" warning
        for batch in bl.Loader(keep_fill, KEEP_PLAN, KEEP_BATCHES, workers=2, slots=4):
            kept.append(batch["y"].copy() if copy else batch["y"])
    elapsed = time.perf_counter() - start
    right = sum(int(y[0]) == i and int(y[-1]) == i for i, y in enumerate(kept))
    grew = rss_kib(os.getpid()) - before
    n = len(kept)
    del kept
    return n, right, grew, elapsed


# Memory -------------------------------------------------------------------

MEM_PLAN = bl.Plan("mem").struct(x=("<f4", (1 << 18,)))


def mem_producer(ring, n):
    for i in range(n):
        with ring.produce() as slot:
            slot["x"].fill(i)


def memory_rows():
    ring = bl.Ring.create(unique("mem"), MEM_PLAN, slots=4)
    path = f"/dev/shm/{ring.name}"
    n = 1_000 if QUICK else 10_000
    try:
        ctx = multiprocessing.get_context("spawn")
        proc = ctx.Process(target=mem_producer, args=(ring, n))
        proc.start()
        rows = {}
        for i in range(n):
            with ring.consume() as batch:
                batch["x"][0]
            if i + 1 in (n // 10, n):
                shm = os.stat(path).st_blocks * 512 if os.path.exists(path) else 0
                rows[i + 1] = (rss_kib(os.getpid()), rss_kib(proc.pid), shm)
        proc.join()
        return ring, rows
    finally:
        ring.unlink()


def goal(what, value, ok, target):
    print(f"goal {what}: {value} ({'met' if ok else 'MISSED'}; goal {target})")


def main():
    import torch

    print(
        f"bytelens.Ring, {os.cpu_count()} CPUs, medians of one run; the consumer is torch at its "
        f"default {torch.get_num_threads()} threads"
    )
    ring_tp = ring_batches_per_s(torch)
    loader_tp = dataloader_batches_per_s(torch)
    bound_tp = bound_batches_per_s(torch)
    print(
        f"throughput, 16 MiB batches: ring {ring_tp:.0f}/s, DataLoader(num_workers=2) "
        f"{loader_tp:.0f}/s, one process in one buffer {bound_tp:.0f}/s"
    )
    # On a machine with few cores, the consumer's torch threads (which spin
    # after each parallel region) compete with the producers: the same
    # loop with torch at one thread shows how much.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ring_tp1, bound_tp1 = ring_batches_per_s(torch), bound_batches_per_s(torch)
    torch.set_num_threads(threads)
    print(
        f"the same with the consumer's torch at 1 thread: ring {ring_tp1:.0f}/s, one process "
        f"{bound_tp1:.0f}/s ({ring_tp1 / bound_tp1:.2f}x the bound)"
    )
    pipe = pipe_rtt_us()
    ring = ring_rtt_us()
    iox = iox_rtt_us()
    print(
        f"latency, 4 KiB round trip, median: ring {ring:.1f} us, Pipe {pipe:.1f} us, "
        + (f"iceoryx2 {iox:.1f} us" if iox else "iceoryx2 not installed (`cargo xtask bench python ring` installs it)")
    )
    ops = per_op_us()
    print(
        "the ring's own Python cost per operation, median: "
        + ", ".join(f"{name} {us:.2f} us" for name, us in ops.items())
        + f" ({sum(ops.values()):.1f} us a batch, twice that a round trip)"
    )
    label_bytes = KEEP_BATCHES * 64 * 8
    slot_bytes = KEEP_PLAN.nbytes
    for copy in (True, False):
        n, right, grew, secs = kept_labels_loop(copy)
        what = "copies of the labels" if copy else "the label arrays themselves (each keeps its batch)"
        expect = label_bytes if copy else KEEP_BATCHES * slot_bytes
        print(
            f"a loader loop keeping {what}: {n} of {KEEP_BATCHES} batches, {right} right, in {secs:.1f} s; "
            f"RSS grew {grew} KiB (what it keeps: {expect >> 10} KiB)"
        )
    made, rows = memory_rows()
    (a, ra), (b, rb) = sorted(rows.items())
    print(
        f"memory, after {a} and {b} batches of 1 MiB: consumer RSS {ra[0]} -> {rb[0]} KiB, "
        f"producer RSS {ra[1]} -> {rb[1]} KiB, /dev/shm {ra[2] >> 10} -> {rb[2] >> 10} KiB "
        f"(the segment with its header: {(made.nbytes + 4096) >> 10} KiB)"
    )
    goal("throughput against DataLoader", f"{ring_tp / loader_tp:.1f}x", ring_tp >= 2 * loader_tp, ">= 2x")
    goal("throughput against the bound", f"{ring_tp / bound_tp:.2f}x", ring_tp >= 0.7 * bound_tp, ">= 0.7x")
    goal("latency against Pipe", f"{ring / pipe:.2f}x", ring <= 0.2 * pipe, "<= 0.2x")
    if iox:
        goal("latency against iceoryx2", f"{ring / iox:.2f}x", ring <= 1.5 * iox, "<= 1.5x")
    grew = max(rb[0] - ra[0], rb[1] - ra[1], (rb[2] - ra[2]) >> 10)
    goal("memory growth from batch 1,000 to 10,000" if not QUICK else "memory growth", f"{grew} KiB", grew <= 256, "none (<= 256 KiB of noise)")


if __name__ == "__main__":
    main()
