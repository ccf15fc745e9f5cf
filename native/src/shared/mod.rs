//! Named POSIX shared memory that other processes attach to by name, with a
//! process-shared lock that survives its holder's death. (Mapped files
//! share the mapping's hazard but nothing else, and live in `mapped.rs`.)
//!
//! A segment starts with a one-page header: a magic number and version, the
//! data length, a token that tells this segment from a later one of the same
//! name, a robust process-shared `pthread_mutex_t`, and optionally a [`Plan`]
//! written as text, so an attaching process gets the same named views. The
//! data follows at [`DATA_OFFSET`] (page-aligned, so every dtype is aligned).
//! [`SharedBuffer::read_header`] reads a header from bytes alone, whatever
//! they hold.

use std::ffi::CString;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use memmap2::{MmapMut, MmapOptions};

use crate::{Plan, PlanSpec};

mod error;
mod lock;

pub use error::SharedError;
use lock::{init_robust_mutex, timed_lock};

/// Where the data starts: one page of header.
pub const DATA_OFFSET: usize = 4096;
const MAGIC: [u8; 8] = *b"BYTELENS";
const VERSION: u32 = 1;
/// Header fields, at fixed offsets (little-endian).
const AT_VERSION: usize = 8;
const AT_NBYTES: usize = 16;
const AT_PLAN_LEN: usize = 24;
/// 16 bytes `create` draws for each segment ([`SharedBuffer::unlink_checked`]).
/// Version-1 headers from before it hold zeros here, as every header did.
const AT_TOKEN: usize = 32;
const TOKEN_LEN: usize = 16;
/// The robust mutex, cache-line aligned.
const AT_LOCK: usize = 64;
/// The plan's text, up to the end of the header page.
const AT_PLAN: usize = 256;
/// Longest name: NAME_MAX (255) less the leading '/'.
pub const MAX_NAME: usize = 254;

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
    /// Which segment this maps, for [`unlink_checked`](Self::unlink_checked).
    identity: Identity,
    /// The thread ([`this_thread`]) holding the lock through this mapping, or
    /// 0. Written only by the holder, while it holds the lock (so plain
    /// relaxed loads and stores suffice: the mutex orders them), and read by
    /// `Drop`, which has the object to itself.
    holder: AtomicU64,
}

/// Which segment a mapping is of: its file (device and inode, from `fstat`
/// of the descriptor it was mapped from) and the token in its header. A name
/// unlinked and given to a new segment names another file; the token also
/// tells apart a new file that happens to get a freed inode number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    token: [u8; TOKEN_LEN],
}

impl Identity {
    fn of(file: &File, token: [u8; TOKEN_LEN]) -> Result<Identity, SharedError> {
        let meta = file.metadata().map_err(os("reading the segment's inode"))?;
        Ok(Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            token,
        })
    }
}

/// 16 bytes unlikely to repeat, for a new segment's header: not secret, only
/// distinct (std's per-process random hash keys over the time, the process
/// id and a counter).
fn new_token() -> [u8; TOKEN_LEN] {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = (
        nanos,
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed),
    );
    let keys = RandomState::new();
    let mut token = [0; TOKEN_LEN];
    token[..8].copy_from_slice(&keys.hash_one(seed).to_le_bytes());
    token[8..].copy_from_slice(&keys.hash_one((seed, 1u8)).to_le_bytes());
    token
}

/// Whether `name` names the file with device `dev` and inode `ino` and, if
/// `token` is given, with that token in its header. `Missing` if nothing has
/// the name.
fn is_at(
    name: &str,
    dev: u64,
    ino: u64,
    token: Option<[u8; TOKEN_LEN]>,
) -> Result<bool, SharedError> {
    let file = open_segment(name, libc::O_RDONLY, 0)?;
    let meta = file.metadata().map_err(os("reading the segment's inode"))?;
    if (meta.dev(), meta.ino()) != (dev, ino) {
        return Ok(false);
    }
    // The same device and inode number: the same file, unless the file system
    // gave a new file a number still in use (tmpfs's 32-bit counter can wrap),
    // which the new segment's own token tells.
    Ok(token.is_none_or(|token| {
        let mut found = [0; TOKEN_LEN];
        file.read_exact_at(&mut found, AT_TOKEN as u64).is_ok() && found == token
    }))
}

/// The `N` bytes at `at` in the header page (`at + N` is within it: the
/// header's offsets are constants).
fn field<const N: usize>(page: &[u8; DATA_OFFSET], at: usize) -> [u8; N] {
    let mut out = [0; N];
    if let Some(bytes) = page.get(at..at + N) {
        out.copy_from_slice(bytes);
    }
    out
}

/// What a segment's header says, as [`SharedBuffer::read_header`] read it
/// and checked it against the segment's bytes.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Bytes of data after the header page (that many are there).
    pub nbytes: usize,
    /// The stored plan's text, as bytes (empty if none); inside the header page.
    pub plan: &'a [u8],
    /// The token `create` drew (zeros in headers from before tokens).
    pub token: [u8; TOKEN_LEN],
}

impl<'a> Header<'a> {
    /// The plan's text; U+FFFD, which no plan reads as, if it is not UTF-8.
    pub fn plan_text(&self) -> &'a str {
        std::str::from_utf8(self.plan).unwrap_or("\u{fffd}")
    }

    /// The plan, parsed, built, and checked to fit in [`nbytes`](Self::nbytes).
    pub fn plan(&self) -> Result<Option<PlanSpec>, SharedError> {
        stored_plan(self.plan_text(), self.nbytes)
    }
}

/// The plan stored as `text` in a segment with `nbytes` bytes of data: none
/// if `text` is empty; it must build, and fit.
fn stored_plan(text: &str, nbytes: usize) -> Result<Option<PlanSpec>, SharedError> {
    if text.is_empty() {
        return Ok(None);
    }
    let spec = PlanSpec::from_text(text).map_err(SharedError::BadPlan)?;
    let plan = spec.build().map_err(SharedError::BadPlan)?.nbytes();
    if plan > nbytes {
        return Err(SharedError::PlanDoesNotFit { plan, nbytes });
    }
    Ok(Some(spec))
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
    /// Fails with [`PlanDoesNotFit`](SharedError::PlanDoesNotFit), creating
    /// nothing, when the plan's arrays need more than `nbytes`.
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
        if let Some(plan) = plan.filter(|p| p.nbytes() > nbytes) {
            // Every attacher's views of the plan would fail: refuse it here.
            return Err(SharedError::PlanDoesNotFit {
                plan: plan.nbytes(),
                nbytes,
            });
        }
        let size = DATA_OFFSET
            .checked_add(nbytes)
            .filter(|&size| size <= isize::MAX as usize)
            .ok_or(SharedError::TooLarge { nbytes })?;
        let file = open_segment(name, libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600)?;
        let identity = Identity::of(&file, new_token());
        let made = identity.and_then(|identity| {
            file.set_len(size as u64)
                .map_err(os("sizing the segment"))?;
            // SAFETY: the segment is ours and sized above, and the caller keeps any
            // process from shrinking it while mapped. Other processes may map it
            // too, which is the point: the data is shared bytes (like a file
            // another process writes), read and written through `as_bytes[_mut]`.
            let mut map =
                unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
            write_header(&mut map, nbytes, &plan_text, identity.token);
            init_robust_mutex(&mut map)?;
            // Last, so that an attaching process sees a bytelens header only
            // once everything it describes (the lock included) is ready.
            std::sync::atomic::fence(Ordering::Release);
            map[..8].copy_from_slice(&MAGIC);
            Ok(SharedBuffer {
                name: name.to_owned(),
                map: Some(map),
                len: nbytes,
                identity,
                holder: AtomicU64::new(0),
            })
        });
        if made.is_err() {
            // Best effort: do not leave a half-made segment behind, but do not
            // remove one that someone else put under the name meanwhile either.
            if let Ok(meta) = file.metadata() {
                if is_at(name, meta.dev(), meta.ino(), None).unwrap_or(false) {
                    let _ = SharedBuffer::unlink(name);
                }
            }
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
        if size < DATA_OFFSET as u64 {
            return Err(SharedError::TooSmall {
                name: name.to_owned(),
                size,
                needed: DATA_OFFSET as u64,
            });
        }
        // SAFETY: as in `create`: shared bytes, accessed as bytes, in a segment
        // the caller keeps from shrinking (its size was checked just above).
        let map =
            unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
        // The mapping's length is the size it was made with, which `read_header`
        // checks the header against.
        let header = SharedBuffer::read_header(name, &map)?;
        let (len, identity) = (header.nbytes, Identity::of(&file, header.token)?);
        Ok(SharedBuffer {
            name: name.to_owned(),
            map: Some(map),
            len,
            identity,
            holder: AtomicU64::new(0),
        })
    }

    /// Reads a segment's header from `segment`, the bytes of the whole
    /// segment (header page and data), checking everything it says against
    /// them: any bytes give an error or a [`Header`] whose data and plan text
    /// lie inside `segment`, never a panic. `name` is only for messages.
    /// [`attach`](Self::attach) reads headers with it; fuzzers call it directly.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{SharedBuffer, SharedError};
    /// let err = SharedBuffer::read_header("x", &[0; 4096]).unwrap_err();
    /// assert!(matches!(err, SharedError::WrongFormat { .. }));
    /// ```
    #[doc(hidden)]
    pub fn read_header<'a>(name: &str, segment: &'a [u8]) -> Result<Header<'a>, SharedError> {
        let size = segment.len() as u64;
        let too_small = |needed: u64| SharedError::TooSmall {
            name: name.to_owned(),
            size,
            needed,
        };
        let wrong = |why| SharedError::WrongFormat {
            name: name.to_owned(),
            why,
        };
        let Some(page) = segment.first_chunk::<DATA_OFFSET>() else {
            return Err(too_small(DATA_OFFSET as u64));
        };
        if page[..8] != MAGIC {
            return Err(wrong(if page[..8] == [0; 8] {
                "no bytelens header (yet: one still being created looks the same)"
            } else {
                "no bytelens header"
            }));
        }
        // Pairs with `create`'s release fence: what the magic number announces
        // (written before it) is seen.
        std::sync::atomic::fence(Ordering::Acquire);
        if u32::from_le_bytes(field(page, AT_VERSION)) != VERSION {
            return Err(wrong("a header version this bytelens does not read"));
        }
        let nbytes = u64::from_le_bytes(field(page, AT_NBYTES));
        let needed = (DATA_OFFSET as u64).saturating_add(nbytes);
        if size < needed {
            return Err(too_small(needed));
        }
        // Fits: it is at most `segment.len() - DATA_OFFSET`.
        let nbytes = nbytes as usize;
        let plan_len = u32::from_le_bytes(field(page, AT_PLAN_LEN)) as usize;
        let Some(plan) = page[AT_PLAN..].get(..plan_len) else {
            return Err(wrong("its plan runs past the header page"));
        };
        Ok(Header {
            nbytes,
            plan,
            token: field(page, AT_TOKEN),
        })
    }

    /// Removes the name `name`, whichever segment it names now; mappings
    /// (this process's and others') stay valid. To remove the name only while
    /// it still names a segment you have mapped, use
    /// [`unlink_checked`](Self::unlink_checked).
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

    /// Removes this segment's name, if the name still names this segment:
    /// after it was unlinked and a new segment created under the same name
    /// (by anyone), [`Replaced`](SharedError::Replaced), and the new segment
    /// keeps its name. [`Missing`](SharedError::Missing) if nothing has the
    /// name. Mappings stay valid.
    ///
    /// The check (the file at the name against the one this maps, and the
    /// token in its header) and the removal are two steps: a segment made
    /// under the name between them would still lose it. POSIX has no way to
    /// remove a name only if it names a given file.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{SharedBuffer, SharedError};
    /// let name = format!("bytelens-doc-checked-{}", std::process::id());
    /// // SAFETY: no process shrinks this example's segments while they are mapped.
    /// let old = unsafe { SharedBuffer::create(&name, 8, None) }?;
    /// old.unlink_checked()?;
    /// // SAFETY: as above.
    /// let new = unsafe { SharedBuffer::create(&name, 8, None) }?;
    /// assert!(matches!(old.unlink_checked(), Err(SharedError::Replaced { .. })));
    /// new.unlink_checked()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unlink_checked(&self) -> Result<(), SharedError> {
        let Identity { dev, ino, token } = self.identity;
        if !is_at(&self.name, dev, ino, Some(token))? {
            return Err(SharedError::Replaced {
                name: self.name.clone(),
            });
        }
        SharedBuffer::unlink(&self.name)
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

    /// The stored plan's text ([`PlanSpec::to_text`]); empty if none, and
    /// U+FFFD (which no plan reads as) if the header was damaged since.
    pub fn plan_text(&self) -> &str {
        SharedBuffer::read_header(&self.name, self.mapping()).map_or("\u{fffd}", |h| h.plan_text())
    }

    /// The plan stored at creation, if any, read back and checked: it must
    /// build, and fit in the data.
    pub fn plan(&self) -> Result<Option<PlanSpec>, SharedError> {
        // Read again: the header is shared memory too.
        let header = SharedBuffer::read_header(&self.name, self.mapping())?;
        stored_plan(header.plan_text(), self.len)
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
                Some(t) => timed_lock(mutex, t),
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

/// Writes the header of a segment with `nbytes` bytes of data into the
/// zeroed `page`, but for the magic number and the lock: the version, the
/// data length, the token and the plan's text (which `create` checked fits).
fn write_header(page: &mut [u8], nbytes: usize, plan_text: &str, token: [u8; TOKEN_LEN]) {
    page[AT_VERSION..AT_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
    page[AT_NBYTES..AT_NBYTES + 8].copy_from_slice(&(nbytes as u64).to_le_bytes());
    page[AT_PLAN_LEN..AT_PLAN_LEN + 4].copy_from_slice(&(plan_text.len() as u32).to_le_bytes());
    page[AT_TOKEN..AT_TOKEN + TOKEN_LEN].copy_from_slice(&token);
    page[AT_PLAN..AT_PLAN + plan_text.len()].copy_from_slice(plan_text.as_bytes());
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

#[cfg(test)]
mod tests;
