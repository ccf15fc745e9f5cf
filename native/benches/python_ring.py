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


# Memory -------------------------------------------------------------------

MEM_PLAN = bl.Plan("mem").struct(x=("<f4", (1 << 18,)))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


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

    torch.set_num_threads(1)
    print(f"bytelens.Ring, {os.cpu_count()} CPUs, medians of one run")
    ring_tp = ring_batches_per_s(torch)
    loader_tp = dataloader_batches_per_s(torch)
    bound_tp = bound_batches_per_s(torch)
    print(
        f"throughput, 16 MiB batches: ring {ring_tp:.0f}/s, DataLoader(num_workers=2) "
        f"{loader_tp:.0f}/s, one process in one buffer {bound_tp:.0f}/s"
    )
    pipe = pipe_rtt_us()
    ring = ring_rtt_us()
    iox = iox_rtt_us()
    print(
        f"latency, 4 KiB round trip, median: ring {ring:.1f} us, Pipe {pipe:.1f} us, "
        + (f"iceoryx2 {iox:.1f} us" if iox else "iceoryx2 not installed (`cargo xtask bench python ring` installs it)")
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
