//! One element of any dtype, for code that picks the dtype at run time.
#![forbid(unsafe_code)]

use core::fmt;

use half::{bf16, f16};

use crate::{ByteOrder, DType, Descr, Error, F8E4M3FN, F8E5M2, F8E8M0FNU};

/// One element of any [`DType`], read from or written to bytes in either
/// byte order. For code that learns the dtype at run time (bindings, the
/// conformance vectors, the web demo); typed code uses [`View`](crate::View).
///
/// # Examples
/// ```
/// use bytelens_core::{Descr, Scalar};
/// let d: Descr = ">i2".parse()?;
/// assert_eq!(Scalar::read(d, &[0x11, 0x22])?, Scalar::I16(0x1122));
/// let mut out = [0u8; 4];
/// Scalar::F32(1.0).write(d.order, &mut out)?;
/// assert_eq!(out, [0x3f, 0x80, 0, 0]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)] // one variant per dtype, named after it
pub enum Scalar {
    Bool(bool),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F16(f16),
    BF16(bf16),
    F32(f32),
    F64(f64),
    F8E4M3FN(F8E4M3FN),
    F8E5M2(F8E5M2),
    F8E8M0FNU(F8E8M0FNU),
}

/// `N` bytes from the start of `bytes`, turned to native order.
fn take<const N: usize>(bytes: &[u8], order: ByteOrder) -> Result<[u8; N], Error> {
    let Some(Ok(mut raw)) = bytes.get(..N).map(<[u8; N]>::try_from) else {
        return Err(Error::OutOfBounds {
            start: 0,
            end: N as isize,
            len: bytes.len(),
        });
    };
    if order != ByteOrder::NATIVE {
        raw.reverse();
    }
    Ok(raw)
}

/// `read`, `write` and `dtype`, one match arm per dtype; `Bool` is the one
/// variant that is not a `to/from_ne_bytes` number.
macro_rules! scalar_bytes {
    ($($variant:ident: $t:ty),* $(,)?) => {
        impl Scalar {
            /// Reads one element of `descr` from the start of `bytes`.
            ///
            /// Fails with `OutOfBounds` when `bytes` is shorter than the itemsize.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::{Descr, Scalar};
            /// let bf16: Descr = "<bfloat16".parse()?;
            /// assert_eq!(Scalar::read(bf16, &[0x80, 0x3f])?.to_f64(), 1.0);
            /// assert!(Scalar::read(bf16, &[0x80]).is_err());
            /// # Ok::<(), bytelens_core::Error>(())
            /// ```
            pub fn read(descr: Descr, bytes: &[u8]) -> Result<Scalar, Error> {
                let order = descr.order;
                Ok(match descr.dtype {
                    DType::Bool => Scalar::Bool(take::<1>(bytes, order)?[0] != 0),
                    $(DType::$variant => Scalar::$variant(<$t>::from_ne_bytes(take(bytes, order)?)),)*
                })
            }

            /// Writes the element to the start of `out` in byte order `order`.
            ///
            /// Fails with `OutOfBounds` when `out` is shorter than the itemsize.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::{ByteOrder, Scalar};
            /// let mut out = [0u8; 3];
            /// Scalar::U16(0x1234).write(ByteOrder::Big, &mut out[1..])?;
            /// assert_eq!(out, [0, 0x12, 0x34]);
            /// # Ok::<(), bytelens_core::Error>(())
            /// ```
            pub fn write(self, order: ByteOrder, out: &mut [u8]) -> Result<(), Error> {
                let mut raw = [0u8; 8];
                let size = self.dtype().size();
                let native: &[u8] = match self {
                    Scalar::Bool(v) => &[u8::from(v)],
                    $(Scalar::$variant(v) => &v.to_ne_bytes(),)*
                };
                raw[..size].copy_from_slice(native);
                if order != ByteOrder::NATIVE {
                    raw[..size].reverse();
                }
                let len = out.len();
                let end = size as isize;
                let dest = out.get_mut(..size).ok_or(Error::OutOfBounds { start: 0, end, len })?;
                dest.copy_from_slice(&raw[..size]);
                Ok(())
            }

            /// The dtype of the element.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::{DType, Scalar};
            /// assert_eq!(Scalar::I8(-1).dtype(), DType::I8);
            /// ```
            pub fn dtype(&self) -> DType {
                match self {
                    Scalar::Bool(_) => DType::Bool,
                    $(Scalar::$variant(_) => DType::$variant,)*
                }
            }
        }
    };
}

scalar_bytes! {
    U8: u8, I8: i8, U16: u16, I16: i16, U32: u32, I32: i32, U64: u64, I64: i64,
    F16: f16, BF16: bf16, F32: f32, F64: f64,
    F8E4M3FN: F8E4M3FN, F8E5M2: F8E5M2, F8E8M0FNU: F8E8M0FNU,
}

impl Scalar {
    /// The value as `f64`: exact for every dtype except 64-bit integers
    /// beyond 2^53, which round (as a JavaScript number would).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::Scalar;
    /// assert_eq!(Scalar::BF16(half::bf16::from_f32(0.5)).to_f64(), 0.5);
    /// assert_eq!(Scalar::Bool(true).to_f64(), 1.0);
    /// ```
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(v) => f64::from(u8::from(v)),
            Scalar::U8(v) => v.into(),
            Scalar::I8(v) => v.into(),
            Scalar::U16(v) => v.into(),
            Scalar::I16(v) => v.into(),
            Scalar::U32(v) => v.into(),
            Scalar::I32(v) => v.into(),
            Scalar::U64(v) => v as f64,
            Scalar::I64(v) => v as f64,
            Scalar::F16(v) => v.into(),
            Scalar::BF16(v) => v.into(),
            Scalar::F32(v) => v.into(),
            Scalar::F64(v) => v,
            Scalar::F8E4M3FN(v) => v.to_f64(),
            Scalar::F8E5M2(v) => v.to_f64(),
            Scalar::F8E8M0FNU(v) => v.to_f64(),
        }
    }

    /// A float of `dtype` nearest to `value` (ties to even), rounded once:
    /// `None` when `dtype` is not a float type.
    ///
    /// `half`'s own `f16::from_f64` and `bf16::from_f64` drop low bits
    /// first, so a value just above a tie can round down; this rounds to odd
    /// on the way through `f32` (which keeps at least two more bits than
    /// float16 or bfloat16 at every magnitude), so the last rounding is exact.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Scalar};
    /// let two_to = |n: i64| f64::from_bits(((1023 + n) as u64) << 52); // exact 2^n
    /// let just_above_a_tie = 1.0 + two_to(-11) + two_to(-40);
    /// assert_eq!(Scalar::float(DType::F16, just_above_a_tie).unwrap().to_f64(), 1.0 + two_to(-10));
    /// let bf = Scalar::float(DType::BF16, 1.0 + two_to(-8) + two_to(-30)).unwrap();
    /// assert_eq!(bf.to_f64(), 1.0 + two_to(-7));
    /// assert_eq!(Scalar::float(DType::F16, two_to(-25) + two_to(-60)).unwrap().to_f64(), two_to(-24));
    /// assert_eq!(Scalar::float(DType::F32, 0.1), Some(Scalar::F32(0.1)));
    /// assert_eq!(Scalar::float(DType::I32, 1.0), None);
    /// ```
    pub fn float(dtype: DType, value: f64) -> Option<Scalar> {
        Some(match dtype {
            DType::F64 => Scalar::F64(value),
            DType::F32 => Scalar::F32(value as f32),
            DType::F16 => Scalar::F16(f16::from_f32(f32_round_to_odd(value))),
            DType::BF16 => Scalar::BF16(bf16::from_f32(f32_round_to_odd(value))),
            DType::F8E4M3FN => Scalar::F8E4M3FN(F8E4M3FN::from_f64(value)),
            DType::F8E5M2 => Scalar::F8E5M2(F8E5M2::from_f64(value)),
            DType::F8E8M0FNU => Scalar::F8E8M0FNU(F8E8M0FNU::from_f64(value)),
            _ => return None,
        })
    }

    /// The value as `i128` when it is an integer or a boolean; `None` for floats.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::Scalar;
    /// assert_eq!(Scalar::U64(u64::MAX).to_i128(), Some(u64::MAX as i128));
    /// assert_eq!(Scalar::F32(1.0).to_i128(), None);
    /// ```
    pub fn to_i128(self) -> Option<i128> {
        Some(match self {
            Scalar::Bool(v) => i128::from(v),
            Scalar::U8(v) => v.into(),
            Scalar::I8(v) => v.into(),
            Scalar::U16(v) => v.into(),
            Scalar::I16(v) => v.into(),
            Scalar::U32(v) => v.into(),
            Scalar::I32(v) => v.into(),
            Scalar::U64(v) => v.into(),
            Scalar::I64(v) => v.into(),
            Scalar::F16(_)
            | Scalar::BF16(_)
            | Scalar::F32(_)
            | Scalar::F64(_)
            | Scalar::F8E4M3FN(_)
            | Scalar::F8E5M2(_)
            | Scalar::F8E8M0FNU(_) => return None,
        })
    }
}

/// `value` as `f32`, rounded toward zero and then, if that was inexact,
/// with the lowest bit set ("round to odd"): a later rounding to a format
/// with fewer bits then rounds as if straight from `value`.
fn f32_round_to_odd(value: f64) -> f32 {
    if value.is_nan() || value.is_infinite() {
        return value as f32;
    }
    let magnitude = value.abs();
    let mut bits = (magnitude as f32).to_bits();
    if f64::from(f32::from_bits(bits)) > magnitude {
        bits -= 1; // rounded up (to infinity, at most): step back toward zero
    }
    if f64::from(f32::from_bits(bits)) != magnitude {
        bits |= 1;
    }
    let rounded = f32::from_bits(bits);
    if value.is_sign_negative() {
        -rounded
    } else {
        rounded
    }
}

impl fmt::Display for Scalar {
    /// Integers in decimal, floats in Rust's shortest round-trip form,
    /// booleans as `true`/`false`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::F16(v) => write!(f, "{v}"),
            Scalar::BF16(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
            Scalar::F8E4M3FN(v) => write!(f, "{v}"),
            Scalar::F8E5M2(v) => write!(f, "{v}"),
            Scalar::F8E8M0FNU(v) => write!(f, "{v}"),
            other => match other.to_i128() {
                Some(v) => write!(f, "{v}"),
                None => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_out_of_bounds() {
        assert_eq!(
            Scalar::read(Descr::native(DType::U32), &[1, 2, 3]),
            Err(Error::OutOfBounds {
                start: 0,
                end: 4,
                len: 3
            })
        );
        assert!(Scalar::U64(1).write(ByteOrder::Big, &mut [0; 7]).is_err());
    }

    #[test]
    fn bool_reads_any_non_zero_byte_as_true() {
        let d = Descr::native(DType::Bool);
        assert_eq!(Scalar::read(d, &[2]), Ok(Scalar::Bool(true)));
        assert_eq!(Scalar::read(d, &[0]), Ok(Scalar::Bool(false)));
    }

    #[test]
    fn write_then_read_is_identity_for_every_dtype() {
        let values = [
            Scalar::Bool(true),
            Scalar::U8(200),
            Scalar::I8(-3),
            Scalar::U16(0xBEEF),
            Scalar::I16(-2),
            Scalar::U32(7),
            Scalar::I32(-7),
            Scalar::U64(u64::MAX),
            Scalar::I64(i64::MIN),
            Scalar::F16(f16::from_f32(0.25)),
            Scalar::BF16(bf16::from_f32(256.0)),
            Scalar::F32(-0.5),
            Scalar::F64(1e-300),
            Scalar::F8E4M3FN(F8E4M3FN::from_bits(0x7e)),
            Scalar::F8E5M2(F8E5M2::from_bits(0x80)),
            Scalar::F8E8M0FNU(F8E8M0FNU::from_bits(0)),
        ];
        for v in values {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let mut out = [0u8; 8];
                v.write(order, &mut out).unwrap();
                assert_eq!(Scalar::read(Descr::new(v.dtype(), order), &out), Ok(v));
            }
        }
    }

    /// Every gap between neighbouring positive finite float16/bfloat16 values:
    /// its midpoint rounds to the even neighbour, and the f64 just above or
    /// below it to the nearer one.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "65k cases: too slow under Miri, and no unsafe code here"
    )]
    fn float_rounds_once_to_nearest_even() {
        fn check(
            dtype: DType,
            last: u16,
            value: impl Fn(u16) -> f64,
            bits_of: impl Fn(Scalar) -> u16,
        ) {
            for bits in 0..last - 1 {
                let (low, high) = (value(bits), value(bits + 1));
                let middle = (low + high) / 2.0;
                let round = |x: f64| bits_of(Scalar::float(dtype, x).unwrap());
                let even = if bits % 2 == 0 { bits } else { bits + 1 };
                assert_eq!(round(middle), even, "{dtype} between {low} and {high}");
                assert_eq!(
                    round(f64::from_bits(middle.to_bits() + 1)),
                    bits + 1,
                    "{dtype} above {middle}"
                );
                assert_eq!(
                    round(f64::from_bits(middle.to_bits() - 1)),
                    bits,
                    "{dtype} below {middle}"
                );
                assert_eq!(round(-low), bits | 0x8000, "{dtype} -{low}");
            }
        }
        let f16_bits = |s: Scalar| match s {
            Scalar::F16(v) => v.to_bits(),
            _ => unreachable!(),
        };
        let bf16_bits = |s: Scalar| match s {
            Scalar::BF16(v) => v.to_bits(),
            _ => unreachable!(),
        };
        check(DType::F16, 0x7c00, |b| f16::from_bits(b).to_f64(), f16_bits);
        check(
            DType::BF16,
            0x7f80,
            |b| bf16::from_bits(b).to_f64(),
            bf16_bits,
        );
    }
}
