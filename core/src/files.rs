//! Files whose header describes the arrays after it (feature `files`):
//! numpy's `.npy` (format versions 1, 2 and 3) and safetensors. A header
//! is read into a [`FileHeader`]: each array's name, dtype, shape, order
//! and byte range, checked against the file's length, so that a binding can
//! lay [`Layout`]s over the mapped file without reading its data.
//!
//! The readers are written for hostile input: every length is checked
//! before it is used, sizes are computed without overflow, and every
//! failure is a [`FileError`] that says what is wrong, with the numbers.
//!
//! # Examples
//! ```
//! use bytelens_core::files::{read_header, Format};
//! let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
//! let mut file = (json.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(json);
//! file.extend_from_slice(&[0; 8]);
//! let header = read_header(&file, file.len())?;
//! assert_eq!(header.format, Format::Safetensors);
//! let w = &header.arrays[0];
//! assert_eq!((w.name.as_str(), w.shape.as_slice(), w.offset, w.nbytes), ("w", &[2][..], 8 + json.len(), 8));
//! assert_eq!(w.layout()?.descr().to_string(), "<f4");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::{ByteOrder, DType, Descr, Error, Escaped, Layout, MAX_NDIM};

/// The largest header either reader accepts: 100 MB, the limit the
/// safetensors library itself applies.
pub const MAX_HEADER: usize = 100_000_000;

/// The six bytes every `.npy` file starts with.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A file format [`read_header`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// numpy's `.npy`: one array.
    Npy,
    /// Hugging Face's safetensors: named tensors after a JSON header.
    Safetensors,
}

impl Format {
    /// The format's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Npy => "npy",
            Format::Safetensors => "safetensors",
        }
    }
}

/// One array a header describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileArray {
    /// Its name (`.npy` files hold one array, called `"array"`).
    pub name: String,
    /// The dtype as the file spells it (`"<f4"`, `"BF16"`).
    pub dtype: String,
    /// The dtype in bytelens's terms; `None` where bytelens has none (F8,
    /// complex numbers, strings, structured dtypes), which is reported and
    /// never guessed.
    pub descr: Option<Descr>,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Fortran (column-major) order, which only `.npy` files can have.
    pub fortran: bool,
    /// Byte offset of its first element in the file.
    pub offset: usize,
    /// Its size in bytes.
    pub nbytes: usize,
}

impl FileArray {
    /// The largest power of two the array's offset is a multiple of (its
    /// alignment in a file mapped at a page boundary); 2^63 at offset 0.
    ///
    /// # Examples
    /// ```
    /// # use bytelens_core::files::FileArray;
    /// let at = |offset| FileArray { name: "a".into(), dtype: "<f4".into(), descr: None, shape: vec![], fortran: false, offset, nbytes: 0 };
    /// assert_eq!((at(96).alignment(), at(7).alignment()), (32, 1));
    /// ```
    pub fn alignment(&self) -> usize {
        1usize << self.offset.trailing_zeros().min(usize::BITS - 1)
    }

    /// Whether a page-aligned mapping of the file can be viewed as it
    /// without a copy: its offset is a multiple of its dtype's alignment,
    /// or it has no elements (which, as in numpy, need no alignment).
    pub fn is_aligned(&self) -> bool {
        self.descr
            .is_some_and(|d| self.nbytes == 0 || self.offset.is_multiple_of(d.dtype.align()))
    }

    /// Its layout over the whole file: C or Fortran order, at its offset, in
    /// its byte order. Fails with `BadDType` where bytelens has no such dtype.
    pub fn layout(&self) -> Result<Layout, Error> {
        let descr = self.descr.ok_or(Error::BadDType {
            text: crate::ShortStr::new(&self.dtype),
        })?;
        let layout = if self.fortran {
            let mut strides = [0isize; MAX_NDIM];
            let mut step = descr.dtype.size();
            for (stride, &n) in strides.iter_mut().zip(&self.shape) {
                *stride = step as isize; // below nbytes, which fits in isize
                step = step.saturating_mul(n);
            }
            Layout::new(
                descr.dtype,
                self.offset,
                &self.shape,
                &strides[..self.shape.len()],
            )?
        } else {
            Layout::contiguous(descr.dtype, &self.shape)?.with_offset(self.offset)?
        };
        Ok(layout.with_byte_order(descr.order))
    }
}

/// What a header says: the format, the arrays, and where the data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The format.
    pub format: Format,
    /// The format version (`.npy`: 1.0, 2.0 or 3.0; safetensors: 0.0).
    pub version: (u8, u8),
    /// Bytes before the data: the magic, lengths and the header itself.
    pub data_start: usize,
    /// The arrays, in the order the header lists them.
    pub arrays: Vec<FileArray>,
    /// safetensors' `__metadata__`, key and value, in the header's order.
    pub metadata: Vec<(String, String)>,
}

/// Why a header could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileError {
    /// The file ends before something the header needs.
    Truncated {
        /// What was cut off.
        what: &'static str,
        /// The byte it would need to reach.
        need: u64,
        /// The file's length.
        len: usize,
    },
    /// Neither format's signature.
    Unrecognised,
    /// An `.npy` format version other than 1.0, 2.0 or 3.0.
    Version {
        /// The major version.
        major: u8,
        /// The minor version.
        minor: u8,
    },
    /// A header longer than [`MAX_HEADER`].
    HeaderTooLarge {
        /// Its length.
        len: u64,
    },
    /// The header is not the JSON or Python literal its format uses.
    Syntax {
        /// What went wrong, and where.
        detail: String,
    },
    /// A key given twice.
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// An entry of the header that is missing, of the wrong kind or
    /// impossible.
    BadEntry {
        /// The array it belongs to (`""` for the header itself).
        array: String,
        /// What is wrong.
        detail: String,
    },
    /// An array whose bytes lie (partly) outside the file.
    OutsideFile {
        /// The array.
        array: String,
        /// Its first byte.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// The file's length.
        len: usize,
    },
    /// Two arrays over the same bytes.
    Overlap {
        /// One array.
        array: String,
        /// The other.
        other: String,
    },
}

/// Names in messages: quoted, escaped, and cut to 64 bytes of the escaped text.
fn quoted(name: &str) -> String {
    let escaped = Escaped(name).to_string();
    if escaped.len() <= 64 {
        return alloc::format!("\"{escaped}\"");
    }
    let mut cut = 64;
    while !escaped.is_char_boundary(cut) {
        cut -= 1;
    }
    alloc::format!("\"{}\"…", &escaped[..cut])
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Truncated { what, need, len } => write!(
                f,
                "the file ends at byte {len}, inside {what}, which runs to byte {need}"
            ),
            FileError::Unrecognised => f.write_str(
                "neither an .npy file (which starts with \\x93NUMPY) nor a safetensors file \
                 (an 8-byte header length, then a JSON object)",
            ),
            FileError::Version { major, minor } => write!(
                f,
                "npy format version {major}.{minor} is not one of 1.0, 2.0 and 3.0"
            ),
            FileError::HeaderTooLarge { len } => write!(
                f,
                "the header is {len} bytes, more than the {MAX_HEADER} allowed"
            ),
            FileError::Syntax { detail } => write!(f, "the header does not parse: {detail}"),
            FileError::DuplicateKey { key } => {
                write!(f, "the header gives the key {} twice", quoted(key))
            }
            FileError::BadEntry { array, detail } if array.is_empty() => {
                write!(f, "the header {detail}")
            }
            FileError::BadEntry { array, detail } => {
                write!(f, "array {}: {detail}", quoted(array))
            }
            FileError::OutsideFile {
                array,
                start,
                end,
                len,
            } => write!(
                f,
                "array {} lies at bytes {start}..{end}, past the end of the file ({len} bytes)",
                quoted(array)
            ),
            FileError::Overlap { array, other } => write!(
                f,
                "arrays {} and {} share bytes",
                quoted(array),
                quoted(other)
            ),
        }
    }
}

impl core::error::Error for FileError {}

fn bad(array: &str, detail: impl ToString) -> FileError {
    FileError::BadEntry {
        array: array.to_owned(),
        detail: detail.to_string(),
    }
}

/// Reads the header of an `.npy` or safetensors file from `bytes`, its
/// first bytes (the whole file, or at least its header), given the file's
/// length `len`. `Truncated` means either the file is cut short or `bytes`
/// holds less than the header: its `need` says how many bytes to pass.
pub fn read_header(bytes: &[u8], len: usize) -> Result<FileHeader, FileError> {
    if bytes.starts_with(NPY_MAGIC) {
        read_npy(bytes, len)
    } else if bytes.len() >= 9 && bytes[8] == b'{' {
        read_safetensors(bytes, len)
    } else if bytes.len() < 9 && NPY_MAGIC.starts_with(bytes) {
        Err(FileError::Truncated {
            what: "the npy magic",
            need: 10,
            len,
        })
    } else {
        Err(FileError::Unrecognised)
    }
}

/// `bytes[start..start + n]`, or `Truncated`.
fn take<'b>(
    bytes: &'b [u8],
    start: usize,
    n: u64,
    len: usize,
    what: &'static str,
) -> Result<&'b [u8], FileError> {
    let end = (start as u64).saturating_add(n);
    usize::try_from(end)
        .ok()
        .and_then(|end| bytes.get(start..end))
        .ok_or(FileError::Truncated {
            what,
            need: end,
            len: len.max(bytes.len()),
        })
}

/// The bytes of `shape` in `dtype`, or an error naming `array`.
fn size_of(array: &str, shape: &[usize], itemsize: usize) -> Result<usize, FileError> {
    if shape.len() > MAX_NDIM {
        return Err(bad(
            array,
            alloc::format!("has {} dimensions, more than {MAX_NDIM}", shape.len()),
        ));
    }
    shape
        .iter()
        .try_fold(itemsize, |n, &k| n.checked_mul(k))
        .filter(|&n| isize::try_from(n).is_ok())
        .ok_or_else(|| bad(array, "has a shape whose size does not fit in memory"))
}

// ---------------------------------------------------------------- npy ----

/// Reads an `.npy` header: the magic, the version, the header length (2
/// bytes in 1.0, 4 in 2.0 and 3.0) and the header, a Python dict literal
/// with exactly the keys `descr`, `fortran_order` and `shape`.
pub fn read_npy(bytes: &[u8], len: usize) -> Result<FileHeader, FileError> {
    let lead = take(bytes, 0, 8, len, "the npy magic and version")?;
    if &lead[..6] != NPY_MAGIC {
        return Err(FileError::Unrecognised);
    }
    let (major, minor) = (lead[6], lead[7]);
    let width = match (major, minor) {
        (1, 0) => 2,
        (2 | 3, 0) => 4,
        _ => return Err(FileError::Version { major, minor }),
    };
    let field = take(bytes, 8, width, len, "the npy header length")?;
    let header_len = field
        .iter()
        .rev()
        .fold(0u64, |n, &b| (n << 8) | u64::from(b));
    if header_len > MAX_HEADER as u64 {
        return Err(FileError::HeaderTooLarge { len: header_len });
    }
    let at = 8 + width as usize;
    let text = take(bytes, at, header_len, len, "the npy header")?;
    let data_start = at + text.len();
    // Versions 1 and 2 are latin-1, 3 is UTF-8; either way the keys and
    // values numpy writes are ASCII.
    let text = core::str::from_utf8(text).map_err(|e| FileError::Syntax {
        detail: alloc::format!("byte {} is not UTF-8", at + e.valid_up_to()),
    })?;
    let dict = PyLiteral::parse(text)?;
    let (dtype, descr) = match dict.get("descr") {
        Some(Py::Str(s)) => (s.clone(), npy_descr(s)),
        Some(Py::List) => ("structured".to_owned(), None),
        Some(_) => return Err(bad("", "'descr' is not a string")),
        None => return Err(bad("", "has no 'descr'")),
    };
    let fortran = match dict.get("fortran_order") {
        Some(Py::Bool(b)) => *b,
        Some(_) => return Err(bad("", "'fortran_order' is not True or False")),
        None => return Err(bad("", "has no 'fortran_order'")),
    };
    let shape = match dict.get("shape") {
        Some(Py::Tuple(shape)) => shape.clone(),
        Some(_) => return Err(bad("", "'shape' is not a tuple of lengths")),
        None => return Err(bad("", "has no 'shape'")),
    };
    if let Some((key, _)) = dict
        .entries
        .iter()
        .find(|(k, _)| !["descr", "fortran_order", "shape"].contains(&k.as_str()))
    {
        return Err(bad(
            "",
            alloc::format!("has the key {}, which npy headers do not", quoted(key)),
        ));
    }
    let itemsize = match descr {
        Some(d) => d.dtype.size(),
        None => npy_itemsize(&dtype).unwrap_or(1),
    };
    let name = "array";
    let nbytes = size_of(name, &shape, itemsize)?;
    let end = data_start as u64 + nbytes as u64;
    if end > len as u64 {
        return Err(FileError::OutsideFile {
            array: name.to_owned(),
            start: data_start as u64,
            end,
            len,
        });
    }
    Ok(FileHeader {
        format: Format::Npy,
        version: (major, minor),
        data_start,
        arrays: alloc::vec![FileArray {
            name: name.to_owned(),
            dtype,
            descr,
            shape,
            fortran,
            offset: data_start,
            nbytes,
        }],
        metadata: Vec::new(),
    })
}

/// A numpy type string bytelens has: `<f4`, `|u1`, `|b1`, `>i8`, …
fn npy_descr(text: &str) -> Option<Descr> {
    let descr: Descr = text.parse().ok()?;
    // Only numpy's spellings: an order mark and a kind letter with a size.
    let code = text.get(1..)?;
    let ok = matches!(text.as_bytes().first(), Some(b'<' | b'>' | b'|' | b'='))
        && code == descr.dtype.code()
        && descr.dtype != DType::BF16;
    ok.then_some(descr)
}

/// The itemsize of a numpy type string bytelens lacks (`<c8`, `|S5`), so
/// that its byte range can still be reported.
fn npy_itemsize(text: &str) -> Option<usize> {
    let digits = text.get(2..)?;
    let n: usize = digits.parse().ok()?;
    match text.as_bytes().get(1)? {
        b'U' => n.checked_mul(4),
        b'c' | b'S' | b'V' | b'f' | b'i' | b'u' | b'b' | b'a' => Some(n),
        _ => None,
    }
}

/// The values an npy header holds.
#[derive(Debug)]
enum Py {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
    /// A list: a structured dtype's fields (not read further).
    List,
}

/// A Python dict literal of the kind numpy writes:
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
struct PyLiteral {
    entries: Vec<(String, Py)>,
}

struct Cursor<'t> {
    text: &'t [u8],
    at: usize,
}

impl Cursor<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, FileError> {
        Err(FileError::Syntax {
            detail: alloc::format!("expected {what} at character {}", self.at),
        })
    }

    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Skips spaces; true (and consumes it) if the next byte is `byte`.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn string(&mut self) -> Result<String, FileError> {
        self.skip_space();
        let Some(&quote @ (b'\'' | b'"')) = self.text.get(self.at) else {
            return self.fail("a quoted string");
        };
        let start = self.at + 1;
        let Some(end) = self.text[start..].iter().position(|&b| b == quote) else {
            return self.fail("the end of a string");
        };
        let s = &self.text[start..start + end];
        if s.contains(&b'\\') {
            return self.fail("a string without escapes");
        }
        self.at = start + end + 1;
        // Cut from a `str` at ASCII quotes: still UTF-8.
        Ok(String::from_utf8_lossy(s).into_owned())
    }

    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(u8::is_ascii_alphanumeric)
        {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    fn value(&mut self) -> Result<Py, FileError> {
        self.skip_space();
        match self.text.get(self.at) {
            Some(b'\'' | b'"') => Ok(Py::Str(self.string()?)),
            Some(b'(') => {
                self.at += 1;
                let mut items = Vec::new();
                while !self.eat(b')') {
                    let start = self.at;
                    // Python 2's numpy wrote longs as `3L`.
                    let word = self.word();
                    let word = word.strip_suffix(b"L").unwrap_or(word);
                    let n = core::str::from_utf8(word)
                        .ok()
                        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|w| w.parse::<usize>().ok());
                    match n {
                        Some(_) if items.len() == MAX_NDIM => {
                            return self.fail("at most 32 lengths");
                        }
                        Some(n) => items.push(n),
                        None => {
                            self.at = start;
                            return self.fail("a length (a whole number)");
                        }
                    }
                    if !self.eat(b',') {
                        if self.eat(b')') {
                            break;
                        }
                        return self.fail("',' or ')'");
                    }
                }
                Ok(Py::Tuple(items))
            }
            Some(b'[') => {
                // A structured dtype: skip to the matching bracket.
                let mut depth = 0usize;
                while let Some(&b) = self.text.get(self.at) {
                    self.at += 1;
                    match b {
                        b'[' | b'(' => depth += 1,
                        b']' | b')' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(Py::List);
                            }
                        }
                        _ => {}
                    }
                }
                self.fail("the end of a list")
            }
            _ => {
                let start = self.at;
                match self.word() {
                    b"True" => Ok(Py::Bool(true)),
                    b"False" => Ok(Py::Bool(false)),
                    _ => {
                        self.at = start;
                        self.fail("a string, True, False or a tuple")
                    }
                }
            }
        }
    }
}

impl PyLiteral {
    fn parse(text: &str) -> Result<PyLiteral, FileError> {
        let mut cursor = Cursor {
            text: text.as_bytes(),
            at: 0,
        };
        if !cursor.eat(b'{') {
            return cursor.fail("'{'");
        }
        let mut entries: Vec<(String, Py)> = Vec::new();
        while !cursor.eat(b'}') {
            let key = cursor.string()?;
            if !cursor.eat(b':') {
                return cursor.fail("':'");
            }
            let value = cursor.value()?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(FileError::DuplicateKey { key });
            }
            entries.push((key, value));
            if !cursor.eat(b',') {
                if cursor.eat(b'}') {
                    break;
                }
                return cursor.fail("',' or '}'");
            }
        }
        // numpy pads with spaces and ends with a newline.
        cursor.skip_space();
        if cursor.at != cursor.text.len() {
            return cursor.fail("only spaces after the dict");
        }
        Ok(PyLiteral { entries })
    }

    fn get(&self, key: &str) -> Option<&Py> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

// -------------------------------------------------------- safetensors ----

/// A safetensors dtype: bytelens's, or the itemsize of one it lacks (F8
/// formats, complex) so that the byte range can still be checked. `None`
/// for a name the format does not have.
fn safetensors_dtype(name: &str) -> Option<(Option<Descr>, usize)> {
    let little = |dtype| Some((Some(Descr::new(dtype, ByteOrder::Little)), 0));
    let (descr, size) = match name {
        "BOOL" => little(DType::Bool),
        "U8" => little(DType::U8),
        "I8" => little(DType::I8),
        "I16" => little(DType::I16),
        "U16" => little(DType::U16),
        "F16" => little(DType::F16),
        "BF16" => little(DType::BF16),
        "I32" => little(DType::I32),
        "U32" => little(DType::U32),
        "F32" => little(DType::F32),
        "F64" => little(DType::F64),
        "I64" => little(DType::I64),
        "U64" => little(DType::U64),
        "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => Some((None, 1)),
        "C64" => Some((None, 8)),
        _ => None,
    }?;
    Some(match descr {
        Some(d) => (Some(d), d.dtype.size()),
        None => (None, size),
    })
}

/// Reads a safetensors header: an 8-byte little-endian length, then that
/// many bytes of JSON: an object mapping each tensor's name to `dtype`,
/// `shape` and `data_offsets` (relative to the end of the header), and an
/// optional `__metadata__` object of strings.
pub fn read_safetensors(bytes: &[u8], len: usize) -> Result<FileHeader, FileError> {
    let field = take(bytes, 0, 8, len, "the safetensors header length")?;
    let header_len = u64::from_le_bytes(field.try_into().unwrap_or([0; 8]));
    if header_len > MAX_HEADER as u64 {
        return Err(FileError::HeaderTooLarge { len: header_len });
    }
    let text = take(bytes, 8, header_len, len, "the safetensors header")?;
    let data_start = 8 + text.len();
    let Json::Object(entries) =
        serde_json::from_slice::<Json>(text).map_err(|e| FileError::Syntax {
            detail: e.to_string(),
        })?
    else {
        return Err(bad("", "is not a JSON object"));
    };
    let mut arrays: Vec<FileArray> = Vec::with_capacity(entries.len());
    let mut metadata = Vec::new();
    let mut keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if let Some(pair) = keys.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(FileError::DuplicateKey {
            key: pair[0].to_owned(),
        });
    }
    for (name, value) in &entries {
        if name == "__metadata__" {
            metadata = read_metadata(value)?;
            continue;
        }
        let array = read_tensor(name, value, data_start, len)?;
        arrays.push(array);
    }
    // No two tensors over the same bytes (empty ones cover none).
    let mut ranges: Vec<(usize, usize, &str)> = arrays
        .iter()
        .filter(|a| a.nbytes > 0)
        .map(|a| (a.offset, a.offset + a.nbytes, a.name.as_str()))
        .collect();
    ranges.sort_unstable();
    if let Some(pair) = ranges.windows(2).find(|p| p[1].0 < p[0].1) {
        return Err(FileError::Overlap {
            array: pair[0].2.to_owned(),
            other: pair[1].2.to_owned(),
        });
    }
    Ok(FileHeader {
        format: Format::Safetensors,
        version: (0, 0),
        data_start,
        arrays,
        metadata,
    })
}

fn read_metadata(value: &Json) -> Result<Vec<(String, String)>, FileError> {
    let Json::Object(pairs) = value else {
        return Err(bad("", "'__metadata__' is not an object"));
    };
    let mut out: Vec<(String, String)> = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let Json::Str(text) = value else {
            return Err(bad(
                "",
                alloc::format!("'__metadata__' value of {} is not a string", quoted(key)),
            ));
        };
        if out.iter().any(|(k, _)| k == key) {
            return Err(FileError::DuplicateKey { key: key.clone() });
        }
        out.push((key.clone(), text.clone()));
    }
    Ok(out)
}

fn read_tensor(
    name: &str,
    value: &Json,
    data_start: usize,
    len: usize,
) -> Result<FileArray, FileError> {
    let Json::Object(fields) = value else {
        return Err(bad(
            name,
            "is not an object of dtype, shape and data_offsets",
        ));
    };
    let mut dtype = None;
    let mut shape = None;
    let mut offsets = None;
    for (key, value) in fields {
        let slot = match key.as_str() {
            "dtype" => &mut dtype,
            "shape" => &mut shape,
            "data_offsets" => &mut offsets,
            _ => {
                return Err(bad(
                    name,
                    alloc::format!("has the unknown key {}", quoted(key)),
                ));
            }
        };
        if slot.replace(value).is_some() {
            return Err(FileError::DuplicateKey { key: key.clone() });
        }
    }
    let Some(Json::Str(dtype)) = dtype else {
        return Err(bad(name, "has no dtype string"));
    };
    let (descr, itemsize) = safetensors_dtype(dtype).ok_or_else(|| {
        bad(
            name,
            alloc::format!(
                "has the dtype {}, which safetensors does not define",
                quoted(dtype)
            ),
        )
    })?;
    let whole = |value: &Json, what: &str| match value {
        Json::Whole(n) => usize::try_from(*n)
            .map_err(|_| bad(name, alloc::format!("{what} {n} does not fit in memory"))),
        _ => Err(bad(name, alloc::format!("{what} is not a whole number"))),
    };
    let shape = match shape {
        Some(Json::Array(items)) if items.len() <= MAX_NDIM => items
            .iter()
            .map(|n| whole(n, "a length"))
            .collect::<Result<Vec<usize>, _>>()?,
        Some(Json::Array(items)) => {
            return Err(bad(
                name,
                alloc::format!("has {} dimensions, more than {MAX_NDIM}", items.len()),
            ));
        }
        _ => return Err(bad(name, "has no shape array")),
    };
    let (begin, end) = match offsets {
        Some(Json::Array(pair)) if pair.len() == 2 => {
            (whole(&pair[0], "an offset")?, whole(&pair[1], "an offset")?)
        }
        _ => return Err(bad(name, "has no data_offsets pair")),
    };
    let nbytes = size_of(name, &shape, itemsize)?;
    if end < begin || end - begin != nbytes {
        return Err(bad(
            name,
            alloc::format!(
                "data_offsets {begin}..{end} do not hold its {} elements of {} ({nbytes} bytes)",
                nbytes / itemsize,
                quoted(dtype)
            ),
        ));
    }
    let start = data_start as u64 + begin as u64;
    let stop = data_start as u64 + end as u64;
    if stop > len as u64 {
        return Err(FileError::OutsideFile {
            array: name.to_owned(),
            start,
            end: stop,
            len,
        });
    }
    Ok(FileArray {
        name: name.to_owned(),
        dtype: dtype.clone(),
        descr,
        shape,
        fortran: false,
        offset: start as usize,
        nbytes,
    })
}

/// JSON as the header reader needs it: objects keep every key in order,
/// repeated ones too (a map would keep only one of them, silently).
enum Json {
    Object(Vec<(String, Json)>),
    Array(Vec<Json>),
    Str(String),
    /// A number that is a whole number from 0 to 2^64 - 1.
    Whole(u64),
    /// Any other number, a boolean or null.
    Other,
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Json, E> {
        Ok(Json::Other)
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(u64::try_from(n).map_or(Json::Other, Json::Whole))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Whole(n))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Other)
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::Str(s))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Other)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Json>()? {
            entries.push(entry);
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    fn npy(version: u8, header: &str, data: usize) -> Vec<u8> {
        let mut file = NPY_MAGIC.to_vec();
        file.extend([version, 0]);
        match version {
            1 => file.extend((header.len() as u16).to_le_bytes()),
            _ => file.extend((header.len() as u32).to_le_bytes()),
        }
        file.extend(header.as_bytes());
        file.resize(file.len() + data, 0);
        file
    }

    fn safetensors(json: &str, data: usize) -> Vec<u8> {
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend(json.as_bytes());
        file.resize(file.len() + data, 0);
        file
    }

    fn read(file: &[u8]) -> Result<FileHeader, FileError> {
        read_header(file, file.len())
    }

    #[test]
    fn npy_in_every_version_and_order() {
        let dict = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
        for version in [1, 2, 3] {
            // Padded as numpy pads, so that the data starts at a multiple of 64.
            let lead = if version == 1 { 10 } else { 12 };
            let padded = format!("{dict:<width$}\n", width = 127 - lead);
            let file = npy(version, &padded, 12);
            let header = read(&file).unwrap();
            let array = &header.arrays[0];
            assert_eq!(header.version, (version, 0));
            assert_eq!(
                (array.offset, array.nbytes, array.fortran),
                (file.len() - 12, 12, true)
            );
            let layout = array.layout().unwrap();
            assert_eq!(
                (layout.strides(), layout.byte_order()),
                (&[2, 4][..], ByteOrder::Big)
            );
            layout.check(file.len()).unwrap();
        }
        let scalar = npy(1, "{'descr':'<f8','fortran_order':False,'shape':()}", 8);
        assert_eq!(read(&scalar).unwrap().arrays[0].shape, Vec::<usize>::new());
        let old = npy(
            1,
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3L,), }",
            12,
        );
        assert_eq!(read(&old).unwrap().arrays[0].shape, [3]);
    }

    #[test]
    fn npy_dtypes_bytelens_lacks_are_reported() {
        for (descr, size) in [("<c8", 8), ("|S5", 5), ("<U2", 8)] {
            let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
            let header = read(&npy(1, &dict, 2 * size)).unwrap();
            let array = &header.arrays[0];
            assert_eq!((array.descr, array.nbytes), (None, 2 * size));
            assert_eq!(array.layout().unwrap_err().kind(), "BadDType");
        }
        let structured =
            "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (1,), }";
        assert_eq!(
            read(&npy(1, structured, 12)).unwrap().arrays[0].dtype,
            "structured"
        );
    }

    #[test]
    fn broken_npy_headers_say_what_is_wrong() {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
        let good = npy(1, dict, 16);
        let cut = &good[..good.len() - 1];
        assert_eq!(
            read(cut).unwrap_err().to_string(),
            format!(
                "array \"array\" lies at bytes {}..{}, past the end of the file ({} bytes)",
                good.len() - 16,
                good.len(),
                cut.len()
            )
        );
        assert_eq!(
            read(&good[..20]).unwrap_err(),
            FileError::Truncated {
                what: "the npy header",
                need: 10 + dict.len() as u64,
                len: 20
            }
        );
        let mut future = good.clone();
        future[6] = 4;
        assert_eq!(
            read(&future).unwrap_err(),
            FileError::Version { major: 4, minor: 0 }
        );
        for (header, message) in [
            (
                "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}",
                "the header gives the key \"descr\" twice",
            ),
            (
                "{'descr': '<f4', 'shape': (4,)}",
                "the header has no 'fortran_order'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,)}",
                "the header does not parse: expected a string, True, False or a tuple at character 34",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,)}",
                "the header does not parse: expected a length (a whole number) at character 51",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 'y'}",
                "the header has the key \"x\", which npy headers do not",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}",
                "array \"array\": has a shape whose size does not fit in memory",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} x",
                "the header does not parse: expected only spaces after the dict at character 56",
            ),
        ] {
            assert_eq!(read(&npy(1, header, 16)).unwrap_err().to_string(), message);
        }
        let mut huge = npy(2, dict, 0);
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            read(&huge).unwrap_err(),
            FileError::HeaderTooLarge {
                len: u32::MAX.into()
            }
        );
        let mut latin = npy(1, dict, 16);
        latin[12] = 0xff;
        assert!(matches!(read(&latin), Err(FileError::Syntax { .. })));
        assert_eq!(
            read(b"\x93NUM").unwrap_err().to_string(),
            "the file ends at byte 4, inside the npy magic, which runs to byte 10"
        );
        assert_eq!(read(b"hello, world").unwrap_err(), FileError::Unrecognised);
    }

    #[test]
    fn safetensors_with_metadata_and_every_dtype() {
        let json = r#"{"__metadata__":{"format":"np"},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[8,16]},"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[16,16]},"q":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[16,20]}}"#;
        let file = safetensors(json, 20);
        let header = read(&file).unwrap();
        assert_eq!(header.metadata, [("format".into(), "np".into())]);
        let names: Vec<&str> = header.arrays.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "e", "q"]);
        let b = &header.arrays[0];
        assert_eq!(
            (b.offset, b.layout().unwrap().descr().to_string()),
            (8 + json.len() + 8, "<bfloat16".into())
        );
        assert_eq!(header.arrays[3].descr, None);
    }

    #[test]
    fn broken_safetensors_headers_say_what_is_wrong() {
        let t = |dtype: &str, shape: &str, offsets: &str| {
            format!(r#""dtype":"{dtype}","shape":{shape},"data_offsets":{offsets}"#)
        };
        for (json, data, message) in [
            (
                format!(
                    r#"{{"a":{{{}}},"a":{{{}}}}}"#,
                    t("U8", "[1]", "[0,1]"),
                    t("U8", "[1]", "[1,2]")
                ),
                2,
                "the header gives the key \"a\" twice",
            ),
            (
                format!(r#"{{"a":{{{},"dtype":"U8"}}}}"#, t("U8", "[1]", "[0,1]")),
                1,
                "the header gives the key \"dtype\" twice",
            ),
            (
                format!(
                    r#"{{"a":{{{}}},"b":{{{}}}}}"#,
                    t("U16", "[2]", "[0,4]"),
                    t("U8", "[2]", "[3,5]")
                ),
                5,
                "arrays \"a\" and \"b\" share bytes",
            ),
            (
                format!(r#"{{"a":{{{}}}}}"#, t("F32", "[2]", "[0,4]")),
                4,
                "array \"a\": data_offsets 0..4 do not hold its 2 elements of \"F32\" (8 bytes)",
            ),
            (
                format!(r#"{{"a":{{{}}}}}"#, t("F32", "[1]", "[0,4]")),
                3,
                "array \"a\" lies at bytes 62..66, past the end of the file (65 bytes)",
            ),
            (
                format!(r#"{{"a":{{{}}}}}"#, t("F7", "[1]", "[0,1]")),
                1,
                "array \"a\": has the dtype \"F7\", which safetensors does not define",
            ),
            (
                format!(r#"{{"a":{{{}}}}}"#, t("U8", "[-1]", "[0,1]")),
                1,
                "array \"a\": a length is not a whole number",
            ),
            (
                format!(r#"{{"a":{{{}}}}}"#, t("U8", "[1.5]", "[0,1]")),
                1,
                "array \"a\": a length is not a whole number",
            ),
            (
                format!(
                    r#"{{"a":{{{}}}}}"#,
                    t("F64", "[4294967296,4294967296]", "[0,1]")
                ),
                1,
                "array \"a\": has a shape whose size does not fit in memory",
            ),
            (
                r#"{"a":{"dtype":"U8","shape":[1]}}"#.into(),
                1,
                "array \"a\": has no data_offsets pair",
            ),
            (
                r#"{"__metadata__":{"k":1}}"#.into(),
                0,
                "the header '__metadata__' value of \"k\" is not a string",
            ),
            (
                r#"{"a\u0000\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":0}}"#.into(),
                1,
                "array \"a\\0\\n\": has the unknown key \"x\"",
            ),
            (
                r#"[1]"#.into(),
                0,
                "neither an .npy file (which starts with \\x93NUMPY) nor a safetensors file (an 8-byte header length, then a JSON object)",
            ),
            (
                r#"{"a":"#.into(),
                0,
                "the header does not parse: EOF while parsing a value at line 1 column 5",
            ),
        ] {
            let file = safetensors(&json, data);
            assert_eq!(read(&file).unwrap_err().to_string(), message, "{json}");
        }
        let mut long = safetensors("{}", 0);
        long[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert_eq!(
            read(&long).unwrap_err(),
            FileError::Truncated {
                what: "the safetensors header",
                need: 1008,
                len: 10
            }
        );
        long[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            read(&long).unwrap_err(),
            FileError::HeaderTooLarge { len: u64::MAX }
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(matches!(
            read(&safetensors(&format!("{{\"a\":{deep}}}"), 0)),
            Err(FileError::Syntax { .. })
        ));
        let name = "n".repeat(300);
        let message = read(&safetensors(&format!(r#"{{"{name}":{{}}}}"#), 0))
            .unwrap_err()
            .to_string();
        assert!(message.len() < 120, "{message}");
        let list = safetensors("[1]", 0);
        assert_eq!(
            read_safetensors(&list, list.len()).unwrap_err().to_string(),
            "the header is not a JSON object"
        );
    }
}
