"""bytelens.DataLoader against torch's DataLoader, measured in one run.

Run with `cargo xtask bench python dataloader`. Four goal lines:

- throughput: image-like samples (uint8 3x224x224 random crops and flips
  of 3x256x256 images held in one numpy array, and a label), batch 64, 2
  workers; bytelens with ``framework="torch"`` against torch's
  ``DataLoader(num_workers=2, persistent_workers=True)`` over the same
  dataset (goal >= 1.5x). The loop touches each batch (a sum over one
  channel's first row of every image), as a training step's copy to the
  GPU would read it;
- the first batch of an epoch, persistent workers, against torch's
  ``DataLoader(persistent_workers=False)`` (which starts its workers every
  epoch), median over epochs 2 and after (goal <= 0.3x);
- memory: a dataset holding a 256 MiB array, 4 workers, every row read:
  how much main + workers' PSS grows over the same loader's with a 1 MiB
  dataset, in datasets (goal <= 2.5x; torch with spawn shown beside it);
- memory and /dev/shm over 50 epochs (goal: flat).

Medians of one run. `--quick` runs fewer batches and a 64 MiB dataset (a
smoke test).
"""

import gc
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
IMAGES = 128
BATCH = 64
EPOCH_BATCHES = 8 if QUICK else 20
EPOCHS = 3 if QUICK else 5
BIG = (64 if QUICK else 256) << 20


class Images:
    """IMAGES images of 3x256x256 uint8 in one array; a sample is a random
    224x224 crop, flipped half the time, and its label. `length` makes an
    epoch longer than the images (indices wrap)."""

    def __init__(self, length):
        self.images = np.random.default_rng(0).integers(0, 255, (IMAGES, 3, 256, 256), dtype=np.uint8)
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        y, x = np.random.randint(0, 33, size=2)
        crop = self.images[i % IMAGES, :, y : y + 224, x : x + 224]
        if np.random.rand() < 0.5:
            crop = crop[:, :, ::-1]
        return {"image": np.ascontiguousarray(crop), "label": np.int64(i % 1000)}


class Rows:
    """A dataset holding one array of `nbytes`; a sample reads a row."""

    def __init__(self, nbytes):
        self.data = np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8).reshape(-1, 1 << 16)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"s": np.int64(self.data[i].sum())}


def touch(batch):
    return int(batch["image"][:, 0, 0].sum())


def epochs_per_s(loader, epochs):
    """Batches/s of each epoch after the first (its workers warm), and the
    seconds to each epoch's first batch."""
    rates, firsts = [], []
    for e in range(epochs):
        start = time.perf_counter()
        n = 0
        for batch in loader:
            if n == 0:
                firsts.append(time.perf_counter() - start)
                start = time.perf_counter()
            touch(batch)
            n += 1
        del batch
        if e > 0:
            rates.append((n - 1) / (time.perf_counter() - start))
    return statistics.median(rates), firsts


def torch_loader(dataset, workers, persistent, context=None):
    from torch.utils.data import DataLoader

    return DataLoader(
        dataset, batch_size=BATCH, shuffle=True, num_workers=workers, persistent_workers=persistent,
        multiprocessing_context=context,
    )


def pss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) << 10
    return 0


def pss_total(make, nbytes):
    """Main + workers' PSS after one epoch over a dataset of `nbytes`."""
    dataset = Rows(nbytes)
    loader = make(dataset)
    it = iter(loader)
    total = 0
    for batch in it:
        total += int(batch["s"].sum())
    assert total == int(dataset.data.sum(dtype=np.int64))
    gc.collect()
    pids = [p.pid for p in multiprocessing.active_children()]
    got = pss(os.getpid()) + sum(pss(p) for p in pids)
    close = getattr(loader, "close", None)
    del it, batch
    if close:
        close()
    del loader, dataset
    gc.collect()
    return got, len(pids)


def growth(make):
    small, _ = pss_total(make, 1 << 20)
    big, procs = pss_total(make, BIG)
    return (big - small) / (BIG - (1 << 20)), procs


def shm_kib():
    total = 0
    for name in os.listdir("/dev/shm"):
        try:
            total += os.stat(f"/dev/shm/{name}").st_blocks // 2
        except FileNotFoundError:
            pass
    return total, len(os.listdir("/dev/shm"))


def fifty_epochs():
    loader = bl.DataLoader(Images(4 * 16), batch_size=16, shuffle=True, num_workers=2)
    rows = {}
    for e in range(1, 51):
        for batch in loader:
            touch(batch)
        del batch
        if e in (10, 50):
            gc.collect()
            pids = [p.pid for p in multiprocessing.active_children()]
            rows[e] = (rss_kib(os.getpid()) + sum(rss_kib(p) for p in pids), *shm_kib())
    loader.close()
    return rows


def goal(what, value, ok, target):
    print(f"goal {what}: {value} ({'met' if ok else 'MISSED'}; goal {target})")


def main():
    import warnings

    import torch

    # torch's advice against 4 workers on a machine with fewer cores: the
    # memory line asks for 4 workers anyway.
    warnings.filterwarnings("ignore", message="This DataLoader will create")

    print(
        f"bytelens.DataLoader against torch {torch.__version__}'s DataLoader, {os.cpu_count()} CPUs, "
        f"medians of one run; batch {BATCH} of uint8 3x224x224 crops, 2 workers"
    )
    n = EPOCH_BATCHES * BATCH
    ours = bl.DataLoader(Images(n), batch_size=BATCH, shuffle=True, num_workers=2, framework="torch")
    bl_rate, bl_firsts = epochs_per_s(ours, EPOCHS)
    ours.close()
    theirs = torch_loader(Images(n), 2, True)
    t_rate, _ = epochs_per_s(theirs, EPOCHS)
    del theirs
    fresh = torch_loader(Images(n), 2, False)
    _, t_firsts = epochs_per_s(fresh, EPOCHS)
    del fresh
    bl_first = statistics.median(bl_firsts[1:])
    t_first = statistics.median(t_firsts[1:])
    print(
        f"throughput: bytelens {bl_rate:.1f} batches/s, torch (persistent workers) {t_rate:.1f} batches/s; "
        f"first batch of an epoch: bytelens {bl_first * 1e3:.1f} ms (persistent workers; "
        f"{bl_firsts[0] * 1e3:.0f} ms the first epoch, workers started), torch "
        f"(persistent_workers=False) {t_first * 1e3:.1f} ms"
    )
    bl_growth, bl_procs = growth(lambda d: bl.DataLoader(d, batch_size=64, num_workers=4))
    t_growth, t_procs = growth(lambda d: torch_loader(d, 4, True, "spawn"))
    print(
        f"memory, a {BIG >> 20} MiB dataset, 4 workers, PSS of main + workers grown by: bytelens "
        f"{bl_growth:.2f}x the dataset ({bl_procs} workers), torch with spawn {t_growth:.2f}x ({t_procs} workers)"
    )
    rows = fifty_epochs()
    (a, ra), (b, rb) = sorted(rows.items())
    print(
        f"over 50 epochs, after epochs {a} and {b}: main + workers' RSS {ra[0]} -> {rb[0]} KiB, "
        f"/dev/shm {ra[1]} -> {rb[1]} KiB in {ra[2]} -> {rb[2]} files"
    )
    goal("throughput against DataLoader", f"{bl_rate / t_rate:.2f}x", bl_rate >= 1.5 * t_rate, ">= 1.5x")
    goal(
        "first batch of an epoch against DataLoader(persistent_workers=False)",
        f"{bl_first / t_first:.3f}x", bl_first <= 0.3 * t_first, "<= 0.3x",
    )
    goal("PSS growth, 4 workers", f"{bl_growth:.2f}x the dataset", bl_growth <= 2.5, "<= 2.5x")
    grew = max(rb[0] - ra[0], rb[1] - ra[1])
    goal(
        "memory and /dev/shm from epoch 10 to 50", f"{grew} KiB, {rb[2] - ra[2]} files",
        grew <= 1024 and rb[2] <= ra[2], "flat (<= 1 MiB of noise, no new files)",
    )


if __name__ == "__main__":
    main()
