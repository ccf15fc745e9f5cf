//! safetensors' header: an 8-byte length, then a JSON object of tensors.
#![forbid(unsafe_code)]

use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::{FileArray, FileError, FileHeader, Format, MAX_HEADER, bad, quoted, size_of, take};
use crate::{ByteOrder, DType, Descr, MAX_NDIM};

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
