//! [`LockKind::NamedMutex`](super::LockKind::NamedMutex): a Windows named
//! mutex, `Local\bytelens-lock-<token>`, named by the segment's token so a
//! later segment of the same name never shares it. Windows mutexes belong
//! to a thread; when it ends (or its process dies) holding one, the next
//! wait returns `WAIT_ABANDONED`, which is `owner_died`. They are
//! recursive, which the holder word in the header (see `lock.rs`) refuses.

use std::time::Duration;

use windows_sys::Win32::Foundation::{
    CloseHandle, HANDLE, WAIT_ABANDONED, WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::System::Threading::{
    CreateMutexW, INFINITE, ReleaseMutex, WaitForSingleObject,
};

use super::lock::hex;
use super::windows::{last_error, object_name};
use super::{SharedError, TOKEN_LEN};

/// The segment's mutex, open.
pub(super) struct NamedMutex(HANDLE);

// SAFETY: a mutex handle may be used from any thread (the mutex itself
// tracks which thread owns it).
unsafe impl Send for NamedMutex {}
// SAFETY: as above.
unsafe impl Sync for NamedMutex {}

impl NamedMutex {
    /// Opens the mutex of the segment with `token`, making it if no process
    /// has it open.
    pub(super) fn open(token: [u8; TOKEN_LEN]) -> Result<NamedMutex, SharedError> {
        let name = object_name("lock", &hex(token));
        // SAFETY: `name` is a NUL-terminated UTF-16 string; no security
        // attributes, not owned initially.
        let handle = unsafe { CreateMutexW(std::ptr::null(), 0, name.as_ptr()) };
        if handle.is_null() {
            return Err(last_error("opening the segment's mutex"));
        }
        Ok(NamedMutex(handle))
    }

    /// Waits for the mutex: `Ok(abandoned)`. `timeout` as
    /// [`super::Lock::lock`]'s, in whole milliseconds, rounded up.
    pub(super) fn lock(&self, timeout: Option<Duration>) -> Result<bool, SharedError> {
        let ms = timeout.map_or(INFINITE, |t| {
            let ms = t.as_nanos().div_ceil(1_000_000);
            u32::try_from(ms).unwrap_or(INFINITE - 1).min(INFINITE - 1)
        });
        // SAFETY: the handle is open until `drop`.
        match unsafe { WaitForSingleObject(self.0, ms) } {
            WAIT_OBJECT_0 => Ok(false),
            WAIT_ABANDONED => Ok(true),
            WAIT_TIMEOUT => Err(SharedError::Timeout {
                waited: timeout.unwrap_or_default(),
            }),
            _ => Err(last_error("waiting for the segment's mutex")),
        }
    }

    /// Releases the mutex this thread holds.
    pub(super) fn unlock(&self) -> Result<(), SharedError> {
        // SAFETY: the handle is open until `drop`.
        if unsafe { ReleaseMutex(self.0) } == 0 {
            return Err(SharedError::NotHeld);
        }
        Ok(())
    }
}

impl Drop for NamedMutex {
    fn drop(&mut self) {
        // SAFETY: the handle is ours and used no more.
        unsafe { CloseHandle(self.0) };
    }
}
