//! Who a process is, as the ring records an owner ([`Owner`]: its id and
//! start time), and whether an owner still runs.
//!
//! A process id alone is not enough: once a process dies its id is free
//! for the next, and a slot would stay with that stranger for good. So the
//! start time goes with it: Linux's `starttime` from `/proc/PID/stat`
//! (clock ticks since boot), Windows' creation time; macOS has `kill`
//! only (its start times need `sysctl`, and a reused id there leaves the
//! slot held until that process ends too).

use super::protocol::Owner;

/// This process ([`Owner`]), read again after a `fork` (the id changes).
pub(crate) fn me() -> Owner {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CACHED: AtomicU64 = AtomicU64::new(0);
    static BORN: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let cached = CACHED.load(Ordering::Acquire);
    if cached == u64::from(pid) | 1 << 32 {
        return Owner {
            pid,
            born: BORN.load(Ordering::Relaxed),
        };
    }
    let born = born(pid).unwrap_or(0);
    BORN.store(born, Ordering::Relaxed);
    CACHED.store(u64::from(pid) | 1 << 32, Ordering::Release);
    Owner { pid, born }
}

/// This process's PID namespace (Linux: the inode number of
/// `/proc/self/ns/pid`), 0 where there is none to read. Process ids mean
/// something only within one namespace: a ring is used by the processes
/// of the namespace that created it.
pub(crate) fn pid_namespace() -> u64 {
    #[cfg(target_os = "linux")]
    if let Ok(link) = std::fs::read_link("/proc/self/ns/pid") {
        // "pid:[4026531836]"
        let text = link.to_string_lossy();
        let digits = text.trim_start_matches("pid:[").trim_end_matches(']');
        return digits.parse().unwrap_or(0);
    }
    0
}

/// Whether `owner` still runs: its id names a process, started when the
/// table says (where the OS tells start times).
pub(crate) fn alive(owner: Owner) -> bool {
    // A zombie (ended, not yet reaped by its parent, which may well be the
    // process waiting for what it held) still answers `kill(pid, 0)`.
    if !exists(owner.pid) || zombie(owner.pid) {
        return false;
    }
    match born(owner.pid) {
        Some(born) if owner.born != 0 => born == owner.born,
        // Its start time cannot be read (it may have just ended): it counts
        // as alive until the next look.
        _ => true,
    }
}

#[cfg(unix)]
fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; it only checks the process exists
    // and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    // EPERM: it exists, as another user's.
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Field 22 of the process's start time, after the parenthesised command
/// name (which may hold spaces and parentheses itself: the last ')' ends
/// it), read from `/proc/PID/task/PID/stat`, the main thread's: the same
/// number as `/proc/PID/stat`'s, but a file qemu-user passes through to
/// the kernel. qemu fakes `/proc/PID/stat` of its own process, with each
/// thread's own start time, so that a process reading its start time from
/// two threads would take itself for dead.
#[cfg(target_os = "linux")]
fn born(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/task/{pid}/stat")).ok()?;
    let after = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[after + 1..]).ok()?;
    // Field 3 is the first after the name; 22 is the 20th from there.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

#[cfg(all(unix, not(target_os = "linux")))]
fn born(_pid: u32) -> Option<u64> {
    None
}

/// Whether the process has ended and waits to be reaped: field 3 of the
/// main thread's stat is `Z` (or `X`, dead), as `born` reads it.
#[cfg(target_os = "linux")]
fn zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/task/{pid}/stat")) else {
        return false;
    };
    let Some(after) = stat.iter().rposition(|&b| b == b')') else {
        return false;
    };
    matches!(
        stat[after + 1..].iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'Z' | b'X')
    )
}

/// Elsewhere a zombie is not told from a live process (Windows has none:
/// an exited process is `exited` in `exists`).
#[cfg(not(target_os = "linux"))]
fn zombie(_pid: u32) -> bool {
    false
}

#[cfg(windows)]
fn exists(pid: u32) -> bool {
    process_times(pid).is_some_and(|(_, exited)| !exited)
}

#[cfg(windows)]
fn born(pid: u32) -> Option<u64> {
    process_times(pid).map(|(created, _)| created)
}

/// A process's creation time (100 ns units) and whether it has exited;
/// `None` when no process has the id.
#[cfg(windows)]
fn process_times(pid: u32) -> Option<(u64, bool)> {
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
        WaitForSingleObject,
    };
    // SAFETY: OpenProcess takes any id and returns null when it cannot
    // open one; the handle is closed below, once.
    let handle = unsafe {
        OpenProcess(
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
            0,
            pid,
        )
    };
    if handle.is_null() {
        return None;
    }
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: `handle` is an open process handle with query rights; the
    // four pointers are to locals that live through the call.
    let ok = unsafe { GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user) };
    // SAFETY: as above, with SYNCHRONIZE rights; a zero timeout only looks.
    let over = unsafe { WaitForSingleObject(handle, 0) } == WAIT_OBJECT_0;
    // SAFETY: opened above, closed once.
    unsafe { CloseHandle(handle) };
    (ok != 0).then(|| {
        (
            u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime),
            over,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "reads /proc and calls kill")]
    fn this_process_is_alive_and_a_stranger_with_its_id_is_not() {
        let me = me();
        assert_eq!(me.pid, std::process::id());
        assert!(alive(me));
        // From a thread started after it, as another thread of a process
        // checks an owner (qemu-user gives each thread its own start time
        // in /proc/PID/stat).
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(std::thread::spawn(move || alive(me)).join().unwrap());
        assert_eq!(
            std::thread::spawn(|| born(std::process::id()))
                .join()
                .unwrap(),
            born(me.pid)
        );
        if cfg!(target_os = "linux") {
            assert_ne!(me.born, 0);
            assert!(!alive(Owner {
                pid: me.pid,
                born: me.born + 1
            }));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "starts a process")]
    fn a_process_that_ended_is_dead() {
        let mut child = std::process::Command::new(if cfg!(windows) { "cmd" } else { "true" })
            .args(if cfg!(windows) {
                &["/c", "exit"][..]
            } else {
                &[][..]
            })
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!alive(Owner { pid, born: 0 }));
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "starts a process")]
    fn a_zombie_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let born = born(pid).unwrap_or(0);
        // Ended, not reaped: a zombie until the wait below.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !zombie(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(exists(pid), "a zombie still answers kill(pid, 0)");
        assert!(!alive(Owner { pid, born }));
        child.wait().unwrap();
    }
}
