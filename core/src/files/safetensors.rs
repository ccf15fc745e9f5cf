//! safetensors' header: an 8-byte length, then a JSON object of tensors.
//!
//! The JSON is read twice with serde's visitors and never held as a tree:
//! a first pass checks its syntax and counts the tensors and metadata
//! pairs, so that the second can allocate exactly what they need (with
//! `try_reserve`, so that a failure is a [`FileError`]) and read each entry
//! straight into its [`FileArray`] or metadata pair. Names and strings are
//! borrowed from the header while it is read and copied once, into what
//! the header describes; values it need not keep are skipped with
//! [`IgnoredAny`]. Repeated keys are found by sorting.
#![forbid(unsafe_code)]

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{
    FileArray, FileError, FileHeader, Format, MAX_HEADER, Metadata, bad, first_repeated, owned,
    quoted, size_of, take, vec_with,
};
use crate::{ByteOrder, DType, Descr, MAX_NDIM};

/// The dtypes safetensors defines (as of its 0.8 release) that the dtype
/// table has no row for, with their bits per element, so that such a
/// tensor's byte range can still be checked and the rest of its file
/// loaded. A code the table gains is found there first; the unit test
/// `no_lacking_code_is_in_the_dtype_table` makes its line here an error.
pub(super) const LACKING: [(&str, u32); 6] = [
    ("F4", 4),
    ("F6_E2M3", 6),
    ("F6_E3M2", 6),
    ("F8_E4M3FNUZ", 8),
    ("F8_E5M2FNUZ", 8),
    ("C64", 64),
];

/// A safetensors dtype code: bytelens's dtype (from the dtype table), or
/// `None` for one it lacks, and its bits per element. `None` for a code
/// the format does not have.
fn safetensors_dtype(code: &str) -> Option<(Option<Descr>, u32)> {
    if let Some(dtype) = DType::from_safetensors(code) {
        // safetensors is little-endian whatever the machine.
        let descr = Descr::new(dtype, ByteOrder::Little);
        return Some((Some(descr), 8 * dtype.size() as u32));
    }
    LACKING
        .iter()
        .find(|&&(lacking, _)| lacking == code)
        .map(|&(_, bits)| (None, bits))
}

/// The key under which safetensors keeps its metadata.
const METADATA: &str = "__metadata__";

/// Reads a safetensors header: an 8-byte little-endian length, then that
/// many bytes of JSON: an object mapping each tensor's name to `dtype`,
/// `shape` and `data_offsets` (relative to the end of the header), and an
/// optional `__metadata__` object of strings.
///
/// Time and memory grow in proportion to the header: it is read twice,
/// and what it describes takes about twice its size (less where names are
/// long or values are large).
pub fn read_safetensors(bytes: &[u8], len: u64) -> Result<FileHeader, FileError> {
    let field = take(bytes, 0, 8, len, "the safetensors header length")?;
    let header_len = u64::from_le_bytes(field.try_into().unwrap_or([0; 8]));
    if header_len > MAX_HEADER as u64 {
        return Err(FileError::HeaderTooLarge { len: header_len });
    }
    let text = take(bytes, 8, header_len, len, "the safetensors header")?;
    let data_start = 8 + text.len() as u64;
    // First pass: the syntax, and how many of each there are.
    let mut counts = Counts::default();
    parse(text, CountTop(&mut counts))?;
    if !counts.object {
        return Err(bad("", "is not a JSON object"));
    }
    // Second pass: into what the header describes.
    let mut header = FileHeader {
        format: Format::Safetensors,
        version: (0, 0),
        data_start,
        arrays: vec_with(counts.tensors)?,
        metadata: Metadata::with_capacity(counts.metadata, counts.metadata_bytes)?,
        gguf: Default::default(),
    };
    let mut failure = Failure::new();
    let read = parse(
        text,
        ReadTop {
            header: &mut header,
            len,
            failure: &mut failure,
            metadata_seen: false,
        },
    );
    if let Some(err) = failure.err {
        return Err(err);
    }
    read?;
    check_repeats_and_overlaps(&header)?;
    Ok(header)
}

/// Runs `seed` over the whole of `text`; serde_json's errors (its syntax
/// errors, and the placeholder a visitor returns after recording a
/// [`FileError`]) become `Syntax`.
fn parse<'de, S: DeserializeSeed<'de>>(text: &'de [u8], seed: S) -> Result<S::Value, FileError> {
    let mut json = serde_json::Deserializer::from_slice(text);
    let syntax = |e: serde_json::Error| FileError::Syntax {
        detail: e.to_string(),
    };
    let value = seed.deserialize(&mut json).map_err(syntax)?;
    json.end().map_err(syntax)?;
    Ok(value)
}

/// Repeated tensor names or metadata keys, and tensors over the same bytes
/// (empty ones cover none), each found by sorting.
fn check_repeats_and_overlaps(header: &FileHeader) -> Result<(), FileError> {
    let (arrays, metadata) = (&header.arrays, &header.metadata);
    let mut order: Vec<u32> = vec_with(arrays.len().max(metadata.len()))?;
    let key = |i| metadata.get(i).map_or("", |(key, _)| key);
    let repeated = match first_repeated(metadata.len(), key, &mut order)? {
        Some(key) => Some(key),
        None => first_repeated(arrays.len(), |i| arrays[i].name.as_str(), &mut order)?,
    };
    if let Some(key) = repeated {
        return Err(FileError::DuplicateKey { key: key.into() });
    }
    order.extend((0..arrays.len() as u32).filter(|&i| arrays[i as usize].nbytes > 0));
    let span = |i: u32| {
        let a = &arrays[i as usize];
        (a.offset, a.offset + a.nbytes, a.name.as_str())
    };
    order.sort_unstable_by_key(|&i| span(i));
    if let Some(pair) = order.windows(2).find(|p| span(p[1]).0 < span(p[0]).1) {
        return Err(FileError::Overlap {
            array: arrays[pair[0] as usize].name.clone(),
            other: arrays[pair[1] as usize].name.clone(),
        });
    }
    Ok(())
}

/// What the first pass finds.
#[derive(Default)]
struct Counts {
    /// The header is an object.
    object: bool,
    /// Entries other than `__metadata__`.
    tensors: usize,
    /// Pairs in every `__metadata__` that is an object.
    metadata: usize,
    /// The bytes of their keys and string values.
    metadata_bytes: usize,
}

/// Implements a visitor's methods for the kinds of JSON value it does not
/// want: each is consumed (arrays and objects skipped to their end) and
/// makes `$wrong`.
macro_rules! other_kinds {
    ($wrong:expr; $($kind:ident)*) => { $(other_kinds!(@ $wrong; $kind);)* };
    (@ $wrong:expr; bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($wrong) }
    };
    (@ $wrong:expr; number) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($wrong) }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($wrong) }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($wrong) }
    };
    (@ $wrong:expr; str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($wrong) }
    };
    (@ $wrong:expr; unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($wrong) }
    };
    (@ $wrong:expr; seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($wrong)
        }
    };
    (@ $wrong:expr; map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($wrong)
        }
    };
}

/// Deserializes with `deserialize_any` into the visitor itself.
macro_rules! seed_is_visitor {
    ($($ty:ty),*) => {$(
        impl<'de> DeserializeSeed<'de> for $ty {
            type Value = <Self as Visitor<'de>>::Value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
    )*};
}

/// A string, borrowed from the header where it has no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(s.into())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(s)))
    }
}

/// The first pass over the top-level object.
struct CountTop<'c>(&'c mut Counts);

impl<'de> Visitor<'de> for CountTop<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.object = true;
        while let Some(Text(key)) = map.next_key()? {
            if key == METADATA {
                let (pairs, bytes) = map.next_value_seed(CountPairs)?;
                self.0.metadata += pairs;
                self.0.metadata_bytes += bytes;
            } else {
                map.next_value::<IgnoredAny>()?;
                self.0.tensors += 1;
            }
        }
        Ok(())
    }

    other_kinds!((); bool number str unit seq);
}

/// The number of pairs in an object and the bytes of their keys and string
/// values (0 and 0 for any other value).
struct CountPairs;

impl<'de> Visitor<'de> for CountPairs {
    type Value = (usize, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(usize, usize), A::Error> {
        let (mut n, mut bytes) = (0, 0);
        while let Some(Text(key)) = map.next_key()? {
            let value = map.next_value_seed(MaybeText)?;
            n += 1;
            bytes += key.len() + value.map_or(0, |Text(v)| v.len());
        }
        Ok((n, bytes))
    }

    other_kinds!((0, 0); bool number str unit seq);
}

seed_is_visitor!(CountTop<'_>, CountPairs);

/// What stopped the second pass, if anything, and memory kept back until
/// then: running out of memory there stops serde with an error that
/// serde_json allocates (and formats again, with its position), which
/// would abort the process where not a byte were left; the reserve, freed
/// first, leaves it the room.
struct Failure {
    err: Option<FileError>,
    reserve: Vec<u8>,
}

impl Failure {
    /// A few KiB: serde_json's error and its message take about 100 bytes.
    const RESERVE: usize = 16 << 10;

    fn new() -> Self {
        let mut reserve = Vec::new();
        // Where not even this can be had, the second pass fails at its
        // first allocation anyway; nothing is lost by going on without it.
        let _ = reserve.try_reserve_exact(Self::RESERVE);
        Failure { err: None, reserve }
    }
}

/// Records `err` in `failure` and returns the error that stops serde (the
/// reserve freed first); the caller reports the recorded one.
fn fail<E: de::Error>(failure: &mut Failure, err: FileError) -> E {
    failure.reserve = Vec::new();
    failure.err = Some(err);
    E::custom("stopped")
}

/// The second pass over the top-level object.
struct ReadTop<'h> {
    header: &'h mut FileHeader,
    len: u64,
    failure: &'h mut Failure,
    metadata_seen: bool,
}

impl<'de> Visitor<'de> for ReadTop<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(name)) = map.next_key()? {
            if name == METADATA {
                if self.metadata_seen {
                    let err = FileError::DuplicateKey {
                        key: METADATA.into(),
                    };
                    return Err(fail(self.failure, err));
                }
                self.metadata_seen = true;
                let pairs = ReadPairs {
                    metadata: &mut self.header.metadata,
                    failure: &mut *self.failure,
                };
                map.next_value_seed(pairs)?;
                continue;
            }
            let parts = map.next_value_seed(ReadTensor {
                name: &name,
                failure: &mut *self.failure,
            })?;
            let array = parts
                .into_array(&name, self.header.data_start, self.len)
                .map_err(|err| fail(self.failure, err))?;
            // Room for it was made from the first pass's count.
            self.header.arrays.push(array);
        }
        Ok(())
    }

    other_kinds!((); bool number str unit seq);
}

/// `__metadata__`: an object of strings, read into the header's pairs.
struct ReadPairs<'h> {
    metadata: &'h mut Metadata,
    failure: &'h mut Failure,
}

impl<'de> Visitor<'de> for ReadPairs<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key()? {
            let Some(Text(value)) = map.next_value_seed(MaybeText)? else {
                let detail =
                    alloc::format!("'__metadata__' value of {} is not a string", quoted(&key));
                return Err(fail(self.failure, bad("", detail)));
            };
            // Room for it was made from the first pass's count.
            self.metadata
                .push(&key, &value)
                .map_err(|err| fail(self.failure, err))?;
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(fail(self.failure, not_an_object()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(fail(self.failure, not_an_object()))
    }
}

fn not_an_object() -> FileError {
    bad("", "'__metadata__' is not an object")
}

/// A string, or `None` for any other value (skipped).
struct MaybeText;

impl<'de> Visitor<'de> for MaybeText {
    type Value = Option<Text<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Text(Cow::Borrowed(s))))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Text(Cow::Owned(s.into()))))
    }

    other_kinds!(None; bool number unit seq map);
}

/// One element of a shape or of `data_offsets`: a whole number from 0 to
/// 2^64 - 1, one past 2^64 - 1 (JSON has no bound; serde_json reads such
/// an integer as a float), or something else.
#[derive(Clone, Copy)]
enum Whole {
    Is(u64),
    Past,
    Not,
}

struct WholeVisitor;

impl<'de> Visitor<'de> for WholeVisitor {
    type Value = Whole;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
        Ok(Whole::Is(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
        Ok(u64::try_from(n).map_or(Whole::Not, Whole::Is))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Whole, E> {
        // Every float from 2^64 up is a whole number.
        Ok(if x >= 18_446_744_073_709_551_616.0 {
            Whole::Past
        } else {
            Whole::Not
        })
    }

    other_kinds!(Whole::Not; bool str unit seq map);
}

/// The value of a tensor's `dtype`, `shape` or `data_offsets`, as far as
/// the checks need it: a string, an array of up to [`MAX_NDIM`] elements
/// kept (and how many it had), or something else.
// Large on purpose: a part lives on the stack while its entry is read, and
// holding a shape's lengths inline is what keeps reading it allocation-free.
#[allow(clippy::large_enum_variant)]
enum Part<'de> {
    Text(Cow<'de, str>),
    Array {
        items: [Whole; MAX_NDIM],
        len: usize,
    },
    Other,
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Part<'de>, E> {
        Ok(Part::Text(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Part<'de>, E> {
        Ok(Part::Text(Cow::Owned(s.into())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Part<'de>, A::Error> {
        let mut items = [Whole::Not; MAX_NDIM];
        let mut len = 0;
        while let Some(item) = seq.next_element_seed(WholeVisitor)? {
            if let Some(slot) = items.get_mut(len) {
                *slot = item;
            }
            len += 1;
        }
        Ok(Part::Array { items, len })
    }

    other_kinds!(Part::Other; bool number unit map);
}

seed_is_visitor!(MaybeText, WholeVisitor, PartVisitor);

impl<'de> DeserializeSeed<'de> for ReadTop<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> DeserializeSeed<'de> for ReadPairs<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A tensor's entry: an object of `dtype`, `shape` and `data_offsets`.
struct ReadTensor<'n, 'h> {
    name: &'n str,
    failure: &'h mut Failure,
}

/// A tensor's entry as read, before it is checked; `None` where the entry
/// is not an object.
struct TensorParts<'de> {
    object: bool,
    dtype: Option<Part<'de>>,
    shape: Option<Part<'de>>,
    offsets: Option<Part<'de>>,
}

impl<'de> Visitor<'de> for ReadTensor<'_, '_> {
    type Value = TensorParts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut parts = TensorParts {
            object: true,
            dtype: None,
            shape: None,
            offsets: None,
        };
        while let Some(Text(key)) = map.next_key()? {
            let slot = match &*key {
                "dtype" => &mut parts.dtype,
                "shape" => &mut parts.shape,
                "data_offsets" => &mut parts.offsets,
                _ => {
                    let detail = alloc::format!("has the unknown key {}", quoted(&key));
                    return Err(fail(self.failure, bad(self.name, detail)));
                }
            };
            if slot.replace(map.next_value_seed(PartVisitor)?).is_some() {
                let err = FileError::DuplicateKey { key: key.into() };
                return Err(fail(self.failure, err));
            }
        }
        Ok(parts)
    }

    other_kinds!(TensorParts { object: false, dtype: None, shape: None, offsets: None };
        bool number str unit seq);
}

impl<'de> DeserializeSeed<'de> for ReadTensor<'_, '_> {
    type Value = TensorParts<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl TensorParts<'_> {
    /// The array these parts describe, checked against the file's length.
    fn into_array(self, name: &str, data_start: u64, len: u64) -> Result<FileArray, FileError> {
        if !self.object {
            return Err(bad(
                name,
                "is not an object of dtype, shape and data_offsets",
            ));
        }
        let Some(Part::Text(dtype)) = self.dtype else {
            return Err(bad(name, "has no dtype string"));
        };
        let (descr, bits) = safetensors_dtype(&dtype).ok_or_else(|| {
            bad(
                name,
                alloc::format!(
                    "has the dtype {}, which safetensors does not define",
                    quoted(&dtype)
                ),
            )
        })?;
        let whole = |item: &Whole, what: &str| match *item {
            Whole::Is(n) => Ok(n),
            Whole::Past => Err(bad(name, alloc::format!("{what} is past 2^64 - 1"))),
            Whole::Not => Err(bad(name, alloc::format!("{what} is not a whole number"))),
        };
        let shape = match self.shape {
            Some(Part::Array { items, len }) if len <= MAX_NDIM => {
                let mut shape = vec_with(len)?;
                for item in &items[..len] {
                    shape.push(whole(item, "a length")?);
                }
                shape
            }
            Some(Part::Array { len, .. }) => {
                return Err(bad(
                    name,
                    alloc::format!("has {len} dimensions, more than {MAX_NDIM}"),
                ));
            }
            _ => return Err(bad(name, "has no shape array")),
        };
        let (begin, end) = match self.offsets {
            Some(Part::Array { items, len: 2 }) => (
                whole(&items[0], "an offset")?,
                whole(&items[1], "an offset")?,
            ),
            _ => return Err(bad(name, "has no data_offsets pair")),
        };
        let (count, nbytes) = if bits >= 8 {
            let nbytes = size_of(name, &shape, bits as usize / 8)?;
            (nbytes / (bits as u64 / 8), nbytes)
        } else {
            // Packed below a byte (F4: two to a byte): the shape's rule at
            // a byte an element holds the bytes too.
            let count = size_of(name, &shape, 1)?;
            // Below 2^63 * 8 in u128: exact.
            let bits_in_all = u128::from(count) * u128::from(bits);
            if !bits_in_all.is_multiple_of(8) {
                return Err(bad(
                    name,
                    alloc::format!(
                        "has {count} elements of {} ({bits} bits each), which do not fill whole bytes",
                        quoted(&dtype)
                    ),
                ));
            }
            (count, (bits_in_all / 8) as u64) // below count: fits
        };
        if end < begin || end - begin != nbytes {
            return Err(bad(
                name,
                alloc::format!(
                    "data_offsets {begin}..{end} do not hold its {count} elements of {} ({nbytes} bytes)",
                    quoted(&dtype)
                ),
            ));
        }
        // Both at most 2^64 - 1 past a start below 2^27: in u128, exact.
        let start = u128::from(data_start) + u128::from(begin);
        let stop = u128::from(data_start) + u128::from(end);
        if stop > u128::from(len) {
            return Err(FileError::OutsideFile {
                array: owned(name)?,
                start: u64::try_from(start).unwrap_or(u64::MAX),
                end: u64::try_from(stop).unwrap_or(u64::MAX),
                len,
            });
        }
        Ok(FileArray {
            name: owned(name)?,
            dtype: owned(&dtype)?,
            descr,
            shape,
            fortran: false,
            offset: start as u64, // at most `len` (checked above)
            nbytes,
            ggml: None,
        })
    }
}
