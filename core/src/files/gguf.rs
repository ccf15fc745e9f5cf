//! GGUF, llama.cpp's model files (versions 2 and 3, little-endian): a
//! header of typed metadata key/values and tensor infos, then the tensors'
//! data, each at an offset that is a multiple of `general.alignment`.
//!
//! The metadata is not turned into a tree of values: each key is kept with
//! its type and where its value's bytes lie in the header, and
//! [`GgufEntry::value`] decodes a value from those bytes when asked, so
//! that a vocabulary of 128k strings costs one pass to check (every length
//! inside the header, every string UTF-8) and nothing more until it is
//! read. A header takes time in proportion to its size and, in memory,
//! its keys and tensor names once plus about 40 bytes a key and 130 a
//! tensor (an entry of the file takes at least 13 and 24 bytes).
#![forbid(unsafe_code)]

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::ggml::{GgmlType, other_ggml_type};
use super::{
    FileArray, FileError, FileHeader, Format, MAX_HEADER, Metadata, bad, first_repeated, owned,
    quoted, size_of, vec_with,
};
use crate::{ByteOrder, Descr};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// The alignment of the tensor data where `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// The most dimensions a GGUF tensor has (ggml's `GGML_MAX_DIMS`).
pub const MAX_GGUF_DIMS: usize = 4;

/// The type of a GGUF metadata value (an array's elements have one too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // one variant per GGUF value type, named after it
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    const ALL: [ValueType; 13] = [
        ValueType::U8,
        ValueType::I8,
        ValueType::U16,
        ValueType::I16,
        ValueType::U32,
        ValueType::I32,
        ValueType::F32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
    ];

    /// The type GGUF codes as `code` (0 for uint8 to 12 for float64).
    pub fn from_code(code: u32) -> Option<ValueType> {
        ValueType::ALL.get(code as usize).copied()
    }

    /// Its code in a GGUF file.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Bytes per value, for the fixed-size types.
    pub fn size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// Its name, as numpy names the fixed-size types (`"uint8"`, `"float32"`).
    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            U32 => "uint32",
            I32 => "int32",
            F32 => "float32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "uint64",
            I64 => "int64",
            F64 => "float64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One metadata key of a GGUF header: its type and where its value lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgufEntry<'m> {
    /// The key (`"general.architecture"`).
    pub key: &'m str,
    /// The value's type; for an array, its elements' type.
    pub kind: ValueType,
    /// Whether the value is an array of `kind`.
    pub array: bool,
    /// The number of values (1 for a single value).
    pub count: u64,
    /// The byte of the file where the value starts: a string's first byte
    /// (after its length), an array's first element (after its type and
    /// count).
    pub offset: u64,
    /// The value's bytes (a string's without its length; an array of
    /// strings' with each string's length).
    pub nbytes: u64,
}

/// A GGUF metadata value, decoded by [`GgufEntry::value`] from the
/// header's bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GgufValue<'b> {
    /// An unsigned integer of any width.
    UInt(u64),
    /// A signed integer of any width.
    Int(i64),
    /// A float32 or float64 (float32 widened exactly).
    Float(f64),
    /// A bool (any non-zero byte is true).
    Bool(bool),
    /// A string.
    Str(&'b str),
    /// An array: `count` values of `kind`, over `bytes`, little-endian (an
    /// array of strings: each a u64 length, then its UTF-8 bytes, checked).
    Array {
        /// The elements' type.
        kind: ValueType,
        /// The number of elements.
        count: u64,
        /// Their bytes.
        bytes: &'b [u8],
    },
}

impl<'b> GgufValue<'b> {
    /// The strings of an array of strings (nothing for any other value).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::{GgufValue, ValueType};
    /// let bytes = [1, 0, 0, 0, 0, 0, 0, 0, b'a', 2, 0, 0, 0, 0, 0, 0, 0, b'b', b'c'];
    /// let tokens = GgufValue::Array { kind: ValueType::String, count: 2, bytes: &bytes };
    /// assert_eq!(tokens.strings().collect::<Vec<_>>(), ["a", "bc"]);
    /// ```
    pub fn strings(&self) -> impl Iterator<Item = &'b str> + 'b {
        let (count, mut rest) = match *self {
            GgufValue::Array {
                kind: ValueType::String,
                count,
                bytes,
            } => (count, bytes),
            _ => (0, &[][..]),
        };
        (0..count).map_while(move |_| {
            let (n, tail) = rest.split_first_chunk::<8>()?;
            let n = usize::try_from(u64::from_le_bytes(*n)).ok()?;
            let (text, tail) = tail.split_at_checked(n)?;
            rest = tail;
            core::str::from_utf8(text).ok()
        })
    }

    /// A single integer value (of any width) as an `i128`; `None` for any
    /// other value.
    pub fn as_int(&self) -> Option<i128> {
        match *self {
            GgufValue::UInt(n) => Some(n.into()),
            GgufValue::Int(n) => Some(n.into()),
            _ => None,
        }
    }
}

/// The metadata of a GGUF header, in file order: each key kept once in
/// one string, each value where it lies in the file.
///
/// # Examples
/// ```
/// use bytelens_core::files::{GgufValue, read_header};
/// let mut file = b"GGUF".to_vec();
/// file.extend(3u32.to_le_bytes()); // version
/// file.extend(0u64.to_le_bytes()); // tensors
/// file.extend(1u64.to_le_bytes()); // keys
/// file.extend(4u64.to_le_bytes());
/// file.extend(b"name");
/// file.extend(8u32.to_le_bytes()); // a string
/// file.extend(2u64.to_le_bytes());
/// file.extend(b"hi");
/// let header = read_header(&file, file.len() as u64)?;
/// let entry = header.gguf.get(0).unwrap();
/// assert_eq!((entry.key, entry.value(&file)), ("name", Some(GgufValue::Str("hi"))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GgufMetadata {
    keys: String,
    // INVARIANT: `key` is a range of `keys` on character boundaries.
    entries: Vec<Entry>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    key: [u32; 2],
    kind: ValueType,
    array: bool,
    count: u64,
    offset: u64,
    nbytes: u64,
}

impl GgufMetadata {
    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (always, for a file other than GGUF).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `i`th key, in file order.
    pub fn get(&self, i: usize) -> Option<GgufEntry<'_>> {
        let entry = self.entries.get(i)?;
        let [start, end] = entry.key.map(|n| n as usize);
        Some(GgufEntry {
            key: self.keys.get(start..end)?,
            kind: entry.kind,
            array: entry.array,
            count: entry.count,
            offset: entry.offset,
            nbytes: entry.nbytes,
        })
    }

    /// The keys, in file order.
    pub fn iter(&self) -> impl Iterator<Item = GgufEntry<'_>> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The entry of `key`, if the header has it.
    pub fn find(&self, key: &str) -> Option<GgufEntry<'_>> {
        self.iter().find(|e| e.key == key)
    }
}

impl GgufEntry<'_> {
    /// The value, decoded from `file` (at least the file's header: the
    /// bytes the header was read from). `None` where `file` does not hold
    /// it.
    pub fn value<'b>(&self, file: &'b [u8]) -> Option<GgufValue<'b>> {
        let start = usize::try_from(self.offset).ok()?;
        let end = start.checked_add(usize::try_from(self.nbytes).ok()?)?;
        let bytes = file.get(start..end)?;
        if self.array {
            return Some(GgufValue::Array {
                kind: self.kind,
                count: self.count,
                bytes,
            });
        }
        scalar(self.kind, bytes)
    }
}

/// One value of a fixed-size type, or a string, from its bytes.
fn scalar(kind: ValueType, bytes: &[u8]) -> Option<GgufValue<'_>> {
    use ValueType::*;
    let word = |n: usize| -> Option<u64> {
        let mut le = [0u8; 8];
        le.get_mut(..n)?.copy_from_slice(bytes.get(..n)?);
        Some(u64::from_le_bytes(le))
    };
    let signed = |n: usize| -> Option<i64> {
        let shift = 64 - 8 * n as u32;
        Some(((word(n)? << shift) as i64) >> shift)
    };
    Some(match kind {
        U8 => GgufValue::UInt(word(1)?),
        U16 => GgufValue::UInt(word(2)?),
        U32 => GgufValue::UInt(word(4)?),
        U64 => GgufValue::UInt(word(8)?),
        I8 => GgufValue::Int(signed(1)?),
        I16 => GgufValue::Int(signed(2)?),
        I32 => GgufValue::Int(signed(4)?),
        I64 => GgufValue::Int(signed(8)?),
        F32 => GgufValue::Float(f32::from_bits(word(4)? as u32).into()),
        F64 => GgufValue::Float(f64::from_bits(word(8)?)),
        Bool => GgufValue::Bool(word(1)? != 0),
        String => GgufValue::Str(core::str::from_utf8(bytes).ok()?),
        Array => return None,
    })
}

/// The least bytes a metadata key/value takes (a key's length, a type, a
/// one-byte value) and a tensor info (a name's length, a dimension count,
/// a type, an offset).
const MIN_KEY_VALUE: u64 = 8 + 4 + 1;
const MIN_TENSOR_INFO: u64 = 8 + 4 + 4 + 8;

/// The header's bytes, read front to back.
struct Reader<'b> {
    bytes: &'b [u8],
    pos: usize,
    len: u64,
}

impl<'b> Reader<'b> {
    /// The next `n` bytes. A header that would run past [`MAX_HEADER`] is
    /// `HeaderTooLarge`, before anything is read.
    fn take(&mut self, n: u64, what: &'static str) -> Result<&'b [u8], FileError> {
        // u64::MAX where it overflows, which `Truncated`'s message says.
        let end = (self.pos as u64).saturating_add(n);
        if end > MAX_HEADER as u64 && end <= self.len {
            return Err(FileError::HeaderTooLarge { len: end });
        }
        let part = super::take(self.bytes, self.pos, n, self.len, what)?;
        self.pos += part.len();
        Ok(part)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, FileError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, FileError> {
        let b = self.take(8, what)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(b);
        Ok(u64::from_le_bytes(le))
    }

    /// A GGUF string (a u64 length, then UTF-8): the text and the byte it
    /// starts at. `owner` names the key it is the value of in errors (`""`
    /// for a key or tensor name itself, which `what` names).
    fn string(&mut self, what: &'static str, owner: &str) -> Result<(&'b str, u64), FileError> {
        let n = self.u64(what)?;
        let at = self.pos as u64;
        let text = self.take(n, what)?;
        let text = core::str::from_utf8(text).map_err(|err| {
            let byte = at + err.valid_up_to() as u64;
            let whose = if owner.is_empty() {
                String::from(what)
            } else {
                alloc::format!("the value of {}", quoted(owner))
            };
            bad(
                "",
                alloc::format!("holds {whose} that is not UTF-8 (byte {byte})"),
            )
        })?;
        Ok((text, at))
    }

    /// The bytes left in the file after the current position.
    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos as u64)
    }
}

/// Reads a GGUF header (version 2 or 3) from `bytes`, the file's first
/// bytes, given the file's length `len`. Where `bytes` ends inside the
/// header, the `Truncated` error asks ([`FileError::more_needed`]) for at
/// least four times as many bytes, so that a header of any size is read in
/// a few passes (a 3 MB vocabulary in four from 64 KiB: about 1.5 times its
/// bytes parsed in all, where doubling parsed twice them in seven).
///
/// A big-endian GGUF file (every field byte-swapped, the version reading
/// as `0x03000000`) is refused with a message that says so: bytelens'
/// views are of little-endian data, and such files are rare.
pub fn read_gguf(bytes: &[u8], len: u64) -> Result<FileHeader, FileError> {
    read(bytes, len).map_err(|err| match err {
        FileError::Truncated { what, need, len } if need > bytes.len() as u64 && need <= len => {
            let more = (bytes.len() as u64).saturating_mul(4).min(len);
            FileError::Truncated {
                what,
                need: need.max(more),
                len,
            }
        }
        other => other,
    })
}

fn read(bytes: &[u8], len: u64) -> Result<FileHeader, FileError> {
    let mut r = Reader { bytes, pos: 0, len };
    if r.take(4, "the GGUF magic")? != GGUF_MAGIC {
        return Err(FileError::Unrecognised);
    }
    let version = r.u32("the GGUF version")?;
    if !matches!(version, 2 | 3) {
        let detail = if matches!(version.swap_bytes(), 1..=3) {
            alloc::format!(
                "is a big-endian GGUF file (version {} with its bytes swapped), which bytelens \
                 does not read: convert it with gguf-py's gguf_convert_endian",
                version.swap_bytes()
            )
        } else {
            alloc::format!("gives GGUF version {version}; bytelens reads versions 2 and 3")
        };
        return Err(bad("", detail));
    }
    let n_tensors = r.u64("the tensor count")?;
    let n_kv = r.u64("the metadata key count")?;
    let n_kv = count(n_kv, MIN_KEY_VALUE, r.left(), "metadata keys")?;
    let n_tensors = count(n_tensors, MIN_TENSOR_INFO, r.left(), "tensors")?;

    let gguf = read_metadata(&mut r, n_kv)?;
    let alignment = alignment(&gguf, bytes)?;

    // Tensor infos: read in full (each array's offset, for now, relative
    // to the data section), then checked against the data section.
    let mut arrays = vec_with::<FileArray>(n_tensors.min(r.left() as usize / 24))?;
    for _ in 0..n_tensors {
        arrays.try_reserve(1).map_err(|_| FileError::OutOfMemory {
            bytes: core::mem::size_of::<FileArray>() as u64,
        })?;
        arrays.push(read_tensor_info(&mut r)?);
    }
    let end = r.pos as u64;
    let data_start = end
        .checked_next_multiple_of(alignment)
        .filter(|&start| start <= len || n_tensors == 0)
        .ok_or(FileError::Truncated {
            what: "the padding before the tensor data",
            need: end.saturating_add(alignment),
            len,
        })?;

    let mut order = Vec::new();
    if let Some(name) = first_repeated(arrays.len(), |i| arrays[i].name.as_str(), &mut order)? {
        return Err(bad(
            "",
            alloc::format!("names the tensor {} twice", quoted(name)),
        ));
    }
    for array in &mut arrays {
        let relative = array.offset;
        if !relative.is_multiple_of(alignment) {
            return Err(bad(
                &array.name,
                alloc::format!(
                    "starts at byte {relative} of the tensor data, not a multiple of the file's \
                     alignment, {alignment}"
                ),
            ));
        }
        let Some(start) = data_start.checked_add(relative) else {
            return Err(bad(
                &array.name,
                alloc::format!(
                    "starts at byte {relative} of the tensor data, which itself starts at byte \
                     {data_start}: past 2^64 bytes, and the file has {len}"
                ),
            ));
        };
        array.offset = start;
        // u64::MAX where it overflows, which `OutsideFile`'s message says.
        let end = start.saturating_add(array.nbytes);
        // A tensor of a type ggml has not got has an unknown size (0
        // here), but one with elements has at least a byte of data.
        let unknown = array.ggml.is_none() && array.descr.is_none() && array.nbytes == 0;
        if unknown && array.shape.iter().all(|&n| n > 0) && start >= len {
            return Err(bad(
                &array.name,
                alloc::format!(
                    "of {}, which bytelens does not know, has elements but starts at byte \
                     {start}, and the file ends at byte {len}",
                    array.dtype
                ),
            ));
        }
        if end > len {
            return Err(FileError::OutsideFile {
                array: core::mem::take(&mut array.name),
                start: array.offset,
                end,
                len,
            });
        }
    }
    // No two tensors over the same bytes: sorted by offset, each ends where
    // (or before) the next starts.
    order.clear();
    order.extend(0..arrays.len() as u32);
    order.sort_unstable_by_key(|&i| arrays[i as usize].offset);
    let spans = order
        .iter()
        .map(|&i| &arrays[i as usize])
        .filter(|a| a.nbytes > 0);
    let mut last: Option<&FileArray> = None;
    for array in spans {
        if let Some(prev) = last
            && prev.offset + prev.nbytes > array.offset
        {
            return Err(FileError::Overlap {
                array: prev.name.clone(),
                other: array.name.clone(),
            });
        }
        last = Some(array);
    }
    Ok(FileHeader {
        format: Format::Gguf,
        version: (version as u8, 0),
        data_start,
        arrays,
        metadata: Metadata::default(),
        gguf,
    })
}

/// A count of entries that each take at least `min` bytes, checked against
/// the `left` bytes of the file and the header's limit.
fn count(n: u64, min: u64, left: u64, what: &str) -> Result<usize, FileError> {
    let Some(need) = n.checked_mul(min) else {
        return Err(bad(
            "",
            alloc::format!(
                "says it holds {n} {what}, which take at least {min} bytes each: more than \
                 2^64 bytes in all, and the file has {left} left"
            ),
        ));
    };
    if need > left {
        return Err(bad(
            "",
            alloc::format!(
                "says it holds {n} {what}, which take at least {need} bytes, more than the \
                 {left} left in the file"
            ),
        ));
    }
    if need > MAX_HEADER as u64 {
        return Err(FileError::HeaderTooLarge { len: need });
    }
    Ok(n as usize) // at most MAX_HEADER
}

fn read_metadata(r: &mut Reader<'_>, n_kv: usize) -> Result<GgufMetadata, FileError> {
    let mut meta = GgufMetadata {
        keys: String::new(),
        entries: vec_with(n_kv)?,
    };
    for _ in 0..n_kv {
        let (key, _) = r.string("a metadata key", "")?;
        let code = r.u32("a metadata value's type")?;
        let mut kind = value_type(code, key)?;
        let mut array = false;
        let mut count = 1;
        if kind == ValueType::Array {
            array = true;
            kind = value_type(r.u32("an array's element type")?, key)?;
            if kind == ValueType::Array {
                return Err(bad(
                    "",
                    alloc::format!(
                        "gives {} an array of arrays, which GGUF readers refuse",
                        quoted(key)
                    ),
                ));
            }
            count = r.u64("an array's length")?;
            let min = kind.size().unwrap_or(8) as u64;
            if count.saturating_mul(min) > r.left() {
                return Err(bad(
                    "",
                    alloc::format!(
                        "gives {} an array of {count} {kind} values, more than the {} bytes \
                         left in the file hold",
                        quoted(key),
                        r.left()
                    ),
                ));
            }
        }
        let offset = r.pos as u64;
        match kind.size() {
            Some(size) => {
                r.take(count * size as u64, "a metadata value")?;
            }
            None if !array => {
                let (_, at) = r.string("a metadata value", key)?;
                meta.push(key, kind, false, 1, at, r.pos as u64 - at)?;
                continue;
            }
            None => {
                for _ in 0..count {
                    r.string("a string of an array", key)?;
                }
            }
        }
        meta.push(key, kind, array, count, offset, r.pos as u64 - offset)?;
    }
    let mut order = Vec::new();
    let repeated = first_repeated(meta.len(), |i| meta.key(i), &mut order)?;
    if let Some(key) = repeated {
        return Err(FileError::DuplicateKey {
            key: key.to_string(),
        });
    }
    Ok(meta)
}

impl GgufMetadata {
    fn push(
        &mut self,
        key: &str,
        kind: ValueType,
        array: bool,
        count: u64,
        offset: u64,
        nbytes: u64,
    ) -> Result<(), FileError> {
        self.keys
            .try_reserve(key.len())
            .map_err(|_| FileError::OutOfMemory {
                bytes: key.len() as u64,
            })?;
        self.entries
            .try_reserve(1)
            .map_err(|_| FileError::OutOfMemory { bytes: 40 })?;
        let start = self.keys.len() as u32; // within a 100 MB header
        self.keys.push_str(key);
        self.entries.push(Entry {
            key: [start, self.keys.len() as u32],
            kind,
            array,
            count,
            offset,
            nbytes,
        });
        Ok(())
    }

    fn key(&self, i: usize) -> &str {
        let [start, end] = self.entries[i].key.map(|n| n as usize);
        &self.keys[start..end]
    }
}

fn value_type(code: u32, key: &str) -> Result<ValueType, FileError> {
    ValueType::from_code(code).ok_or_else(|| {
        bad(
            "",
            alloc::format!(
                "gives {} the value type {code}, which GGUF does not have (0 to 12)",
                quoted(key)
            ),
        )
    })
}

/// `general.alignment`: a uint32 (as GGUF says, and gguf-py and llama.cpp
/// refuse any other type) and a power of two, or 32 where the header has
/// none.
fn alignment(meta: &GgufMetadata, bytes: &[u8]) -> Result<u64, FileError> {
    let Some(entry) = meta.find("general.alignment") else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    if entry.array || entry.kind != ValueType::U32 {
        let kind = match (entry.array, entry.kind.name()) {
            (true, name) => alloc::format!("an array of {name}"),
            (false, name) if name.starts_with('i') => alloc::format!("an {name} value"),
            (false, name) => alloc::format!("a {name} value"),
        };
        return Err(bad(
            "",
            alloc::format!(
                "gives general.alignment {kind}, where GGUF's type for it is uint32 (gguf-py \
                 and llama.cpp refuse the file)"
            ),
        ));
    }
    match entry.value(bytes).and_then(|v| v.as_int()) {
        Some(n) if n > 0 && (n as u128).is_power_of_two() => Ok(n as u64),
        value => Err(bad(
            "",
            alloc::format!(
                "gives general.alignment {}, where a power of two is needed",
                value.unwrap_or(0)
            ),
        )),
    }
}

/// One tensor info: the array, its offset (for now) relative to the data
/// section.
fn read_tensor_info(r: &mut Reader<'_>) -> Result<FileArray, FileError> {
    let (name, _) = r.string("a tensor name", "")?;
    let ndim = r.u32("a tensor's dimension count")?;
    if ndim as usize > MAX_GGUF_DIMS {
        return Err(bad(
            name,
            alloc::format!("has {ndim} dimensions, more than the {MAX_GGUF_DIMS} GGUF allows"),
        ));
    }
    let mut dims = [0u64; MAX_GGUF_DIMS];
    for dim in &mut dims[..ndim as usize] {
        *dim = r.u64("a tensor's dimensions")?;
    }
    let dims = &dims[..ndim as usize];
    let code = r.u32("a tensor's type")?;
    let relative = r.u64("a tensor's offset")?;
    // numpy's order: outermost first.
    let mut shape: Vec<u64> = vec_with(dims.len())?;
    shape.extend(dims.iter().rev());
    let ggml = GgmlType::from_code(code);
    let (dtype, block, bytes) = match (ggml, other_ggml_type(code)) {
        (Some(t), _) => (owned(t.name())?, t.info().block, t.info().bytes),
        (None, Some((name, block, bytes))) => (owned(name)?, block, bytes),
        (None, None) => (alloc::format!("ggml type {code}"), 0, 0),
    };
    let nbytes = if block == 0 {
        // A type ggml has not got: its size is unknown (0 here), and it is
        // never read; its shape is held to the rule of any other's, at a
        // byte an element, and its data to starting inside the file.
        size_of(name, &shape, 1)?;
        0
    } else {
        tensor_bytes(name, &shape, block, bytes, &dtype)?
    };
    let descr = ggml
        .and_then(|t| t.info().dtype)
        .map(|d| Descr::new(d, ByteOrder::Little));
    Ok(FileArray {
        name: owned(name)?,
        dtype,
        descr,
        shape,
        fortran: false,
        offset: relative,
        nbytes,
        ggml,
    })
}

/// The bytes of a tensor of `shape` (numpy order) in blocks of `block`
/// elements and `bytes` bytes, its rows (innermost axis) a whole number
/// of blocks; held to the layout rule both as blocks and as float32
/// elements (what it dequantises to).
fn tensor_bytes(
    name: &str,
    shape: &[u64],
    block: u32,
    bytes: u32,
    dtype: &str,
) -> Result<u64, FileError> {
    let row = shape.last().copied().unwrap_or(1);
    if !row.is_multiple_of(block.into()) {
        return Err(bad(
            name,
            alloc::format!(
                "has rows of {row} elements, not a multiple of {dtype}'s block of {block}"
            ),
        ));
    }
    size_of(name, shape, 4)?;
    // The shape in blocks, in place of a vector (no allocation a tensor).
    let mut blocks = [1u64; MAX_GGUF_DIMS];
    let ndim = shape.len().clamp(1, MAX_GGUF_DIMS);
    blocks[..shape.len().min(MAX_GGUF_DIMS)]
        .copy_from_slice(&shape[..shape.len().min(MAX_GGUF_DIMS)]);
    blocks[ndim - 1] = row / u64::from(block);
    size_of(name, &blocks[..ndim], bytes as usize)
}
