//! Memory-mapped files: a file's bytes in memory, read-only, written
//! through to the file, or copy-on-write.
//!
//! Not shared memory (no header, no lock, no name). The two share only the
//! hazard of every file mapping, that another process may shrink the file
//! under it, and so [`MappedFile::open`] is `unsafe` for the same reason as
//! [`SharedBuffer::create`](crate::SharedBuffer::create) and
//! [`SharedBuffer::attach`](crate::SharedBuffer::attach).

use std::fs::{File, FileType, OpenOptions};
use std::io::{ErrorKind, Read};
use std::path::Path;

use memmap2::{MmapMut, MmapOptions};

use crate::SharedError;

/// How to map a file: read-only, read-write (shared with the file), or
/// copy-on-write (private changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMode {
    /// `"r"`: read-only.
    Read,
    /// `"r+"`: writes go to the file.
    ReadWrite,
    /// `"c"`: writes stay private to this mapping.
    Copy,
}

/// A memory-mapped file.
pub enum MappedFile {
    /// Read-only.
    Read(memmap2::Mmap),
    /// Writable (`ReadWrite` or `Copy`).
    Write(MmapMut),
}

impl MappedFile {
    /// Maps `path` whole. Only regular files can be mapped: a directory is
    /// an `IsADirectory` error, and a FIFO, socket or device is refused
    /// without waiting (on Unix the file is opened non-blocking). An empty
    /// file maps to no bytes, on every system.
    ///
    /// # Safety
    /// No process may shrink the file while it is mapped: on Unix, touching
    /// a page past the new end raises SIGBUS (as with any mapping,
    /// numpy.memmap's too). Windows refuses to shrink a file while any
    /// view of it is mapped, so there the condition holds by itself.
    /// Writes by other processes are fine: the bytes are only ever read and
    /// written as plain bytes.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{MapMode, MappedFile};
    /// let path = std::env::temp_dir().join(format!("bytelens-doc-{}", std::process::id()));
    /// std::fs::write(&path, [1u8, 2, 3])?;
    /// // SAFETY: the file is this example's own, and nothing shrinks it while mapped.
    /// let file = unsafe { MappedFile::open(&path, MapMode::Read) }?;
    /// assert_eq!(file.as_bytes(), [1, 2, 3]);
    /// drop(file);
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn open(path: &Path, mode: MapMode) -> Result<MappedFile, SharedError> {
        let file = open_regular(path, mode)?;
        // SAFETY: `file` is a regular file opened for reading (and for
        // writing under `ReadWrite`, which `map_mut` needs). The mapping
        // stays valid as long as the file does not shrink: on Unix the
        // caller promises that; on Windows the system refuses to truncate a
        // file below any mapped view of it (SetEndOfFile fails while a
        // mapping exists), so no process can. An empty file maps to no
        // bytes on both: memmap2 makes a one-byte mapping on Unix (mmap
        // takes no length 0) and none on Windows (which maps no empty
        // file), and exposes zero bytes of either.
        unsafe { map(&file, mode) }.map_err(with_path(path, "mapping the file"))
    }

    /// Like [`open`](MappedFile::open), but safe: the file's bytes are read
    /// into memory of this process's own (an anonymous mapping, page-aligned
    /// as a file's is), so that no other process can take them away. What
    /// it costs: the file's size in memory, and the time to read it. `Read`
    /// gives read-only bytes, `Copy` writable ones that stay private;
    /// `ReadWrite` is refused (a copy cannot write through to the file).
    ///
    /// # Examples
    /// ```
    /// use bytelens::{MapMode, MappedFile};
    /// let path = std::env::temp_dir().join(format!("bytelens-doc-read-{}", std::process::id()));
    /// std::fs::write(&path, [1u8, 2, 3])?;
    /// let file = MappedFile::read(&path, MapMode::Read)?;
    /// std::fs::write(&path, [])?; // the file shrinks: the copy is untouched
    /// assert_eq!(file.as_bytes(), [1, 2, 3]);
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(path: &Path, mode: MapMode) -> Result<MappedFile, SharedError> {
        if mode == MapMode::ReadWrite {
            return Err(SharedError::Os {
                what: "reading the file",
                err: std::io::Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "{}: a file read into memory cannot write through to it (mode \"r+\"): \
                         map it instead, or read it with mode \"r\" or \"c\"",
                        path.display()
                    ),
                ),
            });
        }
        let mut file = open_regular(path, mode)?;
        let len = file
            .metadata()
            .map_err(with_path(path, "reading the file's size"))?
            .len();
        let len = usize::try_from(len).map_err(|_| {
            with_path(path, "reading the file")(std::io::Error::new(
                ErrorKind::OutOfMemory,
                format!("{len} bytes do not fit this process's address space"),
            ))
        })?;
        // memmap2 maps one page for a length of 0 and shows none of it, as
        // for an empty file.
        let mut memory = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(with_path(path, "allocating memory for the file"))?;
        file.read_exact(&mut memory).map_err(|err| {
            let err = if err.kind() == ErrorKind::UnexpectedEof {
                std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!("the file shrank below its {len} bytes while it was read"),
                )
            } else {
                err
            };
            with_path(path, "reading the file")(err)
        })?;
        Ok(match mode {
            MapMode::Read => MappedFile::Read(
                memory
                    .make_read_only()
                    .map_err(with_path(path, "protecting the file's copy"))?,
            ),
            _ => MappedFile::Write(memory),
        })
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            MappedFile::Read(m) => m,
            MappedFile::Write(m) => m,
        }
    }

    /// The bytes, writable: `None` for a read-only mapping.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{MapMode, MappedFile};
    /// let path = std::env::temp_dir().join(format!("bytelens-doc-mut-{}", std::process::id()));
    /// std::fs::write(&path, [1u8, 2, 3])?;
    /// // SAFETY: the file is this example's own, and nothing shrinks it while mapped.
    /// let mut file = unsafe { MappedFile::open(&path, MapMode::Copy) }?;
    /// file.as_bytes_mut().unwrap()[0] = 9;
    /// assert_eq!((file.as_bytes(), std::fs::read(&path)?), (&[9u8, 2, 3][..], vec![1, 2, 3]));
    /// drop(file);
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            MappedFile::Read(_) => None,
            MappedFile::Write(m) => Some(m),
        }
    }

    /// The bytes' address; writable only for `Write` maps.
    pub fn as_ptr(&mut self) -> *mut u8 {
        match self {
            MappedFile::Read(m) => m.as_ptr().cast_mut(),
            MappedFile::Write(m) => m.as_mut_ptr(),
        }
    }
}

/// `path` opened as `mode` says, after checking it is a regular file.
fn open_regular(path: &Path, mode: MapMode) -> Result<File, SharedError> {
    // A directory is refused before the open, from the path's metadata
    // (a failure to read it is left to the open): Windows opens no
    // directory without a flag std does not pass, and would say only
    // "access denied"; Unix opens none for writing (EISDIR), which would
    // make "r+" say it otherwise than "r". One message on both.
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(not_regular(path, ErrorKind::IsADirectory, "a directory"));
    }
    let file = open_options(mode)
        .open(path)
        .map_err(with_path(path, "opening the file"))?;
    // A pipe or a device on Windows: std's metadata would call it a file.
    #[cfg(windows)]
    if let Some(what) = windows_device(&file) {
        return Err(not_regular(path, ErrorKind::InvalidInput, what));
    }
    // The opened file's own type: the path may name another file by now.
    let kind = file
        .metadata()
        .map_err(with_path(path, "reading the file's type"))?
        .file_type();
    if !kind.is_file() {
        let (err_kind, what) = not_regular_kind(kind);
        return Err(not_regular(path, err_kind, what));
    }
    Ok(file)
}

/// An I/O error of `what` at `path`, with the path in its message.
fn with_path<'p>(
    path: &'p Path,
    what: &'static str,
) -> impl Fn(std::io::Error) -> SharedError + 'p {
    move |err: std::io::Error| SharedError::Os {
        what,
        err: std::io::Error::new(err.kind(), format!("{}: {err}", path.display())),
    }
}

/// Maps `file` whole as `mode` says.
///
/// # Safety
/// As for [`MmapOptions::map`]: the file must not shrink while mapped.
unsafe fn map(file: &File, mode: MapMode) -> std::io::Result<MappedFile> {
    let options = MmapOptions::new();
    // SAFETY: passed on to the caller.
    unsafe {
        Ok(match mode {
            MapMode::Read => MappedFile::Read(options.map(file)?),
            MapMode::ReadWrite => MappedFile::Write(options.map_mut(file)?),
            MapMode::Copy => MappedFile::Write(options.map_copy(file)?),
        })
    }
}

/// How `path` is opened: for reading, and for writing under `ReadWrite`.
fn open_options(mode: MapMode) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).write(mode == MapMode::ReadWrite);
    // Non-blocking on Unix, so that a FIFO with no writer (or a device that
    // waits) is refused after the open instead of blocking it forever; the
    // flag changes nothing for a regular file, and nothing for mapping.
    // Windows has no non-blocking open, and needs none: opening a named
    // pipe or a device does not wait for data, and no byte is read from
    // what is not a regular file (the check after the open refuses a
    // directory; the mapping itself fails on any handle that is not a
    // file's). std opens with every share mode, so other programs may
    // still open, write and rename the file while it is mapped.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options
}

/// The error kind and the name of a file type that is not a regular file.
#[cfg(unix)]
fn not_regular_kind(kind: FileType) -> (ErrorKind, &'static str) {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        (ErrorKind::IsADirectory, "a directory")
    } else if kind.is_fifo() {
        (ErrorKind::InvalidInput, "a FIFO (named pipe)")
    } else if kind.is_socket() {
        (ErrorKind::InvalidInput, "a socket")
    } else if kind.is_char_device() {
        (ErrorKind::InvalidInput, "a character device")
    } else {
        (ErrorKind::InvalidInput, "a block device")
    }
}

/// The error kind and the name of a file type that is not a regular file.
#[cfg(not(unix))]
fn not_regular_kind(kind: FileType) -> (ErrorKind, &'static str) {
    // std tells Windows' files only from directories (and symlinks, which
    // `metadata` of an opened file has already followed).
    if kind.is_dir() {
        (ErrorKind::IsADirectory, "a directory")
    } else {
        (ErrorKind::InvalidInput, "not a regular file")
    }
}

/// What the handle of `file` is, where it is not a file on a disk: Windows
/// tells pipes and character devices (`NUL`, `CON`, a serial port) apart
/// only by `GetFileType`, and std reports them as files (of length 0,
/// which memmap2 would map as no bytes instead of refusing).
#[cfg(windows)]
fn windows_device(file: &File) -> Option<&'static str> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{FILE_TYPE_CHAR, FILE_TYPE_PIPE, GetFileType};
    // SAFETY: GetFileType only reads the handle's type; the handle is
    // `file`'s, open for as long as `file` is borrowed here.
    match unsafe { GetFileType(file.as_raw_handle()) } {
        FILE_TYPE_CHAR => Some("a character device"),
        FILE_TYPE_PIPE => Some("a pipe or socket"),
        // FILE_TYPE_DISK, and FILE_TYPE_UNKNOWN (0, also its error value):
        // left to std's metadata and the mapping, which refuse what is
        // not a file.
        _ => None,
    }
}

/// "`path` is `what`: only regular files can be mapped", as an error of `kind`.
fn not_regular(path: &Path, kind: ErrorKind, what: &str) -> SharedError {
    SharedError::Os {
        what: "mapping the file",
        err: std::io::Error::new(
            kind,
            format!(
                "{} is {what}: only regular files can be mapped",
                path.display()
            ),
        ),
    }
}

/// Asks the system to bring `bytes`' pages into memory now (on Linux
/// `MADV_POPULATE_READ`, which faults them in before returning, falling
/// back to `MADV_WILLNEED` where the kernel predates it; `WILLNEED`
/// elsewhere on Unix), so that a reader that follows finds them mapped.
/// Advice only: the bytes are not changed, and a failure (memory that is
/// no file's mapping, say) changes nothing. Windows: nothing yet.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(unix)]
    {
        if bytes.is_empty() {
            return;
        }
        // SAFETY: sysconf only reads a system value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let start = bytes.as_ptr() as usize;
        let first = start / page * page;
        let len = start + bytes.len() - first;
        let advise = |advice| {
            // SAFETY: `first..first + len` is the whole pages that `bytes`
            // touches, each mapped in this process while `bytes` is
            // borrowed (a page holding one of its bytes is mapped whole).
            // Both advices only read pages in: they change no byte and no
            // mapping, so no reference into the range is affected.
            unsafe { libc::madvise(first as *mut libc::c_void, len, advice) }
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if advise(libc::MADV_POPULATE_READ) == 0 {
            return;
        }
        advise(libc::MADV_WILLNEED);
    }
    #[cfg(not(unix))]
    let _ = bytes;
}
