//! Named shared memory that other processes attach to by name, with a
//! process-shared lock that survives its holder's death, on Linux, macOS
//! and Windows. (Mapped files share the mapping's hazard but nothing else,
//! and live in `mapped.rs`.)
//!
//! A segment starts with a one-page header: a magic number and version, the
//! data length, a token that tells this segment from a later one of the same
//! name, the kind of lock it has and the lock's state (a robust
//! process-shared `pthread_mutex_t` on Linux, the holder of a file lock or
//! named mutex elsewhere: `lock.rs`), and optionally a [`Plan`] written as
//! text, so an attaching process gets the same named views. The data follows
//! at [`DATA_OFFSET`] (page-aligned, so every dtype is aligned).
//! [`SharedBuffer::read_header`] reads a header from bytes alone, whatever
//! they hold. The OS's part, naming, making, mapping and unlinking a
//! segment, is in `unix.rs` (`shm_open`) and `windows.rs` (named file
//! mappings).

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::{Plan, PlanSpec};

mod error;
#[cfg(unix)]
mod flock;
mod lock;
#[cfg(windows)]
mod named;
#[cfg(target_os = "linux")]
mod robust;
#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod sys;
#[cfg(windows)]
use sys as windows;

pub use error::SharedError;
pub use lock::LockKind;
use lock::{Holder, Lock, this_thread};
pub use sys::MAX_NAME;
use sys::Mapping;

/// What a segment whose header is all zeros is: also what a segment still
/// being created looks like, between its sizing and its header's writing.
const NO_HEADER_YET: &str = "no bytelens header (yet: one still being created looks the same)";
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
/// The lock's kind ([`LockKind::code`]; 0, the robust mutex, in headers
/// from before kinds).
const AT_LOCK_KIND: usize = 48;
/// Flags: [`UNLINKED`], [`LOCK_FILE_OWN`].
const AT_FLAGS: usize = 52;
/// Set (on Windows, where a name cannot be removed) once the segment is
/// unlinked: attaching then finds it missing.
const UNLINKED: u32 = 1;
/// Set when the segment's lock file is in the user's own folder, not the
/// shared one, which another user had made (`flock.rs`). A bytelens from
/// before it looks in the shared folder and refuses it as another user's.
#[cfg(unix)]
const LOCK_FILE_OWN: u32 = 2;
/// The holder word of the file lock and the named mutex ([`Holder`]).
const AT_HOLDER: usize = 56;
/// The header's fixed fields, all before the lock.
const HEAD: usize = 64;
/// The robust mutex, cache-line aligned.
#[cfg(target_os = "linux")]
const AT_LOCK: usize = 64;
/// The plan's text, up to the end of the header page.
const AT_PLAN: usize = 256;

/// `name`, if this OS takes it as a segment name.
fn checked(name: &str) -> Result<&str, SharedError> {
    if name.is_empty() || name.len() > MAX_NAME || !sys::name_is_usable(name) {
        return Err(SharedError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(name)
}

/// A named shared-memory segment, mapped read-write.
///
/// On Linux and macOS, another process of the same user could shrink the
/// segment (it is a file under /dev/shm on Linux, mode 0600); touching the
/// data then raises SIGBUS, as with any shared mapping,
/// [`MappedFile`](crate::MappedFile)s included (Windows cannot shrink a
/// mapped section). So
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
    map: Option<Mapping>,
    len: usize,
    /// Which segment this maps, for [`unlink_checked`](Self::unlink_checked).
    identity: Identity,
    /// The thread ([`this_thread`]) holding the lock through this mapping, or
    /// 0. Written only by the holder, while it holds the lock (so plain
    /// relaxed loads and stores suffice: the lock orders them), and read by
    /// `Drop`, which has the object to itself.
    holder: AtomicU64,
    /// The lock, as this process has it open. Declared after `map`, so the
    /// mapping goes first when dropped.
    lock: Lock,
}

/// Which segment a mapping is of: its file (on Unix: device and inode, from
/// `fstat` of the descriptor it was mapped from) and the token in its
/// header. A name unlinked and given to a new segment names another file;
/// the token also tells apart a new file that happens to get a freed inode
/// number, and is all Windows has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    file: sys::Ident,
    token: [u8; TOKEN_LEN],
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

/// The `N` bytes at `at` in the header page (`at + N` is within it: the
/// header's offsets are constants).
fn field<const N: usize>(page: &[u8; DATA_OFFSET], at: usize) -> [u8; N] {
    field_of(page, at)
}

/// The `N` bytes at `at` of `bytes`, zeros where it is shorter.
fn field_of<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    if let Some(bytes) = bytes.get(at..at + N) {
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
    /// The segment's lock.
    pub lock: LockKind,
    /// Whether it was unlinked (Windows only: see [`SharedBuffer::unlink`]).
    pub unlinked: bool,
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

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if self.holder.load(Ordering::Relaxed) == 0 {
            return;
        }
        if !self.lock.lives_in_header() {
            self.lock.abandon(self.holder_word());
        } else {
            // A held robust mutex is linked into its thread's robust list, which
            // glibc and the kernel walk through the mutex's own memory (on the next
            // lock, and when the process dies). Unmapping it now would make those
            // walks fault, or silently skip it so no one ever learns its holder
            // died. So a mapping whose robust mutex is still held stays mapped.
            // (The other kinds' OS locks live outside the mapping: `abandon`
            // above released them, marking the holder word for the next taker.)
            std::mem::forget(self.map.take());
        }
    }
}

impl SharedBuffer {
    /// Creates the segment `name` (mode 0600 on Unix) with `nbytes` zeroed
    /// bytes of data and, optionally, a plan that attaching processes read
    /// back, with this OS's lock ([`LockKind::native`]).
    ///
    /// Fails with [`PlanDoesNotFit`](SharedError::PlanDoesNotFit), creating
    /// nothing, when the plan's arrays need more than `nbytes`.
    ///
    /// # Safety
    /// No process may shrink the segment while this mapping of it exists:
    /// touching a page past the new end raises SIGBUS. Any process of the
    /// same user can open the segment by name and `ftruncate` it (on Unix;
    /// Windows cannot); bytelens never does. Writes by other processes are
    /// fine: the data is only ever read and written as plain bytes.
    pub unsafe fn create(
        name: &str,
        nbytes: usize,
        plan: Option<&Plan<'_>>,
    ) -> Result<SharedBuffer, SharedError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { SharedBuffer::create_with(name, nbytes, plan, LockKind::native()) }
    }

    /// [`create`](Self::create) with a lock of the given kind (one this OS
    /// has: [`LockKind::is_available`]); attaching processes use the same.
    ///
    /// # Safety
    /// As for [`create`](Self::create).
    ///
    /// # Examples
    /// ```
    /// # #[cfg(unix)] {
    /// use bytelens::{LockKind, SharedBuffer};
    /// let name = format!("bl-doc-file-{}", std::process::id());
    /// // SAFETY: no process shrinks this example's segment while it is mapped.
    /// let sh = unsafe { SharedBuffer::create_with(&name, 8, None, LockKind::FileLock) }?;
    /// // SAFETY: as above.
    /// let other = unsafe { SharedBuffer::attach(&name) }?;
    /// assert_eq!(other.lock_kind(), LockKind::FileLock);
    /// assert!(!other.lock(None)?.owner_died());
    /// SharedBuffer::unlink(&name)?;
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn create_with(
        name: &str,
        nbytes: usize,
        plan: Option<&Plan<'_>>,
        lock: LockKind,
    ) -> Result<SharedBuffer, SharedError> {
        checked(name)?; // a bad name first, whatever else is wrong
        if !lock.is_available() {
            return Err(SharedError::LockUnavailable { kind: lock });
        }
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
        // The caller keeps any process from shrinking the segment while
        // mapped. Other processes may map it too, which is the point: the
        // data is shared bytes (like a file another process writes), read and
        // written through `as_bytes[_mut]`.
        let (mut map, file) = sys::create(name, size)?;
        let identity = Identity {
            file,
            token: new_token(),
        };
        write_header(&mut map, nbytes, &plan_text, identity.token, lock);
        match Lock::create(lock, &mut map[..DATA_OFFSET], identity.token) {
            Ok(lock) => {
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
                    lock,
                })
            }
            Err(err) => {
                // Best effort: do not leave a half-made segment behind, but do not
                // remove one that someone else put under the name meanwhile either.
                drop(map);
                sys::discard(name, file);
                Err(err)
            }
        }
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
        // As in `create`: shared bytes, accessed as bytes, in a segment the
        // caller keeps from shrinking (`sys::attach` checks it holds a page).
        let (map, file) = sys::attach(name)?;
        // The mapping's length is the size it was made with, which `read_header`
        // checks the header against.
        let header = SharedBuffer::read_header(name, &map)?;
        if header.unlinked {
            return Err(SharedError::Missing {
                name: name.to_owned(),
            });
        }
        let identity = Identity {
            file,
            token: header.token,
        };
        // Where a file lock's file is.
        let flags = u32::from_le_bytes(field_of(&map, AT_FLAGS));
        let (len, lock) = (
            header.nbytes,
            Lock::attach(header.lock, header.token, flags)?,
        );
        Ok(SharedBuffer {
            name: name.to_owned(),
            map: Some(map),
            len,
            identity,
            holder: AtomicU64::new(0),
            lock,
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
                NO_HEADER_YET
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
        let Some(lock) = LockKind::from_code(u32::from_le_bytes(field(page, AT_LOCK_KIND))) else {
            return Err(wrong("a lock kind this bytelens does not know"));
        };
        Ok(Header {
            nbytes,
            plan,
            token: field(page, AT_TOKEN),
            lock,
            unlinked: u32::from_le_bytes(field(page, AT_FLAGS)) & UNLINKED != 0,
        })
    }

    /// Removes the name `name`, whichever segment it names now; mappings
    /// (this process's and others') stay valid. To remove the name only while
    /// it still names a segment you have mapped, use
    /// [`unlink_checked`](Self::unlink_checked).
    ///
    /// On Windows a name cannot be removed: it lives while any process has
    /// the segment open, and goes with the last close, unlinked or not. There
    /// `unlink` marks the segment unlinked, so that [`attach`](Self::attach)
    /// finds it missing, as on Unix; `create` of the name fails
    /// ([`Exists`](SharedError::Exists)) until every process has closed it.
    pub fn unlink(name: &str) -> Result<(), SharedError> {
        let head = sys::unlink(name)?;
        if head[..8] == MAGIC {
            // What the lock keeps outside the segment (a lock file) goes too.
            let kind = LockKind::from_code(u32::from_le_bytes(field_of(&head, AT_LOCK_KIND)));
            let flags = u32::from_le_bytes(field_of(&head, AT_FLAGS));
            lock::forget(kind, field_of(&head, AT_TOKEN), flags);
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
        let Identity { file, token } = self.identity;
        if !sys::names(&self.name, file, Some(token))? {
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

    /// The segment's lock's kind, as it was created with.
    pub fn lock_kind(&self) -> LockKind {
        self.lock.kind()
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
        let owner_died = self.lock.lock(self.header(), self.holder_word(), timeout)?;
        self.holder.store(this_thread(), Ordering::Relaxed);
        Ok(owner_died)
    }

    /// Releases the lock taken by [`lock_raw`](SharedBuffer::lock_raw);
    /// [`NotHeld`](SharedError::NotHeld) if this thread does not hold it
    /// through this mapping (nothing else happens then).
    pub fn unlock_raw(&self) -> Result<(), SharedError> {
        if self.holder.load(Ordering::Relaxed) != this_thread() {
            return Err(SharedError::NotHeld);
        }
        self.holder.store(0, Ordering::Relaxed);
        self.lock.unlock(self.header(), self.holder_word())
    }

    /// The header page, where the robust mutex lives (the lock itself
    /// synchronises what is done through the pointer).
    fn header(&self) -> *mut u8 {
        self.mapping().as_ptr().cast_mut()
    }

    fn holder_word(&self) -> Holder<'_> {
        let word = self.mapping()[AT_HOLDER..AT_HOLDER + 8].as_ptr();
        // SAFETY: the word lies in the header page of a page-aligned mapping,
        // 8-byte aligned (AT_HOLDER is), and is only ever accessed atomically
        // (by every process: it is shared); the reference lives no longer
        // than `self`, which keeps the mapping.
        Holder(unsafe { &*word.cast::<AtomicU64>() })
    }

    fn mapping(&self) -> &Mapping {
        self.map.as_ref().expect("mapped until dropped")
    }

    fn mapping_mut(&mut self) -> &mut Mapping {
        self.map.as_mut().expect("mapped until dropped")
    }
}

/// Writes the header of a segment with `nbytes` bytes of data into the
/// zeroed `page`, but for the magic number and the lock's state: the
/// version, the data length, the token, the lock's kind and the plan's text
/// (which `create` checked fits).
fn write_header(
    page: &mut [u8],
    nbytes: usize,
    plan_text: &str,
    token: [u8; TOKEN_LEN],
    lock: LockKind,
) {
    page[AT_LOCK_KIND..AT_LOCK_KIND + 4].copy_from_slice(&lock.code().to_le_bytes());
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
