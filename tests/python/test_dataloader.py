"""bytelens.DataLoader: torch's DataLoader contract (datasets of samples,
batches, shuffling by seed and epoch, per-batch seeds, samplers, worker
info, persistent workers, errors, timeouts, resume) over typed slots, with
the dataset's arrays shared rather than copied into every worker.

The datasets live at this module's top level: the workers are spawned, and
import this module to unpickle them (it imports no framework, so that a
worker starts in a fraction of a second)."""

import gc
import glob
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import bytelens as bl
import _support
from _support import frameworks_required, process_alive

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the DataLoader's tests look in /dev/shm and /proc"
)


def framework(name):
    if frameworks_required():
        return __import__(name)
    return pytest.importorskip(name)


class Squares:
    """Map-style: sample i is a dict of an array, an int and random draws
    from Python's and numpy's global generators."""

    def __init__(self, n=22):
        self.n = n
        self.x = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "x": self.x[i],
            "i": i,
            "r": random.random(),
            "n": np.random.randint(1 << 30),
        }


class Pairs(Squares):
    """Tuples: (image, label), the label a numpy scalar."""

    def __getitem__(self, i):
        return (np.full((3, 4), i, dtype=np.uint8), np.int16(i))


class Ragged(Squares):
    def __getitem__(self, i):
        return {"x": np.zeros((i % 7 == 6) + 2, dtype=np.float32)}


class WhoMakesIt(Squares):
    def __getitem__(self, i):
        info = bl.get_worker_info()
        return {"i": i, "pid": os.getpid(), "worker": info.id, "workers": info.num_workers,
                "seed": info.seed % (1 << 62), "inited": INITED[0], "same": info.dataset is self}


INITED = [-1]


def init(worker_id):
    INITED[0] = 100 + worker_id


class Failing(Squares):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"no sample {i}")
        return {"i": i}


class Dying(Squares):
    def __getitem__(self, i):
        if i == 9:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"i": i}


class Slow(Squares):
    def __getitem__(self, i):
        if i == 5:
            time.sleep(30)
        return {"i": i}


class Mapped:
    """Holds a read-only np.memmap: the workers map the same file."""

    def __init__(self, path):
        self.data = np.load(path, mmap_mode="r")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"row": self.data[i], "from_file": ORIGIN(self.data)}


def ORIGIN(array):
    """1 where the array is a view of a mapped file in a worker."""
    return int(bl.get_worker_info() is not None and not array.flags.writeable)


class Tensors(Squares):
    def __getitem__(self, i):
        import torch

        return {"t": torch.full((2,), float(i)), "u": torch.rand(())}


def bad_init(worker_id):
    raise RuntimeError(f"worker {worker_id} refuses")


class Stream:
    """Iterable: shards itself by worker, each sample once."""

    def __init__(self, n=23):
        self.n = n

    def __iter__(self):
        info = bl.get_worker_info()
        w, k = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(w, self.n, k):
            yield {"i": i, "r": np.random.randint(1 << 30)}


class Big:
    """A dataset holding one large array (for the memory test)."""

    def __init__(self, nbytes):
        self.data = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8).reshape(-1, 1 << 16)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"s": int(self.data[i].sum())}


def segments(pid=None):
    return glob.glob(f"/dev/shm/bl-dl-{pid or os.getpid()}-*")


def workers_alive(but=()):
    """The DataLoader workers alive, but those in `but` (the shared
    loader's, or those alive before a test's loader)."""
    return [p for p in multiprocessing.active_children() if p.name.startswith("bytelens-dataloader") and p not in but]


def values(loader, field="i"):
    return [np.asarray(b[field]).tolist() for b in loader]


@pytest.fixture(scope="module")
def shuffled():
    """Shared by several tests (its workers start once): 22 samples in
    batches of 4, shuffled, two workers."""
    loader = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=7, num_workers=2)
    yield loader
    loader.close()
    assert workers_alive() == []
    assert segments() == []


def test_dict_batches_are_stacked_samples(shuffled):
    assert len(shuffled) == 6
    shuffled.set_epoch(0)
    batches = [{k: v.copy() for k, v in b.items()} for b in shuffled]
    assert [len(b["i"]) for b in batches] == [4, 4, 4, 4, 4, 2]
    first = batches[0]
    assert sorted(first) == ["i", "n", "r", "x"]
    assert first["x"].shape == (4, 2, 3) and first["x"].dtype == np.float32
    assert first["i"].dtype == np.int64 and first["r"].dtype == np.float64
    order = [int(i) for b in batches for i in b["i"]]
    assert sorted(order) == list(range(22)) and order != list(range(22))
    for b in batches:
        for row, i in zip(b["x"], b["i"]):
            assert (row == Squares().x[i]).all()


def test_the_docstrings_examples_run():
    import doctest

    import bytelens._dataloader

    failed, attempted = doctest.testmod(bytelens._dataloader)
    assert attempted >= 4 and failed == 0


def test_tuples_and_drop_last():
    loader = bl.DataLoader(Pairs(10), batch_size=4, drop_last=True, num_workers=1)
    assert len(loader) == 2
    batches = [(img.copy(), label.copy()) for img, label in loader]
    assert len(batches) == 2
    img, label = batches[1]
    assert img.shape == (4, 3, 4) and img.dtype == np.uint8 and label.dtype == np.int16
    assert label.tolist() == [4, 5, 6, 7] and (img[:, 0, 0] == label).all()
    assert len(bl.DataLoader(Pairs(10), batch_size=4, num_workers=0)) == 3


def test_a_sample_of_another_shape_names_index_field_and_shapes():
    # Sample 6 is the third of batch 1: named by its index either way.
    for workers in (0, 1):
        loader = bl.DataLoader(Ragged(10), batch_size=4, num_workers=workers)
        with pytest.raises(ValueError, match=r"sample 6: field \['x'\].*\(3,\).*\(2,\).*\(sample 0\)") as err:
            list(loader)
        assert err.value.kind == "BadValue"
        loader.close()


def test_shuffle_depends_on_seed_and_epoch_only(shuffled):
    shuffled.set_epoch(3)
    third = values(shuffled)
    fourth = values(shuffled)  # the next pass is the next epoch
    shuffled.set_epoch(3)
    assert values(shuffled) == third != fourth
    here = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=7, num_workers=0)
    here.set_epoch(3)
    assert values(here) == third
    other = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=8, num_workers=0)
    other.set_epoch(3)
    assert values(other) != third


def test_per_batch_seeds_give_the_same_draws_whatever_the_workers(shuffled):
    shuffled.set_epoch(1)
    two = [(b["i"].tolist(), b["r"].tolist(), b["n"].tolist()) for b in shuffled]
    one = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=7, num_workers=1)
    one.set_epoch(1)
    ones = [(b["i"].tolist(), b["r"].tolist(), b["n"].tolist()) for b in one]
    one.close()
    assert ones == two
    draws = [r for o in ones for r in o[1]]
    assert len(set(draws)) == len(draws)  # no two samples share a stream
    # and in this process, with no workers; the caller's own generators untouched
    random.seed(1)
    here = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=7, num_workers=0)
    here.set_epoch(1)
    assert [(b["i"].tolist(), b["r"].tolist(), b["n"].tolist()) for b in here] == two
    assert random.random() == random.Random(1).random()


def test_sampler_and_batch_sampler():
    order = [5, 3, 9, 1, 0, 2, 8]
    loader = bl.DataLoader(Squares(), batch_size=3, sampler=order, num_workers=1)
    assert len(loader) == 3
    assert values(loader) == [[5, 3, 9], [1, 0, 2], [8]]
    groups = [[4, 2], [7], [1, 0, 3]]
    loader = bl.DataLoader(Squares(), batch_sampler=groups, num_workers=2)
    assert len(loader) == 3 and values(loader) == groups
    with pytest.raises(ValueError, match="mutually exclusive"):
        bl.DataLoader(Squares(), batch_size=2, batch_sampler=groups)
    with pytest.raises(ValueError, match="mutually exclusive"):
        bl.DataLoader(Squares(), shuffle=True, sampler=order)


def test_a_failing_init_or_an_unpicklable_dataset_says_so():
    loader = bl.DataLoader(Squares(4), num_workers=1, worker_init_fn=bad_init)
    with pytest.raises(RuntimeError, match="worker 0 refuses") as info:
        list(loader)
    assert "bad_init" in str(info.value.__cause__)
    loader.close()

    class Local(Squares):  # not importable by a spawned worker
        pass

    with pytest.raises(bl.LoaderWorkerError, match="cannot be sent to the DataLoader's workers"):
        list(bl.DataLoader(Local(4), num_workers=1))


def test_a_memmapped_dataset_goes_by_its_file(tmp_path):
    path = tmp_path / "rows.npy"
    np.save(path, np.arange(64 * 4096, dtype=np.int32).reshape(64, 4096))
    names = set(segments())
    loader = bl.DataLoader(Mapped(path), batch_size=16, num_workers=1)
    rows = [(b["row"][:, 0].tolist(), b["from_file"].tolist()) for b in loader]
    assert [r for r, _ in rows] == [list(range(i * 4096 * 16, (i + 1) * 4096 * 16, 4096)) for i in range(4)]
    assert all(f == [1] * 16 for _, f in rows)
    # the file was mapped by the worker: no shared copy of the dataset
    assert not [s for s in set(segments()) - names if s.endswith("-dataset")]
    loader.close()


def test_worker_info_init_fn_and_persistent_workers():
    assert bl.get_worker_info() is None
    loader = bl.DataLoader(WhoMakesIt(8), batch_size=2, num_workers=2, worker_init_fn=init, seed=3)
    first = list({k: v.copy() for k, v in b.items()} for b in loader)
    again = list({k: v.copy() for k, v in b.items()} for b in loader)
    assert [b["worker"].tolist() for b in first] == [[0, 0], [1, 1], [0, 0], [1, 1]]
    assert all((b["workers"] == 2).all() and (b["same"]).all() for b in first)
    assert all((b["inited"] == 100 + b["worker"]).all() for b in first)
    seeds = {int(s) for b in first for s in b["seed"]}
    assert len(seeds) == 2
    pids = {int(p) for b in first for p in b["pid"]}
    assert len(pids) == 2 and pids == {int(p) for b in again for p in b["pid"]}
    assert os.getpid() not in pids
    loader.close()
    assert not any(process_alive(p) for p in pids)
    assert len(list(loader)) == 4  # closed, it starts again (new workers)
    loader.close()
    fresh = bl.DataLoader(WhoMakesIt(4), batch_size=2, num_workers=1, persistent_workers=False)
    a = {int(p) for b in fresh for p in b["pid"]}
    assert not any(process_alive(p) for p in a)  # the pass's workers end with it
    b = {int(p) for b in fresh for p in b["pid"]}
    assert a.isdisjoint(b)


def test_break_and_restart(shuffled):
    shuffled.set_epoch(5)
    whole = values(shuffled)
    shuffled.set_epoch(5)
    for k, b in enumerate(shuffled):
        if k == 1:
            break
    del b
    shuffled.set_epoch(5)
    assert values(shuffled) == whole  # the left pass's batches were dropped
    it = iter(shuffled)
    next(it)
    del it
    gc.collect()
    assert len(values(shuffled)) == 6


def test_a_sample_s_exception_is_raised_with_the_worker_s_traceback():
    loader = bl.DataLoader(Failing(20), batch_size=4, num_workers=2)
    seen = []
    with pytest.raises(KeyError, match="no sample 13") as info:
        for b in loader:
            seen.append(b["i"].tolist())
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    cause = str(info.value.__cause__)
    assert "DataLoader worker 1 (pid" in cause and "batch 3 of epoch 0" in cause
    assert 'raise KeyError(f"no sample {i}")' in cause
    # The workers live on: the next pass runs (and fails at the same batch).
    with pytest.raises(KeyError):
        list(loader)
    loader.close()


def test_a_dead_worker_is_a_loader_worker_error():
    before = workers_alive()
    loader = bl.DataLoader(Dying(20), batch_size=4, num_workers=2)
    with pytest.raises(bl.LoaderWorkerError, match=r"DataLoader worker 0 \(pid \d+\) was killed by SIGKILL"):
        list(loader)
    loader.close()
    assert workers_alive(but=before) == []


def test_a_timeout_names_the_batch_and_the_worker():
    before = workers_alive()
    loader = bl.DataLoader(Slow(12), batch_size=2, num_workers=2, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"batch 2 of epoch 0 .*1.0 s.*DataLoader worker 0 \(pid"):
        list(loader)
    loader.close()
    assert time.monotonic() - started < 20
    assert workers_alive(but=before) == []


def test_iterable_datasets_give_every_sample_once():
    for workers in (1, 2):
        loader = bl.DataLoader(Stream(23), batch_size=4, num_workers=workers, seed=1)
        got = values(loader)
        flat = sorted(i for b in got for i in b)
        assert flat == list(range(23)), (workers, got)
        if workers == 2:
            assert got[:2] == [[0, 2, 4, 6], [1, 3, 5, 7]]  # round-robin, as torch
            again = values(loader)
            assert again == got
        loader.close()
    here = values(bl.DataLoader(Stream(10), batch_size=4, num_workers=0))
    assert here == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    dropped = values(bl.DataLoader(Stream(10), batch_size=4, drop_last=True, num_workers=2))
    assert dropped == [[0, 2, 4, 6], [1, 3, 5, 7]]


def rows(loader, fields=("i", "r", "n")):
    return [tuple(b[f].tolist() for f in fields) for b in loader]


def test_resume_mid_epoch_exactly(shuffled):
    shuffled.set_epoch(2)
    whole = rows(shuffled) + rows(shuffled)  # epochs 2 and 3
    shuffled.set_epoch(2)
    head = []
    for b in shuffled:
        head.append(tuple(b[f].tolist() for f in ("i", "r", "n")))
        if len(head) == 4:
            state = shuffled.state_dict()
            break
    del b
    assert state["epoch"] == 2 and state["batches"] == 4
    resumed = bl.DataLoader(Squares(), batch_size=4, shuffle=True, seed=7, num_workers=1)
    resumed.load_state_dict(state)
    rest = rows(resumed)
    assert head + rest == whole[:6]
    assert rows(resumed) == whole[6:]
    resumed.close()


def test_resume_an_iterable_dataset():
    loader = bl.DataLoader(Stream(23), batch_size=3, num_workers=2, seed=4)
    whole = rows(loader, ("i", "r"))
    loader.set_epoch(0)
    head = []
    for b in loader:
        head.append(tuple(b[f].tolist() for f in ("i", "r")))
        if len(head) == 3:
            state = loader.state_dict()
            break
    del b
    loader.close()
    resumed = bl.DataLoader(Stream(23), batch_size=3, num_workers=2, seed=123)
    resumed.load_state_dict(state)
    assert head + rows(resumed, ("i", "r")) == whole
    resumed.close()


def run_script(body, timeout=90):
    return _support.run_script(body, segments, timeout)


def test_kept_batches_never_stop_the_loop(shuffled):
    kept = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(3):
            shuffled.set_epoch(epoch)
            for b in shuffled:
                kept.append((b["i"], b["x"]))  # the batch's arrays, kept
    assert len(kept) == 18
    for i, x in kept:
        assert (x == Squares().x[i]).all()
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert said and "still referenced" in said[0]
    kept.clear()


def test_close_del_and_the_end_of_the_program_leave_nothing():
    before = workers_alive()
    names = set(segments())
    loader = bl.DataLoader(Big(1 << 20), batch_size=4, num_workers=2)
    next(iter(loader))
    assert len(workers_alive(but=before)) == 2
    assert [s for s in set(segments()) - names if s.endswith("-dataset")]  # its shared copy
    loader.close()
    assert set(segments()) <= names
    sums = [int(s) for b in loader for s in b["s"]]  # closed, it starts again
    assert sums == [int(r.sum()) for r in loader.dataset.data]
    del loader
    gc.collect()
    assert workers_alive(but=before) == [] and set(segments()) <= names
    code, out, err = run_script(
        """
        import multiprocessing, bytelens as bl
        from test_dataloader import Big
        loader = bl.DataLoader(Big(1 << 20), batch_size=2, num_workers=2)
        it = iter(loader)
        next(it)
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()))
        """
    )
    assert code == 0, err
    pids = [int(p) for p in out.split()]
    assert len(pids) >= 2
    time.sleep(0.5)
    assert not any(process_alive(p) for p in pids), "a worker outlived the program"


def test_the_main_process_killed_leaves_nothing():
    script = textwrap.dedent(
        """
        import sys, time, multiprocessing
        sys.path.insert(0, %r)
        import bytelens as bl
        from test_dataloader import Big
        loader = bl.DataLoader(Big(1 << 20), batch_size=2, num_workers=2)
        for b in loader:
            print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
            time.sleep(60)
        """
        % os.path.dirname(__file__)
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) >= 2
    child.kill()
    child.wait()
    deadline = time.monotonic() + 10
    while (any(process_alive(p) for p in pids) or segments(child.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(process_alive(p) for p in pids), "a worker outlived the main process"
    assert segments(child.pid) == []


def rings_mapped():
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f if "bl-dl-" in line}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_many_epochs_leak_nothing():
    loader = bl.DataLoader(Squares(), batch_size=4, shuffle=True, num_workers=2)
    for b in loader:
        pass
    del b
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    mapped = rings_mapped()
    for epoch in range(15):
        for b in loader:
            pass
        del b
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= fds
    assert rings_mapped() <= mapped  # one ring, mapped since the first epoch
    assert segments() == []  # its name removed once the workers had it
    loader.close()


def _pss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no Pss")


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="reads /proc/<pid>/smaps_rollup")
def test_the_dataset_is_shared_not_copied_per_worker():
    """Main + 2 workers over a 64 MiB dataset, every row read: their PSS
    grows by at most 2.5 datasets over the same loader's with a 1 MiB
    dataset (3, pickled into each worker; 2 here: the main process's array
    and the one shared copy)."""
    code, out, err = run_script(
        """
        import gc, multiprocessing, numpy as np, bytelens as bl
        from test_dataloader import Big, _pss
        def total(nbytes):
            dataset = Big(nbytes)
            loader = bl.DataLoader(dataset, batch_size=16, num_workers=2)
            sums = [int(s) for b in loader for s in b["s"]]
            assert sums == [int(r.sum()) for r in dataset.data]
            gc.collect()
            pids = [p.pid for p in multiprocessing.active_children()]
            assert len(pids) == 2
            got = sum(_pss(p) for p in [*pids, "self"])
            loader.close()
            del dataset, loader
            gc.collect()
            return got
        small = total(1 << 20)
        big = total(64 << 20)
        print((big - small) / (63 << 20))
        """
    )
    assert code == 0, err
    ratio = float(out)
    assert ratio <= 2.5, f"main + 2 workers grew by {ratio:.2f}x the dataset"


# Last: once torch is imported here, every loader's workers import it too.


def test_torch_and_jax_batches_are_the_slot_s_memory():
    torch = framework("torch")
    loader = bl.DataLoader(Pairs(24), batch_size=4, num_workers=1, slots=4, framework="torch")
    addresses = set()
    for img, label in loader:
        assert isinstance(img, torch.Tensor) and img.dtype == torch.uint8 and label.dtype == torch.int16
        assert (img[:, 0, 0].to(torch.int16) == label).all()
        addresses.add(img.data_ptr())
    assert len(addresses) <= 4  # six batches through four slots
    loader.close()
    torch.manual_seed(5)
    state = torch.get_rng_state()
    tensors = bl.DataLoader(Tensors(6), batch_size=3, num_workers=0, seed=2, framework="torch")
    here = [(b["t"].clone(), b["u"].clone()) for b in tensors]
    assert torch.equal(torch.get_rng_state(), state)  # the caller's generator untouched
    assert here[1][0].tolist() == [[3.0, 3.0], [4.0, 4.0], [5.0, 5.0]]
    tensors = bl.DataLoader(Tensors(6), batch_size=3, num_workers=1, seed=2, framework="torch")
    there = [(b["t"].clone(), b["u"].clone()) for b in tensors]
    tensors.close()
    assert all(torch.equal(a, b) and torch.equal(u, v) for (a, u), (b, v) in zip(here, there))
    draws = torch.cat([u for _, u in here]).tolist()
    assert len(set(draws)) == 6  # torch's generator seeded per batch, in a worker as here
    jax = framework("jax")
    loader = bl.DataLoader(Pairs(24), batch_size=4, num_workers=1, slots=3, framework="jax")
    labels, addresses = [], set()
    for img, label in loader:
        assert isinstance(img, jax.Array) and img.shape == (4, 3, 4)
        addresses.add(img.unsafe_buffer_pointer())
        labels += [int(v) for v in label]
        del img, label
    assert labels == list(range(24))
    assert len(addresses) <= 3  # six batches through three slots: the arrays were the slots
    loader.close()
