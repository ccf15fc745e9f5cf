//! `readHeader` (feature `files`, which the web demo's build enables and
//! the size-budgeted package leaves out): the core's `.npy`, safetensors
//! and GGUF header readers, so that the demo draws a file's arrays from
//! the same checks `bl.load` uses, with no reader of its own: a GGUF
//! tensor's block fields are the core's ggml table, its metadata values
//! the core's decoding.
#![forbid(unsafe_code)]

use bytelens_core::files::{
    Access, FileArray, FileHeader, Format, GgufEntry, GgufValue, ValueType, read_header as read,
};
use bytelens_core::{ByteOrder, Descr};
use js_sys::JSON;
use wasm_bindgen::prelude::*;

use crate::BindingError;

/// 2^53: the largest file length a JS number holds exactly, and so the
/// largest `length` taken (offsets past 4 GiB are reported exactly too:
/// the core's offsets are `u64`, not wasm32's 32-bit `usize`).
const MAX_LENGTH: f64 = 9_007_199_254_740_992.0;

/// A file length from JS: a whole number from 0 to 2^53.
fn file_length(value: f64) -> Result<u64, BindingError> {
    if value >= 0.0 && value.fract() == 0.0 && value <= MAX_LENGTH {
        Ok(value as u64)
    } else {
        Err(BindingError::bad_value(
            "length",
            "a whole number from 0 to 9007199254740992",
            value,
        ))
    }
}

/// The elements of a GGUF metadata array given in full; the rest are
/// counted, not sent (a vocabulary of 128k tokens is one array).
const GGUF_ARRAY_SHOWN: u64 = 8;

/// `text` as a JSON string literal.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// An integer as JSON: a number where a JS number holds it exactly (up to
/// 2^53 either way), its decimal text as a string past that.
fn integer(n: i128) -> String {
    if n.unsigned_abs() <= 1 << 53 {
        n.to_string()
    } else {
        format!("\"{n}\"")
    }
}

/// A float as JSON: the shortest text that reads back as the same f64
/// (a float32 value widened exactly), or `"NaN"`, `"Infinity"`,
/// `"-Infinity"` as strings, which JSON has no numbers for.
fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}") // `1.0`, `1e-7`: always valid JSON
    } else if x.is_nan() {
        "\"NaN\"".to_owned()
    } else {
        format!("\"{}Infinity\"", if x < 0.0 { "-" } else { "" })
    }
}

/// A single GGUF value as JSON (`null` for an array, which [`gguf_json`]
/// writes element by element).
fn value_json(value: GgufValue<'_>) -> String {
    match value {
        GgufValue::UInt(n) => integer(n.into()),
        GgufValue::Int(n) => integer(n.into()),
        GgufValue::Float(x) => float(x),
        GgufValue::Bool(b) => b.to_string(),
        GgufValue::Str(text) => quoted(text),
        GgufValue::Array { .. } => "null".to_owned(),
    }
}

/// The first [`GGUF_ARRAY_SHOWN`] elements of a GGUF array as JSON values.
/// Each fixed-size element is decoded by the core, as the single value of
/// an entry over its bytes, so this module has no decoder of its own.
fn array_json(kind: ValueType, count: u64, bytes: &[u8]) -> Vec<String> {
    let shown = count.min(GGUF_ARRAY_SHOWN);
    if kind == ValueType::String {
        let array = GgufValue::Array { kind, count, bytes };
        return array.strings().take(shown as usize).map(quoted).collect();
    }
    let size = kind.size().unwrap_or(0) as u64;
    (0..shown)
        .map(|i| {
            let element = GgufEntry {
                key: "",
                kind,
                array: false,
                count: 1,
                offset: i * size,
                nbytes: size,
            };
            element.value(bytes).map_or("null".to_owned(), value_json)
        })
        .collect()
}

/// GGUF's metadata as a JSON list, each entry `{ key, type, elementType
/// (arrays only), count, offset, nbytes, value }`, its value decoded from
/// `head` (an array's first [`GGUF_ARRAY_SHOWN`] elements).
fn gguf_json(header: &FileHeader, head: &[u8]) -> String {
    let entries: Vec<String> = header
        .gguf
        .iter()
        .map(|entry| {
            let (kind, value) = match entry.value(head) {
                Some(GgufValue::Array { kind, count, bytes }) => (
                    format!("\"array\",\"elementType\":\"{}\"", kind.name()),
                    format!("[{}]", array_json(kind, count, bytes).join(",")),
                ),
                Some(value) => (format!("\"{}\"", entry.kind.name()), value_json(value)),
                None => (format!("\"{}\"", entry.kind.name()), "null".to_owned()),
            };
            format!(
                "{{\"key\":{},\"type\":{kind},\"count\":{},\"offset\":{},\"nbytes\":{},\
                 \"value\":{value}}}",
                quoted(entry.key),
                entry.count,
                entry.offset,
                entry.nbytes
            )
        })
        .collect();
    format!("[{}]", entries.join(","))
}

/// A GGUF tensor's own keys (with a leading comma): `ggml`, and for a
/// quantised type its block (`block` elements in `blockBytes` bytes,
/// `blocks` of them) and the block's `fields`, each `{ name, dtype (a
/// little-endian type string), count, offset }`.
fn ggml_json(array: &FileArray) -> String {
    let Some(ggml) = array.ggml else {
        return ",\"ggml\":null".to_owned();
    };
    let info = ggml.info();
    let mut json = format!(",\"ggml\":{}", quoted(info.name));
    if ggml.is_quantized() {
        let fields: Vec<String> = info
            .fields
            .iter()
            .map(|f| {
                format!(
                    "{{\"name\":{},\"dtype\":\"{}\",\"count\":{},\"offset\":{}}}",
                    quoted(f.name),
                    Descr::new(f.dtype, ByteOrder::Little),
                    f.count,
                    f.offset
                )
            })
            .collect();
        json.push_str(&format!(
            ",\"block\":{},\"blockBytes\":{},\"blocks\":{},\"fields\":[{}]",
            info.block,
            info.bytes,
            array.nbytes / u64::from(info.bytes),
            fields.join(",")
        ));
    }
    json
}

/// The header of an `.npy`, safetensors or GGUF file of `length` bytes,
/// read from `head`, its first bytes: `{ format, version, dataStart,
/// metadata, arrays }`, each array `{ name, dtype, descr, shape, fortran,
/// offset, nbytes, aligned }` (`descr` is bytelens's type string, or null
/// where bytelens has no such dtype; `aligned`: a mapping of the file
/// needs no copy of it, which holds for a quantised tensor's blocks).
/// `length` may be anything up to 2^53, and offsets and sizes are exact
/// (a length past 4 GiB is a model shard's, not an error).
///
/// A GGUF file's arrays also have `ggml` (the ggml type's name, or null
/// for a type bytelens does not read, which `dtype` names) and, quantised,
/// `block`, `blockBytes`, `blocks` and `fields` (`[{ name, dtype, count,
/// offset }]`, a block's fields as ggml's C struct has them); and the
/// header has `gguf`, its metadata: `[{ key, type, elementType, count,
/// offset, nbytes, value }]`, `type` a GGUF type name (`"uint32"`,
/// `"string"`, `"array"`; `elementType` only for an array), `value` the
/// value, an array's first 8 elements only. Integers past 2^53 are
/// decimal strings; NaN and the infinities are the strings `"NaN"`,
/// `"Infinity"` and `"-Infinity"`.
///
/// Where `head` ends inside the header,
/// `{ need }`: read that many bytes and call again. A header that is not
/// valid throws a `RangeError` of kind `"FormatError"` saying why.
#[wasm_bindgen(js_name = readHeader)]
pub fn read_header(head: &[u8], length: f64) -> Result<JsValue, BindingError> {
    let length = file_length(length)?;
    let header = match read(head, length) {
        Ok(header) => header,
        Err(err) => match err.more_needed(head.len()) {
            Some(need) => return Ok(JSON::parse(&format!("{{\"need\":{need}}}"))?),
            None => return Err(BindingError::Format(err.to_string())),
        },
    };
    let mut json = format!(
        "{{\"format\":\"{}\",\"version\":[{},{}],\"dataStart\":{},\"metadata\":[",
        header.format.name(),
        header.version.0,
        header.version.1,
        header.data_start
    );
    for (i, (key, value)) in header.metadata.iter().enumerate() {
        let comma = if i == 0 { "" } else { "," };
        json.push_str(&format!("{comma}[{},{}]", quoted(key), quoted(value)));
    }
    let gguf = header.format == Format::Gguf;
    if gguf {
        json.push_str(&format!("],\"gguf\":{}", gguf_json(&header, head)));
    } else {
        json.push(']');
    }
    json.push_str(",\"arrays\":[");
    for (i, array) in header.arrays.iter().enumerate() {
        let descr = array
            .descr
            .map_or("null".to_owned(), |d| quoted(&d.to_string()));
        let shape: Vec<String> = array.shape.iter().map(u64::to_string).collect();
        json.push_str(&format!(
            "{}{{\"name\":{},\"dtype\":{},\"descr\":{descr},\"shape\":[{}],\"fortran\":{},\
             \"offset\":{},\"nbytes\":{},\"aligned\":{}{}}}",
            if i == 0 { "" } else { "," },
            quoted(&array.name),
            quoted(&array.dtype),
            shape.join(","),
            array.fortran,
            array.offset,
            array.nbytes,
            array.is_aligned() || matches!(array.access(0), Access::Blocks { .. }),
            if gguf {
                ggml_json(array)
            } else {
                String::new()
            }
        ));
    }
    json.push_str("]}");
    Ok(JSON::parse(&json)?)
}
