//! Files whose header describes the arrays after it (feature `files`):
//! numpy's `.npy` (format versions 1, 2 and 3), safetensors and GGUF
//! (llama.cpp's model files, versions 2 and 3, with ggml's quantised block
//! types in [`GgmlType`]'s table). A header
//! is read into a [`FileHeader`]: each array's name, dtype, shape, order
//! and byte range, checked against the file's length, so that a binding can
//! lay [`Layout`]s over the mapped file without reading its data.
//!
//! The readers are written for hostile input: every length is checked
//! before it is used, sizes are computed without overflow, and every
//! failure is a [`FileError`] that says what is wrong, with the numbers.
//! They take time and memory in proportion to the header, whatever it
//! holds: duplicate keys are found by sorting, not by comparing each key
//! with every other; safetensors' JSON is read straight into the arrays and
//! metadata it describes, never into a tree of values, so a header takes
//! at most about three times its own size in memory (its names and
//! metadata copied once, each array's fixed part); and an allocation that fails is a
//! [`FileError::OutOfMemory`], not an abort.
//!
//! Lengths, offsets and sizes are `u64`, so that a 32-bit target (wasm32)
//! describes files of 4 GiB and more exactly; [`FileArray::layout`] is
//! where they must fit the target's `usize`. Every shape is held to the
//! rule a [`Layout`] has on a 64-bit target (the product of its lengths,
//! counting 0 as 1, times the itemsize at most `i64::MAX`), so that a
//! header read on any target describes arrays a 64-bit loader can view.
//!
//! # Examples
//! ```
//! use bytelens_core::files::{read_header, Format};
//! let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
//! let mut file = (json.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(json);
//! file.extend_from_slice(&[0; 8]);
//! let header = read_header(&file, file.len() as u64)?;
//! assert_eq!(header.format, Format::Safetensors);
//! let w = &header.arrays[0];
//! assert_eq!((w.name.as_str(), w.shape.as_slice(), w.offset, w.nbytes), ("w", &[2][..], 8 + json.len() as u64, 8));
//! assert_eq!(w.layout()?.descr().to_string(), "<f4");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::{DType, Descr, Error, ErrorKind, Escaped, Layout, MAX_NDIM, QuoteStyle, Quoted};

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
    /// llama.cpp's GGUF: typed metadata, then named tensors, quantised or
    /// not.
    Gguf,
}

impl Format {
    /// The format's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Npy => "npy",
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
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
    pub shape: Vec<u64>,
    /// Fortran (column-major) order, which only `.npy` files can have.
    pub fortran: bool,
    /// Byte offset of its first element in the file.
    pub offset: u64,
    /// Its size in bytes.
    pub nbytes: u64,
    /// A GGUF tensor's ggml type, where bytelens reads it (`None` in other
    /// formats, and for ggml types bytelens lacks, which `dtype` names).
    pub ggml: Option<GgmlType>,
}

impl FileArray {
    /// The largest power of two the array's offset is a multiple of (its
    /// alignment in a file mapped at a page boundary); 2^63 at offset 0.
    ///
    /// # Examples
    /// ```
    /// # use bytelens_core::files::FileArray;
    /// let at = |offset| FileArray { name: "a".into(), dtype: "<f4".into(), descr: None, shape: vec![], fortran: false, offset, nbytes: 0, ggml: None };
    /// assert_eq!((at(96).alignment(), at(7).alignment()), (32, 1));
    /// ```
    pub fn alignment(&self) -> u64 {
        1u64 << self.offset.trailing_zeros().min(u64::BITS - 1)
    }

    /// Whether a page-aligned mapping of the file can be viewed as it
    /// without a copy: its offset is a multiple of its dtype's alignment,
    /// or it has no elements (which, as in numpy, need no alignment).
    pub fn is_aligned(&self) -> bool {
        self.access(0) == Access::View
    }

    /// How a binding can hand the array out from a mapping of the file
    /// that starts at a page boundary, where the header was read at byte
    /// `base` of the file (an `.npz` member's; 0 for a file of its own):
    /// in place, copied into aligned memory, or not at all.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Descr};
    /// use bytelens_core::files::{Access, FileArray};
    /// let f4 = Some(Descr::new(DType::F32, ByteOrder::Little));
    /// let at = |descr, offset| FileArray { name: "w".into(), dtype: "F32".into(), descr, shape: vec![2], fortran: false, offset, nbytes: 8, ggml: None };
    /// assert_eq!(at(f4, 64).access(0), Access::View);
    /// let moved = at(f4, 64).access(2);
    /// assert_eq!(moved, Access::Misaligned { offset: 66, align: 4, dtype: DType::F32 });
    /// assert_eq!(moved.to_string(), "offset 66 is not a multiple of 4, the alignment of float32");
    /// let lacking = at(None, 64).access(0);
    /// assert_eq!(lacking.to_string(), "bytelens has no dtype F32");
    /// ```
    pub fn access(&self, base: u64) -> Access {
        if let Some(ggml) = self.ggml.filter(|t| t.is_quantized()) {
            return Access::Blocks { ggml };
        }
        let Some(descr) = self.descr else {
            return Access::NoDType {
                dtype: self.dtype.clone(),
                raw: is_raw_void(&self.dtype),
            };
        };
        let offset = base.saturating_add(self.offset);
        let align = descr.dtype.align() as u64;
        if self.nbytes == 0 || offset.is_multiple_of(align) {
            Access::View
        } else {
            Access::Misaligned {
                offset,
                align,
                dtype: descr.dtype,
            }
        }
    }

    /// Its layout over the whole file: C or Fortran order, at its offset, in
    /// its byte order. Fails with `BadDType` where bytelens has no such
    /// dtype, and with `Overflow` where the array lies past what the
    /// target's `usize` and `isize` hold (on a 32-bit target, an array
    /// that reaches past 2 GiB of the file).
    pub fn layout(&self) -> Result<Layout, Error> {
        let descr = self.descr.ok_or(Error::BadDType {
            text: crate::ShortStr::new(&self.dtype),
        })?;
        let mut shape = [0usize; MAX_NDIM];
        let ndim = self.shape.len().min(MAX_NDIM);
        for (n, &k) in shape.iter_mut().zip(&self.shape) {
            *n = usize::try_from(k).map_err(|_| Error::Overflow {
                what: "the array size",
            })?;
        }
        let shape = &shape[..ndim];
        let offset =
            usize::try_from(self.offset).map_err(|_| Error::Overflow { what: "the offset" })?;
        // The layout's size rule first: past it, the strides below could
        // overflow.
        let layout = Layout::contiguous(descr.dtype, shape)?;
        let layout = if self.fortran {
            let mut strides = [0isize; MAX_NDIM];
            let mut step = descr.dtype.size();
            for (stride, &n) in strides.iter_mut().zip(shape) {
                // At most the product of the lengths counting 0 as 1 times
                // the itemsize, which fits in isize (checked above).
                *stride = step as isize;
                step = step.saturating_mul(n.max(1));
            }
            Layout::new(descr.dtype, offset, shape, &strides[..ndim])?
        } else {
            layout.with_offset(offset)?
        };
        Ok(layout.with_byte_order(descr.order))
    }
}

/// How an array of a file can be handed out from a page-aligned mapping of
/// it ([`FileArray::access`]). The text of each (its `Display`) says why,
/// with the numbers, for a binding's report or error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// A view of the mapped file, in place.
    View,
    /// Its first byte is not a multiple of the alignment its dtype needs:
    /// a view needs a copy into aligned memory.
    Misaligned {
        /// Its first byte in the file.
        offset: u64,
        /// The alignment its dtype needs.
        align: u64,
        /// Its dtype.
        dtype: DType,
    },
    /// Quantised blocks (a GGUF tensor of a quantised ggml type): a view of
    /// the mapped file as records, one per block, or dequantised.
    Blocks {
        /// The block type.
        ggml: GgmlType,
    },
    /// bytelens has no dtype for it, so there is nothing to view it as.
    NoDType {
        /// The dtype as the file spells it.
        dtype: String,
        /// It is a type string `np.save` writes for ml_dtypes' types: raw
        /// bytes (`<V2` for bfloat16, `<V1` for float8_e4m3fn) or `<f1`
        /// (float8_e5m2, whose numpy kind is `f`), which numpy reads as no
        /// such dtype: it says nothing of what they were.
        raw: bool,
    },
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::View => f.write_str("a view of the mapped file"),
            Access::Misaligned {
                offset,
                align,
                dtype,
            } => write!(
                f,
                "offset {offset} is not a multiple of {align}, the alignment of {dtype}"
            ),
            Access::Blocks { ggml } => write!(f, "{ggml} blocks, dequantised on access"),
            Access::NoDType { dtype, raw } => {
                write!(f, "bytelens has no dtype {}", Escaped(dtype))?;
                if *raw {
                    f.write_str(
                        " (np.save writes ml_dtypes' types, bfloat16 and float8 among them, as \
                         raw bytes or '<f1', and an .npy header cannot say which they were; \
                         save them to a .safetensors file)",
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// A type string `np.save` writes for an ml_dtypes type: an optional order
/// mark, then raw bytes (`V` and a size) or a one-byte float (`f1`, which
/// numpy itself has not).
fn is_raw_void(text: &str) -> bool {
    let rest = text.strip_prefix(['<', '>', '|', '=']).unwrap_or(text);
    let raw = rest
        .strip_prefix('V')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    raw || rest == "f1"
}

/// What a header says: the format, the arrays, and where the data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The format.
    pub format: Format,
    /// The format version (`.npy`: 1.0, 2.0 or 3.0; safetensors: 0.0).
    pub version: (u8, u8),
    /// Bytes before the data: the magic, lengths and the header itself.
    pub data_start: u64,
    /// The arrays, in the order the header lists them.
    pub arrays: Vec<FileArray>,
    /// safetensors' `__metadata__`, key and value, in the header's order.
    pub metadata: Metadata,
    /// GGUF's metadata, typed, in the header's order (empty in other
    /// formats).
    pub gguf: GgufMetadata,
}

/// safetensors' `__metadata__`: string keys and values, in the header's
/// order, kept in one string (a header of millions of short pairs would
/// take several times its size as a string per key and per value).
///
/// # Examples
/// ```
/// use bytelens_core::files::read_header;
/// let json = br#"{"__metadata__":{"format":"pt","note":"\u00e9"}}"#;
/// let mut file = (json.len() as u64).to_le_bytes().to_vec();
/// file.extend_from_slice(json);
/// let header = read_header(&file, file.len() as u64)?;
/// let pairs: Vec<(&str, &str)> = header.metadata.iter().collect();
/// assert_eq!(pairs, [("format", "pt"), ("note", "é")]);
/// assert_eq!((header.metadata.len(), header.metadata.get(1)), (2, Some(("note", "é"))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    /// Every key and value, one after another.
    text: String,
    // INVARIANT: each pair is (key start, value start, value end) in
    // `text`, on character boundaries, in order; the key ends where the
    // value starts. A header holds at most 100 MB, so u32 suffices.
    pairs: Vec<[u32; 3]>,
}

impl Metadata {
    /// Room for `pairs` pairs of `bytes` bytes in all, or `OutOfMemory`.
    fn with_capacity(pairs: usize, bytes: usize) -> Result<Metadata, FileError> {
        let mut text = String::new();
        text.try_reserve_exact(bytes)
            .map_err(|_| FileError::OutOfMemory {
                bytes: bytes as u64,
            })?;
        Ok(Metadata {
            text,
            pairs: vec_with(pairs)?,
        })
    }

    /// Appends a pair, growing (fallibly) past the room made for it.
    fn push(&mut self, key: &str, value: &str) -> Result<(), FileError> {
        let more = key.len() + value.len();
        self.text
            .try_reserve(more)
            .map_err(|_| FileError::OutOfMemory { bytes: more as u64 })?;
        self.pairs
            .try_reserve(1)
            .map_err(|_| FileError::OutOfMemory { bytes: 12 })?;
        let start = self.text.len();
        self.text.push_str(key);
        self.text.push_str(value);
        let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.pairs
            .push([at(start), at(start + key.len()), at(self.text.len())]);
        Ok(())
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The `i`th pair, key and value.
    pub fn get(&self, i: usize) -> Option<(&str, &str)> {
        let [start, mid, end] = self.pairs.get(i)?.map(|n| n as usize);
        Some((self.text.get(start..mid)?, self.text.get(mid..end)?))
    }

    /// The pairs, key and value, in the header's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(("", "")))
    }
}

/// Why a header could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileError {
    /// The file ends before something the header needs.
    Truncated {
        /// What was cut off.
        what: &'static str,
        /// The byte it would need to reach; `u64::MAX` where that
        /// overflows a 64-bit offset.
        need: u64,
        /// The file's length.
        len: u64,
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
        /// Its first byte; `u64::MAX` where that overflows a 64-bit offset.
        start: u64,
        /// One past its last byte; `u64::MAX` where that overflows.
        end: u64,
        /// The file's length.
        len: u64,
    },
    /// Two arrays over the same bytes.
    Overlap {
        /// One array.
        array: String,
        /// The other.
        other: String,
    },
    /// The file has no bytes at all.
    Empty,
    /// Memory for what the header describes could not be allocated.
    OutOfMemory {
        /// The bytes asked for.
        bytes: u64,
    },
}

/// Names in messages: quoted, escaped, and cut to 64 bytes of the escaped
/// text ([`QuoteStyle::Header`]).
fn quoted(name: &str) -> Quoted<'_> {
    Quoted::new(name, 64, QuoteStyle::Header)
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Truncated { what, need, len } if *need == u64::MAX => write!(
                f,
                "the file ends at byte {len}, inside {what}, whose end overflows a 64-bit offset"
            ),
            FileError::Truncated { what, need, len } => write!(
                f,
                "the file ends at byte {len}, inside {what}, which runs to byte {need}"
            ),
            FileError::Unrecognised => f.write_str(
                "not an .npy file (which starts with \\x93NUMPY), a GGUF file (which starts \
                 with GGUF) or a safetensors file (an 8-byte header length, then a JSON object)",
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
            } => {
                let array = quoted(array);
                let len = alloc::format!("past the end of the file ({len} bytes)");
                match (*start, *end) {
                    (u64::MAX, _) => write!(
                        f,
                        "array {array} starts past byte 2^64 - 1 (its offset overflows), {len}"
                    ),
                    (start, u64::MAX) => write!(
                        f,
                        "array {array} starts at byte {start} and its end overflows a 64-bit \
                         offset, {len}"
                    ),
                    (start, end) => write!(f, "array {array} lies at bytes {start}..{end}, {len}"),
                }
            }
            FileError::Overlap { array, other } => write!(
                f,
                "arrays {} and {} share bytes",
                quoted(array),
                quoted(other)
            ),
            FileError::Empty => f.write_str("the file is empty (0 bytes)"),
            FileError::OutOfMemory { bytes } => write!(
                f,
                "reading the header ran out of memory (an allocation of {bytes} bytes failed)"
            ),
        }
    }
}

impl core::error::Error for FileError {}

impl FileError {
    /// The error's kind: [`ErrorKind::OutOfMemory`] where memory ran out,
    /// else [`ErrorKind::Format`].
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ErrorKind, files::read_header};
    /// assert_eq!(read_header(b"", 0).unwrap_err().kind(), ErrorKind::Format);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            FileError::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            _ => ErrorKind::Format,
        }
    }

    /// Where the only trouble is that the `have` bytes given to
    /// [`read_header`] end inside the header of a file long enough to hold
    /// it: how many bytes to read and pass instead. `None` for every other
    /// error, a file cut short included.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::read_header;
    /// let json = br#"{"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#;
    /// let mut file = (json.len() as u64).to_le_bytes().to_vec();
    /// file.extend_from_slice(json);
    /// file.extend_from_slice(&[0; 2]);
    /// let err = read_header(&file[..16], file.len() as u64).unwrap_err();
    /// assert_eq!(err.more_needed(16), Some(8 + json.len() as u64));
    /// let cut = &file[..20];
    /// assert_eq!(read_header(cut, 20).unwrap_err().more_needed(20), None);
    /// ```
    pub fn more_needed(&self, have: usize) -> Option<u64> {
        match *self {
            FileError::Truncated { need, len, .. } if need > have as u64 && need <= len => {
                Some(need)
            }
            _ => None,
        }
    }
}

fn bad(array: &str, detail: impl ToString) -> FileError {
    FileError::BadEntry {
        array: array.into(),
        detail: detail.to_string(),
    }
}

/// An empty vector with room for exactly `n` items, or `OutOfMemory`.
fn vec_with<T>(n: usize) -> Result<Vec<T>, FileError> {
    let mut items = Vec::new();
    items
        .try_reserve_exact(n)
        .map_err(|_| FileError::OutOfMemory {
            bytes: (n as u64).saturating_mul(core::mem::size_of::<T>() as u64),
        })?;
    Ok(items)
}

/// `text` in a string of its own, or `OutOfMemory`.
fn owned(text: &str) -> Result<String, FileError> {
    let mut s = String::new();
    s.try_reserve_exact(text.len())
        .map_err(|_| FileError::OutOfMemory {
            bytes: text.len() as u64,
        })?;
    s.push_str(text);
    Ok(s)
}

/// The first (in sorted order) of two equal keys among the `n` that
/// `key` gives, found by sorting their indices (`order` is scratch space
/// for the sort, grown fallibly). Time O(n log n), memory 4 bytes a key.
fn first_repeated<'k>(
    n: usize,
    key: impl Fn(usize) -> &'k str,
    order: &mut Vec<u32>,
) -> Result<Option<&'k str>, FileError> {
    order.clear();
    order
        .try_reserve_exact(n)
        .map_err(|_| FileError::OutOfMemory {
            bytes: 4 * n as u64,
        })?;
    order.extend(0..n as u32); // n < 2^32: each key takes bytes of a 100 MB header
    order.sort_unstable_by_key(|&i| key(i as usize));
    let found = order
        .windows(2)
        .find(|w| key(w[0] as usize) == key(w[1] as usize))
        .map(|w| key(w[0] as usize));
    order.clear();
    Ok(found)
}

/// Reads the header of an `.npy`, GGUF or safetensors file from `bytes`, its
/// first bytes (the whole file, or at least its header), given the file's
/// length `len`. `Truncated` means either the file is cut short or `bytes`
/// holds less than the header: [`FileError::more_needed`] tells which, and
/// how many bytes to pass.
pub fn read_header(bytes: &[u8], len: u64) -> Result<FileHeader, FileError> {
    if bytes.is_empty() {
        // Not "inside the npy magic": nothing says which format it is.
        return Err(match len {
            0 => FileError::Empty,
            len => FileError::Truncated {
                what: "the first bytes, which say the format",
                need: len.min(10),
                len,
            },
        });
    }
    if bytes.starts_with(NPY_MAGIC) {
        read_npy(bytes, len)
    } else if bytes.starts_with(GGUF_MAGIC) {
        read_gguf(bytes, len)
    } else if bytes.len() >= 9 && bytes[8] == b'{' {
        read_safetensors(bytes, len)
    } else if bytes.len() < 9 && NPY_MAGIC.starts_with(bytes) {
        Err(FileError::Truncated {
            what: "the npy magic",
            need: 10,
            len,
        })
    } else if bytes.len() < 4 && GGUF_MAGIC.starts_with(bytes) {
        Err(FileError::Truncated {
            what: "the GGUF magic",
            need: 4,
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
    len: u64,
    what: &'static str,
) -> Result<&'b [u8], FileError> {
    // u64::MAX where it overflows, which `Truncated`'s message says.
    let end = (start as u64).saturating_add(n);
    usize::try_from(end)
        .ok()
        .and_then(|end| bytes.get(start..end))
        .ok_or(FileError::Truncated {
            what,
            need: end,
            len: len.max(bytes.len() as u64),
        })
}

/// The most bytes an array may span, and the longest axis it may have: a
/// 64-bit target's `isize::MAX`, the bound of a [`Layout`] there.
const MAX_BYTES: u64 = i64::MAX as u64;

/// The bytes of `shape` in `dtype`, or an error naming `array`: the
/// [`Layout`] rule (the product of the lengths, counting 0 as 1, times the
/// itemsize, at most `MAX_BYTES`), so that an array with a 0 in its shape
/// cannot hide a length no layout holds.
fn size_of(array: &str, shape: &[u64], itemsize: usize) -> Result<u64, FileError> {
    if shape.len() > MAX_NDIM {
        return Err(bad(
            array,
            alloc::format!("has {} dimensions, more than {MAX_NDIM}", shape.len()),
        ));
    }
    if let Some(&n) = shape.iter().find(|&&n| n > MAX_BYTES) {
        return Err(bad(
            array,
            alloc::format!("has the length {n}, more than the {MAX_BYTES} an axis can hold"),
        ));
    }
    let mut bound = itemsize as u64;
    let mut nbytes = itemsize as u64;
    for &n in shape {
        bound = bound
            .checked_mul(n.max(1))
            .filter(|&b| b <= MAX_BYTES)
            .ok_or_else(|| {
                bad(
                    array,
                    alloc::format!(
                        "has the shape {}, whose size does not fit in memory ({itemsize} \
                         {} times its lengths, a 0 counted as 1, is more than {MAX_BYTES})",
                        Shape(shape),
                        if itemsize == 1 { "byte" } else { "bytes" }
                    ),
                )
            })?;
        nbytes *= n; // at most `bound`
    }
    Ok(nbytes)
}

/// A shape as numpy prints it: `(2, 3)`, `(5,)`, `()`.
struct Shape<'s>(&'s [u64]);

impl fmt::Display for Shape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        f.write_str(if self.0.len() == 1 { ",)" } else { ")" })
    }
}

pub mod dequant;
mod ggml;
mod gguf;
mod npy;
mod safetensors;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_gguf;
pub mod wgsl;

pub use ggml::{BlockField, GgmlInfo, GgmlType, other_ggml_type};
pub use gguf::{
    DEFAULT_ALIGNMENT, GGUF_MAGIC, GgufEntry, GgufMetadata, GgufValue, MAX_GGUF_DIMS, ValueType,
    read_gguf,
};
pub use npy::read_npy;
pub use safetensors::read_safetensors;
