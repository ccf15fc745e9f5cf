//! Element values from JS as the bits of an element: numbers, bigints for
//! integers, booleans for bool, each checked against its dtype, and floats
//! rounded by the dtype's format (a column of the core's dtype table).
//! An element's bits are a `u64` whose low `8 * size` bits, little-endian,
//! are its bytes ([`put_bits`]).
#![forbid(unsafe_code)]

use bytelens_core::DType;
use wasm_bindgen::JsValue;

use crate::BindingError;

/// A JS value as an element of `dtype`: floats take any number; integers
/// whole numbers or bigints in range; bool a boolean, 0 or 1. A value of
/// another JS type is a `TypeError`, a number the dtype cannot hold a
/// `RangeError`.
#[inline(never)] // one copy, not one per caller: the .wasm has a size budget
pub(crate) fn from_js(value: &JsValue, dtype: DType) -> Result<u64, BindingError> {
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
        (None, Some(b)) if dtype == DType::Bool => Ok(u64::from(b)),
        _ => Err(not_of(true)),
    }
}

/// A JS number as an element of `dtype`, if it is one: any number for
/// floats (rounded once), a whole number in range for integers, 0 or 1 for
/// bool.
pub(crate) fn from_number(x: f64, dtype: DType) -> Option<u64> {
    if let Some(format) = dtype.float_format() {
        // Rounded once, by the format: float32 and float64 as JS rounds to
        // them, a narrower float by its format's rule (ml_dtypes'); every
        // NaN of a narrower one is its quiet NaN with the sign.
        return Some(match format.bits() {
            64 => x.to_bits(),
            32 => u64::from((x as f32).to_bits()),
            _ => format.encode(x),
        });
    }
    if dtype == DType::Bool {
        return (x == 0.0 || x == 1.0).then_some(x as u64);
    }
    if !x.is_finite() || x.fract() != 0.0 || x.abs() > 2f64.powi(64) {
        return None;
    }
    from_wide(x as i128, dtype)
}

/// An integer as an element of `dtype`, if it is an integer dtype and the
/// value in its range.
pub(crate) fn from_wide(wide: i128, dtype: DType) -> Option<u64> {
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
    // In range, its low bits (two's complement) are the element's.
    (low..=high).contains(&wide).then_some(wide as u64)
}

/// Writes an element's `bits` into `out`, its bytes, little-endian.
pub(crate) fn put_bits(bits: u64, out: &mut [u8]) {
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = (bits >> (8 * i)) as u8;
    }
}
