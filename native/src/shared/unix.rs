//! Segments on Unix: POSIX shared memory (`shm_open`), mapped with mmap.
//! A name lives until [`unlink`]ed, whether or not a process has it open.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};

use memmap2::{MmapMut, MmapOptions};

use super::{AT_TOKEN, DATA_OFFSET, HEAD, SharedError, TOKEN_LEN};

/// A segment's mapping.
pub(super) type Mapping = MmapMut;

/// Longest name: macOS takes at most 31 bytes (`PSHMNAMLEN`), the leading
/// '/' included.
#[cfg(target_vendor = "apple")]
pub const MAX_NAME: usize = 30;
/// Longest name: NAME_MAX (255) less the leading '/'.
#[cfg(not(target_vendor = "apple"))]
pub const MAX_NAME: usize = 254;

/// The name rule, as [`SharedError::BadName`]'s message ends.
#[cfg(target_vendor = "apple")]
pub(super) const NAME_RULE: &str =
    "on macOS: 1 to 30 bytes (macOS's limit), without '/', NUL, or being '.' or '..'";
#[cfg(not(target_vendor = "apple"))]
pub(super) const NAME_RULE: &str =
    "on this OS: 1 to 254 bytes, without '/', NUL, or being '.' or '..'";

/// Where the system keeps segments' memory, as [`SharedError::NoRoom`] says.
#[cfg(target_os = "linux")]
pub(super) const SEGMENT_ROOT: &str = "/dev/shm";
#[cfg(not(target_os = "linux"))]
pub(super) const SEGMENT_ROOT: &str = "the system's shared memory";

/// What [`SharedError::Exists`]'s message adds: nothing, a name is only
/// ever taken until it is unlinked.
pub(super) const EXISTS_NOTE: &str = "";

/// Whether `name` is one this OS takes (length checked by the caller).
pub(super) fn name_is_usable(name: &str) -> bool {
    !name.contains(['/', '\0']) && name != "." && name != ".."
}

fn os(what: &'static str) -> impl FnOnce(std::io::Error) -> SharedError {
    move |err| SharedError::Os { what, err }
}

/// The file a mapping is of: device and inode, from `fstat` of the
/// descriptor it was mapped from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ident {
    dev: u64,
    ino: u64,
}

impl Ident {
    fn of(file: &File) -> Result<Ident, SharedError> {
        let meta = file.metadata().map_err(os("reading the segment's inode"))?;
        Ok(Ident {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// The checked name as `shm_open` takes it: `/name`.
fn shm_path(name: &str) -> Result<CString, SharedError> {
    CString::new(format!("/{}", super::checked(name)?)).map_err(|_| SharedError::BadName {
        name: name.to_owned(),
    })
}

/// `shm_open` of the (checked) name, with its errors as [`SharedError`]s.
fn open_segment(name: &str, flags: libc::c_int, mode: libc::mode_t) -> Result<File, SharedError> {
    let path = shm_path(name)?;
    // SAFETY: `path` is a NUL-terminated C string; shm_open has no other
    // preconditions. The returned descriptor is owned by `OwnedFd` below.
    // (Apple's C library declares shm_open variadic, where a `mode_t`, 16
    // bits there, is passed promoted to an unsigned int.)
    #[cfg(target_vendor = "apple")]
    let fd = unsafe { libc::shm_open(path.as_ptr(), flags, libc::c_uint::from(mode)) };
    // SAFETY: as above.
    #[cfg(not(target_vendor = "apple"))]
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

/// Creates the segment `name` (mode 0600), `size` zeroed bytes, mapped.
pub(super) fn create(name: &str, size: usize) -> Result<(Mapping, Ident), SharedError> {
    let file = open_segment(name, libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600)?;
    let made = Ident::of(&file).and_then(|ident| {
        file.set_len(size as u64)
            .map_err(os("sizing the segment"))?;
        reserve(&file, name, size)?;
        // SAFETY: the segment is ours and sized above, and the caller keeps any
        // process from shrinking it while mapped. Other processes may map it
        // too, which is the point: the data is shared bytes (like a file
        // another process writes), read and written through `as_bytes[_mut]`.
        let map =
            unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
        Ok((map, ident))
    });
    if made.is_err() {
        if let Ok(ident) = Ident::of(&file) {
            discard(name, ident);
        }
    }
    made
}

/// Allocates every page of the segment now (`posix_fallocate` on its
/// tmpfs), so that a /dev/shm without room for it is an error at `create`
/// instead of a SIGBUS at the first write past its free space. Systems
/// whose shared memory takes no such call are left as they are.
#[cfg(target_os = "linux")]
fn reserve(file: &File, name: &str, size: usize) -> Result<(), SharedError> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(size) else {
        return Err(SharedError::TooLarge { nbytes: size });
    };
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the descriptor is `file`'s, open for writing; the call only
    // allocates the file's blocks (returning an error number, not -1).
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        code => Err(SharedError::NoRoom {
            name: name.to_owned(),
            nbytes: size,
            free: free_bytes(file),
            err: std::io::Error::from_raw_os_error(code),
        }),
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_file: &File, _name: &str, _size: usize) -> Result<(), SharedError> {
    Ok(())
}

/// The bytes free to an unprivileged user on `file`'s file system.
#[cfg(target_os = "linux")]
fn free_bytes(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: fstatvfs fills the struct it is given for an open descriptor.
    let rc = unsafe { libc::fstatvfs(file.as_raw_fd(), stats.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: fstatvfs returned 0, so it filled the struct.
    let stats = unsafe { stats.assume_init() };
    // fsblkcnt_t and the block size are 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    Some(u64::from(stats.f_bavail).saturating_mul(u64::from(stats.f_frsize)))
}

/// Best effort after a failed `create`: removes the half-made segment's
/// name, unless someone else put another segment under it meanwhile.
pub(super) fn discard(name: &str, ident: Ident) {
    if names(name, ident, None).unwrap_or(false) {
        let _ = unlink(name);
    }
}

/// Maps the segment `name`, checking it can hold a header page.
pub(super) fn attach(name: &str) -> Result<(Mapping, Ident), SharedError> {
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
    let map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(os("mapping the segment"))?;
    Ok((map, Ident::of(&file)?))
}

/// Removes the name `name`, giving the first [`HEAD`] bytes of the header
/// of the segment it named (zeros where they could not be read).
pub(super) fn unlink(name: &str) -> Result<[u8; HEAD], SharedError> {
    let mut head = [0; HEAD];
    if let Ok(file) = open_segment(name, libc::O_RDONLY, 0) {
        let _ = file.read_exact_at(&mut head, 0);
    }
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
    Ok(head)
}

/// Whether `name` names the file `ident` and, if `token` is given, with
/// that token in its header. `Missing` if nothing has the name.
pub(super) fn names(
    name: &str,
    ident: Ident,
    token: Option<[u8; TOKEN_LEN]>,
) -> Result<bool, SharedError> {
    let file = open_segment(name, libc::O_RDONLY, 0)?;
    if Ident::of(&file)? != ident {
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
