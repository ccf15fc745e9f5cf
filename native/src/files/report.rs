//! What [`inspect`](super::inspect) reports: a [`Report`] of a file's
//! [`ArrayInfo`]s and metadata ([`MetaValue`]), whose `Display` is the
//! text `bytelens inspect FILE` prints.

use std::fmt;

use super::text::{np_float32, printable, py_float, short, thousands};
use super::{Access, FileHeader, GgmlType, GgufValue, ValueType};
use crate::Descr;

/// Why a compressed `.npz` member is copied ([`ArrayInfo::copy`]).
pub const COMPRESSED: &str = "the member is compressed";
/// What an array copied into aligned memory is under `MapMode::ReadWrite`,
/// after why it is copied.
pub(crate) const READ_ONLY_UNDER_R_PLUS: &str = "; read-only under r+";

/// One array of a file, as [`inspect`](super::inspect) reports it (the
/// Python package's `ArrayInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayInfo {
    /// Its name (an `.npy` file's one array is `"array"`; an `.npz`
    /// member's, its file name without `.npy`).
    pub name: String,
    /// The dtype as the file spells it (`"<f4"`, `"BF16"`, `"Q4_K"`).
    pub dtype: String,
    /// bytelens's dtype and byte order, or `None` where bytelens has none.
    pub descr: Option<Descr>,
    /// Its shape, in numpy's order.
    pub shape: Vec<u64>,
    /// Byte strides of its view; `None` without a `descr`.
    pub strides: Option<Vec<i64>>,
    /// Byte offset of the first element in the file (in the decompressed
    /// member, for a compressed `.npz` member; in its shard, for a sharded
    /// checkpoint's tensor).
    pub offset: u64,
    /// Its size in bytes.
    pub nbytes: u64,
    /// Why [`load`](super::load) copies it rather than viewing the
    /// mapped file; `None` for a view in place.
    pub copy: Option<String>,
    /// The `.npz` member (file name in the zip) that holds it.
    pub member: Option<String>,
    /// Why `load` cannot hand it out at all (a dtype bytelens lacks).
    pub unavailable: Option<String>,
    /// The shard (a file beside the index) that holds it.
    pub shard: Option<String>,
    /// A GGUF tensor's quantised block type.
    pub ggml: Option<GgmlType>,
    /// The bytes its elements lie in, `(start, end)`, as the core's
    /// [`Layout::byte_span`](crate::Layout::byte_span) gives them; `None`
    /// for `(offset, offset + nbytes)`, which is what a file's arrays (C
    /// or Fortran order) cover. A raw view with a negative stride starts
    /// below its offset, and one with a zero stride covers fewer than
    /// `nbytes` bytes.
    pub span: Option<(u64, u64)>,
}

impl ArrayInfo {
    /// The arrays of `header`, read at byte `base` of the file; `name`
    /// names the one array of an `.npz` `member`.
    pub(crate) fn from_header(
        header: &FileHeader,
        base: u64,
        name: Option<&str>,
        member: Option<&str>,
    ) -> Vec<ArrayInfo> {
        let mut out = Vec::with_capacity(header.arrays.len());
        for a in &header.arrays {
            let access = a.access(base);
            let (mut copy, mut unavailable, mut ggml) = (None, None, None);
            match &access {
                Access::View => {}
                Access::Misaligned { .. } => {
                    copy = Some(format!("{access}{READ_ONLY_UNDER_R_PLUS}"));
                }
                Access::Blocks { ggml: t } => ggml = Some(*t),
                Access::NoDType { .. } => unavailable = Some(access.to_string()),
            }
            let strides = a
                .layout()
                .ok()
                .map(|l| l.strides().iter().map(|&s| s as i64).collect());
            out.push(ArrayInfo {
                name: name.unwrap_or(&a.name).to_owned(),
                dtype: a.dtype.clone(),
                descr: a.descr,
                shape: a.shape.clone(),
                strides,
                offset: base + a.offset,
                nbytes: a.nbytes,
                copy,
                member: member.map(str::to_owned),
                unavailable,
                shard: None,
                ggml,
                span: None,
            });
        }
        out
    }

    /// The number of blocks of a quantised tensor (0 for other arrays).
    pub fn blocks(&self) -> u64 {
        match self.ggml {
            Some(t) if t.info().bytes > 0 => self.nbytes / u64::from(t.info().bytes),
            _ => 0,
        }
    }

    /// The first byte any element covers.
    pub fn start(&self) -> u64 {
        self.span.map_or(self.offset, |(start, _)| start)
    }

    /// The byte after the last one any element covers.
    pub fn end(&self) -> u64 {
        self.span.map_or(self.offset + self.nbytes, |(_, end)| end)
    }

    /// The largest power of two the offset is a multiple of (2^63 at 0).
    pub fn alignment(&self) -> u64 {
        1u64 << self.offset.trailing_zeros().min(63)
    }
}

/// Strings kept end to end in one `String`, with where each ends: a
/// GGUF vocabulary of 128k tokens is two allocations, not 128k.
///
/// # Examples
/// ```
/// use bytelens::files::Strings;
/// let tokens: Strings = ["<s>", "", "h\u{e9}"].into_iter().collect();
/// assert_eq!((tokens.len(), tokens.get(2)), (3, Some("h\u{e9}")));
/// assert_eq!(tokens.iter().collect::<Vec<_>>(), ["<s>", "", "h\u{e9}"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strings {
    text: String,
    ends: Vec<usize>,
}

impl Strings {
    /// How many strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th string.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }

    /// Each string, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(""))
    }

    /// Adds `s` at the end.
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }
}

impl<'a> FromIterator<&'a str> for Strings {
    fn from_iter<I: IntoIterator<Item = &'a str>>(items: I) -> Strings {
        let mut out = Strings::default();
        for s in items {
            out.push(s);
        }
        out
    }
}

/// A value of a file's metadata: safetensors' `__metadata__` holds
/// strings; GGUF's key/values any of these.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    /// A string.
    Str(String),
    /// An unsigned integer.
    UInt(u64),
    /// A signed integer.
    Int(i64),
    /// A float32 (widened exactly) or float64.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// An array of strings (GGUF's token lists: 100,000s of short ones,
    /// held in one allocation).
    Strings(Strings),
    /// An array of numbers or bools: `count` values of `kind`,
    /// little-endian, in `bytes`.
    Array {
        /// The elements' type.
        kind: ValueType,
        /// How many.
        count: u64,
        /// Their bytes.
        bytes: Vec<u8>,
    },
}

impl MetaValue {
    /// A GGUF value, owned.
    pub(crate) fn from_gguf(value: &GgufValue<'_>) -> MetaValue {
        match *value {
            GgufValue::UInt(n) => MetaValue::UInt(n),
            GgufValue::Int(n) => MetaValue::Int(n),
            GgufValue::Float(x) => MetaValue::Float(x),
            GgufValue::Bool(b) => MetaValue::Bool(b),
            GgufValue::Str(s) => MetaValue::Str(s.to_owned()),
            GgufValue::Array {
                kind: ValueType::String,
                ..
            } => MetaValue::Strings(value.strings().collect()),
            GgufValue::Array { kind, count, bytes } => MetaValue::Array {
                kind,
                count,
                bytes: bytes.to_vec(),
            },
        }
    }

    /// The value on one short line, as `bytelens inspect` shows it
    /// (Python's `_value_text`).
    fn text(&self) -> String {
        match self {
            MetaValue::Str(s) => short(s, 64),
            MetaValue::UInt(n) => n.to_string(),
            MetaValue::Int(n) => n.to_string(),
            MetaValue::Float(x) => short(&py_float(&format!("{x:e}")), 64),
            MetaValue::Bool(b) => (if *b { "True" } else { "False" }).to_owned(),
            MetaValue::Strings(items) => {
                let head: Vec<String> = items
                    .iter()
                    .take(3)
                    .map(|s| format!("'{}'", short(s, 16)))
                    .collect();
                let more = if items.len() > 3 { ", ..." } else { "" };
                format!(
                    "{} strings [{}{more}]",
                    thousands(items.len() as u64),
                    head.join(", ")
                )
            }
            MetaValue::Array { kind, count, bytes } => {
                let size = kind.size().unwrap_or(1);
                let name = match kind {
                    ValueType::Bool => "bool".to_owned(),
                    other => {
                        let stem = match &other.name()[..1] {
                            "u" => "uint",
                            "i" => "int",
                            _ => "float",
                        };
                        format!("{stem}{}", size * 8)
                    }
                };
                let head: Vec<String> = bytes
                    .chunks_exact(size.max(1))
                    .take(4)
                    .map(|b| element_text(*kind, b))
                    .collect();
                let more = if *count > 4 { ", ..." } else { "" };
                format!("{} {name} [{}{more}]", thousands(*count), head.join(", "))
            }
        }
    }
}

/// One element of a GGUF array as numpy's scalar `str` writes it.
fn element_text(kind: ValueType, b: &[u8]) -> String {
    let mut le = [0u8; 8];
    le[..b.len()].copy_from_slice(b);
    let bits = u64::from_le_bytes(le);
    let signed = |width: u32| ((bits << (64 - width)) as i64 >> (64 - width)).to_string();
    match kind {
        ValueType::Bool => (if bits != 0 { "True" } else { "False" }).to_owned(),
        _ => match (&kind.name()[..1], b.len()) {
            ("f", 4) => np_float32(f32::from_bits(bits as u32)),
            ("f", _) => py_float(&format!("{:e}", f64::from_bits(bits))),
            ("i", n) => signed(n as u32 * 8),
            _ => bits.to_string(),
        },
    }
}

/// What [`inspect`](super::inspect) found in a file: its format and every
/// array, from the headers alone. Its `Display` is what
/// `bytelens inspect FILE` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The path given (a sharded checkpoint's index).
    pub path: String,
    /// `"npy"`, `"npz"`, `"safetensors"`, `"gguf"`,
    /// `"safetensors index"` or `"raw"`.
    pub format: &'static str,
    /// The file's size in bytes (an index's and all its shards').
    pub size: u64,
    /// The arrays, in the file's order.
    pub arrays: Vec<ArrayInfo>,
    /// safetensors' `__metadata__`, a GGUF header's key/values, or a
    /// sharded index's `"metadata"`, in the file's order.
    pub metadata: Vec<(String, MetaValue)>,
    /// The format version of an `.npy` or GGUF file.
    pub version: Option<(u8, u8)>,
}

impl Report {
    /// The array called `name`.
    pub fn get(&self, name: &str) -> Option<&ArrayInfo> {
        self.arrays.iter().find(|a| a.name == name)
    }

    /// The text of `Display`, with `path` (written as it is: quote it
    /// first) and `format` in place of the report's own: for the Python
    /// package's `FileReport`, whose path may hold surrogates (a file name
    /// `os.fsdecode` read, which a `String` cannot) and whose format, in
    /// one built by hand, may be any text.
    pub fn text_with(&self, path: &str, format: &str) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut out, path, format);
        out
    }

    /// `Display`'s text, headed by `path` and `format` as they are.
    fn write(&self, f: &mut dyn fmt::Write, path: &str, format: &str) -> fmt::Result {
        let version = match self.version {
            Some((major, minor)) => format!(" {major}.{minor}"),
            None => String::new(),
        };
        let n = self.arrays.len();
        let plural = if n == 1 { "" } else { "s" };
        write!(
            f,
            "{path}: {format}{version}, {} bytes, {n} array{plural}",
            thousands(self.size)
        )?;
        for (key, value) in &self.metadata {
            write!(f, "\n  metadata {}: {}", short(key, 40), value.text())?;
        }
        if self.arrays.is_empty() {
            return Ok(());
        }
        let sharded = self.arrays.iter().any(|a| a.shard.is_some());
        let mut head = vec!["name", "dtype", "shape"];
        if sharded {
            head.push("shard");
        }
        head.extend(["bytes", "align", "load"]);
        let mut rows: Vec<Vec<String>> = vec![head.into_iter().map(str::to_owned).collect()];
        for a in &self.arrays {
            let mut align = if a.offset == 0 {
                "any".to_owned()
            } else {
                a.alignment().min(1 << 20).to_string()
            };
            let mut span = format!("{}..{}", a.start(), a.end());
            if a.copy.as_deref() == Some(COMPRESSED) {
                span = format!("{span} of {}", short(a.member.as_deref().unwrap_or(""), 40));
                align = "-".to_owned();
            }
            let how = if let Some(why) = &a.unavailable {
                format!("none: {}", printable(why))
            } else if a.ggml.is_some() {
                format!("{} blocks, dequantised on access", thousands(a.blocks()))
            } else {
                match &a.copy {
                    None => "view".to_owned(),
                    Some(why) => format!("copy: {}", printable(why)),
                }
            };
            let dims: Vec<String> = a.shape.iter().map(u64::to_string).collect();
            let comma = if a.shape.len() == 1 { "," } else { "" };
            let mut row = vec![
                short(&a.name, 40),
                short(&a.dtype, 24),
                format!("({}{comma})", dims.join(", ")),
            ];
            if sharded {
                row.push(short(a.shard.as_deref().unwrap_or(""), 40));
            }
            row.extend([span, align, how]);
            rows.push(row);
        }
        let last = rows[0].len() - 1;
        let widths: Vec<usize> = (0..last)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let mut line = String::from("  ");
            for (cell, width) in row.iter().zip(&widths) {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
                line.push_str("  ");
            }
            line.push_str(&row[last]);
            write!(f, "\n{}", line.trim_end())?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &printable(&self.path), self.format)
    }
}
