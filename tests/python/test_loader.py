"""bytelens.Loader: worker processes fill batches, the loop gets them in
index order over shared-memory slots (zero-copy into numpy, torch and JAX),
worker errors and deaths come back as exceptions, and every way out of the
loop leaves no process and no segment behind."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import bytelens as bl
import _support
from _support import frameworks_required, process_alive


def framework(name):
    """The framework, which the venv that holds the frameworks must have."""
    if frameworks_required():
        return __import__(name)
    return pytest.importorskip(name)

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the loader's tests look in /dev/shm and signal workers"
)

PLAN = bl.Plan("sample").struct(x=("<f4", (4, 8)), label=("<i8", (1,)))


def fill(slot, index):
    slot["x"][:] = np.arange(32, dtype=np.float32).reshape(4, 8) + index
    slot["label"][0] = index


def fill_failing(slot, index):
    if index == 5:
        raise ValueError(f"no sample {index}")
    fill(slot, index)


def fill_dying(slot, index):
    if index == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    fill(slot, index)


def segments():
    return glob.glob(f"/dev/shm/bl-loader-{os.getpid()}-*")


def test_batches_arrive_in_index_order():
    order = [7, 3, 11, 0, 5, 9, 2, 8, 1, 4, 6, 10, 12, 15, 13, 14]
    loader = bl.Loader(fill, PLAN, order, workers=3, slots=4)
    assert len(loader) == 16
    seen = []
    for batch in loader:
        assert sorted(batch) == ["label", "x"]
        assert batch["x"].shape == (4, 8) and batch["x"].dtype == np.float32
        assert batch["x"][0, 1] == 1 + batch["label"][0]
        seen.append(int(batch["label"][0]))
    assert seen == order
    assert segments() == []
    assert [p for p in __import__("multiprocessing").active_children() if p.name.startswith("bytelens-loader")] == []


def test_torch_tensors_are_the_slots_memory():
    torch = framework("torch")
    addresses = set()
    total = 0.0
    for batch in bl.Loader(fill, PLAN, 12, workers=2, slots=4, framework="torch"):
        assert isinstance(batch["x"], torch.Tensor)
        addresses.add(batch["x"].data_ptr())
        total += float(batch["x"].sum())
    # Twelve batches through at most four slots: the tensors were the slots.
    assert len(addresses) <= 4
    assert total == sum(float(np.arange(32).sum() + 32 * i) for i in range(12))


def test_jax_arrays():
    jax = framework("jax")
    labels = [int(b["label"][0]) for b in bl.Loader(fill, PLAN, 5, workers=1, slots=3, framework="jax")]
    assert labels == list(range(5))
    batch = next(iter(bl.Loader(fill, PLAN, [4], workers=1, slots=2, framework="jax")))
    assert isinstance(batch["x"], jax.Array) and float(batch["x"][0, 0]) == 4.0


def test_dropping_the_iterator_stops_the_workers():
    import gc
    import multiprocessing

    it = iter(bl.Loader(fill, PLAN, 1000, workers=2, slots=4))
    next(it)
    assert len([p for p in multiprocessing.active_children() if p.name.startswith("bytelens-loader")]) == 2
    del it
    gc.collect()
    assert [p for p in multiprocessing.active_children() if p.name.startswith("bytelens-loader")] == []
    assert segments() == []


def test_a_kept_batch_keeps_its_slot():
    kept = []
    for batch in bl.Loader(fill, PLAN, 6, workers=1, slots=4):
        kept.append(batch["x"])
        if len(kept) > 2:
            kept.pop(0)  # two kept at a time: the workers go on
    assert [k[0, 0] for k in kept] == [4, 5]


def test_a_worker_s_exception_is_raised_with_its_traceback():
    with pytest.raises(ValueError, match="no sample 5") as info:
        for _ in bl.Loader(fill_failing, PLAN, 10, workers=2, slots=4):
            pass
    cause = str(info.value.__cause__)
    assert "in loader worker" in cause and "filling index 5" in cause
    assert "fill_failing" in cause and 'raise ValueError(f"no sample {index}")' in cause
    assert segments() == []


def test_a_killed_worker_is_an_error_naming_it():
    with pytest.raises(bl.LoaderWorkerError, match=r"loader worker \d \(pid \d+\) was killed by SIGKILL"):
        for _ in bl.Loader(fill_dying, PLAN, 10, workers=2, slots=4):
            pass
    assert segments() == []


def test_leaving_the_loop_stops_the_workers():
    loader = bl.Loader(fill, PLAN, 1000, workers=2, slots=4)
    for i, _ in enumerate(loader):
        if i == 3:
            break
    time.sleep(0.1)
    import multiprocessing

    assert [p for p in multiprocessing.active_children() if p.name.startswith("bytelens-loader")] == []
    assert segments() == []


def test_the_main_process_killed_leaves_nothing_behind(tmp_path):
    script = textwrap.dedent(
        """
        import sys, os, time
        sys.path.insert(0, %r)
        import bytelens as bl
        from test_loader import fill, PLAN
        import multiprocessing
        for i, batch in enumerate(bl.Loader(fill, PLAN, 10**6, workers=2, slots=4)):
            if i == 2:
                pids = [p.pid for p in multiprocessing.active_children()]
                print(" ".join(map(str, pids)), flush=True)
                time.sleep(60)
        """
        % os.path.dirname(__file__)
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) == 2
    child.kill()
    child.wait()
    deadline = time.monotonic() + 10
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(process_alive(p) for p in pids), "a worker outlived the main process"
    assert glob.glob(f"/dev/shm/bl-loader-{child.pid}-*") == []


def test_arguments_are_checked():
    # Each error has its kind from the one table (errors.md).
    with pytest.raises(TypeError, match="plan must be a bytelens.Plan") as err:
        bl.Loader(fill, 64, 4)
    assert err.value.kind == "WrongType"
    with pytest.raises(ValueError, match="workers must be an int >= 1") as err:
        bl.Loader(fill, PLAN, 4, workers=0)
    assert err.value.kind == "BadValue"
    with pytest.raises(ValueError, match="slots must be an int >= 2") as err:
        bl.Loader(fill, PLAN, 4, slots=1)
    assert err.value.kind == "BadValue"
    with pytest.raises(TypeError, match="indices have no len") as err:
        len(bl.Loader(fill, PLAN, iter([1])))
    assert err.value.kind == "WrongType"
    kinds = {kind: cls for kind, cls, _ in bl._native.error_kinds()}
    assert kinds["WorkerDied"] == "RuntimeError" and issubclass(bl.LoaderWorkerError, RuntimeError)


def run_script(body, timeout=60):
    return _support.run_script(body, lambda pid: glob.glob(f"/dev/shm/bl-loader-{pid}-*"), timeout)


def test_keeping_every_batch_runs_the_loop_to_the_end_with_one_warning():
    code, out, err = run_script(
        """
        import warnings
        import numpy as np
        import bytelens as bl
        from test_loader import fill, PLAN
        labels, xs = [], []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for batch in bl.Loader(fill, PLAN, 20, workers=2, slots=4):
                labels.append(batch["label"])  # keeps the batch's memory
                xs.append(batch["x"][1:3])     # a view of it, too
        assert [int(l[0]) for l in labels] == list(range(20)), labels
        assert all(x[0, 0] == 8 + i for i, x in enumerate(xs))
        said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(said) == 1, said
        assert "still referenced" in said[0] and "copy" in said[0], said
        # Two slots, one worker: every batch after the first two is new memory.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept = [b for b in bl.Loader(fill, PLAN, [9, 3, 5, 7, 1], workers=1, slots=2)]
        assert [int(b["label"][0]) for b in kept] == [9, 3, 5, 7, 1]
        assert all(b["x"][0, 1] == 1 + b["label"][0] for b in kept)
        print("ok")
        """
    )
    assert code == 0 and out.strip() == "ok", err


def test_a_loop_that_keeps_nothing_stays_zero_copy_and_quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        addresses = {batch["x"].ctypes.data for batch in bl.Loader(fill, PLAN, 30, workers=2, slots=4)}
    assert len(addresses) <= 4


def fill_slow(slot, index):
    if index > 0:
        time.sleep(30)
    fill(slot, index)


def loader_children():
    import multiprocessing

    return [p for p in multiprocessing.active_children() if p.name.startswith("bytelens-loader")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")
def test_every_pass_releases_its_rings_pipes_and_workers():
    import gc

    loader = bl.Loader(fill, PLAN, 10, workers=2, slots=4)
    for batch in loader:  # the first pass opens what stays open (imports)
        pass
    del batch
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    for epoch in range(3):
        for batch in loader:
            pass
        del batch
    it = iter(loader)
    next(it)
    del it  # a pass left early, by dropping its iterator
    gc.collect()
    with open("/proc/self/maps") as f:
        mapped = [line for line in f if "bl-loader-" in line]
    assert mapped == [], "".join(mapped)
    assert len(os.listdir("/proc/self/fd")) <= fds
    assert loader_children() == []
    assert segments() == []


def test_close_from_the_loop_s_body_ends_the_loop():
    loader = bl.Loader(fill, PLAN, 100, workers=2, slots=4)
    seen = []
    for batch in loader:
        seen.append(int(batch["label"][0]))
        if len(seen) == 3:
            loader.close()
    assert seen == [0, 1, 2]
    assert loader_children() == []
    assert segments() == []
    # The loader runs again afterwards.
    assert [int(b["label"][0]) for b in bl.Loader(fill, PLAN, 3, workers=1, slots=2)] == [0, 1, 2]


def test_leaving_stops_busy_workers_together():
    loader = bl.Loader(fill_slow, PLAN, 100, workers=4, slots=6)
    for batch in loader:
        time.sleep(0.5)  # the four workers are in fill
        start = time.monotonic()
        break
    took = time.monotonic() - start
    assert loader_children() == []
    assert took < 5, f"leaving took {took:.1f} s"
    assert segments() == []


def fill_exiting(slot, index):
    if index == 3:
        sys.exit(0)
    fill(slot, index)


def fill_os_exit(slot, index):
    if index == 2:
        os._exit(7)
    fill(slot, index)


@pytest.mark.parametrize("how", ["sys.exit", "os._exit"])
def test_a_worker_s_exit_is_an_error_naming_worker_index_and_code(how):
    fill_with, said = {
        "sys.exit": (fill_exiting, r"called sys.exit\(0\) while filling index 3"),
        "os._exit": (fill_os_exit, r"exited with code 7 while filling index 2"),
    }[how]
    with pytest.raises(bl.LoaderWorkerError, match=r"loader worker \d \(pid \d+\) " + said) as err:
        for _ in bl.Loader(fill_with, PLAN, 10, workers=2, slots=4):
            pass
    assert err.value.kind == "WorkerDied"
    assert loader_children() == []
    assert segments() == []


def test_a_script_without_a_main_guard_is_told_so(tmp_path):
    # The most common spawn mistake: the loop at the script's top level.
    # Each worker imports the script as it starts, and dies there.
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import bytelens as bl\n"
        "from test_loader import PLAN, fill\n"
        "try:\n"
        "    for batch in bl.Loader(fill, PLAN, 4, workers=1, slots=2):\n"
        "        pass\n"
        "except bl.LoaderWorkerError as err:\n"
        "    print('main:', err)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert "main: loader worker 0" in done.stdout, done.stdout + done.stderr
    assert "while starting, before it could load fill" in done.stdout
    assert 'if __name__ == "__main__":' in done.stdout


def test_a_fill_the_workers_cannot_import_says_so():
    code, out, err = run_script(
        """
        import bytelens as bl
        from test_loader import PLAN

        def fill(slot, index):  # in __main__ of `python -c`: not importable
            slot["label"][0] = index

        try:
            for batch in bl.Loader(fill, PLAN, 4, workers=1, slots=2):
                pass
        except bl.LoaderWorkerError as err:
            print(err)
            print(type(err.__cause__).__name__)
        """
    )
    assert code == 0, err
    assert "could not load fill (__main__.fill)" in out, out
    assert "Can't get attribute 'fill'" in out and "must be importable" in out, out
    assert "_RemoteTraceback" in out
    with pytest.raises(bl.LoaderWorkerError, match=r"fill \(.*<lambda>\) cannot be sent"):
        iter(bl.Loader(lambda slot, i: None, PLAN, 4)).__next__()


def test_indices_are_read_as_the_loop_goes():
    code, out, err = run_script(
        """
        import itertools, resource
        import bytelens as bl
        from test_loader import fill, PLAN
        # An endless stream turned into a list would stop at this limit.
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        loader = bl.Loader(fill, PLAN, itertools.count(), workers=2, slots=4)
        try:
            len(loader)
        except TypeError as err:
            print("len:", err)
        pulled = []

        def stream():
            for i in itertools.count(100):
                pulled.append(i)
                yield i

        labels = []
        for batch in bl.Loader(fill, PLAN, stream(), workers=2, slots=4):
            labels.append(int(batch["label"][0]))
            assert len(pulled) <= len(labels) + 4, (len(pulled), len(labels))
            if len(labels) == 10:
                break
        print(labels)
        for batch in loader:
            if int(batch["label"][0]) == 5:
                break
        print("ok")
        """
    )
    assert code == 0, err
    assert "len: this Loader's indices have no len()" in out
    assert str(list(range(100, 110))) in out and out.strip().endswith("ok"), out


def test_indices_must_be_ints():
    with pytest.raises(TypeError, match=r"indices must be ints, not float \(0.5 at position 0\)") as err:
        for _ in bl.Loader(fill, PLAN, [0.5, 1.9], workers=1, slots=2):
            pass
    assert err.value.kind == "WrongType"
    with pytest.raises(TypeError, match="indices must be an int or an iterable of ints, not float"):
        bl.Loader(fill, PLAN, 2.5)
    assert segments() == []
    assert [int(b["label"][0]) for b in bl.Loader(fill, PLAN, np.array([3, 1]), workers=1, slots=2)] == [3, 1]


def fill_whole_slot(slot, index):
    import ctypes

    ctypes.memset(slot.address, 0, slot.nbytes)  # the guide's C pattern
    fill(slot, index)


def test_a_fill_that_writes_its_whole_slot_leaves_the_order_intact():
    code, out, err = run_script(
        """
        import bytelens as bl
        from test_loader import fill_whole_slot, PLAN
        order = [5, 2, 9, 0, 7, 1, 3, 8]
        got = [int(b["label"][0]) for b in bl.Loader(fill_whole_slot, PLAN, order, workers=3, slots=4)]
        assert got == order, got
        print("ok")
        """
    )
    assert code == 0 and out.strip() == "ok", err


def test_workers_outlive_the_thread_that_started_the_loop():
    import threading

    it = iter(bl.Loader(fill, PLAN, 12, workers=2, slots=4))
    got = []
    t = threading.Thread(target=lambda: got.append(int(next(it)["label"][0])))
    t.start()
    t.join()
    time.sleep(0.5)  # the thread that started the workers is gone
    got += [int(b["label"][0]) for b in it]
    assert got == list(range(12))
    assert loader_children() == []
    assert segments() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_main_process_killed_while_workers_start_leaves_nothing(tmp_path):
    (tmp_path / "slow_fill.py").write_text(
        textwrap.dedent(
            """
            import os, time
            if os.environ.get("SLOW_FILL_IMPORT"):
                time.sleep(60)  # a worker importing torch, much slower
            def fill(slot, index):
                slot["label"][0] = index
            """
        )
    )
    script = textwrap.dedent(
        """
        import os, sys
        sys.path.insert(0, %r)
        sys.path.insert(0, %r)
        import bytelens as bl
        from slow_fill import fill
        from test_loader import PLAN
        os.environ["SLOW_FILL_IMPORT"] = "1"  # for the workers only
        print("starting", flush=True)
        for batch in bl.Loader(fill, PLAN, 10, workers=2, slots=4):
            pass
        """
        % (str(tmp_path), os.path.dirname(__file__))
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "starting\n"
        deadline = time.monotonic() + 30
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = [p for p in _children_of(child.pid) if "multiprocessing" in _cmdline(p) and "resource_tracker" not in _cmdline(p)]
        assert len(workers) == 2, "the workers did not start"
        time.sleep(1.0)  # the workers are importing fill
        assert len(glob.glob(f"/dev/shm/bl-loader-{child.pid}-*")) == 2
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
        glob.glob(f"/dev/shm/bl-loader-{child.pid}-*") or any(process_alive(p) for p in workers)
    ):
        time.sleep(0.1)
    assert not any(process_alive(p) for p in workers), "a worker outlived the main process"
    left = glob.glob(f"/dev/shm/bl-loader-{child.pid}-*")
    for path in left:
        os.unlink(path)
    assert left == []


def _children_of(pid):
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.split("/")[2]))
    return out


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
