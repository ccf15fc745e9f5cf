//! `readHeader` (feature `files`, which the web demo's build enables and
//! the size-budgeted package leaves out): the core's `.npy`, safetensors
//! and GGUF header readers, so that the demo draws a file's arrays from
//! the same checks `bl.load` uses, with no reader of its own: a GGUF
//! tensor's block fields are the core's ggml table, its metadata values
//! the core's decoding.
//!
//! The result is written as JSON text in pieces of about 1 MiB, each
//! handed to JS as it fills (`js/header.js` joins and parses them), so
//! that wasm memory holds the header's bytes, the core's reading of it
//! and one piece: memory grows in proportion to the header, once (a
//! 98.6 MB GGUF header of 2.65 M tensors had taken 2.8 GiB as one string
//! and its parts).
#![forbid(unsafe_code)]

use core::fmt::Write;

use bytelens_core::files::{
    Access, FileArray, FileHeader, Format, GgufEntry, GgufValue, ValueType, read_header as read,
};
use bytelens_core::{ByteOrder, Descr};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::{bytes_arg, count_arg};

#[wasm_bindgen(module = "/js/header.js")]
extern "C" {
    /// The value of the JSON text that `parts` (strings) make when
    /// joined, with the shapes of the arrays numbered in `big` made
    /// BigInts.
    #[wasm_bindgen(js_name = parseHeader, catch)]
    fn parse_header(parts: &Array, big: &[u32]) -> Result<JsValue, JsValue>;
}

/// The bytes of JSON text kept in wasm memory before they are handed to JS.
const PIECE: usize = 1 << 20;

/// JSON text written in pieces of about [`PIECE`] bytes, each handed to
/// JS as a string once full ([`Json::piece_done`], called between
/// values, so that no character is cut).
struct Json {
    text: String,
    parts: Array,
}

impl Json {
    fn new() -> Json {
        Json {
            text: String::with_capacity(PIECE + 4096),
            parts: Array::new(),
        }
    }

    /// Hands the text to JS when it has passed [`PIECE`] bytes.
    fn piece_done(&mut self) {
        if self.text.len() >= PIECE {
            self.parts.push(&JsValue::from_str(&self.text));
            self.text.clear();
        }
    }

    /// The value of the whole text, shapes numbered in `big` as BigInts.
    fn parse(self, big: &[u32]) -> Result<JsValue, BindingError> {
        self.parts.push(&JsValue::from_str(&self.text));
        Ok(parse_header(&self.parts, big)?)
    }
}

impl Write for Json {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

/// 2^53: the largest integer a JS number holds exactly, and so the
/// largest `length` taken (offsets past 4 GiB are reported exactly too:
/// the core's offsets are `u64`, not wasm32's 32-bit `usize`).
const EXACT: u64 = 1 << 53;

/// The elements of a GGUF metadata array given in full; the rest are
/// counted, not sent (a vocabulary of 128k tokens is one array).
const GGUF_ARRAY_SHOWN: u64 = 8;

/// Writes `text` as a JSON string literal.
fn quoted(out: &mut impl Write, text: &str) {
    let literal = serde_json::to_string(text);
    let _ = out.write_str(literal.as_deref().unwrap_or("\"\""));
}

/// Writes an integer as JSON: a number where a JS number holds it exactly
/// (up to 2^53 either way), its decimal text as a string past that.
fn integer(out: &mut impl Write, n: i128) {
    if n.unsigned_abs() <= u128::from(EXACT) {
        let _ = write!(out, "{n}");
    } else {
        let _ = write!(out, "\"{n}\"");
    }
}

/// Writes a float as JSON: the shortest text that reads back as the same
/// f64 (a float32 value widened exactly), or `"NaN"`, `"Infinity"`,
/// `"-Infinity"` as strings, which JSON has no numbers for.
fn float(out: &mut impl Write, x: f64) {
    let _ = if x.is_finite() {
        write!(out, "{x:?}") // `1.0`, `1e-7`: always valid JSON
    } else if x.is_nan() {
        out.write_str("\"NaN\"")
    } else {
        write!(out, "\"{}Infinity\"", if x < 0.0 { "-" } else { "" })
    };
}

/// Writes a single GGUF value as JSON (`null` for an array, which
/// [`gguf_json`] writes element by element).
fn value_json(out: &mut impl Write, value: GgufValue<'_>) {
    match value {
        GgufValue::UInt(n) => integer(out, n.into()),
        GgufValue::Int(n) => integer(out, n.into()),
        GgufValue::Float(x) => float(out, x),
        GgufValue::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        GgufValue::Str(text) => quoted(out, text),
        GgufValue::Array { .. } => {
            let _ = out.write_str("null");
        }
    }
}

/// Writes the first [`GGUF_ARRAY_SHOWN`] elements of a GGUF array as a
/// JSON list. Each fixed-size element is decoded by the core, as the
/// single value of an entry over its bytes, so this module has no decoder
/// of its own.
fn array_json(out: &mut impl Write, kind: ValueType, count: u64, bytes: &[u8]) {
    let shown = count.min(GGUF_ARRAY_SHOWN);
    let _ = out.write_str("[");
    if kind == ValueType::String {
        let array = GgufValue::Array { kind, count, bytes };
        for (i, text) in array.strings().take(shown as usize).enumerate() {
            let _ = out.write_str(if i == 0 { "" } else { "," });
            quoted(out, text);
        }
    } else {
        let size = kind.size().unwrap_or(0) as u64;
        for i in 0..shown {
            let element = GgufEntry {
                key: "",
                kind,
                array: false,
                count: 1,
                offset: i * size,
                nbytes: size,
            };
            let _ = out.write_str(if i == 0 { "" } else { "," });
            match element.value(bytes) {
                Some(value) => value_json(out, value),
                None => {
                    let _ = out.write_str("null");
                }
            }
        }
    }
    let _ = out.write_str("]");
}

/// Writes GGUF's metadata as a JSON list, each entry `{ key, type,
/// elementType (arrays only), count, offset, nbytes, value }`, its value
/// decoded from `head` (an array's first [`GGUF_ARRAY_SHOWN`] elements).
fn gguf_json(out: &mut Json, header: &FileHeader, head: &[u8]) {
    let _ = out.write_str("[");
    for (i, entry) in header.gguf.iter().enumerate() {
        let _ = out.write_str(if i == 0 { "{\"key\":" } else { ",{\"key\":" });
        quoted(out, entry.key);
        let value = entry.value(head);
        let _ = match value {
            Some(GgufValue::Array { kind, .. }) => write!(
                out,
                ",\"type\":\"array\",\"elementType\":\"{}\"",
                kind.name()
            ),
            _ => write!(out, ",\"type\":\"{}\"", entry.kind.name()),
        };
        let _ = write!(
            out,
            ",\"count\":{},\"offset\":{},\"nbytes\":{},\"value\":",
            entry.count, entry.offset, entry.nbytes
        );
        match value {
            Some(GgufValue::Array { kind, count, bytes }) => array_json(out, kind, count, bytes),
            Some(value) => value_json(out, value),
            None => {
                let _ = out.write_str("null");
            }
        }
        let _ = out.write_str("}");
        out.piece_done();
    }
    let _ = out.write_str("]");
}

/// Writes a GGUF tensor's own keys (with a leading comma): `ggml`, and for
/// a quantised type its block (`block` elements in `blockBytes` bytes,
/// `blocks` of them) and the block's `fields`, each `{ name, dtype (a
/// little-endian type string), count, offset }`.
fn ggml_json(out: &mut impl Write, array: &FileArray) {
    let Some(ggml) = array.ggml else {
        let _ = out.write_str(",\"ggml\":null");
        return;
    };
    let info = ggml.info();
    let _ = out.write_str(",\"ggml\":");
    quoted(out, info.name);
    if ggml.is_quantized() {
        let _ = write!(
            out,
            ",\"block\":{},\"blockBytes\":{},\"blocks\":{},\"fields\":[",
            info.block,
            info.bytes,
            array.nbytes / u64::from(info.bytes),
        );
        for (i, f) in info.fields.iter().enumerate() {
            let _ = out.write_str(if i == 0 { "{\"name\":" } else { ",{\"name\":" });
            quoted(out, f.name);
            let _ = write!(
                out,
                ",\"dtype\":\"{}\",\"count\":{},\"offset\":{}}}",
                Descr::new(f.dtype, ByteOrder::Little),
                f.count,
                f.offset
            );
        }
        let _ = out.write_str("]");
    }
}

/// The header of an `.npy`, safetensors or GGUF file of `length` bytes,
/// read from `head`, its first bytes: `{ format, version, dataStart,
/// metadata, arrays }`, each array `{ name, dtype, descr, shape, fortran,
/// offset, nbytes, aligned }` (`descr` is bytelens's type string, or null
/// where bytelens has no such dtype; `aligned`: a mapping of the file
/// needs no copy of it, which holds for a quantised tensor's blocks).
/// `head` is bytes (a `Uint8Array`, or any typed array, `DataView` or
/// `ArrayBuffer`, by the bytes it holds); `length` a whole number up to
/// 2^53, a number or a BigInt (anything else is a `TypeError`, a
/// negative or fractional number a `RangeError`). Offsets and sizes are
/// exact (a length past 4 GiB is a model shard's, not an error).
///
/// A shape is numbers, or BigInts where one of its lengths is past 2^53
/// (every length of that shape then, so that they multiply): a GGUF
/// tensor of no elements may have such a length.
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
pub fn read_header(
    #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer")] head: &JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | bigint")] length: &JsValue,
) -> Result<JsValue, BindingError> {
    let head = bytes_arg(head, "head")?;
    let length = count_arg(length, "length")?;
    let header = match read(&head, length) {
        Ok(header) => header,
        Err(err) => match err.more_needed(head.len()) {
            Some(need) => {
                let mut json = Json::new();
                let _ = write!(json, "{{\"need\":{need}}}");
                return json.parse(&[]);
            }
            None => return Err(BindingError::Format(err)),
        },
    };
    let mut json = Json::new();
    let _ = write!(
        json,
        "{{\"format\":\"{}\",\"version\":[{},{}],\"dataStart\":{},\"metadata\":[",
        header.format.name(),
        header.version.0,
        header.version.1,
        header.data_start
    );
    for (i, (key, value)) in header.metadata.iter().enumerate() {
        let _ = json.write_str(if i == 0 { "[" } else { ",[" });
        quoted(&mut json, key);
        let _ = json.write_str(",");
        quoted(&mut json, value);
        let _ = json.write_str("]");
        json.piece_done();
    }
    let gguf = header.format == Format::Gguf;
    let _ = json.write_str("]");
    if gguf {
        let _ = json.write_str(",\"gguf\":");
        gguf_json(&mut json, &header, &head);
    }
    let _ = json.write_str(",\"arrays\":");
    let big = arrays_json(&mut json, &header.arrays, gguf);
    let _ = json.write_str("}");
    // The core's reading, and the head's copy, go before JS parses.
    drop(header);
    drop(head);
    json.parse(&big)
}

/// Writes `arrays` as the JSON array `readHeader` gives (GGUF's keys too
/// where `gguf`): the indices of those whose shape has a length past 2^53.
fn arrays_json(json: &mut Json, arrays: &[FileArray], gguf: bool) -> Vec<u32> {
    let _ = json.write_str("[");
    let mut big = Vec::new();
    for (i, array) in arrays.iter().enumerate() {
        let _ = json.write_str(if i == 0 { "{\"name\":" } else { ",{\"name\":" });
        quoted(json, &array.name);
        let _ = json.write_str(",\"dtype\":");
        quoted(json, &array.dtype);
        let _ = json.write_str(",\"descr\":");
        match array.descr {
            Some(d) => {
                let _ = write!(json, "\"{d}\"");
            }
            None => {
                let _ = json.write_str("null");
            }
        }
        // Past 2^53, lengths are decimal strings here, and BigInts once
        // parsed (js/header.js), with every length of that shape.
        let exact = array.shape.iter().all(|&n| n <= EXACT);
        if !exact {
            big.push(i as u32);
        }
        let _ = json.write_str(",\"shape\":[");
        for (k, n) in array.shape.iter().enumerate() {
            let comma = if k == 0 { "" } else { "," };
            let _ = if exact {
                write!(json, "{comma}{n}")
            } else {
                write!(json, "{comma}\"{n}\"")
            };
        }
        let _ = write!(
            json,
            "],\"fortran\":{},\"offset\":{},\"nbytes\":{},\"aligned\":{}",
            array.fortran,
            array.offset,
            array.nbytes,
            array.is_aligned() || matches!(array.access(0), Access::Blocks { .. }),
        );
        if gguf {
            ggml_json(json, array);
        }
        let _ = json.write_str("}");
        json.piece_done();
    }
    let _ = json.write_str("]");
    big
}

/// `arrays`, as `readHeader` gives them, in `{ arrays }`: for loadToGpu,
/// which takes a header's arrays a slice at a time.
pub(crate) fn arrays_value(arrays: &[FileArray], gguf: bool) -> Result<JsValue, BindingError> {
    let mut json = Json::new();
    let _ = json.write_str("{\"arrays\":");
    let big = arrays_json(&mut json, arrays, gguf);
    let _ = json.write_str("}");
    json.parse(&big)
}
