//! `.npz` files: the zip's directory and each member's `.npy` header,
//! checked ([`inspect`]), and the deflated members [`load`](super::load)
//! decompresses on first access ([`inflate_member`]), in pure Rust
//! (miniz_oxide).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};

use super::error::Error;
use super::open::{HEAD, header, read_up_to};
use super::report::{ArrayInfo, COMPRESSED, Report};
use super::text::quoted64;
use crate::Buffer;

/// How a zip member's local header starts.
pub(crate) const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// How a zip without members starts: its end-of-directory record.
pub(crate) const EMPTY_ZIP_MAGIC: &[u8] = b"PK\x05\x06";
/// Deflate's greatest expansion: 1032 bytes from one.
const DEFLATE_RATIO: u64 = 1032;
/// A member stored as it is.
const STORED: u16 = 0;
/// A member compressed by deflate.
const DEFLATED: u16 = 8;

/// An `.npz` member: its zip directory entry, and the byte its data
/// (compressed or not) starts at in the file.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) flags: u16,
    pub(crate) method: u16,
    pub(crate) crc: u32,
    pub(crate) compressed: u64,
    pub(crate) size: u64,
    pub(crate) header_offset: u64,
    pub(crate) start: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// The zip's directory: its members in order, from the end-of-directory
/// record (and its zip64 record, where there is one).
fn directory(f: &mut File, size: u64) -> Result<Vec<Member>, String> {
    let not_zip = || "File is not a zip file".to_owned();
    let tail_len = size.min(22 + 65535);
    f.seek(SeekFrom::Start(size - tail_len))
        .map_err(|e| e.to_string())?;
    let tail = read_up_to(f, tail_len).map_err(|e| e.to_string())?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..].starts_with(EMPTY_ZIP_MAGIC))
        .ok_or_else(not_zip)?;
    let end = &tail[at..];
    let mut count = u64::from(u16_at(end, 10));
    let mut dir_size = u64::from(u32_at(end, 12));
    let mut dir_start = u64::from(u32_at(end, 16));
    let end_at = size - tail_len + at as u64;
    // A zip64 locator just before: the counts and offsets are in its record.
    if end_at >= 20 {
        f.seek(SeekFrom::Start(end_at - 20))
            .map_err(|e| e.to_string())?;
        let locator = read_up_to(f, 20).map_err(|e| e.to_string())?;
        if locator.starts_with(b"PK\x06\x07") {
            let record_at = u64_at(&locator, 8);
            f.seek(SeekFrom::Start(record_at))
                .map_err(|e| e.to_string())?;
            let record = read_up_to(f, 56).map_err(|e| e.to_string())?;
            if record.len() < 56 || !record.starts_with(b"PK\x06\x06") {
                return Err("Corrupt zip64 end of central directory record".to_owned());
            }
            count = u64_at(&record, 32);
            dir_size = u64_at(&record, 40);
            dir_start = u64_at(&record, 48);
        }
    }
    if dir_start.checked_add(dir_size).is_none_or(|e| e > size) {
        return Err("Bad offset for central directory".to_owned());
    }
    f.seek(SeekFrom::Start(dir_start))
        .map_err(|e| e.to_string())?;
    let dir = read_up_to(f, dir_size).map_err(|e| e.to_string())?;
    let mut members = Vec::new();
    let mut at = 0usize;
    while members.len() as u64 != count {
        let entry = dir.get(at..at + 46).ok_or("Truncated central directory")?;
        if !entry.starts_with(b"PK\x01\x02") {
            return Err("Bad magic number for central directory".to_owned());
        }
        let (name_len, extra_len, comment_len) = (
            usize::from(u16_at(entry, 28)),
            usize::from(u16_at(entry, 30)),
            usize::from(u16_at(entry, 32)),
        );
        let name = dir
            .get(at + 46..at + 46 + name_len)
            .ok_or("Truncated central directory")?;
        let extra = dir
            .get(at + 46 + name_len..at + 46 + name_len + extra_len)
            .ok_or("Truncated central directory")?;
        let flags = u16_at(entry, 8);
        let mut m = Member {
            name: decode_name(name, flags),
            flags,
            method: u16_at(entry, 10),
            crc: u32_at(entry, 16),
            compressed: u64::from(u32_at(entry, 20)),
            size: u64::from(u32_at(entry, 24)),
            header_offset: u64::from(u32_at(entry, 42)),
            start: 0,
        };
        zip64_extra(extra, &mut m);
        members.push(m);
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(members)
}

/// A member's name: UTF-8 where its flags say so, else code page 437
/// (its ASCII kept, the rest replaced).
fn decode_name(bytes: &[u8], flags: u16) -> String {
    if flags & 0x800 != 0 {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        bytes
            .iter()
            .map(|&b| if b < 0x80 { b as char } else { '\u{fffd}' })
            .collect()
    }
}

/// The sizes and offset a zip64 extra field gives where the 32-bit ones
/// are `0xFFFFFFFF`.
fn zip64_extra(mut extra: &[u8], m: &mut Member) {
    while extra.len() >= 4 {
        let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
        let Some(body) = extra.get(4..4 + len) else {
            return;
        };
        if id == 1 {
            let mut at = 0;
            for field in [&mut m.size, &mut m.compressed, &mut m.header_offset] {
                if *field == 0xFFFF_FFFF && at + 8 <= body.len() {
                    *field = u64_at(body, at);
                    at += 8;
                }
            }
        }
        extra = &extra[4 + len..];
    }
}

/// Where `m`'s data starts, after its local header, which must name the
/// member as the zip's directory does.
fn data_start(f: &mut File, m: &Member, path: &str, what: &str, size: u64) -> Result<u64, Error> {
    f.seek(SeekFrom::Start(m.header_offset))?;
    let local = read_up_to(f, 30)?;
    if local.len() < 30 || !local.starts_with(ZIP_MAGIC) {
        return Err(Error::format(format!(
            "{path}{what}: no local header at byte {}",
            m.header_offset
        )));
    }
    let (flags, name_len, extra_len) = (u16_at(&local, 6), u16_at(&local, 26), u16_at(&local, 28));
    let name = decode_name(&read_up_to(f, name_len.into())?, flags);
    if name != m.name {
        return Err(Error::format(format!(
            "{path}{what}: its local header names it {}, the zip's directory {}",
            quoted64(&name),
            quoted64(&m.name)
        )));
    }
    let start = m.header_offset + 30 + u64::from(name_len) + u64::from(extra_len);
    if start.saturating_add(m.compressed) > size {
        return Err(Error::format(format!(
            "{path}{what}: its {} bytes from byte {start} run past the end of the file ({size} bytes)",
            m.compressed
        )));
    }
    Ok(start)
}

/// `length` bytes of `f` from `start`, read like a file.
struct Window<'f> {
    f: &'f mut File,
    start: u64,
    length: u64,
    at: u64,
}

impl Read for Window<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.length.saturating_sub(self.at)) as usize;
        self.f.seek(SeekFrom::Start(self.start + self.at))?;
        let got = self.f.read(&mut buf[..n])?;
        self.at += got as u64;
        Ok(got)
    }
}

impl Seek for Window<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        if let SeekFrom::Start(at) = to {
            self.at = at;
        }
        Ok(self.at)
    }
}

/// A deflated member's first bytes, read like a file: each read inflates
/// from the start up to what it asks for.
struct Inflating {
    deflated: Vec<u8>,
    at: u64,
    where_: String,
}

impl Read for Inflating {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut out = vec![0u8; self.at as usize + buf.len()];
        let got = inflate_into(&self.deflated, &mut out)
            .map_err(|why| io::Error::other(format!("{}: {why}", self.where_)))?
            .0;
        let n = got.saturating_sub(self.at as usize).min(buf.len());
        buf[..n].copy_from_slice(&out[self.at as usize..self.at as usize + n]);
        self.at += n as u64;
        Ok(n)
    }
}

impl Seek for Inflating {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        if let SeekFrom::Start(at) = to {
            self.at = at;
        }
        Ok(self.at)
    }
}

/// Inflates `deflated` into `out`: the bytes written, and whether the
/// stream has more than `out` holds. An error says what is damaged.
fn inflate_into(deflated: &[u8], out: &mut [u8]) -> Result<(usize, bool), String> {
    let mut state = DecompressorOxide::new();
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, _, written) = decompress(&mut state, deflated, out, 0, flags);
    match status {
        TINFLStatus::Done => Ok((written, false)),
        TINFLStatus::HasMoreOutput => Ok((written, true)),
        TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
            Err("Error -5 while decompressing data: incomplete or truncated stream".to_owned())
        }
        other => Err(format!("Error -3 while decompressing data: {other:?}")),
    }
}

/// The zip's CRC-32 of `bytes`, continuing from `crc`.
pub(crate) fn crc32(mut crc: u32, bytes: &[u8]) -> u32 {
    crc = !crc;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// A `FormatError` unless `crc` is the one the zip records for `m`.
pub(crate) fn check_crc(crc: u32, m: &Member, where_: &str) -> Result<(), Error> {
    if crc == m.crc {
        return Ok(());
    }
    Err(Error::format(format!(
        "{where_}: its bytes have the CRC-32 {crc:#010x}, not the {:#010x} the zip records \
         (the member is damaged)",
        m.crc
    )))
}

/// What [`inspect`](super::inspect) reports of an `.npz`, and its members.
pub(crate) fn inspect(path: &str, size: u64, f: &mut File) -> Result<(Report, Vec<Member>), Error> {
    let members = directory(f, size)
        .map_err(|err| Error::format(format!("{path}: not a readable .npz (zip) file: {err}")))?;
    let mut arrays = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(members.len());
    for mut m in members {
        let name = m.name.strip_suffix(".npy").unwrap_or(&m.name).to_owned();
        let what = format!(", member {}", quoted64(&m.name));
        if !names.insert(name.clone()) {
            return Err(Error::format(format!(
                "{path}{what}: a second member holds an array named {}",
                quoted64(&name)
            )));
        }
        if m.flags & 1 != 0 {
            return Err(Error::format(format!(
                "{path}{what}: the member is encrypted"
            )));
        }
        m.start = data_start(f, &m, path, &what, size)?;
        if m.method == DEFLATED && m.size > DEFLATE_RATIO.saturating_mul(m.compressed) + HEAD {
            return Err(Error::format(format!(
                "{path}{what}: its zip entry says {} bytes from {} deflated, more than deflate can \
                 hold (at most {DEFLATE_RATIO} times as many)",
                m.size, m.compressed
            )));
        }
        if m.method != STORED {
            if m.method != DEFLATED {
                return Err(Error::format(format!(
                    "{path}{what}: That compression method is not supported"
                )));
            }
            f.seek(SeekFrom::Start(m.start))?;
            let deflated = read_up_to(f, m.compressed)?;
            let where_ = format!("{path}{what}");
            let mut member = Inflating {
                deflated,
                at: 0,
                where_,
            };
            let header = header(&mut member, path, m.size, &what).map_err(|err| match err {
                Error::Io(e) if e.kind() == io::ErrorKind::Other => Error::format(e.to_string()),
                other => other,
            })?;
            for mut a in ArrayInfo::from_header(&header, 0, Some(&name), Some(&m.name)) {
                a.copy = Some(COMPRESSED.to_owned());
                arrays.push(a);
            }
            out.push(m);
            continue;
        }
        if m.compressed != m.size {
            return Err(Error::format(format!(
                "{path}{what}: a stored member of {} bytes cannot hold {} bytes",
                m.compressed, m.size
            )));
        }
        let (start, length) = (m.start, m.size);
        let mut window = Window {
            f,
            start,
            length,
            at: 0,
        };
        let header = header(&mut window, path, length, &what)?;
        if length <= HEAD {
            window.seek(SeekFrom::Start(0))?;
            let bytes = read_up_to(&mut window, length)?;
            check_crc(crc32(0, &bytes), &m, &format!("{path}{what}"))?;
        }
        arrays.extend(ArrayInfo::from_header(
            &header,
            start,
            Some(&name),
            Some(&m.name),
        ));
        out.push(m);
    }
    let report = Report {
        path: path.to_owned(),
        format: "npz",
        size,
        arrays,
        metadata: Vec::new(),
        version: None,
    };
    Ok((report, out))
}

/// A deflated member of the mapped file `file` inflated into aligned
/// memory of its size (its only copy), its size and CRC-32 checked.
pub(crate) fn inflate_member(file: &[u8], m: &Member, path: &str) -> Result<Buffer, Error> {
    let where_ = format!("{path}, member {}", quoted64(&m.name));
    let size = usize::try_from(m.size).map_err(|_| {
        Error::format(format!(
            "{where_}: its {} bytes do not fit in memory",
            m.size
        ))
    })?;
    let deflated = usize::try_from(m.start)
        .ok()
        .zip(usize::try_from(m.start + m.compressed).ok())
        .and_then(|(a, b)| file.get(a..b))
        .ok_or_else(|| Error::format(format!("{where_}: its bytes lie past the file")))?;
    let mut out =
        Buffer::new(size.max(1)).map_err(|err| Error::format(format!("{where_}: {err}")))?;
    let (got, more) = inflate_into(deflated, &mut out.as_bytes_mut()[..size])
        .map_err(|why| Error::format(format!("{where_}: {why}")))?;
    if more {
        return Err(Error::format(format!(
            "{where_}: decompresses to more than the {size} bytes its zip entry says"
        )));
    }
    if got != size {
        return Err(Error::format(format!(
            "{where_}: decompresses to {got} bytes, not the {size} its zip entry says"
        )));
    }
    if crc32(0, &out.as_bytes()[..size]) != m.crc {
        return Err(Error::format(format!(
            "{where_}: its bytes do not have the CRC-32 the zip records (the member is damaged)"
        )));
    }
    Ok(out)
}
