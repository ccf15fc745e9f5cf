//! Bit layouts of the floating-point dtypes, and the reference conversion
//! between any of them and `f64`.
//!
//! Every float dtype's [`FloatFormat`] is a column of the dtype table. The
//! formats here are exact descriptions, so [`FloatFormat::decode`] is exact
//! and [`FloatFormat::encode`] rounds once, from `f64`, the way ml_dtypes
//! (and IEEE 754 where the format is IEEE's) does. They are the reference the
//! fast conversion kernels are tested against, and what bindings without a
//! conversion of their own (the web demo) read floats with.
#![forbid(unsafe_code)]

/// What the all-ones exponent means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Specials {
    /// IEEE 754: the all-ones exponent is infinity (mantissa zero) or NaN.
    Ieee,
    /// Only the all-ones pattern (exponent and mantissa) is NaN; there is no
    /// infinity and every other pattern is a finite number. Values too large
    /// for the format become NaN (float8_e4m3fn, float8_e8m0fnu).
    NanOnly,
}

/// How a value between two neighbours rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// To the nearer one; a tie goes to the one whose last bit is 0 (IEEE 754's default).
    NearestEven,
    /// To the nearer one; a tie goes to the larger magnitude (ml_dtypes'
    /// float8_e8m0fnu, whose values are powers of two only).
    NearestAway,
}

/// The bit layout of a floating-point dtype: sign, exponent and mantissa
/// widths, exponent bias, and what the special patterns mean.
///
/// # Examples
/// ```
/// use bytelens_core::DType;
/// let e4m3 = DType::F8E4M3FN.float_format().unwrap();
/// assert_eq!(e4m3.decode(0x7e), 448.0); // the largest
/// assert!(e4m3.decode(0x7f).is_nan()); // no infinity
/// assert_eq!(e4m3.encode(1.0), 0x38);
/// assert_eq!(e4m3.encode(1e6), 0x7f); // too large: NaN
/// let f16 = DType::F16.float_format().unwrap();
/// assert_eq!(f16.encode(65504.0), 0x7bff);
/// assert_eq!(f16.decode(0xfc00), f64::NEG_INFINITY);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FloatFormat {
    /// Whether the top bit is a sign (float8_e8m0fnu has none: it is unsigned).
    pub signed: bool,
    /// Width of the exponent field in bits.
    pub exponent_bits: u32,
    /// Width of the stored mantissa (fraction) in bits.
    pub mantissa_bits: u32,
    /// The exponent bias: a normal value is `1.m × 2^(e − bias)`.
    pub bias: i32,
    /// Whether exponent 0 holds zero and the subnormals. Without them
    /// (float8_e8m0fnu) exponent 0 is the smallest normal power, there is no
    /// zero, and values below it round to it.
    pub subnormals: bool,
    /// What the all-ones exponent means.
    pub specials: Specials,
    /// How ties round.
    pub rounding: Rounding,
}

/// `2^k` for `-1074 <= k <= 1023`.
fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

impl FloatFormat {
    /// IEEE 754 binary16.
    pub const F16: FloatFormat = FloatFormat::ieee(5, 10);
    /// bfloat16: binary32's sign and exponent, 7 mantissa bits.
    pub const BF16: FloatFormat = FloatFormat::ieee(8, 7);
    /// IEEE 754 binary32.
    pub const F32: FloatFormat = FloatFormat::ieee(8, 23);
    /// IEEE 754 binary64.
    pub const F64: FloatFormat = FloatFormat::ieee(11, 52);
    /// float8_e5m2: binary16's sign and exponent, 2 mantissa bits, IEEE specials.
    pub const F8E5M2: FloatFormat = FloatFormat::ieee(5, 2);
    /// float8_e4m3fn: bias 7, no infinity, NaN only at `S.1111.111`; largest 448.
    pub const F8E4M3FN: FloatFormat = FloatFormat {
        signed: true,
        exponent_bits: 4,
        mantissa_bits: 3,
        bias: 7,
        subnormals: true,
        specials: Specials::NanOnly,
        rounding: Rounding::NearestEven,
    };
    /// float8_e8m0fnu: an unsigned power of two, `2^(e − 127)`, 0xff NaN; no zero.
    pub const F8E8M0FNU: FloatFormat = FloatFormat {
        signed: false,
        exponent_bits: 8,
        mantissa_bits: 0,
        bias: 127,
        subnormals: false,
        specials: Specials::NanOnly,
        rounding: Rounding::NearestAway,
    };

    const fn ieee(exponent_bits: u32, mantissa_bits: u32) -> FloatFormat {
        FloatFormat {
            signed: true,
            exponent_bits,
            mantissa_bits,
            bias: (1 << (exponent_bits - 1)) - 1,
            subnormals: true,
            specials: Specials::Ieee,
            rounding: Rounding::NearestEven,
        }
    }

    /// Width of the whole encoding in bits.
    pub const fn bits(self) -> u32 {
        self.signed as u32 + self.exponent_bits + self.mantissa_bits
    }

    /// The bits the encoding occupies.
    const fn mask(self) -> u64 {
        u64::MAX >> (64 - self.bits())
    }

    const fn sign_bit(self) -> u64 {
        if self.signed {
            1 << (self.exponent_bits + self.mantissa_bits)
        } else {
            0
        }
    }

    const fn exponent_max(self) -> u64 {
        (1 << self.exponent_bits) - 1
    }

    /// The NaN the format converts every NaN to: the quiet NaN (top
    /// mantissa bit set) with the sign kept where the format has one, as
    /// ml_dtypes and the IEEE conversions of x86 and Arm give.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::FloatFormat;
    /// assert_eq!(FloatFormat::F32.nan(true), 0xffc0_0000);
    /// assert_eq!(FloatFormat::F8E4M3FN.nan(false), 0x7f);
    /// assert_eq!(FloatFormat::F8E8M0FNU.nan(true), 0xff);
    /// ```
    pub const fn nan(self, negative: bool) -> u64 {
        let sign = if negative { self.sign_bit() } else { 0 };
        let exponent = self.exponent_max() << self.mantissa_bits;
        let mantissa = match self.specials {
            Specials::Ieee => 1 << (self.mantissa_bits - 1),
            Specials::NanOnly => (1 << self.mantissa_bits) - 1,
        };
        sign | exponent | mantissa
    }

    /// Whether `bits` encode a NaN.
    pub const fn is_nan(self, bits: u64) -> bool {
        let magnitude = bits & !self.sign_bit() & self.mask();
        let exponent = magnitude >> self.mantissa_bits;
        let mantissa = magnitude & ((1 << self.mantissa_bits) - 1);
        match self.specials {
            Specials::Ieee => exponent == self.exponent_max() && mantissa != 0,
            Specials::NanOnly => {
                magnitude
                    == (self.exponent_max() << self.mantissa_bits) | ((1 << self.mantissa_bits) - 1)
            }
        }
    }

    /// The value `bits` encode, exactly; every NaN reads as the quiet `f64`
    /// NaN with its sign. Bits above [`bits`](FloatFormat::bits) are ignored.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::FloatFormat;
    /// assert_eq!(FloatFormat::F8E8M0FNU.decode(127), 1.0);
    /// let two_to = |n: i64| f64::from_bits(((1023 + n) as u64) << 52); // exact 2^n
    /// assert_eq!(FloatFormat::F8E8M0FNU.decode(0), two_to(-127));
    /// assert_eq!(FloatFormat::F8E5M2.decode(0x01), two_to(-16));
    /// assert_eq!(FloatFormat::BF16.decode(0x3f80), 1.0);
    /// ```
    pub fn decode(self, bits: u64) -> f64 {
        let m = self.mantissa_bits;
        let bits = bits & self.mask();
        let negative = bits & self.sign_bit() != 0;
        if self.is_nan(bits) {
            return f64::from_bits(0x7ff8_0000_0000_0000 | (u64::from(negative) << 63));
        }
        let exponent = (bits >> m) & self.exponent_max();
        let mantissa = bits & ((1 << m) - 1);
        let magnitude = if self.specials == Specials::Ieee && exponent == self.exponent_max() {
            f64::INFINITY
        } else if exponent == 0 && self.subnormals {
            mantissa as f64 * pow2(1 - self.bias - m as i32)
        } else {
            // Exact: at most 53 significant bits (binary64's own case).
            (mantissa | 1 << m) as f64 * pow2(exponent as i32 - self.bias - m as i32)
        };
        if negative { -magnitude } else { magnitude }
    }

    /// `value` rounded to the format, once, by its [`rounding`](FloatFormat::rounding):
    /// - NaN becomes [`nan`](FloatFormat::nan) with the sign kept;
    /// - beyond the largest finite value: infinity for IEEE formats, NaN for
    ///   the [`NanOnly`](Specials::NanOnly) ones (ml_dtypes' non-saturating
    ///   conversion);
    /// - an unsigned format gives NaN for a negative value or a zero, and one
    ///   without subnormals gives its smallest value for anything below it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::FloatFormat;
    /// let e5m2 = FloatFormat::F8E5M2;
    /// assert_eq!(e5m2.encode(57344.0), 0x7b); // the largest
    /// assert_eq!(e5m2.encode(61440.0), 0x7c); // a tie, to even: infinity
    /// assert_eq!(e5m2.encode(-0.0), 0x80);
    /// let e8m0 = FloatFormat::F8E8M0FNU;
    /// assert_eq!(e8m0.encode(1.5), 128); // ties round away: 2.0
    /// assert_eq!(e8m0.encode(0.0), 0xff);
    /// assert_eq!(e8m0.encode(1e-300), 0);
    /// ```
    pub fn encode(self, value: f64) -> u64 {
        let negative = value.is_sign_negative();
        if value.is_nan() || (!self.signed && (negative || value == 0.0)) {
            return self.nan(negative);
        }
        let sign = if negative { self.sign_bit() } else { 0 };
        let overflow = match self.specials {
            Specials::Ieee => sign | self.exponent_max() << self.mantissa_bits,
            Specials::NanOnly => self.nan(negative),
        };
        if value.is_infinite() {
            return overflow;
        }
        // |value| = significand × 2^scale exactly, significand < 2^53.
        let raw = value.to_bits() & !(1 << 63);
        let (significand, scale) = match raw >> 52 {
            0 => (raw, -1074),
            e => (raw & ((1 << 52) - 1) | 1 << 52, e as i32 - 1075),
        };
        if significand == 0 {
            return sign;
        }
        let m = self.mantissa_bits as i32;
        let top = 63 - significand.leading_zeros() as i32 + scale; // floor(log2 |value|)
        let lowest = if self.subnormals { 1 } else { 0 } - self.bias;
        // The unit of the last mantissa bit at this magnitude.
        let unit = top.max(lowest) - m;
        let q = self.round(significand, unit - scale);
        let (q, unit) = if q >> (m + 1) != 0 {
            (q >> 1, unit + 1)
        } else {
            (q, unit)
        };
        if q == 0 {
            // Below half the smallest subnormal, or no subnormals to hold it.
            return if self.subnormals { sign } else { 0 };
        }
        let (exponent, mantissa) = if q >> m == 0 {
            (0, q) // subnormal
        } else {
            ((unit + m + self.bias) as u64, q & ((1 << m) - 1))
        };
        let bits = sign | exponent << m | mantissa;
        let too_big = match self.specials {
            Specials::Ieee => exponent >= self.exponent_max(),
            Specials::NanOnly => exponent > self.exponent_max() || self.is_nan(bits),
        };
        if too_big { overflow } else { bits }
    }

    /// `significand / 2^shift` rounded to an integer.
    fn round(self, significand: u64, shift: i32) -> u64 {
        if shift <= 0 {
            // Only when the format is at least as wide as binary64's significand.
            return significand << -shift;
        }
        if shift > 54 {
            return 0; // below a quarter unit: never rounds up
        }
        let kept = significand >> shift;
        let rest = significand & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        let up = match self.rounding {
            Rounding::NearestEven => rest > half || (rest == half && kept & 1 == 1),
            Rounding::NearestAway => rest >= half,
        };
        kept + u64::from(up)
    }
}

/// The three float8 element types: a byte of bits, read and written through
/// the format's reference conversion. Comparison is by value (`-0 == 0`,
/// NaN equals nothing), as for the other float types.
macro_rules! float8_types {
    ($($(#[$doc:meta])* $name:ident => $format:ident,)+) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> $name {
                $name(bits)
            }

            /// The bits of the value.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The value nearest `value`, rounded as ml_dtypes does ([`FloatFormat::encode`]).
            pub fn from_f64(value: f64) -> $name {
                $name(FloatFormat::$format.encode(value) as u8)
            }

            /// The value, exactly.
            pub fn to_f64(self) -> f64 {
                FloatFormat::$format.decode(self.0.into())
            }

            /// The bits as one byte (for code generic over `to_ne_bytes`).
            pub const fn to_ne_bytes(self) -> [u8; 1] {
                [self.0]
            }

            /// The value of one byte of bits.
            pub const fn from_ne_bytes(bytes: [u8; 1]) -> $name {
                $name(bytes[0])
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &$name) -> bool {
                self.to_f64() == other.to_f64()
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.to_f64(), f)
            }
        }
    )+};
}

float8_types! {
    /// `float8_e4m3fn` ([`FloatFormat::F8E4M3FN`]).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::F8E4M3FN;
    /// assert_eq!(F8E4M3FN::from_f64(0.3).to_f64(), 0.3125);
    /// assert_eq!(F8E4M3FN::from_bits(0x7e).to_string(), "448");
    /// ```
    F8E4M3FN => F8E4M3FN,
    /// `float8_e5m2` ([`FloatFormat::F8E5M2`]).
    F8E5M2 => F8E5M2,
    /// `float8_e8m0fnu` ([`FloatFormat::F8E8M0FNU`]).
    F8E8M0FNU => F8E8M0FNU,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [FloatFormat; 7] = [
        FloatFormat::F16,
        FloatFormat::BF16,
        FloatFormat::F32,
        FloatFormat::F64,
        FloatFormat::F8E5M2,
        FloatFormat::F8E4M3FN,
        FloatFormat::F8E8M0FNU,
    ];

    #[test]
    fn every_small_pattern_decodes_and_encodes_back() {
        for format in ALL.into_iter().filter(|f| f.bits() <= 16) {
            // Every pattern; a sample under Miri, which is ~10^4 times slower.
            let step = if cfg!(miri) { 251 } else { 1 };
            for bits in (0..1u64 << format.bits()).step_by(step) {
                let value = format.decode(bits);
                let back = format.encode(value);
                if format.is_nan(bits) {
                    assert!(
                        value.is_nan() && format.is_nan(back),
                        "{format:?} {bits:#x}"
                    );
                } else {
                    assert_eq!(back, bits, "{format:?} {bits:#x} = {value}");
                }
            }
        }
    }

    #[test]
    fn encode_agrees_with_the_hardware_for_binary32() {
        let samples = [
            1.0f64,
            0.1,
            -3.5e38,
            3.5e38,
            1e-40,
            -1e-46,
            1.4e-45,
            0.7e-45,
            16777217.0,
            1e300,
            -1e-300,
            2.5,
            3.4028235677973366e38,
            3.4028235677973362e38,
        ];
        for value in samples {
            assert_eq!(
                FloatFormat::F32.encode(value),
                u64::from((value as f32).to_bits()),
                "{value:e}"
            );
        }
        // Against the core's float16 rounding through round-to-odd binary32
        // (half's own from_f64 rounds twice).
        for value in [
            1.0 + pow2(-11),
            1.0 + pow2(-11) + pow2(-40),
            65520.0,
            pow2(-25),
            -pow2(-26),
        ] {
            let Some(crate::Scalar::F16(f16)) = crate::Scalar::float(crate::DType::F16, value)
            else {
                unreachable!()
            };
            assert_eq!(
                FloatFormat::F16.encode(value),
                u64::from(f16.to_bits()),
                "{value:e}"
            );
        }
    }

    #[test]
    fn binary64_round_trips() {
        for value in [0.1f64, -1e308, 5e-324, f64::MAX, f64::MIN_POSITIVE] {
            assert_eq!(FloatFormat::F64.encode(value), value.to_bits());
            assert_eq!(FloatFormat::F64.decode(value.to_bits()), value);
        }
    }
}
