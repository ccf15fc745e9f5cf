//! Opening a file to read (a regular file only, refused before a byte is
//! read otherwise), reading its header through the core from as few bytes
//! as it needs ([`header`]), and telling what it holds ([`describe`]).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::error::{Error, reason};
use super::npz::{self, Member};
use super::report::{ArrayInfo, MetaValue, Report};
use super::{FileHeader, Format, read_header};

/// Bytes read first; a longer header is read again at the length it gives.
pub const HEAD: u64 = 1 << 16;

/// What a file that is not a regular file is called in errors.
fn not_regular_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// `"{path}: not a regular file ({what})"`: an `IsADirectoryError` for a
/// folder, an `OSError` otherwise.
pub(crate) fn not_regular(path: &str, kind: std::fs::FileType) -> Error {
    let what = not_regular_kind(kind);
    let err_kind = if kind.is_dir() {
        io::ErrorKind::IsADirectory
    } else {
        io::ErrorKind::InvalidInput
    };
    Error::io(err_kind, format!("{path}: not a regular file ({what})"))
}

/// `path` opened for reading, and its metadata; anything but a regular
/// file (through symlinks too) is refused before a byte is read. `what`
/// goes before the path in messages (`"index "`).
pub(crate) fn open(path: &Path, what: &str) -> Result<(File, std::fs::Metadata), Error> {
    let shown = path.display();
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO with no writer would block the open forever.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|err| Error::io(err.kind(), format!("{what}{shown}: {}", reason(&err))))?;
    let info = file
        .metadata()
        .map_err(|err| Error::io(err.kind(), format!("{what}{shown}: {}", reason(&err))))?;
    if !info.is_file() {
        return Err(not_regular(&format!("{what}{shown}"), info.file_type()));
    }
    Ok((file, info))
}

/// Up to `n` bytes of `f` from its current position, fewer where it ends.
pub(crate) fn read_up_to(f: &mut impl Read, n: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    f.take(n).read_to_end(&mut out)?;
    Ok(out)
}

/// Appends up to `n` more bytes of `f` to `out`, fewer where it ends; the
/// room for them asked for first, so that memory that cannot be had is a
/// `MemoryError` naming `shown` (the file) and the allocation, not std's
/// bare "out of memory" from inside `read_to_end`.
pub(crate) fn read_more(
    f: &mut impl Read,
    n: u64,
    out: &mut Vec<u8>,
    shown: &str,
) -> Result<(), Error> {
    let wanted = usize::try_from(n).unwrap_or(usize::MAX);
    out.try_reserve_exact(wanted)
        .map_err(|_| out_of_memory(shown, out.len().saturating_add(wanted)))?;
    match f.take(n).read_to_end(out) {
        Err(err) if err.kind() == io::ErrorKind::OutOfMemory => {
            Err(out_of_memory(shown, out.len().saturating_add(wanted)))
        }
        other => other.map(|_| ()).map_err(Error::from),
    }
}

/// Reading `shown`'s header needed `bytes` bytes that could not be had:
/// kind `OutOfMemory`, Python's `MemoryError`.
pub(crate) fn out_of_memory(shown: &str, bytes: usize) -> Error {
    Error::io(
        io::ErrorKind::OutOfMemory,
        format!(
            "{shown}: reading the header ran out of memory (an allocation of {bytes} bytes failed)"
        ),
    )
}

/// The header at the start of `f` (a file or member of `length` bytes, at
/// byte `base` of the file), read by the core from as few bytes as it
/// needs; `what` follows the path in messages (`", member 'a.npy'"`).
/// A read that ends early is a `FormatError` naming the byte it ended at.
pub(crate) fn header(
    f: &mut (impl Read + Seek),
    path: &str,
    length: u64,
    what: &str,
) -> Result<FileHeader, Error> {
    let mut want = HEAD.min(length);
    f.seek(SeekFrom::Start(0))?;
    let mut head = Vec::new();
    loop {
        // Each pass reads only what the last did not: the bytes already
        // read stay (a file that shrinks ends the read early, below).
        let have = head.len() as u64;
        read_more(
            f,
            want.saturating_sub(have),
            &mut head,
            &format!("{path}{what}"),
        )?;
        let (header, need) = match read_header(&head, length) {
            Ok(header) => (Some(header), None),
            Err(err) => match err.more_needed(head.len()) {
                Some(need) => (None, Some(need)),
                None => {
                    return Err(Error::Format {
                        message: format!("{path}{what}: {err}"),
                        header: Some(err),
                    });
                }
            },
        };
        if (head.len() as u64) < want {
            let ends = format!("{path}{what}: ends at byte {}", head.len());
            return Err(Error::format(match need {
                Some(need) => {
                    format!("{ends}, inside the header; the header needs {need} bytes")
                }
                None => format!("{ends}, though its size says {length} bytes"),
            }));
        }
        match (header, need) {
            (Some(header), _) => return Ok(header),
            (None, Some(need)) if need <= want => {
                return Err(Error::format(format!(
                    "{path}{what}: the header needs {need} bytes and {want} did not hold it"
                )));
            }
            (None, need) => want = need.unwrap_or(want),
        }
    }
}

/// The header's metadata, owned: safetensors' strings, or GGUF's values
/// (read from `head`, the bytes the header was read from).
pub(crate) fn metadata(header: &FileHeader, head: &[u8]) -> Vec<(String, MetaValue)> {
    if header.gguf.is_empty() {
        return header
            .metadata
            .iter()
            .map(|(k, v)| (k.to_owned(), MetaValue::Str(v.to_owned())))
            .collect();
    }
    header
        .gguf
        .iter()
        .filter_map(|e| Some((e.key.to_owned(), MetaValue::from_gguf(&e.value(head)?))))
        .collect()
}

/// About what a header's report and the load of its arrays take in memory
/// beyond the header itself, in bytes: each array's [`ArrayInfo`] and
/// strings, and [`load`](super::load)'s entries and names; each metadata
/// value owned (GGUF's from `head`, the header's bytes, of `head_len`).
fn footprint(header: &FileHeader, head_len: usize) -> usize {
    /// What a small allocation costs beyond its bytes (malloc's header and
    /// rounding).
    const ALLOC: usize = 32;
    /// An array's [`Loaded`](super::Loaded) entry and its name's place in
    /// the map of names (a generous bound).
    const ENTRY: usize = 160;
    let arrays: usize = header
        .arrays
        .iter()
        .map(|a| {
            size_of::<ArrayInfo>()
                + ENTRY
                + 2 * (a.name.len() + ALLOC)
                + a.dtype.len()
                + 2 * (16 * a.shape.len() + ALLOC)
                + 4 * ALLOC
        })
        .sum();
    let metadata: usize = header
        .metadata
        .iter()
        .map(|(k, v)| size_of::<(String, MetaValue)>() + k.len() + v.len() + 2 * ALLOC)
        .sum();
    let gguf: usize = header
        .gguf
        .iter()
        .map(|e| {
            let strings = if e.array { e.count as usize } else { 0 };
            size_of::<(String, MetaValue)>()
                + e.key.len()
                + 2 * ALLOC
                + strings * (size_of::<String>() + ALLOC)
        })
        .sum();
    arrays + metadata + gguf + head_len
}

/// Room for `bytes` more now, or a `MemoryError` ([`out_of_memory`]):
/// what follows a header's read (its
/// report, a load's entries) is made of many small allocations, each of
/// which would abort the process on failure, so their total is asked for
/// once, fallibly, first (and given back).
pub(crate) fn room_for(path: &str, bytes: usize) -> Result<(), Error> {
    let mut probe = Vec::<u8>::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| out_of_memory(path, bytes))
}

/// What [`inspect`](super::inspect) reports of the open file `f` of
/// `size` bytes, and its `.npz` members (none for other formats).
pub(crate) fn describe(
    path: &str,
    f: &mut File,
    size: u64,
) -> Result<(Report, Vec<Member>), Error> {
    f.seek(SeekFrom::Start(0))?;
    let magic = read_up_to(f, 4)?;
    if magic == npz::ZIP_MAGIC || magic == npz::EMPTY_ZIP_MAGIC {
        return npz::inspect(path, size, f);
    }
    let header = header(f, path, size, "")?;
    // GGUF values are read from the header's bytes, read again whole.
    let mut head = Vec::new();
    if !header.gguf.is_empty() {
        f.seek(SeekFrom::Start(0))?;
        read_more(f, header.data_start.min(size), &mut head, path)?;
    }
    room_for(path, footprint(&header, head.len()))?;
    let version = match header.format {
        Format::Npy | Format::Gguf => Some(header.version),
        Format::Safetensors => None,
    };
    let report = Report {
        path: path.to_owned(),
        format: header.format.name(),
        size,
        arrays: ArrayInfo::from_header(&header, 0, None, None),
        metadata: metadata(&header, &head),
        version,
    };
    Ok((report, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `.npy` of 125 float64 zeros: a 128-byte header, then 1000 bytes.
    fn npy() -> Vec<u8> {
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (125,), }";
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&118u16.to_le_bytes());
        out.extend_from_slice(format!("{dict:<117}\n").as_bytes());
        out.resize(128 + 1000, 0);
        out
    }

    #[test]
    fn a_file_that_shrinks_while_read_does_not_spin() {
        // Its size said 1000 bytes (then 1128), and only 50 (then 500) are
        // left to read: one error naming where it ended, never a retry.
        let data = npy();
        let mut shrunk = io::Cursor::new(&data[..50]);
        let err = header(&mut shrunk, "f.npy", 1000, "").expect_err("refused");
        assert_eq!(
            err.to_string(),
            "f.npy: ends at byte 50, inside the header; the header needs 128 bytes"
        );
        let mut shrunk = io::Cursor::new(&data[..500]);
        let err = header(&mut shrunk, "f.npy", 1128, "").expect_err("refused");
        assert_eq!(
            err.to_string(),
            "f.npy: ends at byte 500, though its size says 1128 bytes"
        );
        let whole = header(&mut io::Cursor::new(&data[..]), "f.npy", 1128, "").unwrap();
        assert_eq!(whole.data_start, 128);
    }

    /// Counts the passes [`header`] makes over a reader (each starts with
    /// a seek to 0).
    struct Passes<R> {
        inner: R,
        passes: usize,
    }

    impl<R: Read> Read for Passes<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.inner.read(buf)
        }
    }

    impl<R: Seek> Seek for Passes<R> {
        fn seek(&mut self, at: SeekFrom) -> io::Result<u64> {
            self.passes += usize::from(at == SeekFrom::Start(0));
            self.inner.seek(at)
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 5 MiB header: hours under Miri; the passes are counted natively"
    )]
    fn a_large_header_is_read_in_few_passes() {
        // A GGUF header of 300,000 strings (several MB): read in a few
        // passes, each as long as the core asks for, not one per 64 KiB.
        let mut gguf = b"GGUF".to_vec();
        gguf.extend_from_slice(&3u32.to_le_bytes());
        gguf.extend_from_slice(&0u64.to_le_bytes()); // tensors
        gguf.extend_from_slice(&1u64.to_le_bytes()); // key/values
        let key = b"tokenizer.ggml.tokens";
        gguf.extend_from_slice(&(key.len() as u64).to_le_bytes());
        gguf.extend_from_slice(key);
        gguf.extend_from_slice(&9u32.to_le_bytes()); // an array
        gguf.extend_from_slice(&8u32.to_le_bytes()); // of strings
        gguf.extend_from_slice(&300_000u64.to_le_bytes());
        for i in 0..300_000 {
            let token = format!("token number {i}");
            gguf.extend_from_slice(&(token.len() as u64).to_le_bytes());
            gguf.extend_from_slice(token.as_bytes());
        }
        gguf.resize(gguf.len().next_multiple_of(32), 0);
        let length = gguf.len() as u64;
        let mut f = Passes {
            inner: io::Cursor::new(gguf),
            passes: 0,
        };
        let read = header(&mut f, "big.gguf", length, "").unwrap();
        assert_eq!(read.gguf.len(), 1);
        assert!(length > 5 << 20 && f.passes <= 10, "{} passes", f.passes);
    }
}
