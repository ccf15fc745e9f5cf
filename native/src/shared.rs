//! Named POSIX shared memory that other processes attach to by name, with a
//! process-shared lock that survives its holder's death. (Mapped files
//! share the mapping's hazard but nothing else, and live in `mapped.rs`.)
//!
//! A segment starts with a one-page header: a magic number and version, the
//! data length, a robust process-shared `pthread_mutex_t`, and optionally a
//! [`Plan`] written as text, so an attaching process gets the same named
//! views. The data follows at [`DATA_OFFSET`] (page-aligned, so every dtype
//! is aligned).

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memmap2::{MmapMut, MmapOptions};

use crate::{LayoutError, Plan, PlanSpec};

/// Where the data starts: one page of header.
pub const DATA_OFFSET: usize = 4096;
const MAGIC: [u8; 8] = *b"BYTELENS";
const VERSION: u32 = 1;
/// Header fields, at fixed offsets (little-endian).
const AT_VERSION: usize = 8;
const AT_NBYTES: usize = 16;
const AT_PLAN_LEN: usize = 24;
/// The robust mutex, cache-line aligned.
const AT_LOCK: usize = 64;
/// The plan's text, up to the end of the header page.
const AT_PLAN: usize = 256;
/// Longest name: NAME_MAX (255) less the leading '/'.
pub const MAX_NAME: usize = 254;

/// What can go wrong with shared memory and mapped files.
#[derive(Debug)]
#[non_exhaustive]
pub enum SharedError {
    /// A segment name that is empty, too long, or holds `/`, `..` or NUL.
    BadName {
        /// The name given.
        name: String,
    },
    /// No segment has this name.
    Missing {
        /// The name given.
        name: String,
    },
    /// A segment with this name already exists.
    Exists {
        /// The name given.
        name: String,
    },
    /// The segment is not a bytelens segment, or a newer version of one.
    WrongFormat {
        /// The name given.
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The segment is smaller than its header says.
    TooSmall {
        /// The name given.
        name: String,
        /// Its size in bytes.
        size: u64,
        /// The size it must have.
        needed: u64,
    },
    /// More bytes than a mapping can hold.
    TooLarge {
        /// Bytes asked for.
        nbytes: usize,
    },
    /// The calling thread already holds the lock (it is not recursive).
    AlreadyHeld,
    /// The calling thread does not hold the lock it is releasing.
    NotHeld,
    /// The plan does not fit in the header page.
    PlanTooLarge {
        /// The plan's text length.
        len: usize,
    },
    /// The stored plan is not valid.
    BadPlan(LayoutError),
    /// The lock was not free within the timeout.
    Timeout {
        /// How long was waited.
        waited: Duration,
    },
    /// An operating-system call failed.
    Os {
        /// What was being done.
        what: &'static str,
        /// The error.
        err: std::io::Error,
    },
}

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SharedError::BadName { name } => write!(
                f,
                "{name:?} is not a usable shared-memory name: 1 to {MAX_NAME} bytes, \
                 without '/', NUL, or being '.' or '..'"
            ),
            SharedError::Missing { name } => write!(f, "no shared memory named {name:?}"),
            SharedError::Exists { name } => {
                write!(f, "shared memory named {name:?} already exists")
            }
            SharedError::WrongFormat { name, why } => {
                write!(f, "shared memory {name:?} is not a bytelens buffer: {why}")
            }
            SharedError::TooSmall { name, size, needed } => write!(
                f,
                "shared memory {name:?} holds {size} bytes, but its header needs {needed}"
            ),
            SharedError::TooLarge { nbytes } => {
                write!(f, "{nbytes} bytes is more than a shared segment can hold")
            }
            SharedError::AlreadyHeld => f.write_str(
                "this thread already holds the lock (it is not recursive: nesting it would deadlock)",
            ),
            SharedError::NotHeld => f.write_str("this thread does not hold the lock it is releasing"),
            SharedError::PlanTooLarge { len } => write!(
                f,
                "the plan takes {len} bytes as text, more than the {} the header holds",
                DATA_OFFSET - AT_PLAN
            ),
            SharedError::BadPlan(err) => write!(f, "the stored plan is not valid: {err}"),
            SharedError::Timeout { waited } => {
                write!(
                    f,
                    "the lock was not free within {:.3} s",
                    waited.as_secs_f64()
                )
            }
            SharedError::Os { what, err } => write!(f, "{what}: {err}"),
        }
    }
}

impl std::error::Error for SharedError {}

fn os(what: &'static str) -> impl FnOnce(std::io::Error) -> SharedError {
    move |err| SharedError::Os { what, err }
}

/// Checks a segment name and gives the `/name` that `shm_open` takes.
fn shm_path(name: &str) -> Result<CString, SharedError> {
    let bad = || SharedError::BadName {
        name: name.to_owned(),
    };
    if name.is_empty() || name.len() > MAX_NAME || name.contains('/') || name == "." || name == ".."
    {
        return Err(bad());
    }
    CString::new(format!("/{name}")).map_err(|_| bad())
}

/// `shm_open` of the (checked) name, with its errors as [`SharedError`]s.
fn open_segment(name: &str, flags: libc::c_int, mode: libc::mode_t) -> Result<File, SharedError> {
    let path = shm_path(name)?;
    // SAFETY: `path` is a NUL-terminated C string; shm_open has no other
    // preconditions. The returned descriptor is owned by `OwnedFd` below.
    let fd = unsafe { libc::shm_open(path.as_ptr(), flags, mode) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        let name = name.to_owned();
        return Err(match err.kind() {
            std::io::ErrorKind::AlreadyExists => SharedError::Exists { name },
            std::io::ErrorKind::NotFound => SharedError::Missing { name },
            _ => SharedError::Os {
                what: "shm_open",
                err,
            },
        });
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A named shared-memory segment, mapped read-write.
///
/// Another process of the same user could shrink the segment (it is a file
/// under /dev/shm, mode 0600); touching the data then raises SIGBUS, as with
/// any shared mapping, [`MappedFile`](crate::MappedFile)s included. So
/// [`create`](Self::create) and [`attach`](Self::attach) are `unsafe`, as
/// [`MappedFile::open`](crate::MappedFile::open) is: the caller promises
/// that no process does that. bytelens itself never resizes a segment.
///
/// # Examples
/// ```
/// use bytelens::SharedBuffer;
/// let name = format!("bytelens-doc-{}", std::process::id());
/// // SAFETY: no process shrinks this example's segment while it is mapped.
/// let mut sh = unsafe { SharedBuffer::create(&name, 16, None) }?;
/// sh.as_bytes_mut()[0] = 7;
/// // SAFETY: as above.
/// let other = unsafe { SharedBuffer::attach(&name) }?; // in another process, usually
/// assert_eq!(other.as_bytes()[0], 7);
/// {
///     let guard = other.lock(None)?;
///     assert!(!guard.owner_died());
/// }
/// SharedBuffer::unlink(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SharedBuffer {
    name: String,
    /// `None` only while dropping.
    map: Option<MmapMut>,
    len: usize,
    /// The thread ([`this_thread`]) holding the lock through this mapping, or
    /// 0. Written only by the holder, while it holds the lock (so plain
    /// relaxed loads and stores suffice: the mutex orders them), and read by
    /// `Drop`, which has the object to itself.
    holder: AtomicU64,
}

/// A number for the calling thread, never 0 (cheaper than `gettid`).
fn this_thread() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if self.holder.load(Ordering::Relaxed) != 0 {
            // A held robust mutex is linked into its thread's robust list, which
            // glibc and the kernel walk through the mutex's own memory (on the next
            // lock, and when the process dies). Unmapping it now would make those
            // walks fault, or silently skip it so no one ever learns its holder
            // died. So a mapping whose lock is still held stays mapped.
            std::mem::forget(self.map.take());
        }
    }
}

impl SharedBuffer {
    /// Creates the segment `name` (mode 0600) with `nbytes` zeroed bytes of
    /// data and, optionally, a plan that attaching processes read back.
    ///
    /// # Safety
    /// No process may shrink the segment while this mapping of it exists:
    /// touching a page past the new end raises SIGBUS. Any process of the
    /// same user can open the segment by name and `ftruncate` it; bytelens
    /// never does. Writes by other processes are fine: the data is only ever
    /// read and written as plain bytes.
    pub unsafe fn create(
        name: &str,
        nbytes: usize,
        plan: Option<&Plan<'_>>,
    ) -> Result<SharedBuffer, SharedError> {
        shm_path(name)?; // a bad name first, whatever else is wrong
        let plan_text = plan
            .map(|p| PlanSpec::from(p).to_text())
            .unwrap_or_default();
        if plan_text.len() > DATA_OFFSET - AT_PLAN {
            return Err(SharedError::PlanTooLarge {
                len: plan_text.len(),
            });
        }
        let size = DATA_OFFSET
            .checked_add(nbytes)
            .filter(|&size| size <= isize::MAX as usize)
            .ok_or(SharedError::TooLarge { nbytes })?;
        let file = open_segment(name, libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600)?;
        let made = (|| {
            file.set_len(size as u64)
                .map_err(os("sizing the segment"))?;
            // SAFETY: the segment is ours and sized above, and the caller keeps any
            // process from shrinking it while mapped. Other processes may map it
            // too, which is the point: the data is shared bytes (like a file
            // another process writes), read and written through `as_bytes[_mut]`.
            let mut map =
                unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
            map[AT_VERSION..AT_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
            map[AT_NBYTES..AT_NBYTES + 8].copy_from_slice(&(nbytes as u64).to_le_bytes());
            map[AT_PLAN_LEN..AT_PLAN_LEN + 4]
                .copy_from_slice(&(plan_text.len() as u32).to_le_bytes());
            map[AT_PLAN..AT_PLAN + plan_text.len()].copy_from_slice(plan_text.as_bytes());
            init_robust_mutex(&mut map)?;
            // Last, so that an attaching process sees a bytelens header only
            // once everything it describes (the lock included) is ready.
            std::sync::atomic::fence(Ordering::Release);
            map[..8].copy_from_slice(&MAGIC);
            Ok(SharedBuffer {
                name: name.to_owned(),
                map: Some(map),
                len: nbytes,
                holder: AtomicU64::new(0),
            })
        })();
        if made.is_err() {
            // Best effort: do not leave a half-made segment behind.
            let _ = SharedBuffer::unlink(name);
        }
        made
    }

    /// Attaches to the segment `name`, checking that it is a bytelens segment.
    ///
    /// # Safety
    /// No process may shrink the segment while this mapping of it exists:
    /// touching a page past the new end raises SIGBUS. Any process of the
    /// same user can open the segment by name and `ftruncate` it; bytelens
    /// never does. Writes by other processes are fine: the data is only ever
    /// read and written as plain bytes.
    pub unsafe fn attach(name: &str) -> Result<SharedBuffer, SharedError> {
        let file = open_segment(name, libc::O_RDWR, 0)?;
        let size = file
            .metadata()
            .map_err(os("reading the segment's size"))?
            .len();
        let too_small = |needed: u64| SharedError::TooSmall {
            name: name.to_owned(),
            size,
            needed,
        };
        if size < DATA_OFFSET as u64 {
            return Err(too_small(DATA_OFFSET as u64));
        }
        // SAFETY: as in `create`: shared bytes, accessed as bytes, in a segment
        // the caller keeps from shrinking (its size was checked just above).
        let map =
            unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
        let wrong = |why| SharedError::WrongFormat {
            name: name.to_owned(),
            why,
        };
        if map[..8] != MAGIC {
            return Err(wrong(if map[..8] == [0; 8] {
                "no bytelens header (yet: one still being created looks the same)"
            } else {
                "no bytelens header"
            }));
        }
        std::sync::atomic::fence(Ordering::Acquire);
        let version = u32::from_le_bytes(
            map[AT_VERSION..AT_VERSION + 4]
                .try_into()
                .unwrap_or_default(),
        );
        if version != VERSION {
            return Err(wrong("a header version this bytelens does not read"));
        }
        let nbytes =
            u64::from_le_bytes(map[AT_NBYTES..AT_NBYTES + 8].try_into().unwrap_or_default());
        let needed = (DATA_OFFSET as u64).saturating_add(nbytes);
        if size < needed {
            return Err(too_small(needed));
        }
        Ok(SharedBuffer {
            name: name.to_owned(),
            map: Some(map),
            len: nbytes as usize,
            holder: AtomicU64::new(0),
        })
    }

    /// Removes the name; mappings (this one and other processes') stay valid.
    pub fn unlink(name: &str) -> Result<(), SharedError> {
        let path = shm_path(name)?;
        // SAFETY: `path` is a NUL-terminated C string.
        if unsafe { libc::shm_unlink(path.as_ptr()) } < 0 {
            let err = std::io::Error::last_os_error();
            return Err(match err.kind() {
                std::io::ErrorKind::NotFound => SharedError::Missing {
                    name: name.to_owned(),
                },
                _ => SharedError::Os {
                    what: "shm_unlink",
                    err,
                },
            });
        }
        Ok(())
    }

    /// The segment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of data.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the segment holds no data.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The data.
    pub fn as_bytes(&self) -> &[u8] {
        &self.mapping()[DATA_OFFSET..DATA_OFFSET + self.len]
    }

    /// The data, writable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.mapping_mut()[DATA_OFFSET..DATA_OFFSET + len]
    }

    /// The address of the data (page-aligned).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_bytes_mut().as_mut_ptr()
    }

    /// The stored plan's text ([`PlanSpec::to_text`]); empty if none.
    pub fn plan_text(&self) -> &str {
        let map = self.mapping();
        let len = u32::from_le_bytes(
            map[AT_PLAN_LEN..AT_PLAN_LEN + 4]
                .try_into()
                .unwrap_or_default(),
        );
        let end = AT_PLAN + (len as usize).min(DATA_OFFSET - AT_PLAN);
        // Not UTF-8: a corrupted header, which `plan_from_text` then refuses.
        std::str::from_utf8(&map[AT_PLAN..end]).unwrap_or("\u{fffd}")
    }

    /// The plan stored at creation, if any, read back and checked.
    pub fn plan(&self) -> Result<Option<PlanSpec>, SharedError> {
        let text = self.plan_text();
        if text.is_empty() {
            return Ok(None);
        }
        let spec = PlanSpec::from_text(text).map_err(SharedError::BadPlan)?;
        spec.build().map_err(SharedError::BadPlan)?;
        Ok(Some(spec))
    }

    /// Takes the segment's lock, waiting at most `timeout` (forever if
    /// `None`). If the previous holder died holding it, the lock is taken
    /// anyway and [`LockGuard::owner_died`] says so: the data it was writing
    /// may be half-written.
    pub fn lock(&self, timeout: Option<Duration>) -> Result<LockGuard<'_>, SharedError> {
        let owner_died = self.lock_raw(timeout)?;
        Ok(LockGuard {
            shared: self,
            owner_died,
            _same_thread: std::marker::PhantomData,
        })
    }

    /// Takes the lock without a guard (for bindings that pair it with
    /// [`unlock_raw`](SharedBuffer::unlock_raw) themselves): `Ok(owner_died)`.
    /// A zero timeout only tries.
    pub fn lock_raw(&self, timeout: Option<Duration>) -> Result<bool, SharedError> {
        let mutex = self.mutex();
        // SAFETY: `mutex` points at the robust process-shared mutex `create`
        // initialised in this mapping, which lives as long as `self`.
        let rc = unsafe {
            match timeout {
                None => libc::pthread_mutex_lock(mutex),
                Some(t) if t.is_zero() => libc::pthread_mutex_trylock(mutex),
                Some(t) => libc::pthread_mutex_timedlock(mutex, &deadline_after(t)),
            }
        };
        let owner_died = match rc {
            0 => false,
            libc::EOWNERDEAD => {
                // SAFETY: EOWNERDEAD means we now hold the mutex; marking it
                // consistent lets later lockers take it normally.
                unsafe { libc::pthread_mutex_consistent(mutex) };
                true
            }
            libc::EDEADLK => return Err(SharedError::AlreadyHeld),
            libc::ETIMEDOUT | libc::EBUSY => {
                return Err(SharedError::Timeout {
                    waited: timeout.unwrap_or_default(),
                });
            }
            err => {
                return Err(SharedError::Os {
                    what: "pthread_mutex_lock",
                    err: std::io::Error::from_raw_os_error(err),
                });
            }
        };
        self.holder.store(this_thread(), Ordering::Relaxed);
        Ok(owner_died)
    }

    /// Releases the lock taken by [`lock_raw`](SharedBuffer::lock_raw);
    /// [`NotHeld`](SharedError::NotHeld) if this thread does not hold it (the
    /// mutex checks its owner, so nothing else happens then).
    pub fn unlock_raw(&self) -> Result<(), SharedError> {
        if self.holder.load(Ordering::Relaxed) != this_thread() {
            return Err(SharedError::NotHeld);
        }
        self.holder.store(0, Ordering::Relaxed);
        // SAFETY: the mutex lives as long as `self`, and this thread holds it
        // (checked above; being error-checking, it would refuse otherwise).
        match unsafe { libc::pthread_mutex_unlock(self.mutex()) } {
            0 => Ok(()),
            libc::EPERM => Err(SharedError::NotHeld),
            err => Err(SharedError::Os {
                what: "pthread_mutex_unlock",
                err: std::io::Error::from_raw_os_error(err),
            }),
        }
    }

    fn mutex(&self) -> *mut libc::pthread_mutex_t {
        // The header page is part of the mapping; the mutex lives at AT_LOCK,
        // 64-byte aligned within a page-aligned mapping.
        self.mapping()
            .as_ptr()
            .wrapping_add(AT_LOCK)
            .cast::<libc::pthread_mutex_t>()
            .cast_mut()
    }

    fn mapping(&self) -> &MmapMut {
        self.map.as_ref().expect("mapped until dropped")
    }

    fn mapping_mut(&mut self) -> &mut MmapMut {
        self.map.as_mut().expect("mapped until dropped")
    }
}

/// Initialises the robust, process-shared mutex in a fresh header.
fn init_robust_mutex(map: &mut MmapMut) -> Result<(), SharedError> {
    let mutex = map
        .as_mut_ptr()
        .wrapping_add(AT_LOCK)
        .cast::<libc::pthread_mutex_t>();
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

/// `CLOCK_REALTIME` now plus `timeout`, as `pthread_mutex_timedlock` wants.
fn deadline_after(timeout: Duration) -> libc::timespec {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let nanos = now.tv_nsec as u64 + u64::from(timeout.subsec_nanos());
    libc::timespec {
        tv_sec: now
            .tv_sec
            .saturating_add(timeout.as_secs().min(i64::MAX as u64 / 2) as libc::time_t)
            .saturating_add((nanos / 1_000_000_000) as libc::time_t),
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    }
}

/// A held [`SharedBuffer::lock`]; unlocks when dropped.
pub struct LockGuard<'s> {
    shared: &'s SharedBuffer,
    owner_died: bool,
    /// Not `Send`: the thread that locked must be the one that unlocks.
    _same_thread: std::marker::PhantomData<*const ()>,
}

impl LockGuard<'_> {
    /// Whether the previous holder died holding the lock.
    pub fn owner_died(&self) -> bool {
        self.owner_died
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // `lock` made this guard on this thread, which holds the mutex until now;
        // the guard is not `Send`, so it is dropped on that thread.
        let _ = self.shared.unlock_raw();
    }
}
