//! The core's dtype table for JS: `dtypes()` lists it, `describeDType()`
//! reads a type string by it. The demo draws its readings from these, so no
//! JS copy of the table exists.
//!
//! Each row is every column of the core's [`DTypeInfo`](bytelens_core::DTypeInfo),
//! written as a JSON array and named in JS (`dtypeTable` in `js/arrays.js`):
//! one string instead of a dozen property calls per row, and no property
//! names, keeps them small in the size-budgeted .wasm.
#![forbid(unsafe_code)]

use core::fmt::Write;

use bytelens_core::{ByteOrder, DType, Descr};
use js_sys::JsString;
use wasm_bindgen::prelude::*;

use crate::BindingError;
use crate::convert::dtype_arg;
use crate::js::{dtype_description, dtype_table};
use crate::types::{DTypeDescription, DTypeTable};

/// `dtype`'s row of the core's table as a JSON array, in the order
/// `dtypeInfo` in `js/arrays.js` names them: name, code, size, align, kind,
/// float, the little- and big-endian type strings, safetensors, mlDtypes
/// (or null), npy, DLPack's code and bits, jsArray, the float format (or
/// null: `[signed, exponentBits, mantissaBits, bias, subnormals, specials,
/// rounding]`), spellings. The table's text needs no escaping (names,
/// codes and numpy's characters).
fn row(out: &mut String, dtype: DType) {
    let info = dtype.info();
    let ml_dtypes = info.ml_dtypes.unwrap_or("");
    let quote = if ml_dtypes.is_empty() { "" } else { "\"" };
    let _ = write!(
        out,
        r#"["{}","{}",{},{},"{}",{},"{}","{}","{}",{quote}{}{quote},{},{},{},"{}","#,
        dtype.name(),
        dtype.code(),
        info.size,
        dtype.align(),
        info.kind,
        dtype.is_float(),
        Descr::new(dtype, ByteOrder::Little),
        Descr::new(dtype, ByteOrder::Big),
        info.safetensors,
        if ml_dtypes.is_empty() {
            "null"
        } else {
            ml_dtypes
        },
        info.npy,
        u32::from(info.dlpack.0),
        u32::from(info.dlpack.1),
        info.js_array.name(),
    );
    match info.float {
        Some(f) => {
            let _ = write!(
                out,
                r#"[{},{},{},{},{},"{:?}","{:?}"]"#,
                f.signed,
                f.exponent_bits,
                f.mantissa_bits,
                f.bias,
                f.subnormals,
                f.specials,
                f.rounding,
            );
        }
        None => out.push_str("null"),
    }
    for (i, spelling) in dtype.spellings().iter().enumerate() {
        out.push_str(if i == 0 { ",[\"" } else { ",\"" });
        out.push_str(spelling);
        out.push('"');
    }
    out.push_str("]]");
}

/// Every dtype the core knows, in its order (bool, uint8, int8, …,
/// float64, float8_e4m3fn, float8_e5m2, float8_e8m0fnu): its table's rows,
/// `{ name, code, spellings, size, align, kind, float, typeStrings,
/// safetensors, mlDtypes, npy, dlpack, jsArray, format }` (the `DTypeInfo`
/// TypeScript type says what each is).
#[wasm_bindgen]
pub fn dtypes() -> DTypeTable {
    let mut json = String::from("[");
    for (i, dtype) in DType::ALL.into_iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        row(&mut json, dtype);
    }
    json.push(']');
    dtype_table(&json)
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
    let mut json = String::from("[");
    row(&mut json, descr.dtype);
    let _ = write!(json, r#","{order}","{descr}"]"#);
    Ok(dtype_description(&json))
}
