//! [`LockKind::FileLock`](super::LockKind::FileLock): `flock` on a file of
//! the segment's own, for systems without robust mutexes (macOS).
//!
//! The kernel drops a `flock` lock when the last descriptor of its open
//! file is closed, so also when its holder dies, however it dies. macOS
//! refuses `flock` on a shared-memory descriptor (it locks only vnodes),
//! so the file is a separate one: `bytelens-locks-<uid>/<token>` (mode
//! 0700 and 0600) in [`LOCK_ROOT`]s' first folder, named by the segment's
//! token, so that a later segment of the same name never shares it. The
//! folder depends on nothing a process can set: not on `TMPDIR`, which
//! per-job temporary folders (SLURM, systemd's `PrivateTmp`) give each
//! process its own of, so that a segment created under one could not be
//! attached, nor its lock file removed, under another. `create`
//! makes it, `attach` opens it (and fails if it is gone, rather than lock
//! nothing), `unlink` removes it.
//!
//! That folder lies in one every user can write to, so another user can
//! make it first ("squat" it) to read or take this user's locks: a folder
//! that is not this user's alone (mode 0700) is never used. `create` then
//! puts the lock file in `bytelens-locks` in the user's own folder, one
//! only the system makes, for that user (`/run/user/UID` on Linux, the
//! per-user temporary folder on macOS: [`Roots::system`]), and records
//! that in the segment's header ([`Folder`]), where every process
//! attaching looks. Without such a folder, the error says who owns the
//! squatted folder, its mode, and what to do.
//!
//! A forked child inherits its parent's descriptor, which shares the
//! parent's open file and so its lock: on its first lock the child opens
//! the file again, a new open file of its own. On Linux it does so through
//! `/proc/self/fd`, which reaches the file by the inherited descriptor even
//! once `unlink` has removed its name, so a child forked after `unlink`
//! locks as its parent can (as with the robust mutex, which lives in the
//! mapping the child inherits). Elsewhere (macOS, the BSDs, where
//! `/dev/fd` only duplicates a descriptor) it opens the file by its path,
//! which exists only until `unlink`.
//!
//! `flock` excludes open files, not threads: threads sharing one
//! [`FileLock`] are kept apart by its own mutex and condition variable
//! first. A thread that ends holding it releases it (as a robust mutex
//! does), leaving the holder word set, so the next taker learns
//! `owner_died`. `flock` has no timed wait: a timed lock polls, backing
//! off from 50 µs to 2 ms.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::lock::{hex, this_thread};
use super::{SharedError, TOKEN_LEN};

/// A segment's lock file, open.
pub(super) struct FileLock {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    /// Open in this process (reopened after a fork: a child's descriptor
    /// would share the parent's open file, and so its lock).
    file: File,
    pid: u32,
    /// The [`this_thread`] that holds the lock through this file, or 0.
    holder: u64,
}

thread_local! {
    /// The locks this thread holds, released if it ends holding them.
    static HELD: Held = const { Held(std::cell::RefCell::new(Vec::new())) };
}

struct Held(std::cell::RefCell<Vec<Weak<Inner>>>);

impl Drop for Held {
    fn drop(&mut self) {
        let me = this_thread();
        for inner in self.0.get_mut().drain(..).filter_map(|w| w.upgrade()) {
            let mut state = inner.state();
            if state.holds(me) {
                // Unlocked without clearing the holder word: the next taker
                // learns that this holder is gone.
                let _ = inner.release(&mut state);
            }
        }
    }
}

/// Where the shared folder of lock files goes: the first of these that is
/// a folder. `/dev/shm` is where Linux keeps POSIX shared memory itself, so
/// every process that can open a segment by its name sees the same one
/// (systemd's `PrivateTmp` gives a service its own `/tmp`, never its own
/// `/dev/shm`); `/tmp` elsewhere (macOS, the BSDs), never the `TMPDIR` of
/// the process.
const LOCK_ROOT: [&str; 2] = ["/dev/shm", "/tmp"];

/// Which folder a segment's lock file is in, as its header records it
/// (`create` picks it; `attach` and `unlink` look there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Folder {
    /// `bytelens-locks-UID` in the first of [`LOCK_ROOT`], made by the
    /// first segment of the user's: every segment's, unless another user
    /// made a folder of that name first (it lies in a folder every user
    /// can write to).
    Shared,
    /// `bytelens-locks` in the user's own folder ([`Roots::system`]),
    /// which only the system makes, for the user: where `create` puts the
    /// lock file when the shared folder is another user's (or open to
    /// others).
    Own,
}

/// The folders that lock files' folders are made in, and the user.
pub(super) struct Roots {
    /// Where [`Folder::Shared`] is made, as `bytelens-locks-UID`.
    shared: PathBuf,
    /// The user's own folder, where [`Folder::Own`] is made as
    /// `bytelens-locks`, or why there is none.
    own: Result<PathBuf, String>,
    uid: u32,
}

/// A folder that will not do.
enum Unusable {
    /// Another user's, open to others, or not a folder: what it is and
    /// what to do about it.
    NotOurs(String),
    /// It could not be made or looked at.
    Io(std::io::Error),
}

impl Roots {
    /// The system's: the first of [`LOCK_ROOT`] and, as the user's own
    /// folder, one that depends on nothing a process can set (not on
    /// `XDG_RUNTIME_DIR` or `TMPDIR`, which differ between processes of
    /// the same user: a cron job, `sudo -u`): `/run/user/UID`, which
    /// systemd-logind makes for each user with a session (Linux), or the
    /// user's temporary folder that `confstr(_CS_DARWIN_USER_TEMP_DIR)`
    /// names (macOS). Either must be a folder of the user's, mode 0700.
    pub(super) fn system() -> Roots {
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let shared = LOCK_ROOT
            .into_iter()
            .find(|root| std::fs::metadata(root).is_ok_and(|m| m.is_dir()))
            .unwrap_or(LOCK_ROOT[LOCK_ROOT.len() - 1]);
        Roots::new(PathBuf::from(shared), own_root(uid), uid)
    }

    /// The folders `shared` and `own` (or why there is none) for the user
    /// `uid`; `own` is kept only if it is a folder of that user's alone.
    pub(super) fn new(shared: PathBuf, own: Result<PathBuf, String>, uid: u32) -> Roots {
        let own = own.and_then(|root| match usable(&root, uid) {
            Ok(()) => Ok(root),
            Err(Unusable::NotOurs(why)) => Err(why),
            Err(Unusable::Io(err)) => Err(err.to_string()),
        });
        Roots { shared, own, uid }
    }

    /// The folder `which`, made (mode 0700) if missing, and checked to be
    /// a folder of this user's that no one else can use.
    pub(super) fn folder(&self, which: Folder) -> Result<PathBuf, SharedError> {
        let dir = match which {
            Folder::Shared => self.shared.join(format!("bytelens-locks-{}", self.uid)),
            Folder::Own => match &self.own {
                Ok(root) => root.join("bytelens-locks"),
                Err(why) => {
                    return Err(SharedError::Os {
                        what: "the lock files' folder",
                        err: std::io::Error::new(
                            ErrorKind::NotFound,
                            format!(
                                "the segment's lock file is in this user's own folder, and \
                                 there is none: {why}"
                            ),
                        ),
                    });
                }
            },
        };
        made(&dir, self.uid).map_err(|err| SharedError::Os {
            what: "the lock files' folder",
            err: match err {
                Unusable::NotOurs(why) => std::io::Error::new(ErrorKind::PermissionDenied, why),
                Unusable::Io(err) => err,
            },
        })?;
        Ok(dir)
    }

    /// The folder for a new segment's lock file: the shared one, or the
    /// user's own if the shared one is another user's (or open to others,
    /// or not a folder). If there is no own folder either, the error says
    /// who owns the shared one, its mode, and what to do.
    pub(super) fn folder_for_new(&self) -> Result<(PathBuf, Folder), SharedError> {
        let shared = self.shared.join(format!("bytelens-locks-{}", self.uid));
        match made(&shared, self.uid) {
            Ok(()) => Ok((shared, Folder::Shared)),
            Err(Unusable::NotOurs(why)) => match &self.own {
                Ok(_) => Ok((self.folder(Folder::Own)?, Folder::Own)),
                Err(none) => Err(SharedError::Os {
                    what: "the lock files' folder",
                    err: std::io::Error::new(
                        ErrorKind::PermissionDenied,
                        format!("{why}; and no folder of this user's own to use instead ({none})"),
                    ),
                }),
            },
            Err(Unusable::Io(err)) => Err(SharedError::Os {
                what: "the lock files' folder",
                err,
            }),
        }
    }
}

/// This user's own folder, which no other user can make: `/run/user/UID`
/// on Linux, `confstr(_CS_DARWIN_USER_TEMP_DIR)` on macOS; elsewhere none.
fn own_root(uid: u32) -> Result<PathBuf, String> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        Ok(PathBuf::from(format!("/run/user/{uid}")))
    }
    #[cfg(target_vendor = "apple")]
    {
        use std::os::unix::ffi::OsStrExt;
        let _ = uid;
        let mut buf = [0u8; 1024];
        // SAFETY: confstr writes at most `buf.len()` bytes, NUL included, into
        // `buf`, and returns the length the whole value needs (0 if none).
        let needed = unsafe {
            libc::confstr(
                libc::_CS_DARWIN_USER_TEMP_DIR,
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if needed == 0 || needed > buf.len() {
            return Err("confstr(_CS_DARWIN_USER_TEMP_DIR) names no folder".to_owned());
        }
        let path = std::ffi::OsStr::from_bytes(&buf[..needed - 1]);
        Ok(PathBuf::from(path))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    {
        let _ = uid;
        Err("this OS has none bytelens knows".to_owned())
    }
}

/// Makes the folder `dir` (mode 0700) if missing, and checks it is one.
fn made(dir: &Path, uid: u32) -> Result<(), Unusable> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
        Err(err) => {
            let err = std::io::Error::new(err.kind(), format!("{}: {err}", dir.display()));
            return Err(Unusable::Io(err));
        }
    }
    usable(dir, uid)
}

/// Checks that `dir` (not followed if a link) is a folder of the user
/// `uid`'s that no one else can use (mode 0700); if not, says who owns
/// it, its mode, and what to do.
fn usable(dir: &Path, uid: u32) -> Result<(), Unusable> {
    let meta = std::fs::symlink_metadata(dir).map_err(|err| {
        Unusable::Io(std::io::Error::new(
            err.kind(),
            format!("{}: {err}", dir.display()),
        ))
    })?;
    let (owner, mode) = (meta.uid(), meta.mode() & 0o7777);
    let kind = meta.file_type();
    let what = if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a file"
    } else {
        "neither a folder nor a file"
    };
    let shown = dir.display();
    let why = if owner != uid {
        format!(
            "{shown} is {what} of uid {owner}, mode {mode:04o}, not a folder of this user's \
             (uid {uid}) with mode 0700: another user made it, and could read or take the \
             locks in it; have it removed (as uid {owner} or root: rm -r '{shown}')"
        )
    } else if !kind.is_dir() {
        format!(
            "{shown} is {what} of this user's (uid {uid}), mode {mode:04o}, not a folder: \
             remove it (rm '{shown}')"
        )
    } else if mode & 0o077 != 0 {
        format!(
            "{shown} is this user's (uid {uid}) but has mode {mode:04o}, so others could read \
             or take the locks in it: make it 0700 (chmod 700 '{shown}')"
        )
    } else {
        return Ok(());
    };
    Err(Unusable::NotOurs(why))
}

/// `flock` of `fd`, which the caller keeps open, retried when interrupted.
fn flock(fd: RawFd, op: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: flock takes any descriptor number (a closed one is EBADF);
        // it touches no memory of ours.
        if unsafe { libc::flock(fd, op) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

impl FileLock {
    /// Makes the lock file of a new segment with `token`, in the folder
    /// [`Roots::folder_for_new`] picks, which the segment's header records.
    pub(super) fn create(token: [u8; TOKEN_LEN]) -> Result<(FileLock, Folder), SharedError> {
        FileLock::create_in(&Roots::system(), token)
    }

    /// [`create`](Self::create) with the folders made in `roots`.
    pub(super) fn create_in(
        roots: &Roots,
        token: [u8; TOKEN_LEN],
    ) -> Result<(FileLock, Folder), SharedError> {
        let (dir, folder) = roots.folder_for_new()?;
        Ok((FileLock::new(dir.join(hex(token)), true)?, folder))
    }

    /// Opens the lock file of an existing segment with `token`, in `folder`.
    pub(super) fn attach(token: [u8; TOKEN_LEN], folder: Folder) -> Result<FileLock, SharedError> {
        FileLock::attach_in(&Roots::system(), token, folder)
    }

    /// [`attach`](Self::attach) with the folders in `roots`.
    pub(super) fn attach_in(
        roots: &Roots,
        token: [u8; TOKEN_LEN],
        folder: Folder,
    ) -> Result<FileLock, SharedError> {
        FileLock::new(roots.folder(folder)?.join(hex(token)), false)
    }

    /// The lock file at `path`, made (`create`) or opened.
    fn new(path: PathBuf, create: bool) -> Result<FileLock, SharedError> {
        let file = open_file(&path, create)?;
        Ok(FileLock {
            inner: Arc::new(Inner {
                path,
                state: Mutex::new(State {
                    file,
                    pid: std::process::id(),
                    holder: 0,
                }),
                freed: Condvar::new(),
            }),
        })
    }

    /// Removes a segment's lock file, in `folder` (best effort).
    pub(super) fn remove(token: [u8; TOKEN_LEN], folder: Folder) {
        if let Ok(dir) = Roots::system().folder(folder) {
            let _ = std::fs::remove_file(dir.join(hex(token)));
        }
    }

    /// Takes the lock: first from the other threads using this file, then
    /// from other open files of it. `timeout` as [`super::Lock::lock`]'s.
    pub(super) fn lock(&self, timeout: Option<Duration>) -> Result<(), SharedError> {
        let deadline = timeout.map(|t| Instant::now().checked_add(t));
        let timed_out = || SharedError::Timeout {
            waited: timeout.unwrap_or_default(),
        };
        let me = this_thread();
        let mut state = self.inner.state();
        if state.pid != std::process::id() {
            // A forked child: what the parent held is the parent's (no
            // thread of the child holds it), and the inherited descriptor
            // shares the parent's open file, so its lock: open another.
            state.file = reopen(&state.file, &self.inner.path)?;
            state.pid = std::process::id();
            state.holder = 0;
        }
        if state.holder == me {
            return Err(SharedError::AlreadyHeld);
        }
        while state.holder != 0 {
            state = match deadline {
                None | Some(None) => self
                    .inner
                    .freed
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(Some(deadline)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(timed_out());
                    }
                    let (state, _) = self
                        .inner
                        .freed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner());
                    state
                }
            };
        }
        // Claimed in this process; the state's mutex is let go while waiting
        // for other processes, so other threads wait on `freed` meanwhile.
        // The file stays open meanwhile: only a claimant replaces it (above),
        // and `self` keeps `Inner`.
        state.holder = me;
        let fd = state.file.as_raw_fd();
        drop(state);
        let taken = match deadline {
            None | Some(None) => {
                flock(fd, libc::LOCK_EX).map_err(|err| SharedError::Os { what: "flock", err })
            }
            Some(Some(deadline)) => poll(fd, deadline).map_err(|err| match err {
                None => timed_out(),
                Some(err) => SharedError::Os { what: "flock", err },
            }),
        };
        if let Err(err) = taken {
            let mut state = self.inner.state();
            state.holder = 0;
            self.inner.freed.notify_one();
            return Err(err);
        }
        HELD.with(|held| held.0.borrow_mut().push(Arc::downgrade(&self.inner)));
        Ok(())
    }

    /// Releases the lock this thread holds.
    pub(super) fn unlock(&self) -> Result<(), SharedError> {
        let mut state = self.inner.state();
        if !state.holds(this_thread()) {
            return Err(SharedError::NotHeld);
        }
        let released = self.inner.release(&mut state);
        drop(state);
        HELD.with(|held| {
            held.0
                .borrow_mut()
                .retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(&self.inner)))
        });
        released.map_err(|err| SharedError::Os { what: "flock", err })
    }

    /// Releases the lock whichever thread holds it (its mapping is being
    /// dropped). `mark` runs first, under the lock, so the next taker sees
    /// its mark; neither happens in a forked child, whose copy of a
    /// parent's hold is the parent's.
    pub(super) fn abandon(&self, mark: impl FnOnce()) {
        let mut state = self.inner.state();
        if state.holds(state.holder) {
            mark();
            let _ = self.inner.release(&mut state);
        }
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding it leaves nothing half-done in `State`.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases the lock held through `state` (checked by the caller with
    /// [`State::holds`]) and wakes a thread waiting for it.
    fn release(&self, state: &mut State) -> std::io::Result<()> {
        let released = flock(state.file.as_raw_fd(), libc::LOCK_UN);
        state.holder = 0;
        self.freed.notify_one();
        released
    }
}

impl State {
    /// Whether `thread` (not 0) holds the lock through this file, in this
    /// process: a forked child's copy of its parent's hold is the parent's,
    /// and releasing it would release the parent's lock (the descriptor
    /// shares the parent's open file).
    fn holds(&self, thread: u64) -> bool {
        thread != 0 && self.holder == thread && self.pid == std::process::id()
    }
}

fn open_file(path: &Path, create: bool) -> Result<File, SharedError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).mode(0o600);
    options.custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW);
    if create {
        options.create_new(true);
    }
    options.open(path).map_err(|err| SharedError::Os {
        what: if create {
            "making the segment's lock file"
        } else {
            "opening the segment's lock file (removed while the segment lived?)"
        },
        err: std::io::Error::new(err.kind(), format!("{}: {err}", path.display())),
    })
}

/// A new open file of the lock file that `inherited` (a descriptor a
/// forked child inherited, which shares its parent's open file) is open
/// on, at `path` while the segment has its name. On Linux through
/// `/proc/self/fd`, which reaches the file even after `unlink` removed its
/// name (by `path` only if `/proc` is not mounted); elsewhere by `path`.
fn reopen(inherited: &File, path: &Path) -> Result<File, SharedError> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let fd = PathBuf::from(format!("/proc/self/fd/{}", inherited.as_raw_fd()));
        let mut options = OpenOptions::new();
        // Not O_NOFOLLOW: the entry is a link (to the open file itself).
        options.read(true).write(true).custom_flags(libc::O_CLOEXEC);
        if let Ok(file) = options.open(&fd) {
            let same = |a: &File, b: &File| match (a.metadata(), b.metadata()) {
                (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
                _ => false,
            };
            if same(&file, inherited) {
                return Ok(file);
            }
        }
    }
    let _ = inherited;
    open_file(path, false).map_err(|err| match err {
        SharedError::Os { err, .. } if err.kind() == ErrorKind::NotFound => SharedError::Os {
            what: if cfg!(any(target_os = "linux", target_os = "android")) {
                "reopening the segment's lock file in a forked child (no /proc, and its name \
                 is gone: removed while the segment lived?)"
            } else {
                "reopening the segment's lock file in a forked child (on this OS a child \
                 forked after unlink() cannot: fork before unlinking)"
            },
            err,
        },
        err => err,
    })
}

/// `flock` tries until `deadline`: `Err(None)` when it passes.
fn poll(fd: RawFd, deadline: Instant) -> Result<(), Option<std::io::Error>> {
    let mut pause = Duration::from_micros(50);
    loop {
        match flock(fd, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => return Ok(()),
            Err(err) if err.kind() == ErrorKind::WouldBlock => {}
            Err(err) => return Err(Some(err)),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(None);
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}
