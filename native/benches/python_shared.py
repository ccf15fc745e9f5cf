"""Shared memory against the standard library's ways, ratios measured in one run.

Run with `cargo xtask bench python`:

- an uncontended `with sh.lock():` against `with multiprocessing.Lock():`
  (goal: at most 1.0x for the OS's own lock, while also surviving a dead
  holder, which multiprocessing.Lock does not), and the same for each other
  lock kind the OS has (Linux's file lock: no goal, printed for comparison);
- handing a 256 MiB buffer to another process: `multiprocessing.Array` plus
  `np.frombuffer` against `SharedBuffer.create` plus `attach` (goal: constant
  time, no copy), and the bytes pickled to send each to a worker.
"""

import multiprocessing
import os
import pickle
import statistics
import sys
import time
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bytelens as bl  # noqa: E402


def per_call_ns(stmt, names, calls=200_000, repeats=15):
    timer = timeit.Timer(stmt, globals=names)
    return statistics.median(t / calls * 1e9 for t in timer.repeat(repeats, calls))


def seconds(fn, repeats=5):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


#: The lock kinds each OS has, its own (SharedBuffer.create's default) first.
LOCKS = {"linux": ["robust-mutex", "file"], "darwin": ["file"], "win32": ["named-mutex"]}[sys.platform]


def lock_ns(name, kind):
    """``with sh.lock(): pass`` and ``with lock: pass`` (one lock object
    reused), ns per call, for a segment with the lock ``kind``."""
    sh = bl.SharedBuffer.create(name, 64, lock=kind)
    try:
        names = {"sh": sh, "lock": sh.lock()}
        return per_call_ns("with sh.lock(): pass", names), per_call_ns("with lock: pass", names)
    finally:
        sh.unlink()


def main():
    name = f"bl-bench-{os.getpid()}"  # short: macOS takes 30 bytes
    base = per_call_ns("with mp: pass", {"mp": multiprocessing.Lock()})
    print("uncontended lock + unlock, ns (median of 15 x 200,000)")
    print(f"  with multiprocessing.Lock():          {base:7.1f}  baseline")
    ratios = {}
    for kind in LOCKS:
        ours, held = lock_ns(name, kind)
        ratios[kind] = ours / base
        goal = "goal <= 1.0x" if kind == LOCKS[0] else "no goal"
        print(f"  with sh.lock(), lock={kind + ':':<15}  {ours:7.1f}  {ours / base:.2f}x ({goal})")
        print(f"    with lock (the same object):        {held:7.1f}  {held / base:.2f}x")
    verdict = "met" if ratios[LOCKS[0]] <= 1.0 else "MISSED"
    print(f"  goal sh.lock() ({LOCKS[0]}) <= 1.0x multiprocessing.Lock: {ratios[LOCKS[0]]:.2f}x, {verdict}")
    for kind in LOCKS[1:]:
        print(f"  sh.lock() ({kind}): {ratios[kind]:.2f}x multiprocessing.Lock (no goal)")

    big = 256 << 20
    print("\nhanding 256 MiB to another process (median of 5), seconds")

    def standard():
        arr = multiprocessing.Array("b", big)
        np.frombuffer(arr.get_obj(), dtype=np.uint8)

    counter = iter(range(10**6))

    def ours_create_attach():
        n = f"{name}-{next(counter)}"
        sh = bl.SharedBuffer.create(n, big)
        other = bl.SharedBuffer.attach(n)
        other.view("|u1")
        sh.unlink()

    def ours_small():
        n = f"{name}-{next(counter)}"
        sh = bl.SharedBuffer.create(n, 1 << 20)
        bl.SharedBuffer.attach(n).view("|u1")
        sh.unlink()

    t_std = seconds(standard)
    t_ours = seconds(ours_create_attach)
    t_small = seconds(ours_small)
    print(f"  multiprocessing.Array + np.frombuffer:  {t_std:9.5f}  baseline")
    print(f"  SharedBuffer.create + attach + view:    {t_ours:9.5f}  {t_ours / t_std:.4f}x")
    print(f"  the same for 1 MiB (constant time?):    {t_small:9.5f}  256 MiB / 1 MiB = {t_ours / t_small:.2f}x")
    n = f"{name}-pickle"
    sh = bl.SharedBuffer.create(n, big)
    try:
        print(f"  pickled to send to a worker: {len(pickle.dumps(sh))} bytes (the name, not the data)")
    finally:
        sh.unlink()


if __name__ == "__main__":
    main()
