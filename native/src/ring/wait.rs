//! Sleeping until a word in shared memory changes, and waking who sleeps
//! on it: Linux's futex (without `FUTEX_PRIVATE_FLAG`, so that it works
//! across processes mapping the same page). Elsewhere a sleeper polls the
//! word, sleeping a little longer each time up to a millisecond (macOS's
//! `os_sync_wait_on_address` needs macOS 14.4, and Windows'
//! `WaitOnAddress` works within one process only).
//!
//! A waiter first spins a few microseconds ([`spin`]), watching the word
//! without saying it waits: a batch published by a process running on
//! another core is then seen without a system call on either side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a waiter watches the word before it sleeps.
pub(crate) const SPIN: Duration = Duration::from_micros(20);

/// The low half of `word`, which the waits compare (the high half counts
/// the sleepers, and changes without waking anyone).
fn low(word: &AtomicU64) -> u32 {
    word.load(Ordering::Acquire) as u32
}

/// The address of `word`'s low half, for the kernel (little-endian: the
/// low half comes first).
#[cfg(target_os = "linux")]
fn low_ptr(word: &AtomicU64) -> *mut u32 {
    word.as_ptr().cast::<u32>()
}

/// Watches the low half of `word` for at most `time`: whether it changed
/// from `seen`.
pub(crate) fn spin(word: &AtomicU64, seen: u32, time: Duration) -> bool {
    let start = Instant::now();
    let mut spins = 0u32;
    while low(word) == seen {
        if spins.is_multiple_of(64) && start.elapsed() >= time {
            return false;
        }
        spins = spins.wrapping_add(1);
        std::hint::spin_loop();
    }
    true
}

/// Wakes every process sleeping on `word`.
pub(crate) fn wake(word: &AtomicU64) {
    #[cfg(target_os = "linux")]
    // SAFETY: FUTEX_WAKE reads nothing through the pointer but its address,
    // which is of a live, aligned u32 in a shared mapping.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            low_ptr(word),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = word;
}

/// Sleeps while the low half of `word` is `seen`, at most `time`: returns
/// early when it changes (or spuriously; the caller looks again either way).
#[cfg(target_os = "linux")]
pub(crate) fn sleep(word: &AtomicU64, seen: u32, time: Duration) {
    if time.is_zero() {
        return;
    }
    let ts = libc::timespec {
        tv_sec: time.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: time.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the kernel reads the u32 at the address (live and aligned:
    // `word`'s low half) and compares it with `seen` before sleeping (it
    // reads it atomically, as the other processes' stores of the whole
    // word are atomic); `ts` lives
    // through the call. EINTR, EAGAIN (the word changed) and ETIMEDOUT all
    // return to the caller, which looks again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            low_ptr(word),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
        );
    }
}

/// As on Linux, polling.
#[cfg(not(target_os = "linux"))]
pub(crate) fn sleep(word: &AtomicU64, seen: u32, time: Duration) {
    let end = Instant::now() + time;
    let mut nap = Duration::from_micros(50);
    while low(word) == seen {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep(nap.min(end - now));
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    #[cfg_attr(miri, ignore = "futex and sleeping threads")]
    fn a_change_wakes_the_sleeper_and_a_timeout_ends_the_sleep() {
        let word = Arc::new(AtomicU64::new(5 | 1 << 32));
        let start = Instant::now();
        assert!(!spin(&word, 5, Duration::from_millis(5)));
        sleep(&word, 5, Duration::from_millis(30));
        assert!(
            start.elapsed() >= Duration::from_millis(30),
            "{:?}",
            start.elapsed()
        );
        let other = Arc::clone(&word);
        let changer = std::thread::spawn({
            let other = Arc::clone(&word);
            move || {
                std::thread::sleep(Duration::from_millis(1));
                other.store(7 | 1 << 32, Ordering::Release);
            }
        });
        assert!(spin(&word, 5, Duration::from_secs(10)));
        changer.join().unwrap();
        word.store(5 | 1 << 32, Ordering::Release);
        let waker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.store(6 | 1 << 32, Ordering::Release);
            wake(&other);
        });
        let start = Instant::now();
        sleep(&word, 5, Duration::from_secs(10));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(word.load(Ordering::Relaxed), 6 | 1 << 32);
        waker.join().unwrap();
    }
}
