"""Shared memory across processes, its locks, and mapped files.

The cross-process lock tests run for every lock kind this OS has (both
Linux's: the robust mutex and the file lock); a segment attached by name
takes the kind it was created with."""

import ctypes
import errno
import multiprocessing
import os
import pathlib
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

import bytelens as bl

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPAWN = multiprocessing.get_context("spawn")  # workers attach by name: nothing inherited
FORK = multiprocessing.get_context("fork")
COUNTER = 0  # byte offset of the int64 counter
#: The lock kinds each OS has; the first is its default (lock=None).
LOCKS = {"linux": ["robust-mutex", "file"], "darwin": ["file"], "win32": ["named-mutex"]}[sys.platform]


def _no_robust_futex_lists():
    """Whether the kernel lacks robust futex lists, through which it marks a
    robust mutex's owner dead when the holder ends: qemu-user has none
    (get_robust_list is ENOSYS there), so under it none is ever recovered."""
    number = {"x86_64": 274, "aarch64": 100}.get(os.uname().machine)
    if not sys.platform.startswith("linux") or number is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    head, size = ctypes.c_void_p(), ctypes.c_size_t()
    result = libc.syscall(ctypes.c_long(number), ctypes.c_long(0), ctypes.byref(head), ctypes.byref(size))
    return result == -1 and ctypes.get_errno() == errno.ENOSYS


def _skip_dead_holder_without_robust_lists(lock):
    if lock == "robust-mutex" and _no_robust_futex_lists():
        pytest.skip("no robust futex lists (get_robust_list is ENOSYS, as under qemu-user): no robust mutex is recovered")


@pytest.fixture
def name(request):
    """A segment name unique to this test (and its parameters), removed
    afterwards: short, as macOS takes at most 30 bytes (and tests add "-a")."""
    name = f"bl{os.getpid()}-{zlib.crc32(request.node.nodeid.encode()):08x}"
    yield name
    try:
        bl.SharedBuffer.attach(name).unlink()
    except FileNotFoundError:
        pass


@pytest.fixture(params=LOCKS)
def lock(request):
    """Each lock kind this OS has, by the name SharedBuffer.create takes."""
    return request.param


def test_create_attach_and_views_share_bytes(name):
    sh = bl.SharedBuffer.create(name, 64)
    assert (sh.name, sh.nbytes, len(sh)) == (name, 64, 64)
    assert sh.buffer.address % 4096 == 0
    other = bl.SharedBuffer.attach(name)
    sh.view("<i4")[0] = 0x11223344
    assert other.view("<i2")[:2].tolist() == [0x3344, 0x1122]
    assert np.shares_memory(sh.view("|u1"), sh.buffer.view("|u1"))


def test_the_plan_travels_with_the_segment(name):
    plan = bl.Plan("Work").struct(A=("f4", 4), B=("f4", 3)).union(D=("i4", 7))
    sh = bl.SharedBuffer.create(name, plan.nbytes, plan)
    sh.arrays()["A"][:] = [1.0, 2.0, 3.0, 4.0]
    other = bl.SharedBuffer.attach(name)
    assert other.plan.offsets == plan.offsets and other.plan.name == "Work"
    assert other.arrays()["D"][0] == np.float32(1.0).view(np.int32)


def test_pickles_to_its_name(name):
    sh = bl.SharedBuffer.create(name, 1 << 20)
    data = pickle.dumps(sh)
    assert len(data) < 200  # the name, not the megabyte
    again = pickle.loads(data)
    sh.view("|u1")[-1] = 9
    assert again.view("|u1")[-1] == 9


#: Names no OS takes, and those this one refuses (its separator, its length limit).
BAD_NAMES = ["", "x" * 255, "nul\0"] + (["a\\b"] if sys.platform == "win32" else ["a/b", "..", "."])
if sys.platform == "darwin":
    BAD_NAMES.append("x" * 31)  # macOS: 30 bytes at most


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_names(bad):
    with pytest.raises(ValueError, match="not a usable shared-memory name"):
        bl.SharedBuffer.create(bad, 8)


def test_the_lock_kind_is_chosen_at_create_and_attach_takes_it(name, lock):
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    assert sh.lock_kind == lock
    assert bl.SharedBuffer.attach(name).lock_kind == lock
    assert pickle.loads(pickle.dumps(sh)).lock_kind == lock
    sh.unlink()
    assert bl.SharedBuffer.create(name, 8).lock_kind == LOCKS[0]  # the OS's own


@pytest.mark.parametrize(
    "bad", [kind for kind in ["robust-mutex", "file", "named-mutex"] if kind not in LOCKS] + ["robust_mutex", "File", ""]
)
def test_a_lock_kind_this_os_lacks_is_a_value_error_naming_those_it_has(name, bad):
    has = ", ".join(f'"{kind}"' for kind in LOCKS)
    with pytest.raises(ValueError, match=f"is not a lock this OS has: {has}$"):
        bl.SharedBuffer.create(name, 8, lock=bad)
    with pytest.raises(FileNotFoundError):
        bl.SharedBuffer.attach(name)  # nothing left behind
    with pytest.raises(TypeError):
        bl.SharedBuffer.create(name, 8, None, "file")  # keyword only


def test_missing_existing_foreign_and_small_segments(name):
    with pytest.raises(FileNotFoundError, match="no shared memory named"):
        bl.SharedBuffer.attach(name)
    bl.SharedBuffer.create(name, 8)
    with pytest.raises(FileExistsError):
        bl.SharedBuffer.create(name, 8)
    bl.SharedBuffer.attach(name).unlink()
    # A segment made by someone else (Python's own shared_memory): no header.
    from multiprocessing import shared_memory

    foreign = shared_memory.SharedMemory(name=name, create=True, size=8192)
    try:
        with pytest.raises(ValueError, match="not a bytelens buffer"):
            bl.SharedBuffer.attach(name)
    finally:
        foreign.close()
        foreign.unlink()
    small = shared_memory.SharedMemory(name=name, create=True, size=100)
    try:
        with pytest.raises(ValueError, match="holds 100 bytes"):
            bl.SharedBuffer.attach(name)
    finally:
        small.close()
        small.unlink()


def test_a_stale_handle_does_not_unlink_the_segment_that_took_its_name(name):
    old = bl.SharedBuffer.create(name, 8)
    old.unlink()
    new = bl.SharedBuffer.create(name, 8)
    new.view("|u1")[0] = 5
    with pytest.raises(ValueError, match="now belongs to another shared-memory segment"):
        old.unlink()
    assert bl.SharedBuffer.attach(name).view("|u1")[0] == 5  # still there
    bl.SharedBuffer.attach(name).unlink()  # by name, deliberately: attach, then unlink
    with pytest.raises(FileNotFoundError):
        new.unlink()


def test_a_plan_larger_than_the_data_is_refused_at_create(name):
    plan = bl.Plan("Big").struct(a=("f8", 100))
    assert plan.nbytes == 800
    with pytest.raises(ValueError, match="the plan needs 800 bytes, more than the 4 bytes"):
        bl.SharedBuffer.create(name, 4, plan)
    with pytest.raises(FileNotFoundError):
        bl.SharedBuffer.attach(name)  # nothing left behind
    sh = bl.SharedBuffer.create(name, 800, plan)
    assert bl.SharedBuffer.attach(name).arrays()["a"].shape == (100,)
    sh.unlink()


def test_close_is_refused_while_views_live(name):
    sh = bl.SharedBuffer.create(name, 16)
    v = sh.view("<i4")
    with pytest.raises(BufferError):
        sh.close()
    del v
    sh.close()
    with pytest.raises(ValueError, match="closed"):
        sh.view("<i4")


def _increment(name, times, locked, start):
    sh = bl.SharedBuffer.attach(name)
    counter = sh.view("<i8", offset=COUNTER, shape=1)
    start.wait()  # all four at once, so that they overlap
    for _ in range(times):
        if locked:
            with sh.lock():
                counter[0] += 1
        else:
            value = counter[0]
            counter[0] = value + 1


def _run_workers(name, times, locked):
    start = SPAWN.Barrier(4)
    workers = [SPAWN.Process(target=_increment, args=(name, times, locked, start)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0


def test_four_processes_count_exactly_under_the_lock(name, lock):
    sh = bl.SharedBuffer.create(name, 64, lock=lock)
    _run_workers(name, 100_000, locked=True)
    assert sh.view("<i8", offset=COUNTER, shape=1)[0] == 400_000


def test_without_the_lock_updates_are_lost(name, lock):
    """Proves the counting test can fail: the same work, unlocked, loses updates."""
    sh = bl.SharedBuffer.create(name, 64, lock=lock)
    _run_workers(name, 100_000, locked=False)
    assert sh.view("<i8", offset=COUNTER, shape=1)[0] < 400_000


def _die_holding_the_lock(name, ready):
    sh = bl.SharedBuffer.attach(name)
    records = sh.view("<i8", shape=(16, 2))
    for i in range(10):  # complete records, each written under the lock
        with sh.lock():
            records[i] = [i, i * i]
    lock = sh.lock()
    lock.__enter__()
    records[10, 0] = 10  # the interrupted record: half written
    ready.set()
    time.sleep(60)


def test_a_holder_killed_by_sigkill_does_not_deadlock_the_others(name, lock):
    _skip_dead_holder_without_robust_lists(lock)
    sh = bl.SharedBuffer.create(name, 16 * 16, lock=lock)
    ready = FORK.Event()
    victim = FORK.Process(target=_die_holding_the_lock, args=(name, ready))
    victim.start()
    assert ready.wait(30)
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    start = time.monotonic()
    with sh.lock(timeout=1.0) as held:
        waited = time.monotonic() - start
        assert held.owner_died
        records = sh.view("<i8", shape=(16, 2))
        assert records[:10].tolist() == [[i, i * i] for i in range(10)]
    assert waited < 1.0
    with sh.lock(timeout=1.0) as held:
        assert not held.owner_died  # consistent again


def test_a_busy_lock_times_out(name, lock):
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    ready, release = FORK.Event(), FORK.Event()

    def hold():
        with bl.SharedBuffer.attach(name).lock():
            ready.set()
            release.wait(30)

    holder = FORK.Process(target=hold)
    holder.start()
    assert ready.wait(30)
    for timeout in (0.02, 0.1, 0.3):  # waits in slices of 50 ms: under, at and over one
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            with sh.lock(timeout=timeout):
                pass
        waited = time.monotonic() - start
        assert timeout <= waited < timeout + 2.0  # never early; late only by a busy machine
    with pytest.raises(TimeoutError):
        with sh.lock(timeout=0):
            pass
    release.set()
    holder.join(10)
    with sh.lock(timeout=1.0) as held:
        assert not held.owner_died


def test_a_forked_child_is_kept_out_while_its_parent_holds_the_lock(name, lock):
    """The child inherits the parent's SharedBuffer object itself (fork, not
    pickled). A file lock's descriptor would share the parent's open file,
    and so its lock: the child must open its own, and wait like anyone."""
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    outcome = FORK.Queue()

    def child():
        try:
            with sh.lock(timeout=0.2):
                outcome.put("locked while the parent held it")
        except TimeoutError:
            outcome.put("timed out")
        released.wait(30)
        with sh.lock(timeout=10) as held:
            outcome.put(f"locked after, owner_died={held.owner_died}")

    released = FORK.Event()
    with sh.lock():
        worker = FORK.Process(target=child)
        worker.start()
        assert outcome.get(timeout=30) == "timed out"
    released.set()
    assert outcome.get(timeout=30) == "locked after, owner_died=False"
    worker.join(10)
    assert worker.exitcode == 0
    with sh.lock(timeout=1.0) as held:  # the child's exit left it free and consistent
        assert not held.owner_died


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS cannot open a file whose name is gone: fork before unlink")
def test_a_child_forked_after_unlink_locks_as_its_parent_can(name, lock):
    """With lock="file" the child used to fail ("removed while the segment
    lived?": it reopened the lock file by the name unlink removed) where the
    robust mutex's child locked. Both lock now, and exclude each other."""
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    sh.unlink()
    with sh.lock(timeout=5) as held:  # the parent can
        assert not held.owner_died
    outcome = FORK.Queue()

    def child():
        try:
            with sh.lock(timeout=5) as held:
                sh.view("<i8")[COUNTER] += 1
                outcome.put(f"locked, owner_died={held.owner_died}")
        except Exception as err:  # reported to the parent, which asserts
            outcome.put(f"{type(err).__name__}: {err}")

    worker = FORK.Process(target=child)
    worker.start()
    assert outcome.get(timeout=30) == "locked, owner_died=False"
    worker.join(10)
    assert worker.exitcode == 0
    assert sh.view("<i8")[COUNTER] == 1
    with sh.lock(timeout=1.0) as held:  # the child's exit left it free and consistent
        assert not held.owner_died


def _example():
    """The Rust side: native/examples/shared.rs, built by `cargo test` (or here)."""
    path = ROOT / "target" / "debug" / "examples" / "shared"
    if not path.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "bytelens", "--example", "shared"], cwd=ROOT, check=True)
    return str(path)


def test_rust_writes_python_reads(name):
    subprocess.run([_example(), "write", name], check=True, capture_output=True)
    sh = bl.SharedBuffer.attach(name)
    arrays = sh.arrays()
    assert arrays["A"].tolist() == [0.5, 1.5, 2.5, 3.5]
    assert arrays["B"].tolist() == [-1, 2, -3]
    assert sh.plan.fields[2][:2] == ("D", "<i4")


def test_python_writes_rust_reads(name):
    plan = bl.Plan("Work").struct(A=("f4", 2), B=("i2", 3)).union(D=("u1", 4))
    sh = bl.SharedBuffer.create(name, plan.nbytes, plan)
    arrays = sh.arrays()
    arrays["A"][:] = [0.25, -8.0]
    arrays["B"][:] = [7, -7, 300]
    out = subprocess.run([_example(), "read", name], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    assert lines[0] == "A 0.25 -8"
    assert lines[1] == "B 7 -7 300"
    assert lines[2] == "D 0 0 128 62"  # the bytes of 0.25f, seen as uint8


def test_seed_workers_fill_int16_the_parent_reads_int32(name, lock):
    """The seed's multiprocessing.Array + np.frombuffer example, the bytelens way."""
    plan = bl.Plan("Seed").struct(halves=("i2", 8)).union(words=("i4", 4))
    sh = bl.SharedBuffer.create(name, plan.nbytes, plan, lock=lock)
    workers = [SPAWN.Process(target=_fill_halves, args=(sh, i, lock)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    words = sh.arrays()["words"]
    expected = np.array([1, 2, 3, 4, 5, 6, 7, 8], "<i2").view("<i4")
    assert words.tolist() == expected.tolist()


def _fill_halves(sh, worker, lock):
    halves = sh.arrays()["halves"]  # `sh` arrived pickled: attached by name
    assert sh.lock_kind == lock  # and with the creator's kind of lock
    with sh.lock():
        for i in range(worker * 4, worker * 4 + 4):
            halves[i] = i + 1


def test_mapped_files_read_what_numpy_wrote(tmp_path):
    path = tmp_path / "data.bin"
    original = np.arange(12, dtype="<f8").reshape(3, 4)
    original.tofile(path)
    ro = bl.Buffer.map(path)
    assert ro.readonly
    view = ro.view("<f8", shape=(3, 4))
    assert np.array_equal(view, original)
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    rw = bl.Buffer.map(path, mode="r+")
    rw.view("<f8")[0] = -1.0
    del rw
    assert np.fromfile(path, "<f8")[0] == -1.0
    private = bl.Buffer.map(path, mode="c")
    private.view("<f8")[1] = 99.0
    assert private.view("<f8")[1] == 99.0
    assert np.fromfile(path, "<f8")[1] == 1.0
    with pytest.raises(ValueError, match="mode"):
        bl.Buffer.map(path, mode="w")
    with pytest.raises(OSError):
        bl.Buffer.map(tmp_path / "missing.bin")


def _run_python(code, timeout=30):
    """Runs `code` in a fresh interpreter: for cases that must not crash this one."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


def test_nesting_the_lock_in_one_thread_is_an_error_not_a_deadlock(name, lock):
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    with sh.lock():
        with pytest.raises(RuntimeError, match="already holds the lock"):
            with sh.lock():
                pass
        with pytest.raises(RuntimeError, match="already holds the lock"):
            with sh.lock(timeout=0.2):
                pass
    lock = sh.lock()
    with pytest.raises(RuntimeError, match="does not hold the lock"):
        lock.__exit__(None, None, None)
    with sh.lock(timeout=1e30):  # past ~292 years (as math.inf): forever, not a crash
        pass


def test_a_lock_object_dropped_while_held_does_not_crash_the_next_lock(name, lock):
    result = _run_python(
        f"""
import gc, bytelens as bl
a = bl.SharedBuffer.create("{name}-a", 64, lock="{lock}")
b = bl.SharedBuffer.create("{name}-b", 64, lock="{lock}")
a.unlink(); b.unlink()
held = a.lock(); held.__enter__()
del held, a; gc.collect()      # the last reference to a's mapping goes while its lock is held
with b.lock(): pass
print("ok")
"""
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_a_holder_that_lets_go_of_its_mapping_and_exits_is_still_seen_dead(name, lock):
    _skip_dead_holder_without_robust_lists(lock)
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    result = _run_python(
        f"""
import gc, os, bytelens as bl
sh = bl.SharedBuffer.attach("{name}")
held = sh.lock(); held.__enter__()
del held, sh; gc.collect()
os._exit(0)
"""
    )
    assert result.returncode == 0, result.stderr
    with sh.lock(timeout=1.0) as held:
        assert held.owner_died


def test_ctrl_c_interrupts_a_wait_for_the_lock(name, lock):
    sh = bl.SharedBuffer.create(name, 8, lock=lock)
    with sh.lock():  # held by this process while the child waits
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"""
import bytelens as bl, signal, time
# Ctrl-C's own handler, whatever this child inherited: a run started in the
# background of a shell without job control ignores SIGINT, and so would it.
signal.signal(signal.SIGINT, signal.default_int_handler)
sh = bl.SharedBuffer.attach("{name}")
print("waiting", flush=True)
try:
    with sh.lock():
        print("locked")
except KeyboardInterrupt:
    print("interrupted")
""",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.2)
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=10)
        assert out.strip() == "interrupted"
        assert time.monotonic() - start < 1.0


def test_a_corrupted_plan_text_is_reported(name):
    from multiprocessing import shared_memory

    plan = bl.Plan("P").struct(a=("<i4", 2))
    sh = bl.SharedBuffer.create(name, plan.nbytes, plan)
    raw = shared_memory.SharedMemory(name=name)  # the header, as another program might damage it
    try:
        raw.buf[256 + 4 : 256 + 5] = b"#"  # "P\na <i4 2" becomes "P\na #i4 2"
        with pytest.raises(ValueError, match="does not read as"):
            sh.plan
    finally:
        raw.close()


def test_os_errors_are_the_usual_python_ones(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        bl.Buffer.map(tmp_path / "missing.bin")
    with pytest.raises(ValueError, match="more than a shared segment can hold"):
        bl.SharedBuffer.create("bytelens-too-big", 2**63)


@pytest.mark.skipif("file" not in LOCKS, reason="Windows has no file lock: its named mutexes live in no folder")
def test_the_file_lock_is_found_whatever_tmpdir_each_process_has(name, tmp_path):
    # The lock file once lived in each process's TMPDIR: a segment created
    # under TMPDIR=A could not be attached under TMPDIR=B ("removed while
    # the segment lived?"), and unlink() under B left A's lock file behind.
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()

    def run(code, tmpdir):
        env = {**os.environ, "TMPDIR": str(tmpdir)}
        return subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, timeout=60, env=env)

    root = next(r for r in ("/dev/shm", "/tmp") if os.path.isdir(r))  # as flock.rs's LOCK_ROOT
    lock_dir = pathlib.Path(root) / f"bytelens-locks-{os.getuid()}"

    def lock_files():
        return set(lock_dir.iterdir()) if lock_dir.is_dir() else set()

    before = lock_files()
    created = run("import sys, bytelens as bl; sh = bl.SharedBuffer.create(sys.argv[1], 8, lock='file');"
                  "sh.view('<i4')[0] = 7; print('made')", a)
    assert created.returncode == 0 and "made" in created.stdout, created.stderr
    assert len(lock_files() - before) == 1  # its lock file, in the one folder every process uses
    attached = run("import sys, bytelens as bl; sh = bl.SharedBuffer.attach(sys.argv[1])\n"
                   "with sh.lock():\n    sh.view('<i4')[0] += 1\n"
                   "print(sh.lock_kind, sh.view('<i4')[0]); sh.unlink()", b)
    assert attached.returncode == 0 and attached.stdout.split() == ["file", "8"], attached.stderr
    # Nothing left behind: not in either TMPDIR, not in the lock files' folder.
    assert list(a.iterdir()) == [] and list(b.iterdir()) == []
    assert lock_files() - before == set()


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a /dev/shm of its own (a mount namespace) needs Linux, root and unshare",
)
def test_a_squatted_lock_folder_is_refused_saying_whose_it_is_or_left_for_the_users_own(name):
    # Another user (uid 12345) made root's bytelens-locks-0 first. In a mount
    # namespace whose /dev/shm and /run are empty tmpfs, never the machine's.
    setup = ("mount -t tmpfs bytelens-test /dev/shm && mount -t tmpfs bytelens-test /run"
             " && mkdir -m 0755 /dev/shm/bytelens-locks-0 && chown 12345 /dev/shm/bytelens-locks-0")
    code = """if True:
        import os, sys, bytelens as bl
        name = sys.argv[1]
        try:
            bl.SharedBuffer.create(name, 8, lock="file")
        except PermissionError as err:
            print("refused:", err)
        os.mkdir("/run/user", 0o755)
        os.mkdir("/run/user/0", 0o700)  # what systemd-logind makes for a user's session
        sh = bl.SharedBuffer.create(name, 8, lock="file")
        own = "/run/user/0/bytelens-locks"
        print("lock files:", len(os.listdir(own)), len(os.listdir("/dev/shm/bytelens-locks-0")))
        other = bl.SharedBuffer.attach(name)
        with other.lock(timeout=5):
            other.view("<i4")[0] = 7
        sh.unlink()
        print("after unlink:", len(os.listdir(own)), sh.view("<i4")[0])
    """
    ran = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", setup + ' && exec "$@"', "sh",
                          sys.executable, "-c", code, name], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == (
        "refused: the lock files' folder: /dev/shm/bytelens-locks-0 is a folder of uid 12345, mode 0755, not a folder"
        " of this user's (uid 0) with mode 0700: another user made it, and could read or take the locks in it; have"
        " it removed (as uid 12345 or root: rm -r '/dev/shm/bytelens-locks-0'); and no folder of this user's own to"
        " use instead (/run/user/0: No such file or directory (os error 2))"
    ), lines
    assert lines[1:] == ["lock files: 1 0", "after unlink: 0 7"]


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a /dev/shm of its own (a mount namespace) needs Linux, root and unshare",
)
def test_a_buffer_larger_than_the_free_shared_memory_is_refused_at_create(name):
    # create succeeded on a /dev/shm smaller than the buffer, and the first
    # write past its free space killed the process with SIGBUS. In a mount
    # namespace whose /dev/shm is a tmpfs of 4 MiB, never the machine's.
    setup = "mount -t tmpfs -o size=4m bytelens-test /dev/shm"
    code = """if True:
        import os, sys, bytelens as bl
        name = sys.argv[1]
        try:
            sh = bl.SharedBuffer.create(name, 16 << 20)
            sh.view("u1")[:] = 1  # SIGBUS, before the fix
            print("created and written")
        except MemoryError as err:
            print(type(err).__name__, err.kind, "|", err)
        print("left:", os.listdir("/dev/shm"))
        small = bl.SharedBuffer.create(name, 1 << 20)  # what fits still does
        small.view("u1")[:] = 7
        print("fits:", int(small.view("u1")[-1]))
        small.unlink()
    """
    ran = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", setup + ' && exec "$@"', "sh",
                          sys.executable, "-c", code, name], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, (ran.returncode, ran.stdout, ran.stderr)
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("MemoryError OutOfMemory | shared memory "), lines
    assert f"needs {(16 << 20) + 4096} bytes, and /dev/shm has " in lines[0], lines
    free = int(lines[0].split("/dev/shm has ")[1].split(" bytes free")[0])
    assert free <= 4 << 20, lines
    assert lines[1:] == ["left: []", "fits: 7"], lines
