//! The reference conversion: one element at a time, in plain Rust, for every
//! pair [`can_cast`](super::can_cast) allows and either byte order on either
//! side. The SIMD kernels are tested against it, it converts their tails,
//! and it is the whole conversion under Miri and on CPUs with no SIMD
//! kernels here (neither x86-64 nor aarch64).
//!
//! Results are numpy's (and ml_dtypes' where bfloat16 is involved) bit for
//! bit, NaNs included; `tests/vectors/convert.txt` holds their answers. What
//! each library does, found by running numpy 1.26.4 / 2.4.6 and ml_dtypes
//! 0.5.4 / 0.6.0 (they agree):
//!
//! - float16 from float32 or float64 rounds once, to nearest even (float64
//!   is not rounded to float32 first). A NaN keeps its sign and the top ten
//!   bits of its payload, and is not quieted; a payload that loses all its
//!   bits becomes 1, so the result stays a NaN.
//! - float32 and float64 from float16 keep a NaN's payload as it is,
//!   signaling or not.
//! - float32 ↔ float64 is the C cast (the hardware's): a NaN is quieted and
//!   its payload shifted.
//! - bfloat16 from float32, float16 or an integer rounds to nearest even
//!   through float32 (so int64 and float64 round twice: first to float32,
//!   then to bfloat16). Every NaN becomes the quiet NaN 0x7fc0 with its sign.
//! - float32 from bfloat16 appends sixteen zero bits (NaNs unchanged);
//!   float64 from bfloat16 goes through float32 (a NaN is quieted);
//!   float16 from bfloat16 rounds to nearest even and turns every NaN into
//!   0x7e00 with its sign.
//! - Integers become float32 and float64 rounded once, to nearest even
//!   (int64 → float32 does not go through float64). float16 from any
//!   integer does not depend on the route: integers that float32 would
//!   round are beyond float16's range.
//! - Integers wrap into narrower integers and sign- or zero-extend into
//!   wider ones, as C casts do; a bool source byte is true when non-zero.
//! - float8 (ml_dtypes 0.7, `tests/vectors/convert_float8.txt`) to or
//!   from any float goes through float64, which holds every value of every
//!   format here: exact into it, rounded once out of it by the core's
//!   [`FloatFormat::encode`](bytelens_core::FloatFormat::encode) (to
//!   nearest even; float8_e8m0fnu's ties away from zero). Every NaN becomes
//!   the destination's quiet NaN with its sign (float8_e4m3fn's 0x7f,
//!   float8_e5m2's 0x7e, float8_e8m0fnu's unsigned 0xff; a float8 NaN
//!   becomes 0x7e00, 0x7fc0, 0x7fc0_0000 or float64's quiet NaN, signed).
//!   Beyond the largest finite value float8_e4m3fn gives NaN (it has no
//!   infinity: infinity becomes NaN too) and float8_e5m2 infinity;
//!   float8_e8m0fnu gives NaN for zero and negative numbers and its
//!   smallest value, 2^-127, for positive ones below it. float64 and
//!   integers are rounded once (ml_dtypes 0.5.4 rounds float64 through
//!   float32); integers through float64 rounded to odd, as for bfloat16.
//!   A bool source is 0 or 1 (ml_dtypes reads its byte as a number).

use bytelens_core::{ByteOrder, DType, Descr};

/// Converts the elements of `src` (`from`) into `dst` (`to`); both hold the
/// same number of elements.
pub(super) fn run(from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
    use DType::*;
    let (a, b) = (from.order, to.order);
    match (from.dtype, to.dtype) {
        (x, y) if x == y => same(x.size(), a != b, src, dst),
        (F16, F32) => map(src, dst, a, b, f16_to_f32),
        (F16, F64) => map(src, dst, a, b, f16_to_f64),
        (F16, BF16) => map(src, dst, a, b, f16_to_bf16),
        (BF16, F16) => map(src, dst, a, b, bf16_to_f16),
        (BF16, F32) => map(src, dst, a, b, bf16_to_f32),
        (BF16, F64) => map(src, dst, a, b, bf16_to_f64),
        (F32, F16) => map(src, dst, a, b, f32_to_f16),
        (F32, BF16) => map(src, dst, a, b, f32_to_bf16),
        (F32, F64) => map(src, dst, a, b, f32_to_f64),
        (F64, F16) => map(src, dst, a, b, f64_to_f16),
        (F64, BF16) => map(src, dst, a, b, f64_to_bf16),
        (F64, F32) => map(src, dst, a, b, f64_to_f32),
        // float8 to or from any float: through the core's reference
        // conversion, exact into float64 and rounded once out of it.
        (F8E4M3FN | F8E5M2 | F8E8M0FNU, _) | (_, F8E4M3FN | F8E5M2 | F8E8M0FNU)
            if from.dtype.is_float() && to.dtype.is_float() =>
        {
            through_f64(from, to, src, dst)
        }
        (Bool, _) => from_int::<Flag>(a, to, src, dst),
        (U8, _) => from_int::<u8>(a, to, src, dst),
        (I8, _) => from_int::<i8>(a, to, src, dst),
        (U16, _) => from_int::<u16>(a, to, src, dst),
        (I16, _) => from_int::<i16>(a, to, src, dst),
        (U32, _) => from_int::<u32>(a, to, src, dst),
        (I32, _) => from_int::<i32>(a, to, src, dst),
        (U64, _) => from_int::<u64>(a, to, src, dst),
        (I64, _) => from_int::<i64>(a, to, src, dst),
        // A float source with an integer destination: `same_kind` refuses
        // it, so `Convert::new` never builds one.
        (F16 | BF16 | F32 | F64 | F8E4M3FN | F8E5M2 | F8E8M0FNU, _) => {
            unreachable!("{from} → {to} is not a same_kind cast")
        }
    }
}

/// Copies elements of `size` bytes, reversing each one's bytes if `swap`.
fn same(size: usize, swap: bool, src: &[u8], dst: &mut [u8]) {
    use ByteOrder::{Big, Little};
    match (size, swap) {
        (_, false) | (1, _) => dst.copy_from_slice(src),
        (2, true) => map(src, dst, Little, Big, |v: u16| v),
        (4, true) => map(src, dst, Little, Big, |v: u32| v),
        _ => map(src, dst, Little, Big, |v: u64| v),
    }
}

/// Converts integer (or bool) elements `S` into any destination.
fn from_int<S: Int>(a: ByteOrder, to: Descr, src: &[u8], dst: &mut [u8]) {
    use DType::*;
    let b = to.order;
    match to.dtype {
        // Only a bool source reaches here (int → bool is refused), and
        // `run` copies bool → bool; normalise anyway rather than panic.
        Bool => map(src, dst, a, b, |v: S| u8::from(v.wrap() != 0)),
        U8 | I8 => map(src, dst, a, b, |v: S| v.wrap() as u8),
        U16 | I16 => map(src, dst, a, b, |v: S| v.wrap() as u16),
        U32 | I32 => map(src, dst, a, b, |v: S| v.wrap() as u32),
        U64 | I64 => map(src, dst, a, b, |v: S| v.wrap()),
        F16 => map(src, dst, a, b, |v: S| f64_to_f16(v.to_f64().to_bits())),
        // Rounded once: through float64 rounded to odd (exact below 2^53;
        // float64's 53 bits leave room for the 8 of bfloat16 and a sticky
        // bit), not through float32, which would round twice.
        BF16 => map(src, dst, a, b, |v: S| f64_to_bf16(v.to_f64_odd().to_bits())),
        F32 => map(src, dst, a, b, |v: S| v.to_f32().to_bits()),
        F64 => map(src, dst, a, b, |v: S| v.to_f64().to_bits()),
        // Rounded once, as for bfloat16: float64 rounded to odd keeps far
        // more than float8's bits and a sticky bit.
        F8E4M3FN | F8E5M2 | F8E8M0FNU => {
            let format = to.dtype.float_format().expect("a float dtype");
            map(src, dst, a, b, |v: S| format.encode(v.to_f64_odd()) as u8)
        }
    }
}

/// Float to float through `f64`, where either side is a float8: exact into
/// `f64` (every format here fits in it) and rounded once out of it by the
/// core's reference ([`FloatFormat`](bytelens_core::FloatFormat)), which is
/// ml_dtypes' rounding, NaNs and overflow included.
fn through_f64(from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
    let (Some(f), Some(t)) = (from.dtype.float_format(), to.dtype.float_format()) else {
        unreachable!("{from} → {to}: float formats on both sides")
    };
    let (a, b) = (from.order, to.order);
    let decode = |bits: u64| f.decode(bits);
    match (from.dtype.size(), to.dtype.size()) {
        (1, 1) => map(src, dst, a, b, |v: u8| t.encode(decode(v.into())) as u8),
        (1, 2) => map(src, dst, a, b, |v: u8| t.encode(decode(v.into())) as u16),
        (1, 4) => map(src, dst, a, b, |v: u8| t.encode(decode(v.into())) as u32),
        (1, 8) => map(src, dst, a, b, |v: u8| t.encode(decode(v.into()))),
        (2, 1) => map(src, dst, a, b, |v: u16| t.encode(decode(v.into())) as u8),
        (4, 1) => map(src, dst, a, b, |v: u32| t.encode(decode(v.into())) as u8),
        (8, 1) => map(src, dst, a, b, |v: u64| t.encode(decode(v)) as u8),
        (x, y) => unreachable!("{from} → {to}: a float8 on one side, not {x} → {y} bytes"),
    }
}

/// Applies `f` to every element of `src`, read in byte order `a`, and
/// writes the results to `dst` in byte order `b`.
#[inline(always)]
pub(super) fn map<S: Elem, D: Elem>(
    src: &[u8],
    dst: &mut [u8],
    a: ByteOrder,
    b: ByteOrder,
    f: impl Fn(S) -> D,
) {
    use ByteOrder::{Big, Little};
    // One loop per pair of byte orders, so each loop body is branch-free
    // and the compiler can vectorise it.
    match (a, b) {
        (Little, Little) => map_in::<S, D, false, false>(src, dst, f),
        (Little, Big) => map_in::<S, D, false, true>(src, dst, f),
        (Big, Little) => map_in::<S, D, true, false>(src, dst, f),
        (Big, Big) => map_in::<S, D, true, true>(src, dst, f),
    }
}

#[inline(always)]
fn map_in<S: Elem, D: Elem, const A_BIG: bool, const B_BIG: bool>(
    src: &[u8],
    dst: &mut [u8],
    f: impl Fn(S) -> D,
) {
    for (s, d) in src.chunks_exact(S::SIZE).zip(dst.chunks_exact_mut(D::SIZE)) {
        f(S::read::<A_BIG>(s)).write::<B_BIG>(d);
    }
}

/// An element read from and written to bytes in either byte order.
pub(super) trait Elem: Copy {
    const SIZE: usize;
    /// `bytes` is exactly `SIZE` long.
    fn read<const BIG: bool>(bytes: &[u8]) -> Self;
    /// `bytes` is exactly `SIZE` long.
    fn write<const BIG: bool>(self, bytes: &mut [u8]);
}

/// An integer source element.
trait Int: Elem {
    /// The value sign- or zero-extended to 64 bits (C's conversion to a
    /// wider integer; truncating it is C's conversion to a narrower one).
    fn wrap(self) -> u64;
    /// The nearest float32 (ties to even), rounded once.
    fn to_f32(self) -> f32;
    /// The value as float64 rounded to odd: exact where it fits (every
    /// integer up to 2^53), else truncated with the last bit set, so that
    /// rounding the result to a narrower float rounds the integer once.
    fn to_f64_odd(self) -> f64;
    /// The nearest float64 (ties to even).
    fn to_f64(self) -> f64;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = size_of::<$t>();
            #[inline(always)]
            fn read<const BIG: bool>(bytes: &[u8]) -> Self {
                let bytes = bytes.try_into().expect("one element");
                if BIG { <$t>::from_be_bytes(bytes) } else { <$t>::from_le_bytes(bytes) }
            }
            #[inline(always)]
            fn write<const BIG: bool>(self, bytes: &mut [u8]) {
                let v = if BIG { self.to_be_bytes() } else { self.to_le_bytes() };
                bytes.copy_from_slice(&v);
            }
        }
        impl Int for $t {
            #[inline(always)]
            fn wrap(self) -> u64 {
                // Sign-extends a signed type, zero-extends an unsigned one.
                self as i128 as u64
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn to_f64_odd(self) -> f64 {
                let v = self as i128;
                let n = v.unsigned_abs();
                let bits = 128 - n.leading_zeros();
                let f = if bits <= 53 {
                    n as f64
                } else {
                    // 53 significant bits kept, the rest folded into the last.
                    let shift = bits - 53;
                    let kept = (n >> shift) | u128::from(n & ((1 << shift) - 1) != 0);
                    // Times 2^shift, built from its bits: exact, where
                    // `powi` need not be (and Miri makes it inexact).
                    kept as f64 * f64::from_bits((1023 + u64::from(shift)) << 52)
                };
                if v < 0 { -f } else { f }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
elem!(u8, i8, u16, i16, u32, i32, u64, i64);

/// A bool source byte: true when non-zero.
#[derive(Clone, Copy)]
struct Flag(bool);

impl Elem for Flag {
    const SIZE: usize = 1;
    #[inline(always)]
    fn read<const BIG: bool>(bytes: &[u8]) -> Self {
        Flag(bytes[0] != 0)
    }
    #[inline(always)]
    fn write<const BIG: bool>(self, bytes: &mut [u8]) {
        bytes[0] = u8::from(self.0);
    }
}

impl Int for Flag {
    fn wrap(self) -> u64 {
        u64::from(self.0)
    }
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self.0))
    }
    fn to_f64_odd(self) -> f64 {
        self.to_f64()
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self.0))
    }
}

/// A binary floating-point format: exponent and stored significand bits.
#[derive(Clone, Copy)]
struct Format {
    exp: u32,
    man: u32,
}

const HALF: Format = Format { exp: 5, man: 10 };
const BFLOAT: Format = Format { exp: 8, man: 7 };
const SINGLE: Format = Format { exp: 8, man: 23 };
const DOUBLE: Format = Format { exp: 11, man: 52 };

impl Format {
    fn sign(self) -> u64 {
        1 << (self.exp + self.man)
    }
    fn inf(self) -> u64 {
        ((1 << self.exp) - 1) << self.man
    }
    fn quiet(self) -> u64 {
        1 << (self.man - 1)
    }
    fn bias(self) -> i64 {
        (1 << (self.exp - 1)) - 1
    }
    fn is_nan(self, bits: u64) -> bool {
        bits & !self.sign() > self.inf()
    }
    /// Where a NaN of `self` sends its sign bit in `to`.
    fn nan_sign(self, bits: u64, to: Format) -> u64 {
        if bits & self.sign() != 0 {
            to.sign()
        } else {
            0
        }
    }
}

/// `m >> shift`, rounded to nearest, ties to even.
fn shift_round(m: u64, shift: u32) -> u64 {
    if shift >= 64 {
        return 0;
    }
    let q = m >> shift;
    let rest = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// A finite or infinite `bits` of `from` rounded to the nearest value of the
/// narrower `to` (ties to even; too large: infinity; too small: zero).
fn narrow(bits: u64, from: Format, to: Format) -> u64 {
    let sign = from.nan_sign(bits, to);
    let exp = (bits >> from.man) & ((1 << from.exp) - 1);
    let man = bits & ((1 << from.man) - 1);
    if exp == (1 << from.exp) - 1 {
        return sign | to.inf();
    }
    // The value is m · 2^(e - bias - from.man), m with its leading bit.
    let (m, e) = if exp == 0 {
        (man, 1)
    } else {
        (man | 1 << from.man, exp as i64)
    };
    // `to`'s biased exponent if the result is normal.
    let te = e - from.bias() + to.bias();
    let drop = from.man - to.man;
    let out = if te >= 1 {
        // m's leading bit lands on the exponent's lowest bit, adding 1 to
        // te - 1; a rounding carry moves on into the exponent.
        (((te - 1) as u64) << to.man) + shift_round(m, drop)
    } else {
        // A subnormal result (a carry makes the smallest normal).
        let extra = u32::try_from(1 - te).unwrap_or(u32::MAX);
        shift_round(m, drop.saturating_add(extra))
    };
    sign | out.min(to.inf())
}

/// A finite or infinite `bits` of `from` in the wider `to` (exact).
fn widen(bits: u64, from: Format, to: Format) -> u64 {
    let sign = from.nan_sign(bits, to);
    let exp = (bits >> from.man) & ((1 << from.exp) - 1);
    let mut man = bits & ((1 << from.man) - 1);
    if exp == (1 << from.exp) - 1 {
        return sign | to.inf();
    }
    if exp == 0 && man == 0 {
        return sign;
    }
    let mut e = exp as i64;
    if exp == 0 {
        // A subnormal: shift the leading bit up to the implicit bit.
        let shift = man.leading_zeros() - (63 - from.man);
        man = (man << shift) & ((1 << from.man) - 1);
        e = 1 - i64::from(shift);
    }
    let te = (e - from.bias() + to.bias()) as u64;
    sign | te << to.man | man << (to.man - from.man)
}

/// A NaN with its sign and payload moved to `to`'s width, quieted: what the
/// hardware (and so C's casts between float and double) does.
fn nan_quieted(bits: u64, from: Format, to: Format) -> u64 {
    let payload = bits & ((1 << from.man) - 1);
    let payload = if to.man > from.man {
        payload << (to.man - from.man)
    } else {
        payload >> (from.man - to.man)
    };
    from.nan_sign(bits, to) | to.inf() | to.quiet() | payload
}

/// A NaN with its sign and payload moved to `to`'s width, not quieted, and
/// a payload that loses all its bits made 1: numpy's float16 conversions.
fn nan_kept(bits: u64, from: Format, to: Format) -> u64 {
    let payload = bits & ((1 << from.man) - 1);
    let payload = if to.man > from.man {
        payload << (to.man - from.man)
    } else {
        (payload >> (from.man - to.man)).max(1)
    };
    from.nan_sign(bits, to) | to.inf() | payload
}

/// The quiet NaN with the sign of `bits`: ml_dtypes' bfloat16 conversions.
fn nan_canonical(bits: u64, from: Format, to: Format) -> u64 {
    from.nan_sign(bits, to) | to.inf() | to.quiet()
}

pub(super) fn f16_to_f32(h: u16) -> u32 {
    let h = u64::from(h);
    let out = if HALF.is_nan(h) {
        nan_kept(h, HALF, SINGLE)
    } else {
        widen(h, HALF, SINGLE)
    };
    out as u32
}

pub(super) fn f16_to_f64(h: u16) -> u64 {
    let h = u64::from(h);
    if HALF.is_nan(h) {
        nan_kept(h, HALF, DOUBLE)
    } else {
        widen(h, HALF, DOUBLE)
    }
}

pub(super) fn f16_to_bf16(h: u16) -> u16 {
    let h64 = u64::from(h);
    if HALF.is_nan(h64) {
        nan_canonical(h64, HALF, BFLOAT) as u16
    } else {
        f32_to_bf16(f16_to_f32(h))
    }
}

pub(super) fn bf16_to_f16(b: u16) -> u16 {
    let b = u64::from(b);
    let out = if BFLOAT.is_nan(b) {
        nan_canonical(b, BFLOAT, HALF)
    } else {
        narrow(b << 16, SINGLE, HALF)
    };
    out as u16
}

pub(super) fn bf16_to_f32(b: u16) -> u32 {
    u32::from(b) << 16
}

pub(super) fn bf16_to_f64(b: u16) -> u64 {
    f32_to_f64(bf16_to_f32(b))
}

pub(super) fn f32_to_f16(x: u32) -> u16 {
    let x = u64::from(x);
    let out = if SINGLE.is_nan(x) {
        nan_kept(x, SINGLE, HALF)
    } else {
        narrow(x, SINGLE, HALF)
    };
    out as u16
}

pub(super) fn f32_to_bf16(x: u32) -> u16 {
    if SINGLE.is_nan(u64::from(x)) {
        return nan_canonical(u64::from(x), SINGLE, BFLOAT) as u16;
    }
    // Adding just under half a bfloat16 unit, plus one when the kept part
    // is odd, carries exactly when rounding to nearest even goes up
    // (overflow included: the carry reaches the exponent).
    let odd = (x >> 16) & 1;
    ((x + 0x7fff + odd) >> 16) as u16
}

pub(super) fn f32_to_f64(x: u32) -> u64 {
    let x64 = u64::from(x);
    if SINGLE.is_nan(x64) {
        // Explicit, because Rust leaves a cast NaN's payload unspecified
        // (and Miri picks one at random).
        nan_quieted(x64, SINGLE, DOUBLE)
    } else {
        f64::from(f32::from_bits(x)).to_bits()
    }
}

pub(super) fn f64_to_f16(x: u64) -> u16 {
    let out = if DOUBLE.is_nan(x) {
        nan_kept(x, DOUBLE, HALF)
    } else {
        narrow(x, DOUBLE, HALF)
    };
    out as u16
}

pub(super) fn f64_to_bf16(x: u64) -> u16 {
    if DOUBLE.is_nan(x) {
        nan_canonical(x, DOUBLE, BFLOAT) as u16
    } else {
        // Rounded once, from the double itself: through float32 it would
        // round twice, and a value just past a bfloat16 tie that float32
        // rounds onto the tie would then go to even, the wrong way
        // (ml_dtypes before 0.7 did that).
        narrow(x, DOUBLE, BFLOAT) as u16
    }
}

pub(super) fn f64_to_f32(x: u64) -> u32 {
    let out = if DOUBLE.is_nan(x) {
        nan_quieted(x, DOUBLE, SINGLE)
    } else {
        narrow(x, DOUBLE, SINGLE)
    };
    out as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_is_rounded_once_from_float64_and_wide_integers() {
        // Just past a bfloat16 tie, by less than float32 can hold: through
        // float32 these land on the tie and go to even (down); once, up.
        let two_to = |n: i64| f64::from_bits(((1023 + n) as u64) << 52); // exact 2^n
        let past_tie = 1.0 + two_to(-8) + two_to(-30);
        assert_eq!(f64_to_bf16(past_tie.to_bits()), 0x3f81);
        assert_eq!(f64_to_bf16((-past_tie).to_bits()), 0xbf81);
        assert_eq!(
            f64_to_bf16((1.0 + two_to(-8)).to_bits()),
            0x3f80,
            "a tie goes to even"
        );
        let wide = (1i64 << 62) + (1 << 54) + 1; // past a tie by 1, which float64 drops
        assert_eq!(f64_to_bf16(wide.to_f64_odd().to_bits()), 0x5e81);
        assert_eq!(f64_to_bf16((-wide).to_f64_odd().to_bits()), 0xde81);
        assert_eq!(
            f64_to_bf16(((1u64 << 62) + (1 << 54)).to_f64_odd().to_bits()),
            0x5e80
        );
        assert_eq!(f64_to_bf16(u64::MAX.to_f64_odd().to_bits()), 0x5f80);
        assert_eq!(f64_to_bf16(i64::MIN.to_f64_odd().to_bits()), 0xdf00);
        assert_eq!(f64_to_bf16(16_843_009i32.to_f64_odd().to_bits()), 0x4b81);
    }

    #[test]
    fn narrow_matches_the_hardware_for_float64_to_float32() {
        // Rust's `as` rounds to nearest even; `narrow` must agree on the
        // awkward cases: ties, subnormal results, overflow, both signs.
        let cases = [
            1.0f64 + f64::powi(2.0, -24),
            1.0 + 3.0 * f64::powi(2.0, -24),
            1.0 + f64::powi(2.0, -24) + f64::powi(2.0, -52),
            f64::from(f32::MAX) + f64::powi(2.0, 103),
            f64::from(f32::MAX) + f64::powi(2.0, 103) - f64::powi(2.0, 60),
            f64::powi(2.0, -149),
            f64::powi(2.0, -150),
            f64::powi(2.0, -150) * 1.5,
            3.0 * f64::powi(2.0, -150),
            f64::powi(2.0, -127) * 1.75,
            1e-310,
            0.0,
            1e300,
            f64::INFINITY,
        ];
        for v in cases {
            for v in [v, -v] {
                assert_eq!(f64_to_f32(v.to_bits()), (v as f32).to_bits(), "{v:e}");
            }
        }
    }

    #[test]
    fn half_round_trips_through_single_and_double() {
        for h in 0..=u16::MAX {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#06x}");
            assert_eq!(f64_to_f16(f16_to_f64(h)), h, "{h:#06x}");
            let nan = BFLOAT.is_nan(u64::from(h));
            let back = if nan { h & 0x8000 | 0x7fc0 } else { h };
            assert_eq!(f32_to_bf16(bf16_to_f32(h)), back, "{h:#06x}");
            if cfg!(miri) && h > 300 {
                break;
            }
        }
    }
}
