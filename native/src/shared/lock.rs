//! The segment's lock, in one of three kinds, each one that its OS releases
//! when the holder dies, so the next taker learns `owner_died`:
//!
//! - [`LockKind::RobustMutex`] (Linux): a robust, process-shared
//!   `pthread_mutex_t` in the header page (`robust.rs`).
//! - [`LockKind::FileLock`] (macOS, which has no robust mutexes; Linux on
//!   request): `flock` on a file of the segment's own (`flock.rs`).
//! - [`LockKind::NamedMutex`] (Windows): a named mutex, whose
//!   `WAIT_ABANDONED` is `owner_died` (`named.rs`).
//!
//! The last two keep the holder's identity in the header ([`Holder`]): the
//! kernel frees the lock of a dead process, and a holder word that its
//! unlock did not clear tells the next taker the holder died. The same word
//! refuses a thread that locks again through a second mapping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(unix)]
use super::{AT_FLAGS, LOCK_FILE_OWN};
use super::{SharedError, TOKEN_LEN};

/// Which lock a segment has, chosen at [`create`](super::SharedBuffer::create_with)
/// and stored in its header: every process attaching uses the same one.
///
/// # Examples
/// ```
/// use bytelens::LockKind;
/// assert!(LockKind::native().is_available());
/// assert_eq!(LockKind::from_name("file"), Some(LockKind::FileLock));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockKind {
    /// A robust process-shared pthread mutex in the header (Linux's default).
    RobustMutex,
    /// `flock` on a file beside the segment, in the temporary directory
    /// (macOS's default; on Linux too, on request).
    FileLock,
    /// A named mutex (Windows' default).
    NamedMutex,
}

impl LockKind {
    /// Every kind, available here or not.
    pub const ALL: [LockKind; 3] = [
        LockKind::RobustMutex,
        LockKind::FileLock,
        LockKind::NamedMutex,
    ];

    /// This OS's default kind.
    pub const fn native() -> LockKind {
        if cfg!(target_os = "linux") {
            LockKind::RobustMutex
        } else if cfg!(windows) {
            LockKind::NamedMutex
        } else {
            LockKind::FileLock
        }
    }

    /// The kinds this OS has, [`native`](Self::native) first.
    ///
    /// # Examples
    /// ```
    /// use bytelens::LockKind;
    /// assert_eq!(LockKind::available().next(), Some(LockKind::native()));
    /// ```
    pub fn available() -> impl Iterator<Item = LockKind> {
        LockKind::ALL.into_iter().filter(|k| k.is_available())
    }

    /// Whether this OS has the kind.
    pub const fn is_available(self) -> bool {
        match self {
            LockKind::RobustMutex => cfg!(target_os = "linux"),
            LockKind::FileLock => cfg!(unix),
            LockKind::NamedMutex => cfg!(windows),
        }
    }

    /// The kind's name: `"robust-mutex"`, `"file"` or `"named-mutex"`.
    pub const fn name(self) -> &'static str {
        match self {
            LockKind::RobustMutex => "robust-mutex",
            LockKind::FileLock => "file",
            LockKind::NamedMutex => "named-mutex",
        }
    }

    /// The kind named `name` (as [`name`](Self::name) gives it).
    pub fn from_name(name: &str) -> Option<LockKind> {
        LockKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind's number in a header (0, what headers from before kinds
    /// hold, is the robust mutex they all had).
    pub(super) const fn code(self) -> u32 {
        match self {
            LockKind::RobustMutex => 0,
            LockKind::FileLock => 1,
            LockKind::NamedMutex => 2,
        }
    }

    pub(super) fn from_code(code: u32) -> Option<LockKind> {
        LockKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A number for the calling thread, never 0, unique within the process
/// (cheaper than `gettid`).
pub(super) fn this_thread() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

/// The calling thread across processes: the process id above, the thread's
/// number below. Never 0.
fn this_holder() -> u64 {
    (u64::from(std::process::id()) << 32) | (this_thread() & 0xffff_ffff).max(1)
}

/// The header's holder word, for the kinds whose OS lock does not itself
/// say that its holder died (or whose OS lock is recursive).
pub(super) struct Holder<'a>(pub(super) &'a AtomicU64);

impl Holder<'_> {
    /// Before waiting: refuses a thread that holds the lock already
    /// (through any mapping of the segment).
    pub(super) fn check_not_mine(&self) -> Result<(), SharedError> {
        if self.0.load(Ordering::Acquire) == this_holder() {
            return Err(SharedError::AlreadyHeld);
        }
        Ok(())
    }

    /// Once the OS lock is taken: records the caller, and says whether the
    /// last holder left without unlocking (died, or dropped its mapping).
    pub(super) fn taken(&self) -> bool {
        self.0.swap(this_holder(), Ordering::AcqRel) != 0
    }

    /// Just before the OS lock is released.
    pub(super) fn leaving(&self) {
        self.0.store(0, Ordering::Release);
    }

    /// Just before the OS lock is released by a mapping dropped holding
    /// it: a value no thread has, so that the next taker, this thread
    /// included, learns `owner_died`.
    fn abandoning(&self) {
        self.0.store(u64::MAX, Ordering::Release);
    }
}

/// A segment's lock as this process holds it open.
pub(super) enum Lock {
    /// The mutex lives in the header; nothing to hold open.
    #[cfg(target_os = "linux")]
    Robust,
    /// The lock file, open.
    #[cfg(unix)]
    File(super::flock::FileLock),
    /// The named mutex, open.
    #[cfg(windows)]
    Named(super::named::NamedMutex),
}

impl Lock {
    /// Sets up a new segment's lock of `kind` (`header` is the fresh header
    /// page, `token` the segment's).
    ///
    /// A file lock's file goes in the shared folder, or in the user's own
    /// if the shared one is another user's: then the header's flags get
    /// [`LOCK_FILE_OWN`], so that every process looks there.
    pub(super) fn create(
        kind: LockKind,
        header: &mut [u8],
        token: [u8; TOKEN_LEN],
    ) -> Result<Lock, SharedError> {
        let _ = (&header, token);
        match kind {
            #[cfg(target_os = "linux")]
            LockKind::RobustMutex => {
                super::robust::init(header)?;
                Ok(Lock::Robust)
            }
            #[cfg(unix)]
            LockKind::FileLock => {
                let (file, folder) = super::flock::FileLock::create(token)?;
                if folder == super::flock::Folder::Own {
                    let flags = &mut header[AT_FLAGS..AT_FLAGS + 4];
                    let set = u32::from_le_bytes((&*flags).try_into().expect("4 bytes"));
                    flags.copy_from_slice(&(set | LOCK_FILE_OWN).to_le_bytes());
                }
                Ok(Lock::File(file))
            }
            #[cfg(windows)]
            LockKind::NamedMutex => Ok(Lock::Named(super::named::NamedMutex::open(token)?)),
            #[allow(unreachable_patterns, reason = "the kinds this OS lacks")]
            kind => Err(SharedError::LockUnavailable { kind }),
        }
    }

    /// Opens an existing segment's lock of `kind`; `flags` are its
    /// header's (where its lock file is).
    pub(super) fn attach(
        kind: LockKind,
        token: [u8; TOKEN_LEN],
        flags: u32,
    ) -> Result<Lock, SharedError> {
        let _ = (token, flags);
        match kind {
            #[cfg(target_os = "linux")]
            LockKind::RobustMutex => Ok(Lock::Robust),
            #[cfg(unix)]
            LockKind::FileLock => Ok(Lock::File(super::flock::FileLock::attach(
                token,
                folder(flags),
            )?)),
            #[cfg(windows)]
            LockKind::NamedMutex => Ok(Lock::Named(super::named::NamedMutex::open(token)?)),
            #[allow(unreachable_patterns, reason = "the kinds this OS lacks")]
            kind => Err(SharedError::LockUnavailable { kind }),
        }
    }

    /// The kind.
    pub(super) fn kind(&self) -> LockKind {
        match self {
            #[cfg(target_os = "linux")]
            Lock::Robust => LockKind::RobustMutex,
            #[cfg(unix)]
            Lock::File(_) => LockKind::FileLock,
            #[cfg(windows)]
            Lock::Named(_) => LockKind::NamedMutex,
        }
    }

    /// Takes the lock (`header` is the mapped header page, `holder` its
    /// holder word), waiting at most `timeout` (forever if `None`, only
    /// trying if zero): `Ok(owner_died)`.
    pub(super) fn lock(
        &self,
        header: *mut u8,
        holder: Holder<'_>,
        timeout: Option<Duration>,
    ) -> Result<bool, SharedError> {
        let _ = (header, &holder);
        match self {
            #[cfg(target_os = "linux")]
            // SAFETY: `header` is the header page of a mapping that outlives
            // the call, whose mutex `create` initialised.
            Lock::Robust => unsafe { super::robust::lock(header, timeout) },
            #[cfg(unix)]
            Lock::File(file) => {
                holder.check_not_mine()?;
                file.lock(timeout)?;
                Ok(holder.taken())
            }
            #[cfg(windows)]
            Lock::Named(mutex) => {
                holder.check_not_mine()?;
                let abandoned = mutex.lock(timeout)?;
                Ok(holder.taken() || abandoned)
            }
        }
    }

    /// Releases the lock this thread holds (checked by the caller).
    pub(super) fn unlock(&self, header: *mut u8, holder: Holder<'_>) -> Result<(), SharedError> {
        let _ = (header, &holder);
        match self {
            #[cfg(target_os = "linux")]
            // SAFETY: as in `lock`.
            Lock::Robust => unsafe { super::robust::unlock(header) },
            #[cfg(unix)]
            Lock::File(file) => {
                holder.leaving();
                file.unlock()
            }
            #[cfg(windows)]
            Lock::Named(mutex) => {
                holder.leaving();
                mutex.unlock()
            }
        }
    }

    /// Lets go of the lock held through a mapping being dropped, for the
    /// kinds that live outside the header, so the next taker gets it and
    /// learns `owner_died` (a robust mutex is left held: see
    /// [`lives_in_header`](Self::lives_in_header)).
    pub(super) fn abandon(&self, holder: Holder<'_>) {
        let _ = &holder;
        match self {
            #[cfg(target_os = "linux")]
            Lock::Robust => {}
            #[cfg(unix)]
            Lock::File(file) => file.abandon(|| holder.abandoning()),
            #[cfg(windows)]
            Lock::Named(mutex) => {
                // Only the owning thread can release it; dropped on another,
                // it is abandoned when the owner ends.
                holder.abandoning();
                let _ = mutex.unlock();
            }
        }
    }

    /// Whether unmapping the header while the lock is held would break it
    /// (the robust mutex is linked into its holder's robust list through
    /// the mutex's own memory).
    pub(super) fn lives_in_header(&self) -> bool {
        #[cfg(target_os = "linux")]
        if let Lock::Robust = self {
            return true;
        }
        false
    }
}

/// A token as hex: the lock file's and the named mutex's name.
pub(super) fn hex(token: [u8; TOKEN_LEN]) -> String {
    token.iter().map(|b| format!("{b:02x}")).collect()
}

/// The folder of a segment's lock file, as its header's `flags` say.
#[cfg(unix)]
fn folder(flags: u32) -> super::flock::Folder {
    if flags & LOCK_FILE_OWN != 0 {
        super::flock::Folder::Own
    } else {
        super::flock::Folder::Shared
    }
}

/// Removes what a segment's lock of `kind` keeps outside the segment, once
/// its name is gone (best effort); `flags` are its header's.
pub(super) fn forget(kind: Option<LockKind>, token: [u8; TOKEN_LEN], flags: u32) {
    #[cfg(unix)]
    if kind == Some(LockKind::FileLock) {
        super::flock::FileLock::remove(token, folder(flags));
    }
    let _ = (kind, token, flags);
}
