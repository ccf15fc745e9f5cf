//! Arguments from JavaScript, read and checked once: numbers, lists, the
//! options object of a view, dtype strings, and plain objects back. The API
//! modules see Rust values only.
//!
//! Arrays and objects are read through `Reflect`, so a throwing getter or
//! proxy becomes the thrown error instead of unwinding through Rust.
#![forbid(unsafe_code)]

use bytelens_core::{Descr, Error, MAX_NDIM, ViewArgs};
use js_sys::{Array, JsString, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::BindingError;
#[cfg(feature = "files")]
use crate::js::byte_view;

/// A dtype argument: a string such as `"<i4"`, parsed by the core.
pub(crate) fn dtype_arg(dtype: &JsString) -> Result<Descr, BindingError> {
    let text = dtype
        .as_string()
        .ok_or_else(|| BindingError::wrong_type("a dtype", "a string such as \"<i4\"", dtype))?;
    Ok(text.parse()?)
}

/// What a byte argument takes.
#[cfg(feature = "files")]
const BYTES: &str = "bytes: a Uint8Array, another typed array, a DataView or an ArrayBuffer";

/// A byte argument (`feature = "files"`: the tensor panel's chunks and
/// headers): the bytes of any typed array as they lie in memory (a
/// `Float32Array`'s four an element), a `DataView`'s or an
/// `ArrayBuffer`'s, copied into wasm memory; a `TypeError` naming `what`
/// for anything else (wasm-bindgen's own `&[u8]` conversion took any
/// array-like, element by element, and ignored the rest). Memory that
/// cannot be had for the copy is a `RangeError` saying how much.
#[cfg(feature = "files")]
pub(crate) fn bytes_arg(value: &JsValue, what: &'static str) -> Result<Vec<u8>, BindingError> {
    let view = byte_view(value).ok_or_else(|| BindingError::wrong_type(what, BYTES, value))?;
    let len = view.length() as usize;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len)
        .map_err(|_| BindingError::OutOfMemory {
            what,
            bytes: len as u64,
        })?;
    bytes.resize(len, 0);
    view.copy_to(&mut bytes);
    Ok(bytes)
}

/// 2^53, the largest whole number [`count_arg`] takes.
#[cfg(feature = "files")]
const MAX_COUNT: u64 = 1 << 53;

/// A count or a file length (`feature = "files"`): a whole number from 0
/// to 2^53 given as a number or a BigInt; a `TypeError` naming `what` for
/// another type (a string such as `"24"`, `null`), a `RangeError` for
/// another number.
#[cfg(feature = "files")]
pub(crate) fn count_arg(value: &JsValue, what: &'static str) -> Result<u64, BindingError> {
    const EXPECTED: &str = "a whole number from 0 to 9007199254740992 (2^53)";
    let n = if let Some(x) = value.as_f64() {
        (x >= 0.0 && x.fract() == 0.0 && x <= MAX_COUNT as f64).then_some(x as u64)
    } else if value.is_bigint() {
        u64::try_from(value.clone())
            .ok()
            .filter(|&n| n <= MAX_COUNT)
    } else {
        let expected = "a whole number (a number or a BigInt)";
        return Err(BindingError::wrong_type(what, expected, value));
    };
    n.ok_or_else(|| BindingError::Argument {
        what,
        expected: EXPECTED,
        got: value.clone(),
        type_error: false,
    })
}

/// A JS number, or a `TypeError` naming `what`. The exports take their
/// number arguments as JS values (declared `number` to TypeScript) and
/// check them here: as `f64`s, wasm-bindgen's glue would convert any value,
/// `"8"` to 8 and `{}` to NaN.
#[inline(never)] // one copy for every argument: the .wasm has a budget
pub(crate) fn number(value: &JsValue, what: &'static str) -> Result<f64, BindingError> {
    value
        .as_f64()
        .ok_or_else(|| BindingError::wrong_type(what, "a number", value))
}

/// A number argument as `one` ([`whole`], [`integer`], [`offset`]) takes
/// it, or a `TypeError` naming `what` for a value that is not a number.
#[inline(never)] // one copy per result type, not one per argument: the .wasm has a budget
pub(crate) fn arg<T>(
    value: &JsValue,
    what: &'static str,
    one: fn(f64, &'static str) -> Result<T, BindingError>,
) -> Result<T, BindingError> {
    one(number(value, what)?, what)
}

/// An optional argument: `None` when undefined or null.
pub(crate) fn given(value: &JsValue) -> Option<&JsValue> {
    (!value.is_undefined() && !value.is_null()).then_some(value)
}

/// An optional integer argument (see [`integer`]).
pub(crate) fn optional(value: &JsValue, what: &'static str) -> Result<Option<isize>, BindingError> {
    given(value).map(|v| arg(v, what, integer)).transpose()
}

/// What [`whole`] takes.
const WHOLE: &str = if usize::BITS == 32 {
    "a whole number from 0 to 4294967295"
} else {
    "a whole number from 0 to 18446744073709551615"
};

/// A whole number from 0 to `usize::MAX` (a size, a count, an index).
pub(crate) fn whole(value: f64, what: &'static str) -> Result<usize, BindingError> {
    if value >= 0.0 && value.fract() == 0.0 && value <= usize::MAX as f64 {
        Ok(value as usize)
    } else {
        Err(BindingError::bad_value(what, WHOLE, value))
    }
}

/// An integer; beyond `isize` it saturates. For strides and slice bounds,
/// where a value that large cannot change the outcome: slice bounds clamp,
/// and a stride past `isize` on an axis of two or more elements overflows
/// the core's arithmetic either way (on an axis of 0 or 1, it is unused).
pub(crate) fn integer(value: f64, what: &'static str) -> Result<isize, BindingError> {
    if value.fract() == 0.0 {
        Ok(value.clamp(isize::MIN as f64, isize::MAX as f64) as isize)
    } else {
        Err(BindingError::bad_value(what, "an integer", value))
    }
}

/// An axis length: a whole number, saturating at `usize::MAX` (whose size
/// the core reports as an `Overflow`, as it does any size past `isize`).
fn length(value: f64, what: &'static str) -> Result<usize, BindingError> {
    if value >= 0.0 && value.fract() == 0.0 {
        Ok(value.min(usize::MAX as f64) as usize)
    } else {
        Err(BindingError::bad_value(
            what,
            "whole numbers, 0 or more",
            value,
        ))
    }
}

/// A byte offset: an integer, negative ones included (the core refuses
/// those, as it does offsets past the buffer). One that `isize` cannot hold
/// lies outside every buffer there can be, and is refused as the core would.
pub(crate) fn offset(value: f64, what: &'static str) -> Result<isize, BindingError> {
    let offset = integer(value, what)?;
    // 2^31 on wasm32, exactly: where `isize` ends.
    let limit = -(isize::MIN as f64);
    if value >= limit || value < -limit {
        return Err(BindingError::OffsetBeyondMemory(value));
    }
    Ok(offset)
}

/// An axis argument; a negative one counts from the end, as in numpy.
pub(crate) fn axis(value: &JsValue, ndim: usize) -> Result<usize, BindingError> {
    Ok(axis_from_end(arg(value, "axis", integer)?, ndim))
}

/// `axis`, counted from the end when negative.
pub(crate) fn axis_from_end(axis: isize, ndim: usize) -> usize {
    let axis = if axis < 0 {
        axis.saturating_add(ndim as isize)
    } else {
        axis
    };
    // Out of range either way: an axis the core refuses with its own message.
    usize::try_from(axis).unwrap_or(usize::MAX)
}

/// The length of a JS array.
fn array_length(value: &JsValue, what: &'static str) -> Result<u32, BindingError> {
    if !Array::is_array(value) {
        return Err(BindingError::wrong_type(what, "an array", value));
    }
    let length = Reflect::get(value, &JsValue::from_str("length"))?;
    // Arrays have lengths below 2^32.
    Ok(length.as_f64().unwrap_or(0.0) as u32)
}

/// The elements of a JS array.
pub(crate) fn items(value: &JsValue, what: &'static str) -> Result<Vec<JsValue>, BindingError> {
    let length = array_length(value, what)?;
    let mut out = Vec::with_capacity(length.min(1 << 16) as usize);
    for i in 0..length {
        out.push(Reflect::get_u32(value, i)?);
    }
    Ok(out)
}

/// A number, or an array of numbers, each converted by `one`.
// Loops rather than iterator chains: they compile smaller.
fn list<T>(
    value: &JsValue,
    what: &'static str,
    one: fn(f64, &'static str) -> Result<T, BindingError>,
) -> Result<Vec<T>, BindingError> {
    if let Some(x) = value.as_f64() {
        return Ok(vec![one(x, what)?]);
    }
    let length = array_length(value, what)?;
    // One value per axis: a longer list is refused before it is read.
    if length as usize > MAX_NDIM {
        let ndim = length as usize;
        return Err(Error::TooManyDims {
            ndim,
            max: MAX_NDIM,
        }
        .into());
    }
    let mut out = Vec::with_capacity(length.min(1 << 16) as usize);
    for i in 0..length {
        let item = Reflect::get_u32(value, i)?;
        out.push(arg(&item, what, one)?);
    }
    Ok(out)
}

/// A shape: axis lengths, as a number or an array.
pub(crate) fn shape(value: &JsValue, what: &'static str) -> Result<Vec<usize>, BindingError> {
    list(value, what, length)
}

/// Integers (strides, axes), as a number or an array.
pub(crate) fn integers(value: &JsValue, what: &'static str) -> Result<Vec<isize>, BindingError> {
    list(value, what, integer)
}

/// `options[key]`, or `None` when the property is undefined or null.
fn get(options: &JsValue, key: &str) -> Result<Option<JsValue>, BindingError> {
    let value = Reflect::get(options, &JsValue::from_str(key))?;
    Ok(given(&value).cloned())
}

/// What a view's options object (`{ offset, shape, strides, readonly,
/// unaligned }`) says, read once; [`args`](Self::args) lends it to the core's
/// [`ViewArgs`], whose rule applies to it.
pub(crate) struct ViewOptions {
    offset: isize,
    shape: Option<Vec<usize>>,
    strides: Option<Vec<isize>>,
    read_only: bool,
    unaligned: bool,
}

impl ViewOptions {
    /// Reads `options`; undefined or null is `{}`.
    pub(crate) fn read(options: &JsValue) -> Result<ViewOptions, BindingError> {
        if options.is_undefined() || options.is_null() {
            return Ok(ViewOptions {
                offset: 0,
                shape: None,
                strides: None,
                read_only: false,
                unaligned: false,
            });
        }
        // An array is an object to JS, but never an options object.
        if !options.is_object() || Array::is_array(options) {
            return Err(BindingError::wrong_type(
                "a layout",
                "an object such as { offset, shape, strides }",
                options,
            ));
        }
        let offset = match get(options, "offset")? {
            Some(v) => arg(&v, "offset", self::offset)?,
            None => 0,
        };
        let shape = get(options, "shape")?
            .map(|v| shape(&v, "shape"))
            .transpose()?;
        let strides = get(options, "strides")?
            .map(|v| integers(&v, "strides"))
            .transpose()?;
        Ok(ViewOptions {
            offset,
            shape,
            strides,
            read_only: flag(options, "readonly")?,
            unaligned: flag(options, "unaligned")?,
        })
    }

    /// The core's arguments: these options for `descr`.
    pub(crate) fn args(&self, descr: Descr) -> ViewArgs<'_> {
        ViewArgs {
            offset: self.offset,
            shape: self.shape.as_deref(),
            strides: self.strides.as_deref(),
            read_only: self.read_only,
            unaligned: self.unaligned,
            ..ViewArgs::new(descr)
        }
    }
}

/// A boolean option, false when absent.
#[inline(never)] // one copy for both flags: the .wasm has a budget
fn flag(options: &JsValue, key: &'static str) -> Result<bool, BindingError> {
    match get(options, key)? {
        None => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| BindingError::wrong_type(key, "true or false", &v)),
    }
}

/// A JS array of numbers.
pub(crate) fn numbers(values: impl IntoIterator<Item = f64>) -> Array {
    values.into_iter().map(JsValue::from_f64).collect()
}

/// A plain JS object with these properties, in order.
pub(crate) fn object(entries: &[(&str, JsValue)]) -> Result<Object, BindingError> {
    let object = Object::new();
    for (key, value) in entries {
        Reflect::set(&object, &JsValue::from_str(key), value)?;
    }
    Ok(object)
}
