//! `readHeader` (feature `files`, which the web demo's build enables and
//! the size-budgeted package leaves out): the core's `.npy` and safetensors
//! header readers, so that the demo draws a file's arrays from the same
//! checks `bl.load` uses, with no reader of its own.
#![forbid(unsafe_code)]

use bytelens_core::files::read_header as read;
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

/// `text` as a JSON string literal.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The header of an `.npy` or safetensors file of `length` bytes, read
/// from `head`, its first bytes: `{ format, version, dataStart, metadata,
/// arrays }`, each array `{ name, dtype, descr, shape, fortran, offset,
/// nbytes, aligned }` (`descr` is bytelens's type string, or null where
/// bytelens has no such dtype). `length` may be anything up to 2^53, and
/// offsets and sizes are exact (a length past 4 GiB is a model shard's,
/// not an error). Where `head` ends inside the header,
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
    json.push_str("],\"arrays\":[");
    for (i, array) in header.arrays.iter().enumerate() {
        let descr = array
            .descr
            .map_or("null".to_owned(), |d| quoted(&d.to_string()));
        let shape: Vec<String> = array.shape.iter().map(u64::to_string).collect();
        json.push_str(&format!(
            "{}{{\"name\":{},\"dtype\":{},\"descr\":{descr},\"shape\":[{}],\"fortran\":{},\
             \"offset\":{},\"nbytes\":{},\"aligned\":{}}}",
            if i == 0 { "" } else { "," },
            quoted(&array.name),
            quoted(&array.dtype),
            shape.join(","),
            array.fortran,
            array.offset,
            array.nbytes,
            array.is_aligned()
        ));
    }
    json.push_str("]}");
    Ok(JSON::parse(&json)?)
}
