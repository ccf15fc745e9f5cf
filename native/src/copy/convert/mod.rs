//! Converting contiguous runs of elements from one dtype and byte order to
//! another, with numpy's `same_kind` casting rule.
//!
//! [`Convert::new`] checks the cast and picks the kernel once: a copy, a
//! SIMD kernel on x86-64 when the CPU has what it needs (detected at run
//! time, so a wheel built for any x86-64 uses AVX2 and F16C where they
//! exist), a NEON kernel on aarch64 (`neon`; FEAT_BF16 detected at run
//! time), the portable float8 kernel ([`float8`]: tables from a float8,
//! bit-manipulating encoders into one; on x86-64 with AVX2 the same code
//! compiled for AVX2), or the scalar reference ([`scalar`]) for everything
//! else, for the tail of a SIMD run, on other CPUs and under Miri (where
//! the float8 kernel, which has no `unsafe`, runs too). Every kernel gives the
//! reference's bits: numpy's (ml_dtypes' for bfloat16 and the float8
//! types), NaNs included.
//!
//! float8 (ml_dtypes 0.7's float8_e4m3fn, float8_e5m2 and float8_e8m0fnu)
//! converts to and from every float and from every integer, rounded once
//! to nearest (ties to even; float8_e8m0fnu's ties away from zero). Every
//! NaN becomes the destination's quiet NaN with the sign kept. Too large
//! for float8_e4m3fn, which has no infinity, is NaN; for float8_e5m2,
//! infinity. float8_e8m0fnu, unsigned powers of two from 2^-127, makes
//! NaN (0xff) of zero and of negative numbers, and 2^-127 of any positive
//! number below it. `tests/vectors/convert_float8.txt` holds ml_dtypes'
//! answers.

mod float8;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
mod neon;
mod scalar;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86;

#[cfg(test)]
mod tests;

use bytelens_core::{DType, Descr};

use crate::Error;

/// Whether numpy's `same_kind` casting allows `from` → `to`
/// (`np.can_cast(from, to, "same_kind")`).
///
/// Any dtype converts to itself and bool converts to anything; a signed
/// integer converts to any signed integer, an unsigned one to any integer;
/// every integer converts to every float; every float converts to every
/// float (float64 → float16 included), and nothing converts back from a
/// float to an integer or from an integer to bool.
///
/// bfloat16 counts as a float like float16. That is numpy's rule for
/// ml_dtypes' bfloat16 in every cell but one: ml_dtypes registers
/// bfloat16 → float16 as an `unsafe` cast only (neither holds the other's
/// values), while float16 → bfloat16 is `same_kind`; here both are.
///
/// # Examples
/// ```
/// use bytelens::{DType, can_cast};
/// assert!(can_cast(DType::F64, DType::F16));
/// assert!(can_cast(DType::U8, DType::I8));
/// assert!(!can_cast(DType::I8, DType::U64));
/// assert!(!can_cast(DType::F32, DType::I32));
/// ```
pub fn can_cast(from: DType, to: DType) -> bool {
    let kind = |d: DType| if d.is_float() { 'f' } else { d.kind() };
    match (kind(from), kind(to)) {
        ('b', _) | (_, 'f') => true,
        // A signed integer never becomes an unsigned one; every other pair
        // of integers converts (wrapping, as C does).
        ('u', 'u' | 'i') | ('i', 'i') => true,
        _ => from == to,
    }
}

/// A conversion of runs of `from` elements into runs of `to` elements.
/// Cheap to copy; [`run`](Convert::run) may be called from several threads
/// at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Convert {
    from: Descr,
    to: Descr,
    kernel: Kernel,
}

/// How [`Convert::run`] converts, chosen once by [`Convert::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// The bytes are copied unchanged.
    Copy,
    /// The scalar reference, element by element.
    Scalar,
    /// float8's tables and encoders (portable).
    Float8(float8::Kernel),
    /// A SIMD kernel the CPU was found to support.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    X86(x86::Kernel),
    /// A NEON kernel (FEAT_BF16's `bfcvtn` where it was found).
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
    Neon(neon::Kernel),
}

impl Convert {
    /// The conversion `from` → `to`, or `Error::Cast` when `same_kind`
    /// casting refuses it.
    pub(crate) fn new(from: Descr, to: Descr) -> Result<Convert, Error> {
        if !can_cast(from.dtype, to.dtype) {
            return Err(Error::Cast { from, to });
        }
        let kernel = if is_copy(from, to) {
            Kernel::Copy
        } else {
            Self::simd(from, to)
                .or_else(|| float8::Kernel::detect(from, to).map(Kernel::Float8))
                .unwrap_or(Kernel::Scalar)
        };
        Ok(Convert { from, to, kernel })
    }

    /// The scalar reference for the same conversion (for tests against the
    /// SIMD kernels).
    #[cfg(test)]
    fn scalar(from: Descr, to: Descr) -> Convert {
        let mut c = Convert::new(from, to).expect("a same_kind cast");
        if c.kernel != Kernel::Copy {
            c.kernel = Kernel::Scalar;
        }
        c
    }

    /// The portable float8 kernel for the same conversion, if it has one
    /// (for tests where `new` picks its AVX2 build).
    #[cfg(test)]
    fn portable(from: Descr, to: Descr) -> Option<Convert> {
        let kernel = Kernel::Float8(float8::Kernel::detect(from, to)?);
        Some(Convert { from, to, kernel })
    }

    #[cfg(all(target_arch = "x86_64", not(miri)))]
    fn simd(from: Descr, to: Descr) -> Option<Kernel> {
        x86::Kernel::detect(from, to).map(Kernel::X86)
    }

    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
    fn simd(from: Descr, to: Descr) -> Option<Kernel> {
        neon::Kernel::detect(from, to).map(Kernel::Neon)
    }

    #[cfg(not(any(
        all(target_arch = "x86_64", not(miri)),
        all(target_arch = "aarch64", target_feature = "neon", not(miri))
    )))]
    fn simd(_: Descr, _: Descr) -> Option<Kernel> {
        None
    }

    /// The source element.
    pub(crate) fn from(&self) -> Descr {
        self.from
    }

    /// The destination element.
    pub(crate) fn to(&self) -> Descr {
        self.to
    }

    /// Whether the bytes are copied unchanged.
    pub(crate) fn is_identity(&self) -> bool {
        self.kernel == Kernel::Copy
    }

    /// Converts the `n` elements of `src` (`n * from.size()` bytes) into
    /// `dst` (`n * to.size()` bytes).
    ///
    /// # Panics
    /// If `src` and `dst` do not hold the same whole number of elements.
    pub(crate) fn run(&self, src: &[u8], dst: &mut [u8]) {
        let (a, b) = (self.from.dtype.size(), self.to.dtype.size());
        assert!(
            src.len().is_multiple_of(a)
                && dst.len().is_multiple_of(b)
                && src.len() / a == dst.len() / b,
            "{} bytes of {} do not convert into {} bytes of {}",
            src.len(),
            self.from,
            dst.len(),
            self.to
        );
        match self.kernel {
            Kernel::Copy => dst.copy_from_slice(src),
            Kernel::Scalar => scalar::run(self.from, self.to, src, dst),
            Kernel::Float8(k) => k.run(self.from, self.to, src, dst),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Kernel::X86(k) => k.run(self.from, self.to, src, dst),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
            Kernel::Neon(k) => k.run(self.from, self.to, src, dst),
        }
    }
}

/// The SIMD kernels of one conversion, x86-64's (`x86`) and aarch64's
/// (`neon`). Each converts whole blocks of `A` source bytes into `B`
/// destination bytes and returns how many elements it converted; the
/// caller converts the rest.
#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
struct Kernels {
    from: Descr,
    to: Descr,
}

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
impl Kernels {
    fn swap_in(&self) -> bool {
        self.from.order == bytelens_core::ByteOrder::Big
    }

    fn swap_out(&self) -> bool {
        self.to.order == bytelens_core::ByteOrder::Big
    }

    /// Runs `f` on each block; a block for which `f` says the hardware's
    /// answer may differ from the reference (a NaN) is converted again by
    /// the reference.
    #[inline(always)]
    fn blocks<const A: usize, const B: usize>(
        &self,
        src: &[u8],
        dst: &mut [u8],
        mut f: impl FnMut(&[u8], &mut [u8]) -> bool,
    ) -> usize {
        for (s, d) in src.chunks_exact(A).zip(dst.chunks_exact_mut(B)) {
            if f(s, d) {
                scalar::run(self.from, self.to, s, d);
            }
        }
        src.len() / A * (A / self.from.dtype.size())
    }
}

/// Whether `from` → `to` leaves the bytes as they are: the same dtype, in
/// the same byte order unless it has one byte.
pub fn is_copy(from: Descr, to: Descr) -> bool {
    from.dtype == to.dtype && (from.order == to.order || from.dtype.size() == 1)
}
