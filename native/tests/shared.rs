//! Shared memory: names, formats, sizes, the plan in the header, and the
//! lock, in every kind this OS has (its timeout, a holder thread that ends
//! holding it), on Linux, macOS and Windows (run under Wine here). Across
//! processes (children of this test binary, see [`child_process`]): locked
//! increments from several processes, a killed holder, a second create.
//! Python's side: tests/python/test_shared.py.

use std::ffi::OsString;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use bytelens::{DType, LockKind, MAX_NAME, Plan, SharedBuffer, SharedError};

fn unique(tag: &str) -> String {
    // Short: macOS takes 30 bytes at most.
    format!("bl-{tag}-{}", std::process::id())
}

/// [`SharedBuffer::create`], for segments these tests never shrink.
fn create(name: &str, nbytes: usize, plan: Option<&Plan<'_>>) -> Result<SharedBuffer, SharedError> {
    // SAFETY: no test shrinks a segment while it is mapped (the one that sizes a
    // segment itself does so before attaching, and only ever grows it).
    unsafe { SharedBuffer::create(name, nbytes, plan) }
}

/// [`SharedBuffer::create_with`] a lock of `kind`.
fn create_with(name: &str, nbytes: usize, kind: LockKind) -> Result<SharedBuffer, SharedError> {
    // SAFETY: as in `create`.
    unsafe { SharedBuffer::create_with(name, nbytes, None, kind) }
}

/// [`SharedBuffer::attach`], for segments these tests never shrink.
fn attach(name: &str) -> Result<SharedBuffer, SharedError> {
    // SAFETY: as in `create`.
    unsafe { SharedBuffer::attach(name) }
}

#[test]
fn create_attach_share_bytes_and_unlink() {
    let name = unique("share");
    let mut a = create(&name, 100, None).unwrap();
    assert_eq!(a.len(), 100);
    assert_eq!(a.as_mut_ptr() as usize % 4096, 0, "data is page-aligned");
    a.as_bytes_mut()[99] = 42;
    let b = attach(&name).unwrap();
    assert_eq!(b.as_bytes()[99], 42);
    assert!(matches!(
        create(&name, 1, None),
        Err(SharedError::Exists { .. })
    ));
    SharedBuffer::unlink(&name).unwrap();
    assert_eq!(b.as_bytes()[99], 42, "mappings outlive the name");
    assert!(matches!(attach(&name), Err(SharedError::Missing { .. })));
    assert!(matches!(
        SharedBuffer::unlink(&name),
        Err(SharedError::Missing { .. })
    ));
}

#[test]
fn names_are_checked() {
    let too_long = "x".repeat(MAX_NAME + 1);
    let mut bad = vec!["", "nul\0byte", &too_long];
    if cfg!(unix) {
        bad.extend(["a/b", "..", "."]);
    } else {
        bad.push("a\\b");
    }
    for bad in bad {
        let err = create(bad, 8, None).err().unwrap();
        assert!(matches!(err, SharedError::BadName { .. }), "{bad:?}");
        let message = err.to_string();
        assert!(
            message.contains("not a usable shared-memory name"),
            "{message}"
        );
        assert!(
            message.contains(&format!("1 to {MAX_NAME} bytes")),
            "{message}"
        );
    }
    // The longest name this OS takes works.
    let longest = format!("{}{}", unique("l"), "x".repeat(MAX_NAME))
        .split_at(MAX_NAME)
        .0
        .to_owned();
    let sh = create(&longest, 8, None).unwrap();
    sh.unlink_checked().unwrap();
}

#[test]
fn a_lock_this_os_lacks_is_refused_naming_those_it_has() {
    for kind in LockKind::ALL.into_iter().filter(|k| !k.is_available()) {
        let err = create_with(&unique("nolock"), 8, kind).err().unwrap();
        assert!(matches!(err, SharedError::LockUnavailable { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains(&format!("no {kind} lock")), "{message}");
        assert!(message.contains(LockKind::native().name()), "{message}");
    }
    for kind in LockKind::available() {
        let name = unique(&format!("kind-{kind}"));
        let a = create_with(&name, 8, kind).unwrap();
        assert_eq!(
            (a.lock_kind(), attach(&name).unwrap().lock_kind()),
            (kind, kind)
        );
        a.unlink_checked().unwrap();
    }
    assert_eq!(
        create(&unique("native"), 8, None)
            .map(|a| {
                let kind = a.lock_kind();
                a.unlink_checked().unwrap();
                kind
            })
            .unwrap(),
        LockKind::native()
    );
}

#[test]
#[cfg(unix)]
fn segments_of_another_format_or_too_small_are_refused() {
    // A segment someone else made: no bytelens header.
    let name = unique("foreign");
    let path = std::ffi::CString::new(format!("/{name}")).unwrap();
    // SAFETY: test-only FFI with a valid C string; the fd is closed below.
    let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600) };
    assert!(fd >= 0);
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::ftruncate(fd, 100), 0);
    }
    let err = attach(&name).err().unwrap();
    assert!(
        matches!(err, SharedError::TooSmall { size: 100, .. }),
        "{err}"
    );
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::ftruncate(fd, 8192), 0);
        libc::close(fd);
    }
    let err = attach(&name).err().unwrap();
    assert!(matches!(err, SharedError::WrongFormat { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "shared memory {name:?} is not a bytelens buffer: \
             no bytelens header (yet: one still being created looks the same)"
        )
    );
    SharedBuffer::unlink(&name).unwrap();
}

#[test]
fn the_plan_travels_in_the_header() {
    let name = unique("plan");
    let mut plan = Plan::named("Work").unwrap();
    plan.field("A", DType::F32, &[4])
        .unwrap()
        .field("B", DType::F32, &[3])
        .unwrap();
    plan.union().unwrap().field("D", DType::I32, &[6]).unwrap();
    let _a = create(&name, plan.nbytes(), Some(&plan)).unwrap();
    let b = attach(&name).unwrap();
    let spec = b.plan().unwrap().unwrap();
    let again = spec.build().unwrap();
    assert_eq!(again.name(), "Work");
    let offsets: Vec<_> = again
        .fields()
        .iter()
        .map(|f| (f.name(), f.offset(), f.alternative()))
        .collect();
    assert_eq!(offsets, [("A", 0, 0), ("B", 16, 0), ("D", 0, 1)]);
    assert_eq!(again.nbytes(), plan.nbytes());
    SharedBuffer::unlink(&name).unwrap();
}

#[test]
fn the_lock_times_out_and_survives_a_dead_holder() {
    LockKind::available().for_each(the_lock_times_out_and_survives_a_dead_holder_with);
}

fn the_lock_times_out_and_survives_a_dead_holder_with(kind: LockKind) {
    let name = unique(&format!("lock-{kind}"));
    let a = create_with(&name, 8, kind).unwrap();
    let guard = a.lock(None).unwrap();
    assert!(!guard.owner_died());
    // Another thread (every kind excludes threads too) waits in vain.
    let waited = std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            let err = a.lock(Some(Duration::from_millis(100))).err().unwrap();
            assert!(matches!(err, SharedError::Timeout { .. }), "{err}");
            start.elapsed()
        })
        .join()
        .unwrap()
    });
    assert!(waited >= Duration::from_millis(90), "{waited:?}");
    drop(guard);
    if skip_without_robust_lists(kind, "recovery from a holder thread that ended") {
        SharedBuffer::unlink(&name).unwrap();
        return;
    }
    // A thread that ends while holding the lock: the next locker is told.
    std::thread::scope(|s| {
        s.spawn(|| std::mem::forget(a.lock(None).unwrap()))
            .join()
            .unwrap();
    });
    let start = Instant::now();
    let guard = a.lock(Some(Duration::from_secs(1))).unwrap();
    assert!(guard.owner_died());
    assert!(start.elapsed() < Duration::from_secs(1));
    drop(guard);
    assert!(
        !a.lock(None).unwrap().owner_died(),
        "consistent again afterwards"
    );
    SharedBuffer::unlink(&name).unwrap();
}

#[test]
fn relocking_in_one_thread_is_an_error_and_only_the_holder_unlocks() {
    LockKind::available().for_each(relocking_in_one_thread_is_an_error_with);
}

fn relocking_in_one_thread_is_an_error_with(kind: LockKind) {
    let name = unique(&format!("relock-{kind}"));
    let a = create_with(&name, 8, kind).unwrap();
    let guard = a.lock(None).unwrap();
    assert!(
        matches!(a.lock(None), Err(SharedError::AlreadyHeld)),
        "not a deadlock"
    );
    // Through a second mapping too (a named mutex would let its holder in
    // again; flock would wait forever for itself).
    let b = attach(&name).unwrap();
    assert!(
        matches!(
            b.lock(Some(Duration::from_secs(5))),
            Err(SharedError::AlreadyHeld)
        ),
        "{kind}"
    );
    std::thread::scope(|s| {
        s.spawn(|| assert!(matches!(a.unlock_raw(), Err(SharedError::NotHeld))));
    });
    drop(guard);
    assert!(matches!(a.unlock_raw(), Err(SharedError::NotHeld)));
    SharedBuffer::unlink(&name).unwrap();
}

#[test]
fn a_mapping_dropped_holding_the_lock_leaves_it_to_the_next_taker() {
    for kind in LockKind::available().filter(|&k| k != LockKind::RobustMutex) {
        let name = unique(&format!("drop-{kind}"));
        let a = create_with(&name, 8, kind).unwrap();
        let b = attach(&name).unwrap();
        assert!(!a.lock_raw(None).unwrap());
        drop(a);
        let guard = b.lock(Some(Duration::from_secs(5))).unwrap();
        assert!(
            guard.owner_died(),
            "{kind}: the holder left without unlocking"
        );
        drop(guard);
        assert!(!b.lock(None).unwrap().owner_died());
        b.unlink_checked().unwrap();
    }
}

#[test]
#[cfg(target_os = "linux")]
fn dropping_a_mapping_whose_lock_is_held_keeps_it_mapped() {
    // glibc links held robust mutexes through their own memory: unmapping one
    // and then locking another would fault. The held mapping is kept instead.
    let (first, second) = (unique("held-a"), unique("held-b"));
    let a = create(&first, 8, None).unwrap();
    let b = create(&second, 8, None).unwrap();
    assert!(!a.lock_raw(None).unwrap());
    drop(a);
    drop(b.lock(None).unwrap());
    SharedBuffer::unlink(&first).unwrap();
    SharedBuffer::unlink(&second).unwrap();
}

#[test]
#[cfg(windows)]
fn on_windows_an_unlinked_name_stays_taken_while_open() {
    let name = unique("win-unlink");
    let old = create(&name, 8, None).unwrap();
    let other = attach(&name).unwrap();
    old.unlink_checked().unwrap();
    assert!(matches!(attach(&name), Err(SharedError::Missing { .. })));
    assert!(matches!(
        SharedBuffer::unlink(&name),
        Err(SharedError::Missing { .. })
    ));
    let err = create(&name, 8, None).err().unwrap();
    assert!(matches!(err, SharedError::Exists { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("while any process has its segment open"),
        "{err}"
    );
    drop((old, other));
    // The last close freed it.
    create(&name, 8, None).unwrap().unlink_checked().unwrap();
}

#[test]
#[cfg(unix)]
fn a_stale_handle_does_not_unlink_the_segment_that_took_its_name() {
    let name = unique("stale");
    let old = create(&name, 8, None).unwrap();
    old.unlink_checked().unwrap();
    let mut new = create(&name, 8, None).unwrap();
    new.as_bytes_mut()[0] = 5;
    let err = old.unlink_checked().unwrap_err();
    assert!(matches!(err, SharedError::Replaced { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("now belongs to another shared-memory segment"),
        "{err}"
    );
    assert_eq!(attach(&name).unwrap().as_bytes()[0], 5, "still there");
    // Any handle to the new segment unlinks it, an attached one included.
    attach(&name).unwrap().unlink_checked().unwrap();
    assert!(matches!(
        new.unlink_checked(),
        Err(SharedError::Missing { .. })
    ));
    assert!(matches!(
        old.unlink_checked(),
        Err(SharedError::Missing { .. })
    ));
}

#[test]
#[cfg(unix)]
fn unlinking_by_name_removes_whichever_segment_has_it() {
    let name = unique("by-name");
    let old = create(&name, 8, None).unwrap();
    SharedBuffer::unlink(&name).unwrap();
    // Not a bytelens segment at all: still not this one's name to remove.
    let path = std::ffi::CString::new(format!("/{name}")).unwrap();
    // SAFETY: test-only FFI with a valid C string; the fd is closed at once.
    let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600) };
    assert!(fd >= 0);
    // SAFETY: as above.
    unsafe { libc::close(fd) };
    assert!(matches!(
        old.unlink_checked(),
        Err(SharedError::Replaced { .. })
    ));
    SharedBuffer::unlink(&name).unwrap();
    assert!(matches!(attach(&name), Err(SharedError::Missing { .. })));
}

#[test]
fn a_plan_larger_than_the_data_is_refused_at_create() {
    let name = unique("plan-fit");
    let mut plan = Plan::named("Big").unwrap();
    plan.field("a", DType::F64, &[100]).unwrap();
    assert_eq!(plan.nbytes(), 800);
    let err = create(&name, 4, Some(&plan)).err().unwrap();
    assert!(
        matches!(
            err,
            SharedError::PlanDoesNotFit {
                plan: 800,
                nbytes: 4
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the plan needs 800 bytes, more than the 4 bytes of data the segment holds"
    );
    assert!(
        matches!(attach(&name), Err(SharedError::Missing { .. })),
        "nothing left under the name"
    );
    // Exactly enough, or more, is fine.
    for nbytes in [800, 801] {
        let sh = create(&name, nbytes, Some(&plan)).unwrap();
        assert_eq!(sh.plan().unwrap().unwrap().build().unwrap().nbytes(), 800);
        sh.unlink_checked().unwrap();
    }
}

#[test]
fn timed_waits_end_on_time() {
    LockKind::available().for_each(timed_waits_end_on_time_with);
}

fn timed_waits_end_on_time_with(kind: LockKind) {
    let name = unique(&format!("timed-{kind}"));
    let a = create_with(&name, 8, kind).unwrap();
    let held = a.lock(None).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for ms in [20, 150, 400] {
                let timeout = Duration::from_millis(ms);
                let start = Instant::now();
                let err = a.lock(Some(timeout)).err().unwrap();
                let waited = start.elapsed();
                assert!(matches!(err, SharedError::Timeout { .. }), "{err}");
                // Never early; late only by scheduling (generous: CI machines are busy).
                assert!(waited >= timeout, "{waited:?} < {timeout:?}");
                assert!(waited < timeout + Duration::from_secs(2), "{waited:?}");
            }
            // Zero only tries.
            let start = Instant::now();
            assert!(matches!(
                a.lock(Some(Duration::ZERO)),
                Err(SharedError::Timeout { .. })
            ));
            assert!(start.elapsed() < Duration::from_secs(1));
        });
    });
    drop(held);
    SharedBuffer::unlink(&name).unwrap();
}

/// Whether the kernel keeps robust futex lists, through which it marks a
/// robust mutex's owner dead when the holder's thread or process ends.
/// qemu-user has none (`get_robust_list` and `set_robust_list` return
/// ENOSYS there), so under it no robust mutex is ever recovered.
#[cfg(target_os = "linux")]
fn robust_futex_lists() -> bool {
    let mut head: *mut libc::c_void = std::ptr::null_mut();
    let mut len: libc::size_t = 0;
    // SAFETY: get_robust_list(0, ...) only reads this thread's list head
    // and its size into the two locals passed.
    let r = unsafe { libc::syscall(libc::SYS_get_robust_list, 0, &mut head, &mut len) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
}

/// Where `kind` is the robust mutex and the kernel has no
/// [`robust_futex_lists`], prints why `what` is not tested and returns true.
fn skip_without_robust_lists(kind: LockKind, what: &str) -> bool {
    #[cfg(target_os = "linux")]
    if kind == LockKind::RobustMutex && !robust_futex_lists() {
        println!(
            "skipped: {what}, for the {kind} lock: this kernel has no robust futex lists \
             (get_robust_list is ENOSYS, as under qemu-user), so none is ever recovered"
        );
        return true;
    }
    let _ = (kind, what);
    false
}

/// The environment variable that makes this test binary a child process
/// playing a role for a test below, instead of running tests.
const ROLE: &str = "BYTELENS_SHARED_CHILD";

/// The environment variable naming the emulator (program and arguments,
/// split at spaces) this test binary runs under, if any, so that its
/// children run under it too: the `arm` suite sets it to the same
/// `qemu-aarch64 -L ...` that cargo runs the tests with, as without
/// binfmt_misc an aarch64 program cannot exec another by itself.
const EMULATOR: &str = "BYTELENS_TEST_EMULATOR";

/// This test binary's command line for running only [`child_process`]:
/// the program first (the [`EMULATOR`]'s words before the binary, where
/// one is set), then its arguments.
fn child_command_line() -> Vec<OsString> {
    let emulator = std::env::var(EMULATOR).unwrap_or_default();
    let mut line: Vec<OsString> = emulator.split_whitespace().map(OsString::from).collect();
    line.push(std::env::current_exe().unwrap().into());
    line.extend(
        [
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(OsString::from),
    );
    line
}

/// This test binary again, running only [`child_process`] in `role`
/// (through the [`EMULATOR`] where one is set).
fn child(role: &str) -> Child {
    let line = child_command_line();
    Command::new(&line[0])
        .args(&line[1..])
        .env(ROLE, role)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The children's side. Run as a test, without the role variable, it does
/// nothing; with it (set only by [`child`] and [`in_own_mounts`]), it plays
/// one of the roles:
/// `count NAME N`, N locked increments of the segment's first u64, read and
/// written back non-atomically with a yield between, so that a lock that
/// failed to exclude would lose increments; `hold NAME`, takes the lock,
/// says so in byte 8 and waits to be killed; `create NAME`, tries to create
/// the segment and reports how it went in byte 9 (1: refused as existing);
/// `squatted NAME`, [`squatted_lock_folder`].
#[test]
fn child_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let words: Vec<&str> = role.split(' ').collect();
    match words[..] {
        ["count", name, n] => {
            let sh = attach(name).unwrap();
            for _ in 0..n.parse::<u32>().unwrap() {
                let guard = sh.lock(Some(Duration::from_secs(60))).unwrap();
                let at = sh.as_bytes().as_ptr().cast::<u64>().cast_mut();
                // SAFETY: the first 8 bytes of the data (page-aligned) are the
                // counter, written only under the lock, which this process holds.
                let value = unsafe { at.read_volatile() };
                std::thread::yield_now();
                // SAFETY: as above.
                unsafe { at.write_volatile(value + 1) };
                drop(guard);
            }
        }
        ["hold", name] => {
            let mut sh = attach(name).unwrap();
            std::mem::forget(sh.lock(None).unwrap());
            sh.as_bytes_mut()[8] = 1;
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        ["create", name] => {
            let outcome = match create(name, 8, None) {
                Err(SharedError::Exists { .. }) => 1,
                _ => 2,
            };
            attach(name).unwrap().as_bytes_mut()[9] = outcome;
        }
        #[cfg(target_os = "linux")]
        ["squatted", name] => squatted_lock_folder(name),
        _ => panic!("unknown role {role:?}"),
    }
}

fn wait_ok(mut child: Child) {
    let status = child.wait().unwrap();
    assert!(status.success(), "child: {status}");
}

#[test]
fn locked_increments_from_several_processes_add_up() {
    for kind in LockKind::available() {
        let name = unique(&format!("count-{kind}"));
        let sh = create_with(&name, 64, kind).unwrap();
        let (processes, each) = (4, 300);
        let children: Vec<_> = (0..processes)
            .map(|_| child(&format!("count {name} {each}")))
            .collect();
        children.into_iter().for_each(wait_ok);
        let total = u64::from_ne_bytes(sh.as_bytes()[..8].try_into().unwrap());
        assert_eq!(total, processes * each, "{kind}");
        sh.unlink_checked().unwrap();
    }
}

#[test]
fn a_killed_holder_is_recovered_and_the_next_taker_told() {
    for kind in LockKind::available() {
        if skip_without_robust_lists(kind, "recovery from a killed holder") {
            continue;
        }
        let name = unique(&format!("kill-{kind}"));
        let sh = create_with(&name, 64, kind).unwrap();
        let mut holder = child(&format!("hold {name}"));
        let start = Instant::now();
        while sh.as_bytes()[8] == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the holder never locked"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(matches!(
            sh.lock(Some(Duration::from_millis(50))),
            Err(SharedError::Timeout { .. })
        ));
        holder.kill().unwrap(); // SIGKILL; TerminateProcess on Windows
        holder.wait().unwrap();
        let start = Instant::now();
        let guard = sh.lock(Some(Duration::from_secs(10))).unwrap();
        let waited = start.elapsed();
        assert!(guard.owner_died(), "{kind}");
        assert!(waited < Duration::from_secs(5), "{kind}: {waited:?}");
        drop(guard);
        assert!(
            !sh.lock(None).unwrap().owner_died(),
            "{kind}: consistent again"
        );
        sh.unlink_checked().unwrap();
    }
}

#[test]
fn a_second_create_of_a_live_name_is_refused_in_another_process() {
    let name = unique("twice");
    let sh = create(&name, 64, None).unwrap();
    wait_ok(child(&format!("create {name}")));
    assert_eq!(
        sh.as_bytes()[9],
        1,
        "the child's create was refused as existing"
    );
    sh.unlink_checked().unwrap();
}

/// Forks this process; the child runs `body` and exits with the status it
/// returns (101 if it panics), without running destructors. The parent
/// waits for it at most 20 s, then kills it and fails. The child prints
/// nothing: only the forking thread goes on in it, and a lock another
/// thread held at the fork (stdout's) would never be released there.
#[cfg(unix)]
fn status_of_forked_child(body: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child only runs `body`, which takes no lock another
    // thread of this process could hold (the segment's are the test's
    // own), then `_exit`s; the parent goes on as before.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
        // SAFETY: ends the child at once; nothing of it is used after.
        unsafe { libc::_exit(status) };
    }
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child, writing only `status`.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if done == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child ran past 20 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        libc::WIFEXITED(status),
        "the forked child ended by signal: {status:#x}"
    );
    libc::WEXITSTATUS(status)
}

#[cfg(unix)]
#[test]
fn a_child_forked_after_unlink_locks_as_its_parent_can() {
    for kind in LockKind::available() {
        let name = unique(&format!("fork-{kind}"));
        let sh = create_with(&name, 8, kind).unwrap();
        sh.unlink_checked().unwrap();
        assert!(!sh.lock(Some(Duration::from_secs(5))).unwrap().owner_died());
        // The file lock's child used to fail here: "opening the segment's lock
        // file (removed while the segment lived?)".
        let status = status_of_forked_child(|| match sh.lock(Some(Duration::from_secs(5))) {
            Ok(held) if !held.owner_died() => 0,
            Ok(_) => 2,
            Err(SharedError::Timeout { .. }) => 3,
            Err(_) => 4,
        });
        if kind == LockKind::FileLock && !cfg!(any(target_os = "linux", target_os = "android")) {
            // macOS and the BSDs cannot open a file whose name is gone: the
            // child is refused, as the guide says (fork before unlinking).
            assert_eq!(status, 4, "{kind}: an error expected on this OS");
            continue;
        }
        assert_eq!(status, 0, "{kind}: 2 owner_died, 3 timed out, 4 an error");
        // Its own lock, not its parent's: kept out while the parent holds it.
        let held = sh.lock(None).unwrap();
        let status = status_of_forked_child(|| match sh.lock(Some(Duration::from_millis(100))) {
            Err(SharedError::Timeout { .. }) => 0,
            Ok(_) => 5,
            Err(_) => 4,
        });
        assert_eq!(
            status, 0,
            "{kind}: 5 locked while the parent held it, 4 an error"
        );
        drop(held);
        assert!(
            !sh.lock(Some(Duration::from_secs(5))).unwrap().owner_died(),
            "{kind}"
        );
    }
}

/// Runs this test binary in `role` as [`child`] does, but as root in a
/// mount namespace of its own whose `/dev/shm` and `/run` are empty tmpfs
/// (never this machine's, which other processes use), after `setup` (a
/// shell command) ran there; `None` where that cannot be (not root, no
/// `unshare`), with the reason printed.
#[cfg(target_os = "linux")]
fn in_own_mounts(setup: &str, role: &str) -> Option<std::process::ExitStatus> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: mounting a /dev/shm of its own needs root");
        return None;
    }
    let script = format!(
        "mount -t tmpfs bytelens-test /dev/shm && mount -t tmpfs bytelens-test /run && {setup} \
         && exec \"$@\""
    );
    let spawned = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .args(child_command_line())
        .env(ROLE, role)
        .stdout(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = spawned else {
        println!("skipped: no unshare to make a mount namespace with");
        return None;
    };
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{role} ran past 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The `squatted` role, root's, where another user (uid 12345) made
/// `/dev/shm/bytelens-locks-0` first ([`in_own_mounts`]): a file-locked
/// segment is refused, saying whose the folder is, while root has no
/// folder of its own; with `/run/user/0`, its lock file goes there, every
/// process attaching finds it, and unlink removes it.
#[cfg(target_os = "linux")]
fn squatted_lock_folder(name: &str) {
    let squatted = std::path::Path::new("/dev/shm/bytelens-locks-0");
    let err = create_with(name, 8, LockKind::FileLock).err().unwrap();
    let message = err.to_string();
    for part in [
        "/dev/shm/bytelens-locks-0 is a folder of uid 12345, mode 0755, not a folder of this \
         user's (uid 0) with mode 0700",
        "have it removed (as uid 12345 or root: rm -r '/dev/shm/bytelens-locks-0')",
        "no folder of this user's own to use instead (/run/user/0: No such file or directory",
    ] {
        assert!(message.contains(part), "{message}");
    }
    assert!(
        matches!(attach(name), Err(SharedError::Missing { .. })),
        "nothing left"
    );

    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create("/run/user")
        .unwrap();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create("/run/user/0")
        .unwrap();
    let own = std::path::Path::new("/run/user/0/bytelens-locks");
    let sh = create_with(name, 8, LockKind::FileLock).unwrap();
    assert_eq!(std::fs::read_dir(own).unwrap().count(), 1, "its lock file");
    assert_eq!(std::fs::read_dir(squatted).unwrap().count(), 0);
    let other = attach(name).unwrap();
    let held = other.lock(None).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(matches!(
                sh.lock(Some(Duration::ZERO)),
                Err(SharedError::Timeout { .. })
            ));
        });
    });
    drop(held);
    assert!(!sh.lock(None).unwrap().owner_died());
    sh.unlink_checked().unwrap();
    assert_eq!(
        std::fs::read_dir(own).unwrap().count(),
        0,
        "unlink removed it"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_squatted_lock_folder_is_refused_saying_whose_it_is_or_left_for_the_users_own() {
    let setup = "mkdir -m 0755 /dev/shm/bytelens-locks-0 && chown 12345 /dev/shm/bytelens-locks-0";
    if let Some(status) = in_own_mounts(setup, &format!("squatted {}", unique("squat"))) {
        assert!(status.success(), "the squatted role: {status}");
    }
}
