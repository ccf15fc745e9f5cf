//! [`LockKind::RobustMutex`](super::LockKind::RobustMutex): a robust,
//! process-shared `pthread_mutex_t` in the header page, and timed waits for
//! it on the monotonic clock where the C library has
//! `pthread_mutex_clocklock`. Linux only (macOS has no robust mutexes).

use std::sync::OnceLock;
use std::time::Duration;

use super::{AT_LOCK, SharedError};

/// The mutex in a header page.
fn mutex_in(header: *mut u8) -> *mut libc::pthread_mutex_t {
    // 64-byte aligned within a page-aligned mapping.
    header.wrapping_add(AT_LOCK).cast::<libc::pthread_mutex_t>()
}

/// Initialises the robust, process-shared mutex in a fresh header page.
pub(super) fn init(header: &mut [u8]) -> Result<(), SharedError> {
    assert!(header.len() >= super::AT_PLAN, "a whole header page");
    let mutex = mutex_in(header.as_mut_ptr());
    let check = |rc: i32, what| {
        if rc == 0 {
            Ok(())
        } else {
            Err(SharedError::Os {
                what,
                err: std::io::Error::from_raw_os_error(rc),
            })
        }
    };
    // SAFETY: `attr` is initialised by pthread_mutexattr_init before use and
    // destroyed after; `mutex` points into our writable mapping, aligned and
    // large enough (AT_PLAN - AT_LOCK = 192 bytes >= size_of::<pthread_mutex_t>()),
    // and no other process can use it before `create` returns its name's data.
    unsafe {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        check(
            libc::pthread_mutexattr_init(attr.as_mut_ptr()),
            "pthread_mutexattr_init",
        )?;
        let attr_ptr = attr.as_mut_ptr();
        let set = check(
            libc::pthread_mutexattr_setpshared(attr_ptr, libc::PTHREAD_PROCESS_SHARED),
            "pthread_mutexattr_setpshared",
        )
        .and_then(|()| {
            check(
                libc::pthread_mutexattr_setrobust(attr_ptr, libc::PTHREAD_MUTEX_ROBUST),
                "pthread_mutexattr_setrobust",
            )
        })
        .and_then(|()| {
            // Relocking from the holding thread fails (EDEADLK) instead of hanging.
            check(
                libc::pthread_mutexattr_settype(attr_ptr, libc::PTHREAD_MUTEX_ERRORCHECK),
                "pthread_mutexattr_settype",
            )
        })
        .and_then(|()| {
            check(
                libc::pthread_mutex_init(mutex, attr_ptr),
                "pthread_mutex_init",
            )
        });
        libc::pthread_mutexattr_destroy(attr_ptr);
        set
    }
}

/// Takes the mutex in `header`, waiting at most `timeout` (forever if
/// `None`, only trying if zero): `Ok(owner_died)`.
///
/// # Safety
/// `header` is the header page of a mapping that outlives the call, whose
/// mutex [`init`] initialised.
pub(super) unsafe fn lock(header: *mut u8, timeout: Option<Duration>) -> Result<bool, SharedError> {
    let mutex = mutex_in(header);
    // SAFETY: `mutex` is the initialised robust mutex (the caller's promise).
    let rc = unsafe {
        match timeout {
            None => libc::pthread_mutex_lock(mutex),
            Some(t) if t.is_zero() => libc::pthread_mutex_trylock(mutex),
            Some(t) => timed_lock(mutex, t),
        }
    };
    match rc {
        0 => Ok(false),
        libc::EOWNERDEAD => {
            // SAFETY: EOWNERDEAD means we now hold the mutex; marking it
            // consistent lets later lockers take it normally.
            unsafe { libc::pthread_mutex_consistent(mutex) };
            Ok(true)
        }
        libc::EDEADLK => Err(SharedError::AlreadyHeld),
        libc::ETIMEDOUT | libc::EBUSY => Err(SharedError::Timeout {
            waited: timeout.unwrap_or_default(),
        }),
        err => Err(SharedError::Os {
            what: "pthread_mutex_lock",
            err: std::io::Error::from_raw_os_error(err),
        }),
    }
}

/// Releases the mutex in `header`, which this thread holds.
///
/// # Safety
/// As for [`lock`].
pub(super) unsafe fn unlock(header: *mut u8) -> Result<(), SharedError> {
    // SAFETY: the mutex is initialised (the caller's promise); being
    // error-checking, it refuses a thread that does not hold it.
    match unsafe { libc::pthread_mutex_unlock(mutex_in(header)) } {
        0 => Ok(()),
        libc::EPERM => Err(SharedError::NotHeld),
        err => Err(SharedError::Os {
            what: "pthread_mutex_unlock",
            err: std::io::Error::from_raw_os_error(err),
        }),
    }
}

/// `pthread_mutex_clocklock`'s type (glibc 2.30+, POSIX.1-2024), as glibc's
/// `<pthread.h>` declares it.
type ClockLock = unsafe extern "C" fn(
    *mut libc::pthread_mutex_t,
    libc::clockid_t,
    *const libc::timespec,
) -> libc::c_int;

/// `pthread_mutex_clocklock`, if the C library has it: looked up once at run
/// time (the libc crate does not declare it, and linking it directly would
/// keep the crate from loading on a glibc before 2.30 or on musl).
pub(super) fn clocklock() -> Option<ClockLock> {
    static FOUND: OnceLock<Option<ClockLock>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: dlsym takes a pseudo-handle and a NUL-terminated name, and
        // only reads them; RTLD_DEFAULT searches the objects already loaded.
        let symbol =
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"pthread_mutex_clocklock".as_ptr()) };
        (!symbol.is_null()).then(|| {
            // SAFETY: the symbol is the C library's pthread_mutex_clocklock,
            // whose C signature `ClockLock` spells out: (pthread_mutex_t *,
            // clockid_t, const struct timespec *) -> int, with the C ABI.
            unsafe { std::mem::transmute::<*mut libc::c_void, ClockLock>(symbol) }
        })
    })
}

/// Waits at most `timeout` for `mutex`, measured on `CLOCK_MONOTONIC`, so
/// that a change of the wall clock neither stretches nor cuts the wait.
/// Without `pthread_mutex_clocklock` (glibc before 2.30, musl), it falls
/// back to `pthread_mutex_timedlock`, whose deadline is on `CLOCK_REALTIME`.
///
/// # Safety
/// `mutex` points at an initialised mutex that outlives the call.
unsafe fn timed_lock(mutex: *mut libc::pthread_mutex_t, timeout: Duration) -> libc::c_int {
    if let Some(clocklock) = clocklock() {
        let deadline = deadline_after(libc::CLOCK_MONOTONIC, timeout);
        // SAFETY: `clocklock` is pthread_mutex_clocklock (see `clocklock`),
        // `mutex` is valid (the caller's promise), `deadline` a valid timespec.
        let rc = unsafe { clocklock(mutex, libc::CLOCK_MONOTONIC, &deadline) };
        // EINVAL: a C library that has the function but refuses the clock.
        if rc != libc::EINVAL {
            return rc;
        }
    }
    let deadline = deadline_after(libc::CLOCK_REALTIME, timeout);
    // SAFETY: as above.
    unsafe { libc::pthread_mutex_timedlock(mutex, &deadline) }
}

/// `clock`'s now plus `timeout`: the absolute deadline the timed locks take.
pub(super) fn deadline_after(clock: libc::clockid_t, timeout: Duration) -> libc::timespec {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let nanos = now.tv_nsec as u64 + u64::from(timeout.subsec_nanos());
    libc::timespec {
        tv_sec: now
            .tv_sec
            .saturating_add(timeout.as_secs().min(i64::MAX as u64 / 2) as libc::time_t)
            .saturating_add((nanos / 1_000_000_000) as libc::time_t),
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    }
}
