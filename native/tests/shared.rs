//! Shared memory in one process: names, formats, sizes, the plan in the
//! header, and the lock (its timeout, and a holder that dies, in a thread
//! standing in for a process). Across processes: tests/python/test_shared.py.
#![cfg(unix)]

use std::time::{Duration, Instant};

use bytelens::{DType, Plan, SharedBuffer, SharedError};

fn unique(tag: &str) -> String {
    format!("bytelens-test-{tag}-{}", std::process::id())
}

/// [`SharedBuffer::create`], for segments these tests never shrink.
fn create(name: &str, nbytes: usize, plan: Option<&Plan<'_>>) -> Result<SharedBuffer, SharedError> {
    // SAFETY: no test shrinks a segment while it is mapped (the one that sizes a
    // segment itself does so before attaching, and only ever grows it).
    unsafe { SharedBuffer::create(name, nbytes, plan) }
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
    for bad in ["", "a/b", "..", ".", "nul\0byte", &"x".repeat(255)] {
        let err = create(bad, 8, None).err().unwrap();
        assert!(matches!(err, SharedError::BadName { .. }), "{bad:?}");
        assert!(err.to_string().contains("not a usable shared-memory name"));
    }
}

#[test]
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
    let name = unique("lock");
    let a = create(&name, 8, None).unwrap();
    let guard = a.lock(None).unwrap();
    assert!(!guard.owner_died());
    // Another thread (robust mutexes track the holding thread) waits in vain.
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
    let name = unique("relock");
    let a = create(&name, 8, None).unwrap();
    let guard = a.lock(None).unwrap();
    assert!(
        matches!(a.lock(None), Err(SharedError::AlreadyHeld)),
        "not a deadlock"
    );
    std::thread::scope(|s| {
        s.spawn(|| assert!(matches!(a.unlock_raw(), Err(SharedError::NotHeld))));
    });
    drop(guard);
    assert!(matches!(a.unlock_raw(), Err(SharedError::NotHeld)));
    SharedBuffer::unlink(&name).unwrap();
}

#[test]
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
    let name = unique("timed");
    let a = create(&name, 8, None).unwrap();
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
