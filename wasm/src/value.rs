//! Element values from JS to the core's [`Scalar`]: numbers, bigints for
//! integers, booleans for bool, each checked against its dtype.
#![forbid(unsafe_code)]

use bytelens_core::{ByteOrder, DType, Descr, Scalar};
use wasm_bindgen::JsValue;

use crate::BindingError;

/// A JS value as an element of `dtype`: floats take any number; integers
/// whole numbers or bigints in range; bool a boolean, 0 or 1. A value of
/// another JS type is a `TypeError`, a number the dtype cannot hold a
/// `RangeError`.
#[inline(never)] // one copy, not one per caller: the .wasm has a size budget
pub(crate) fn from_js(value: &JsValue, dtype: DType) -> Result<Scalar, BindingError> {
    let not_of = |type_error| BindingError::Element {
        dtype,
        got: value.clone(),
        type_error,
    };
    let integer = !dtype.is_float() && dtype != DType::Bool;
    if value.is_bigint() && integer {
        // Exact conversions only: a bigint beyond 64 bits fits no dtype here.
        let wide = match (i64::try_from(value.clone()), u64::try_from(value.clone())) {
            (Ok(v), _) => i128::from(v),
            (_, Ok(v)) => i128::from(v),
            _ => return Err(not_of(false)),
        };
        return from_wide(wide, dtype).ok_or_else(|| not_of(false));
    }
    match (value.as_f64(), value.as_bool()) {
        (Some(x), _) => from_number(x, dtype).ok_or_else(|| not_of(false)),
        (None, Some(b)) if dtype == DType::Bool => Ok(Scalar::Bool(b)),
        _ => Err(not_of(true)),
    }
}

/// A JS number as an element of `dtype`, if it is one: any number for
/// floats (rounded once), a whole number in range for integers, 0 or 1 for
/// bool.
pub(crate) fn from_number(x: f64, dtype: DType) -> Option<Scalar> {
    if let Some(format) = dtype.float_format() {
        // Rounded once, by the format: float32 and float64 as JS rounds to
        // them, a narrower float by its format's rule (ml_dtypes').
        let bits = match format.bits() {
            64 => x.to_bits(),
            32 => u64::from((x as f32).to_bits()),
            _ => format.encode(x),
        };
        return element(dtype, bits);
    }
    if dtype == DType::Bool {
        return (x == 0.0 || x == 1.0).then_some(Scalar::Bool(x == 1.0));
    }
    if !x.is_finite() || x.fract() != 0.0 || x.abs() > 2f64.powi(64) {
        return None;
    }
    from_wide(x as i128, dtype)
}

/// An integer as an element of `dtype`, if it is an integer dtype and the
/// value in its range.
pub(crate) fn from_wide(wide: i128, dtype: DType) -> Option<Scalar> {
    if dtype.is_float() || dtype == DType::Bool {
        return None;
    }
    // The range of an integer dtype of `bits` bits.
    let bits = 8 * dtype.size() as u32;
    let (low, high) = if dtype.kind() == 'u' {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    if wide < low || wide > high {
        return None;
    }
    // In range, its low bits are the element's.
    element(dtype, wide as u64)
}

/// The element of `dtype` whose bits are the low bits of `bits`.
fn element(dtype: DType, bits: u64) -> Option<Scalar> {
    let little = Descr::new(dtype, ByteOrder::Little);
    Scalar::read(little, &bits.to_le_bytes()[..dtype.size()]).ok()
}
