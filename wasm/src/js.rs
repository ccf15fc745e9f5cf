//! Every function the package imports from its own JavaScript,
//! `js/arrays.js`: the typed-array transfers (`transfer`) and views
//! (`buffer`), the dtype table's rows named (`dtypes`), byte arguments
//! (`convert`), and error excerpts and the thrown errors (`error`). Work
//! done in JS here adds nothing to the size-budgeted .wasm, and a loop
//! over elements stays one engine call.
//!
//! A leaf: it uses no other module of the crate but `types`, which uses
//! none.
#![forbid(unsafe_code)]

use wasm_bindgen::prelude::*;

use crate::types::{DTypeDescription, DTypeTable, TypedArray};

#[wasm_bindgen(module = "/js/arrays.js")]
extern "C" {
    /// The kind of typed array `value` is (`transfer`'s numbering), the
    /// number of kinds for another typed array of numbers, -1 for anything
    /// else.
    #[wasm_bindgen(js_name = typedKind)]
    pub(crate) fn typed_kind(value: &JsValue) -> i32;
    /// A new typed array of `kind` holding a copy of `bytes`.
    #[wasm_bindgen(js_name = typedCopy)]
    pub(crate) fn typed_copy(kind: u32, bytes: &[u8]) -> JsValue;
    /// A new typed array of `kind` holding the numbers of `bytes`, packed
    /// float64s, converted by the engine.
    #[wasm_bindgen(js_name = typedFromFloat64)]
    pub(crate) fn typed_from_float64(kind: u32, bytes: &[u8]) -> JsValue;
    /// A typed array of `kind` over `bytes` in wasm memory, no copy.
    #[wasm_bindgen(js_name = typedView)]
    pub(crate) fn typed_view(kind: u32, bytes: &[u8]) -> TypedArray;
    /// Copies typed array `array`'s bytes into `out` when they are as many:
    /// `false` when not (a view detached since it was measured).
    #[wasm_bindgen(js_name = copyInto)]
    pub(crate) fn copy_into(out: &mut [u8], array: &JsValue) -> bool;
    /// `array`'s elements as a `Float64Array`.
    #[wasm_bindgen(js_name = toFloat64)]
    pub(crate) fn to_float64(array: &JsValue) -> JsValue;
    /// Fills `out` from plain array `array`'s elements in one engine loop,
    /// as typed array kind `numbers` or `bigints` holds them: the kind it
    /// filled, or -1 for any other array (or one that no longer fits
    /// `out`).
    #[wasm_bindgen(js_name = fillFrom, catch)]
    pub(crate) fn fill_from(
        out: &mut [u8],
        array: &JsValue,
        numbers: u32,
        booleans: bool,
        bigints: u32,
    ) -> Result<i32, JsValue>;
    /// `value` for an error message, at most about 60 characters of it.
    #[wasm_bindgen(catch)]
    pub(crate) fn describe(value: &JsValue) -> Result<String, JsValue>;
    /// The error to throw: of `class` (`"RangeError"`, `"TypeError"` or
    /// `"Error"`), with `kind`, whose message has every control character
    /// escaped (`\n`, `\r`, `\t`, `\0`, others as `\u{1b}`), so that no
    /// text it quotes can break its line or hide in it, and at most 300
    /// characters (a longer one keeps its start and its end), so that none
    /// can make it long. In JS, where it adds nothing to the .wasm.
    #[wasm_bindgen(js_name = makeError)]
    pub(crate) fn make_error(message: &str, class: &str, kind: &str) -> JsValue;
    /// The dtype table from `dtypes`' JSON: an array of rows.
    #[wasm_bindgen(js_name = dtypeTable)]
    pub(crate) fn dtype_table(json: &str) -> DTypeTable;
    /// A type string's description from `dtypes`' JSON: `[row, order,
    /// typeString]`.
    #[wasm_bindgen(js_name = dtypeDescription)]
    pub(crate) fn dtype_description(json: &str) -> DTypeDescription;
}

#[cfg(feature = "files")]
#[wasm_bindgen(module = "/js/arrays.js")]
extern "C" {
    /// The bytes of a typed array, `DataView` or `ArrayBuffer` (a
    /// `Uint8Array` over its memory); `None` for anything else.
    #[wasm_bindgen(js_name = byteView)]
    pub(crate) fn byte_view(value: &JsValue) -> Option<js_sys::Uint8Array>;
}
