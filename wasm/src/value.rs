//! Element values between JS and the core's [`Scalar`]: numbers, bigints
//! for 64-bit integers, booleans for bool.
#![forbid(unsafe_code)]

use bytelens_core::{ByteOrder, DType, Descr, Scalar};
use js_sys::BigInt;
use wasm_bindgen::JsValue;

use crate::BindingError;

/// A scalar as JS sees it.
#[inline(never)] // as `from_js`
pub(crate) fn to_js(value: Scalar) -> JsValue {
    match value {
        Scalar::Bool(b) => JsValue::from_bool(b),
        Scalar::I64(v) => BigInt::from(v).into(),
        Scalar::U64(v) => BigInt::from(v).into(),
        other => JsValue::from_f64(other.to_f64()),
    }
}

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
    if dtype.is_float() {
        let x = value.as_f64().ok_or_else(|| not_of(true))?;
        return Scalar::float(dtype, x).ok_or_else(|| not_of(false));
    }
    if dtype == DType::Bool {
        return match (value.as_bool(), value.as_f64()) {
            (Some(b), _) => Ok(Scalar::Bool(b)),
            (None, Some(x)) if x == 0.0 || x == 1.0 => Ok(Scalar::Bool(x == 1.0)),
            (None, x) => Err(not_of(x.is_none())),
        };
    }
    let wide: i128 = if value.is_bigint() {
        // Exact conversions only: a bigint beyond 64 bits fits no dtype here.
        match (i64::try_from(value.clone()), u64::try_from(value.clone())) {
            (Ok(v), _) => i128::from(v),
            (_, Ok(v)) => i128::from(v),
            _ => return Err(not_of(false)),
        }
    } else {
        let x = value.as_f64().ok_or_else(|| not_of(true))?;
        if !x.is_finite() || x.fract() != 0.0 || x.abs() > 2f64.powi(64) {
            return Err(not_of(false));
        }
        x as i128
    };
    // The range of an integer dtype of `bits` bits.
    let bits = 8 * dtype.size() as u32;
    let (low, high) = if dtype.kind() == 'u' {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    if wide < low || wide > high {
        return Err(not_of(false));
    }
    // In range, its low bytes are the element's, little-endian.
    let little = Descr::new(dtype, ByteOrder::Little);
    Ok(Scalar::read(little, &wide.to_le_bytes()[..dtype.size()])?)
}
