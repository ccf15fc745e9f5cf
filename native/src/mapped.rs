//! Memory-mapped files: a file's bytes in memory, read-only, written
//! through to the file, or copy-on-write.
//!
//! Not shared memory (no header, no lock, no name). The two share only the
//! hazard of every file mapping, that another process may shrink the file
//! under it, and so [`MappedFile::open`] is `unsafe` for the same reason as
//! [`SharedBuffer::create`](crate::SharedBuffer::create) and
//! [`SharedBuffer::attach`](crate::SharedBuffer::attach).

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
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
    /// without waiting (the file is opened non-blocking).
    ///
    /// # Safety
    /// No process may shrink the file while it is mapped: touching a page
    /// past the new end raises SIGBUS (as with any mapping, numpy.memmap's
    /// too). Writes by other processes are fine: the bytes are only ever
    /// read and written as plain bytes.
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
        let with_path = |what| {
            move |err: std::io::Error| SharedError::Os {
                what,
                err: std::io::Error::new(err.kind(), format!("{}: {err}", path.display())),
            }
        };
        // Non-blocking, so that a FIFO with no writer (or a device that
        // waits) is refused below instead of blocking `open` forever; the
        // flag changes nothing for a regular file, and nothing for mapping.
        let file = OpenOptions::new()
            .read(true)
            .write(mode == MapMode::ReadWrite)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(with_path("opening the file"))?;
        let kind = file
            .metadata()
            .map_err(with_path("reading the file's type"))?
            .file_type();
        if !kind.is_file() {
            let (err_kind, what) = if kind.is_dir() {
                (ErrorKind::IsADirectory, "a directory")
            } else if kind.is_fifo() {
                (ErrorKind::InvalidInput, "a FIFO (named pipe)")
            } else if kind.is_socket() {
                (ErrorKind::InvalidInput, "a socket")
            } else if kind.is_char_device() {
                (ErrorKind::InvalidInput, "a character device")
            } else {
                (ErrorKind::InvalidInput, "a block device")
            };
            return Err(SharedError::Os {
                what: "mapping the file",
                err: std::io::Error::new(
                    err_kind,
                    format!(
                        "{} is {what}: only regular files can be mapped",
                        path.display()
                    ),
                ),
            });
        }
        // SAFETY: the caller keeps the file from shrinking while mapped.
        unsafe {
            Ok(match mode {
                MapMode::Read => MappedFile::Read(
                    MmapOptions::new()
                        .map(&file)
                        .map_err(with_path("mapping the file"))?,
                ),
                MapMode::ReadWrite => MappedFile::Write(
                    MmapOptions::new()
                        .map_mut(&file)
                        .map_err(with_path("mapping the file"))?,
                ),
                MapMode::Copy => MappedFile::Write(
                    MmapOptions::new()
                        .map_copy(&file)
                        .map_err(with_path("mapping the file"))?,
                ),
            })
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            MappedFile::Read(m) => m,
            MappedFile::Write(m) => m,
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
