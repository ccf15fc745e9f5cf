//! The core's dtype table for JS: `dtypes()` lists it, `describeDType()`
//! reads a type string by it. The demo draws its readings from these, so no
//! JS copy of the table exists.
//!
//! Rows are written as JSON and parsed by JS: one string instead of a dozen
//! property calls per row keeps them small in the size-budgeted .wasm.
#![forbid(unsafe_code)]

use core::fmt::Write;

use bytelens_core::{ByteOrder, DType, Descr};
use js_sys::{JSON, JsString};
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::dtype_arg;
use crate::types::{DTypeDescription, DTypeTable};

/// `dtype`'s row, as the members of a JSON object: `"name": …, "code": …,
/// "spellings": […], "size", "align", "kind", "float", "typeStrings"`. The
/// table's text needs no escaping (names, codes and numpy's characters).
fn row(out: &mut String, dtype: DType) {
    let _ = write!(
        out,
        r#""name":"{}","code":"{}","size":{},"align":{},"kind":"{}","float":{},"typeStrings":{{"little":"{}","big":"{}"}},"spellings":["#,
        dtype.name(),
        dtype.code(),
        dtype.size(),
        dtype.align(),
        dtype.kind(),
        dtype.is_float(),
        Descr::new(dtype, ByteOrder::Little),
        Descr::new(dtype, ByteOrder::Big),
    );
    for (i, spelling) in dtype.spellings().iter().enumerate() {
        out.push_str(if i == 0 { "\"" } else { ",\"" });
        out.push_str(spelling);
        out.push('"');
    }
    out.push(']');
}

/// Every dtype the core knows, in its order (bool, uint8, int8, …,
/// float64): `{ name, code, spellings, size, align, kind, float,
/// typeStrings }`.
#[wasm_bindgen]
pub fn dtypes() -> Result<DTypeTable, BindingError> {
    let mut json = String::from("[");
    for (i, dtype) in DType::ALL.into_iter().enumerate() {
        json.push_str(if i == 0 { "{" } else { ",{" });
        row(&mut json, dtype);
        json.push('}');
    }
    json.push(']');
    Ok(JSON::parse(&json)?.unchecked_into())
}

/// What a type string such as `">i2"`, `"float32"` or `"|u1"` says: its
/// dtype's row of the table, with `order` (`"little"` or `"big"`) and
/// `typeString`, numpy's spelling of it. Throws the core's `BadDType`
/// `RangeError` for text it does not read.
#[wasm_bindgen(js_name = describeDType)]
pub fn describe_dtype(text: &JsString) -> Result<DTypeDescription, BindingError> {
    let descr = dtype_arg(text)?;
    let order = match descr.order {
        ByteOrder::Little => "little",
        ByteOrder::Big => "big",
    };
    let mut json = String::from("{");
    row(&mut json, descr.dtype);
    let _ = write!(json, r#","order":"{order}","typeString":"{descr}"}}"#);
    Ok(JSON::parse(&json)?.unchecked_into())
}
