//! The fast float8 conversions, portable (every target, Miri included):
//!
//! - a float8 into float16, bfloat16, float32 or float64 is a lookup in a
//!   256-entry table per format and destination, computed at compile time
//!   by [`decode_bits`] (integer arithmetic only);
//! - float32 into a float8 is a handful of integer operations per element
//!   ([`f32_to_e4m3fn`], [`f32_to_e5m2`], [`f32_to_e8m0fnu`]), written so
//!   that the compiler can vectorise the loop; float16 and bfloat16 widen
//!   to float32 first (exactly), float64 narrows to float32 rounded to odd
//!   first, so every source is rounded once, as ml_dtypes 0.7 rounds it;
//! - integers of two to eight bytes become float32 rounded to odd, then
//!   the same encoders;
//! - another float8, a bool, an int8 or a uint8 into a float8 is a lookup
//!   in a 256-entry table of the scalar reference's answers, made on first
//!   use.
//!
//! Every result is the scalar reference's ([`FloatFormat`]'s), which is
//! ml_dtypes': NaN becomes the format's one quiet NaN with the sign kept
//! (float8_e8m0fnu has no sign: 0xff); float8_e4m3fn has no infinity, so
//! infinity and anything that rounds past 448 becomes NaN; float8_e5m2
//! rounds past 57344 to infinity; float8_e8m0fnu rounds ties away from
//! zero (its values are the powers of two 2^-127 ..= 2^127), gives NaN for
//! zero and negative numbers, and 2^-127 for anything positive below it.

use std::sync::OnceLock;

use bytelens_core::{DType, Descr, FloatFormat, Specials};

use super::scalar::{self, map};

/// A conversion with a float8 on one side that this module speeds up.
// INVARIANT: only `detect` builds one, for the pairs `run` handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// A float8 into a wider float, by table.
    Widen,
    /// A wider float or integer into a float8, by the encoders.
    Narrow,
    /// A one-byte element (another float8, bool, int8 or uint8) into a
    /// float8, by a table of the reference's answers for every byte.
    Bytes,
}

impl Kernel {
    /// The kernel for `from` → `to`, if this module has one.
    pub(super) fn detect(from: Descr, to: Descr) -> Option<Kernel> {
        let wide = |d: DType| matches!(d, DType::F16 | DType::BF16 | DType::F32 | DType::F64);
        let narrow = |d: DType| matches!(d, DType::F8E4M3FN | DType::F8E5M2 | DType::F8E8M0FNU);
        let int = |d: DType| d.size() > 1 && matches!(d.kind(), 'i' | 'u');
        if narrow(from.dtype) && wide(to.dtype) {
            Some(Kernel::Widen)
        } else if (wide(from.dtype) || int(from.dtype)) && narrow(to.dtype) {
            Some(Kernel::Narrow)
        } else if from.dtype.size() == 1 && narrow(to.dtype) && from.dtype != to.dtype {
            Some(Kernel::Bytes)
        } else {
            None
        }
    }

    /// Converts `src` into `dst` (as `Convert::run`). Inlined, and so are
    /// the loops, so that a caller compiled for more of the CPU (x86-64's
    /// AVX2) vectorises them for it.
    #[inline(always)]
    pub(super) fn run(self, from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
        match self {
            Kernel::Widen => widen(from, to, src, dst),
            Kernel::Narrow => narrow(from, to, src, dst),
            Kernel::Bytes => {
                let t = byte_table(from.dtype, to.dtype);
                for (s, d) in src.iter().zip(dst) {
                    *d = t[usize::from(*s)];
                }
            }
        }
    }
}

/// The one-byte sources of [`Kernel::Bytes`], in the order of its tables.
const BYTE_SOURCES: [DType; 6] = [
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::F8E4M3FN,
    DType::F8E5M2,
    DType::F8E8M0FNU,
];

/// `from` → `to` for every byte (`to` a float8), from the scalar reference,
/// made on first use: the reference decides, the table only remembers.
fn byte_table(from: DType, to: DType) -> &'static [u8; 256] {
    static TABLES: [[OnceLock<[u8; 256]>; 3]; 6] = [const { [const { OnceLock::new() }; 3] }; 6];
    let row = BYTE_SOURCES.iter().position(|&d| d == from);
    let column = [DType::F8E4M3FN, DType::F8E5M2, DType::F8E8M0FNU]
        .iter()
        .position(|&d| d == to);
    let (Some(row), Some(column)) = (row, column) else {
        unreachable!("no byte table for {from} → {to}")
    };
    TABLES[row][column].get_or_init(|| {
        let every: [u8; 256] = std::array::from_fn(|i| i as u8);
        let mut t = [0; 256];
        scalar::run(Descr::native(from), Descr::native(to), &every, &mut t);
        t
    })
}

/// A float8 into float16, bfloat16, float32 or float64, by table.
#[inline(always)]
fn widen(from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
    let t = tables(from.dtype);
    let (a, b) = (from.order, to.order);
    match to.dtype {
        DType::F16 => map(src, dst, a, b, |v: u8| t.f16[usize::from(v)]),
        DType::BF16 => map(src, dst, a, b, |v: u8| t.bf16[usize::from(v)]),
        DType::F32 => map(src, dst, a, b, |v: u8| t.f32[usize::from(v)]),
        DType::F64 => map(src, dst, a, b, |v: u8| t.f64[usize::from(v)]),
        other => unreachable!("no float8 table into {other}"),
    }
}

/// float16, bfloat16, float32, float64 or a two- to eight-byte integer
/// into a float8.
#[inline(always)]
fn narrow(from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
    match to.dtype {
        DType::F8E4M3FN => narrow_with(from, to, src, dst, f32_to_e4m3fn),
        DType::F8E5M2 => narrow_with(from, to, src, dst, f32_to_e5m2),
        DType::F8E8M0FNU => narrow_with(from, to, src, dst, f32_to_e8m0fnu),
        other => unreachable!("{other} is not a float8"),
    }
}

/// Each source element made float32 without a second rounding, then
/// encoded by `encode` (one loop per source, inlined).
#[inline(always)]
fn narrow_with(
    from: Descr,
    to: Descr,
    src: &[u8],
    dst: &mut [u8],
    encode: impl Fn(u32) -> u8 + Copy,
) {
    let (a, b) = (from.order, to.order);
    match from.dtype {
        // Exact: float16's and bfloat16's values are all float32 values.
        DType::F16 => map(src, dst, a, b, |h: u16| encode(f16_to_f32_value(h))),
        DType::BF16 => map(src, dst, a, b, |h: u16| encode(u32::from(h) << 16)),
        DType::F32 => map(src, dst, a, b, encode),
        DType::F64 => map(src, dst, a, b, |x: u64| encode(f64_to_f32_odd(x))),
        // Integers: float32 rounded to odd from sign and magnitude.
        DType::U16 => map(src, dst, a, b, |v: u16| {
            encode(int_to_f32_odd(false, v.into()))
        }),
        DType::I16 => map(src, dst, a, b, |v: i16| {
            encode(int_to_f32_odd(v < 0, v.unsigned_abs().into()))
        }),
        DType::U32 => map(src, dst, a, b, |v: u32| {
            encode(int_to_f32_odd(false, v.into()))
        }),
        DType::I32 => map(src, dst, a, b, |v: i32| {
            encode(int_to_f32_odd(v < 0, v.unsigned_abs().into()))
        }),
        DType::U64 => map(src, dst, a, b, |v: u64| encode(int_to_f32_odd(false, v))),
        DType::I64 => map(src, dst, a, b, |v: i64| {
            encode(int_to_f32_odd(v < 0, v.unsigned_abs()))
        }),
        other => unreachable!("no float8 encoder from {other}"),
    }
}

/// The float8 tables of one format: entry `i` is the value of bits `i` in
/// each wider format.
pub(super) struct Tables {
    pub(super) f16: [u16; 256],
    pub(super) bf16: [u16; 256],
    pub(super) f32: [u32; 256],
    pub(super) f64: [u64; 256],
}

static E4M3FN: Tables = Tables::of(FloatFormat::F8E4M3FN);
static E5M2: Tables = Tables::of(FloatFormat::F8E5M2);
static E8M0FNU: Tables = Tables::of(FloatFormat::F8E8M0FNU);

/// The tables of a float8 dtype.
pub(super) fn tables(dtype: DType) -> &'static Tables {
    match dtype {
        DType::F8E4M3FN => &E4M3FN,
        DType::F8E5M2 => &E5M2,
        DType::F8E8M0FNU => &E8M0FNU,
        other => unreachable!("{other} is not a float8"),
    }
}

impl Tables {
    const fn of(format: FloatFormat) -> Tables {
        let mut t = Tables {
            f16: [0; 256],
            bf16: [0; 256],
            f32: [0; 256],
            f64: [0; 256],
        };
        let mut i = 0;
        while i < 256 {
            let bits = i as u8;
            t.f16[i] = decode_bits(format, bits, FloatFormat::F16) as u16;
            t.bf16[i] = decode_bits(format, bits, FloatFormat::BF16) as u16;
            t.f32[i] = decode_bits(format, bits, FloatFormat::F32) as u32;
            t.f64[i] = decode_bits(format, bits, FloatFormat::F64);
            i += 1;
        }
        t
    }
}

/// The bits of the float8 `bits` of `from` in the IEEE format `to`,
/// rounded to nearest even (only float8_e8m0fnu into float16 rounds: its
/// powers of two beyond 2^15 become infinity, below 2^-25 zero); a NaN is
/// `to`'s quiet NaN with the sign.
const fn decode_bits(from: FloatFormat, bits: u8, to: FloatFormat) -> u64 {
    let bits = bits as u64;
    let negative = from.signed && bits >> 7 != 0;
    if from.is_nan(bits) {
        return to.nan(negative);
    }
    let sign = if negative { 1 << (to.bits() - 1) } else { 0 };
    let to_inf = ((1 << to.exponent_bits) - 1) << to.mantissa_bits;
    let m = from.mantissa_bits;
    let all_ones = (1 << from.exponent_bits) - 1;
    let exponent = (bits >> m) & all_ones;
    let mantissa = bits & ((1 << m) - 1);
    if matches!(from.specials, Specials::Ieee) && exponent == all_ones {
        return sign | to_inf;
    }
    // The value is significand × 2^scale.
    let (significand, scale) = if exponent == 0 && from.subnormals {
        (mantissa, 1 - from.bias - m as i32)
    } else {
        (mantissa | 1 << m, exponent as i32 - from.bias - m as i32)
    };
    if significand == 0 {
        return sign;
    }
    let tm = to.mantissa_bits as i32;
    let top = 63 - significand.leading_zeros() as i32 + scale; // floor(log2 value)
    let lowest = 1 - to.bias; // the smallest normal exponent
    // The unit of `to`'s last mantissa bit at this magnitude.
    let unit = if top > lowest { top } else { lowest } - tm;
    let shift = unit - scale;
    let q = if shift <= 0 {
        significand << -shift
    } else if shift >= 64 {
        0
    } else {
        let kept = significand >> shift;
        let rest = significand & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        kept + (rest > half || (rest == half && kept & 1 == 1)) as u64
    };
    // q's leading bit (if at bit tm) adds 1 to the exponent field, and a
    // rounding carry moves on into it; a subnormal has unit + tm + bias = 1.
    let out = (((unit + tm + to.bias - 1) as u64) << tm) + q;
    sign | if out < to_inf { out } else { to_inf }
}

/// float32 bits as float8_e4m3fn, rounded to nearest even: NaN, infinity
/// and anything rounding past 448 become NaN (0x7f) with the sign.
#[inline(always)]
pub(super) fn f32_to_e4m3fn(x: u32) -> u8 {
    signed8::<4, 3, true>(x)
}

/// float32 bits as float8_e5m2, rounded to nearest even: rounding past
/// 57344 gives infinity (0x7c), NaN the quiet NaN (0x7e), with the sign.
#[inline(always)]
pub(super) fn f32_to_e5m2(x: u32) -> u8 {
    signed8::<5, 2, false>(x)
}

/// float32 bits as a signed float8 of `E` exponent and `M` mantissa bits
/// (IEEE bias), rounded to nearest even; with `NAN_ONLY` the all-ones
/// pattern is the one NaN and overflow goes there, else IEEE specials.
#[inline(always)]
fn signed8<const E: u32, const M: u32, const NAN_ONLY: bool>(x: u32) -> u8 {
    let bias = (1 << (E - 1)) - 1;
    let sign = (x >> 24) as u8 & 0x80;
    let a = x & 0x7fff_ffff;
    // Normal results: the exponent rebiased in place, then the 23 - M
    // dropped bits rounded off by adding just under half a unit, plus one
    // when the kept part is odd (a carry moves into the exponent). Beyond
    // the format (infinity and NaN included) this is past the largest
    // pattern, and is clamped.
    let drop = 23 - M;
    let rebiased = a.wrapping_sub((127 - bias) << 23);
    let odd = (rebiased >> drop) & 1;
    let normal = rebiased.wrapping_add((1 << (drop - 1)) - 1 + odd) >> drop;
    // Subnormal results (below 2^(1 - bias)): added to a power of two whose
    // last bit is worth the float8's smallest subnormal, the float32 sum
    // rounds (to nearest even, in hardware) exactly where the float8 does,
    // and its low bits are the float8's (8 or 4: the smallest normal).
    let magic = f32::from_bits((127 + 24 - bias - M) << 23);
    let subnormal = (f32::from_bits(a) + magic).to_bits() - magic.to_bits();
    let min_normal = (128 - bias) << 23;
    let magnitude = if a < min_normal { subnormal } else { normal };
    let out = if NAN_ONLY {
        // 0x7f is the NaN: overflow, infinity and NaN all clamp onto it.
        magnitude.min(0x7f)
    } else if a > 0x7f80_0000 {
        0x7e // the quiet NaN
    } else {
        magnitude.min(0x7c) // infinity
    };
    sign | out as u8
}

/// float32 bits as float8_e8m0fnu (an unsigned power of two, 2^(e - 127)
/// for bits e, 0xff NaN), rounded to nearest with ties away from zero:
/// NaN, zero, negative numbers and overflow give 0xff, positive values
/// below 2^-127 give 0 (2^-127).
#[inline(always)]
pub(super) fn f32_to_e8m0fnu(x: u32) -> u8 {
    let exponent = (x >> 23) & 0xff;
    let mantissa = x & 0x7f_ffff;
    // The bias is float32's, so a normal float32's exponent field is the
    // power below it, one more from 1.5 × that power up (the midpoint).
    // A subnormal one (below 2^-126) rounds to 2^-126 from 1.5 × 2^-127.
    let up = if exponent == 0 {
        mantissa >= 0x60_0000
    } else {
        mantissa >= 0x40_0000
    };
    let out = (exponent + u32::from(up)).min(0xff);
    let nan = x >> 31 != 0 || x == 0;
    if nan { 0xff } else { out as u8 }
}

/// float64 bits as float32 bits rounded to odd: toward zero, then the last
/// bit set where that was inexact (a NaN as the quiet NaN with its sign).
/// Rounding the result to a float8, which keeps far fewer bits than
/// float32 at every magnitude a float8 reaches, gives what rounding the
/// float64 directly would, ties and their neighbours included.
#[inline(always)]
pub(super) fn f64_to_f32_odd(x: u64) -> u32 {
    let v = f64::from_bits(x);
    let sign = (x >> 32) as u32 & 0x8000_0000;
    let y = v as f32; // to nearest: beyond float32's range, infinity
    let back = f64::from(y);
    // Rounded away from zero: one step back toward it (infinity becomes
    // the largest finite float32). No branches, so loops vectorise.
    let away = back.abs() > v.abs();
    let bits = y.to_bits().wrapping_sub(u32::from(away)) | u32::from(back != v);
    if v.is_nan() { sign | 0x7fc0_0000 } else { bits }
}

/// An integer, `-magnitude` if `negative`, as float32 bits rounded to odd
/// (exact up to 2^24, else its top 24 bits with the last one set if any
/// bit below them is), so that the encoders round it once.
#[inline(always)]
pub(super) fn int_to_f32_odd(negative: bool, magnitude: u64) -> u32 {
    let shift = (64 - magnitude.leading_zeros()).saturating_sub(24);
    let below = magnitude & ((1 << shift) - 1);
    let kept = magnitude >> shift | u64::from(below != 0); // below 2^24: exact
    // Times 2^shift (at most 2^40), exactly.
    let value = kept as f32 * f32::from_bits((127 + shift) << 23);
    value.to_bits() | u32::from(negative) << 31
}

/// float16 bits as float32 bits of the same value, for the encoders: exact
/// for every finite value and infinity; a NaN stays a NaN with its sign
/// (its payload, which the encoders drop, is not numpy's). Branch-free:
/// the float16 exponent and mantissa moved into float32's places read as
/// the value times 2^-112 (a subnormal float16 as a subnormal float32),
/// and one exact multiplication scales it back.
#[inline(always)]
pub(super) fn f16_to_f32_value(h: u16) -> u32 {
    let a = u32::from(h & 0x7fff) << 13;
    let scaled = (f32::from_bits(a) * f32::from_bits((127 + 112) << 23)).to_bits();
    // The all-ones exponent: float32's, the mantissa kept (infinity or NaN).
    let magnitude = if a >= 0x7c00 << 13 {
        a | 0x7f80_0000
    } else {
        scaled
    };
    magnitude | u32::from(h & 0x8000) << 16
}

#[cfg(test)]
mod tests {
    use bytelens_core::FloatFormat;

    use super::super::tests::Rng;
    use super::*;

    /// One of the float32 encoders.
    type Encoder = fn(u32) -> u8;

    const FORMATS: [(DType, FloatFormat); 3] = [
        (DType::F8E4M3FN, FloatFormat::F8E4M3FN),
        (DType::F8E5M2, FloatFormat::F8E5M2),
        (DType::F8E8M0FNU, FloatFormat::F8E8M0FNU),
    ];

    /// The reference's bits of `value` in `to`: NaN as `to`'s quiet NaN.
    fn reference(to: FloatFormat, value: f64) -> u64 {
        to.encode(value)
    }

    #[test]
    fn tables_hold_the_reference_decoding() {
        for (dtype, format) in FORMATS {
            let t = tables(dtype);
            for i in 0..256 {
                let v = format.decode(i as u64);
                let ctx = format!("{dtype} {i:#04x} = {v}");
                assert_eq!(u64::from(t.f16[i]), reference(FloatFormat::F16, v), "{ctx}");
                assert_eq!(
                    u64::from(t.bf16[i]),
                    reference(FloatFormat::BF16, v),
                    "{ctx}"
                );
                assert_eq!(u64::from(t.f32[i]), reference(FloatFormat::F32, v), "{ctx}");
                assert_eq!(t.f64[i], reference(FloatFormat::F64, v), "{ctx}");
            }
        }
        // Spot values, written out.
        assert_eq!(E4M3FN.f32[0x7e], 448f32.to_bits());
        assert_eq!(E4M3FN.f32[0xff], 0xffc0_0000);
        assert_eq!(E4M3FN.f16[0x01], 0x1800); // 2^-9
        assert_eq!(E5M2.f16[0x7c], 0x7c00);
        assert_eq!(E5M2.f64[0xfd], 0xfff8_0000_0000_0000);
        assert_eq!(E8M0FNU.f16[127 + 16], 0x7c00); // 2^16: beyond float16
        assert_eq!(E8M0FNU.f16[127 - 25], 0); // 2^-25: a tie, to even
        assert_eq!(E8M0FNU.f16[127 - 24], 1);
        assert_eq!(E8M0FNU.f32[0], 0x0040_0000); // 2^-127, subnormal
    }

    /// Every encoder against the reference on float32 bits `x`.
    fn check_f32(x: u32) {
        let v = f64::from(f32::from_bits(x));
        // The reference reads a NaN's sign off the f64 the cast made; read
        // it off the bits instead (casts may change it).
        let v = if v.is_nan() {
            f64::NAN.copysign(if x >> 31 != 0 { -1.0 } else { 1.0 })
        } else {
            v
        };
        let encoders: [(DType, Encoder); 3] = [
            (DType::F8E4M3FN, f32_to_e4m3fn),
            (DType::F8E5M2, f32_to_e5m2),
            (DType::F8E8M0FNU, f32_to_e8m0fnu),
        ];
        for ((dtype, format), (_, encode)) in FORMATS.into_iter().zip(encoders) {
            assert_eq!(
                u64::from(encode(x)),
                format.encode(v),
                "float32 {x:#010x} ({v:e}) → {dtype}"
            );
        }
    }

    #[test]
    fn encoders_match_the_reference_at_every_float8_boundary() {
        let mut checked = 0;
        for (_, format) in FORMATS {
            // Each float8 value and each midpoint between neighbours (the
            // last past the largest finite value), ±3 float32 units.
            let values: Vec<f64> = (0..=255u64)
                .map(|b| format.decode(b))
                .filter(|v| v.is_finite() && *v >= 0.0)
                .collect();
            let mut points = values.clone();
            for w in values.windows(2) {
                points.push((w[0] + w[1]) / 2.0);
            }
            let (a, b) = (values[values.len() - 2], values[values.len() - 1]);
            points.extend([b + (b - a) / 2.0, b + (b - a), values[0] / 2.0]);
            for p in points {
                let bits = (p as f32).to_bits();
                for d in -3i32..=3 {
                    let x = bits.wrapping_add_signed(d);
                    check_f32(x);
                    check_f32(x | 0x8000_0000);
                    checked += 2;
                }
            }
        }
        for x in [
            0,
            1,
            0x7f7f_ffff,
            0x7f80_0000,
            0x7f80_0001,
            0x7fc0_0000,
            0x7fff_ffff,
        ] {
            check_f32(x);
            check_f32(x | 0x8000_0000);
        }
        assert!(checked > 3000, "{checked}");
    }

    #[test]
    fn float16_widens_to_its_float32_value() {
        for h in 0..=u16::MAX {
            let (got, want) = (f16_to_f32_value(h), super::super::scalar::f16_to_f32(h));
            if FloatFormat::F16.is_nan(h.into()) {
                assert!(
                    FloatFormat::F32.is_nan(got.into()),
                    "{h:#06x} gave {got:#010x}"
                );
                assert_eq!(got >> 31, want >> 31, "{h:#06x}: the sign");
            } else {
                assert_eq!(got, want, "{h:#06x}");
            }
        }
    }

    #[test]
    fn integers_round_to_odd_float32() {
        let cases = [
            (false, 0u64, 0u32),
            (true, 0, 0x8000_0000),
            (false, 1, 0x3f80_0000),
            (true, 3, 0xc040_0000),
            (false, (1 << 24) - 1, 0x4b7f_ffff),
            (false, 1 << 24, 0x4b80_0000),
            (false, (1 << 24) + 1, 0x4b80_0001), // inexact: odd
            (false, (1 << 24) + 2, 0x4b80_0001),
            (false, (1 << 24) + 3, 0x4b80_0001),
            (false, (1 << 24) + 4, 0x4b80_0002),
            (false, u64::MAX, 0x5f7f_ffff),
            (true, 1 << 63, 0xdf00_0000),
        ];
        for (negative, magnitude, want) in cases {
            assert_eq!(
                int_to_f32_odd(negative, magnitude),
                want,
                "{negative} {magnitude:#x}"
            );
        }
    }

    #[test]
    fn float64_rounds_to_odd_float32() {
        let cases = [
            (1.0f64, 0x3f80_0000u32),
            (1.0 + f64::powi(2.0, -30), 0x3f80_0001),
            (1.0 - f64::powi(2.0, -30), 0x3f7f_ffff),
            (-(1.0 + f64::powi(2.0, -30)), 0xbf80_0001),
            (1e300, 0x7f7f_ffff),
            (-1e300, 0xff7f_ffff),
            (f64::INFINITY, 0x7f80_0000),
            (1e-300, 0x0000_0001),
            (-0.0, 0x8000_0000),
        ];
        for (v, want) in cases {
            assert_eq!(f64_to_f32_odd(v.to_bits()), want, "{v:e}");
        }
        assert_eq!(f64_to_f32_odd(0xfff0_0000_0000_0001), 0xffc0_0000);
    }

    /// Random float64 bits, two in three spread over the float8s' range
    /// and beyond (exponents 2^-140 ..= 2^130, either sign), half of those
    /// with few mantissa bits (exact float8 values, ties and next to them).
    fn around_float8(rng: &mut Rng) -> u64 {
        let r = rng.next();
        let sign = r >> 63 << 63;
        let exponent = 1023 - 140 + (r >> 8) % 271;
        match r % 3 {
            0 => rng.next(),
            1 => sign | exponent << 52 | rng.next() >> 12,
            _ => {
                let few = (rng.next() % 16) << 48;
                let nudge = [0, 1, u64::MAX][(r >> 4) as usize % 3]; // ±1 unit
                (sign | exponent << 52 | few).wrapping_add(nudge)
            }
        }
    }

    /// The encoders on random float32 bits, and through float32 rounded to
    /// odd on random float64 bits, against the reference's one rounding.
    #[test]
    fn encoders_are_the_reference_on_random_inputs() {
        let mut rng = Rng(0x6638_6b65_726e);
        let cases = if cfg!(miri) { 64 } else { 400_000 };
        let encoders: [(FloatFormat, Encoder); 3] = [
            (FloatFormat::F8E4M3FN, f32_to_e4m3fn),
            (FloatFormat::F8E5M2, f32_to_e5m2),
            (FloatFormat::F8E8M0FNU, f32_to_e8m0fnu),
        ];
        for _ in 0..cases {
            let bits = around_float8(&mut rng);
            check_f32((bits >> 32) as u32);
            check_f32(rng.next() as u32);
            let v = f64::from_bits(bits);
            let odd = f64_to_f32_odd(bits);
            for (format, encode) in encoders {
                assert_eq!(
                    u64::from(encode(odd)),
                    format.encode(v),
                    "float64 {bits:#018x} ({v:e}) → {format:?}"
                );
            }
        }
    }
}
