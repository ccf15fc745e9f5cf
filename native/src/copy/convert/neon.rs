//! SIMD kernels for aarch64 (NEON, which every aarch64 CPU has, so they are
//! chosen at compile time): byte swaps (`rev16`/`rev32`/`rev64`), float16 ↔
//! float32 and float16 ↔ float64 (`fcvtl`/`fcvtn`, base ARMv8.0: FEAT_FP16
//! adds half-precision arithmetic, which no conversion here needs),
//! float32 ↔ float64 (`fcvtl`/`fcvtn`), bfloat16 → float32 (a shift) and
//! float32 → bfloat16, by `bfcvtn` where the CPU has FEAT_BF16 (detected at
//! run time: Neoverse V1/N2 and Apple M2 on have it, Cortex-A72 and Apple M1
//! do not) and by integer rounding to nearest even in NEON otherwise. Each
//! byte order on either side is a `rev` in registers before or after
//! converting. Conversions to and from float8 are the portable float8
//! kernel: NEON is the baseline of every aarch64 build, so the compiler
//! already vectorises its loops with it and a second build gains nothing.
//!
//! The design is x86.rs's. Every kernel gives the scalar reference's bits.
//! Where the hardware's answer can differ from numpy's (`fcvtl`/`fcvtn`
//! quiet signaling NaNs, and `fcvtn` keeps a NaN's payload differently;
//! `bfcvtn` keeps a NaN's payload where ml_dtypes makes the quiet NaN) a
//! block holding a NaN is converted again by the reference, or its NaN
//! lanes replaced in registers (bfloat16). float64 → float16 goes through
//! float32 rounded to odd (`fcvtxn`), so the one rounding to float16 is as
//! if straight from float64, as numpy's is. The instructions round as
//! FPCR says: to nearest even, no flushing of subnormals, NaNs propagated
//! (not the default NaN), which is what Linux, macOS and Windows start
//! every thread with; a program that changes FPCR changes these results,
//! as one that changes MXCSR changes x86-64's float64 → float32.
//!
//! The kernels convert whole blocks of 16 to 64 bytes; the reference
//! converts what is left (less than a block). Large byte swaps use plain
//! stores: x86-64's non-temporal stores have no measured NEON twin here
//! (`stnp` is only a hint, and no ARM CPU was at hand to time it). The float16 and bfloat16
//! instructions, whose intrinsics are not stable Rust, are `asm!` on
//! 16-bit integer lanes. Loads and stores are `vld1q_u8`/`vst1q_u8` on
//! slices cut to 16 bytes (any alignment); calling a kernel is `unsafe`
//! only because its functions enable NEON (and FEAT_BF16 for `bfcvtn`).
//!
//! Correct under qemu-user (its `max` CPU has FEAT_BF16, `cortex-a72` does
//! not: both are tested); never timed on an ARM CPU.

use core::arch::aarch64::*;
use core::arch::asm;

use bytelens_core::{DType, Descr};

use super::{Kernels, scalar};

/// A NEON kernel this CPU supports.
// INVARIANT: only `detect` builds one, and builds `Op::F32ToBf16Bfcvtn`
// only after finding FEAT_BF16 on this CPU (NEON is in every build of this
// module: its cfg requires it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Kernel(Op);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Reverse the bytes of each 2-, 4- or 8-byte element.
    Swap2,
    Swap4,
    Swap8,
    F32ToF16,
    F16ToF32,
    F64ToF16,
    F16ToF64,
    /// float32 → bfloat16 rounded in integer NEON (any aarch64).
    F32ToBf16,
    /// float32 → bfloat16 by `bfcvtn` (FEAT_BF16).
    F32ToBf16Bfcvtn,
    Bf16ToF32,
    F64ToF32,
    F32ToF64,
}

impl Kernel {
    /// The kernel for `from` → `to` (which must not be a plain copy), if
    /// there is one.
    pub(super) fn detect(from: Descr, to: Descr) -> Option<Kernel> {
        use DType::*;
        let op = match (from.dtype, to.dtype) {
            (a, b) if a == b => match a.size() {
                2 => Op::Swap2,
                4 => Op::Swap4,
                8 => Op::Swap8,
                _ => return None,
            },
            (F32, F16) => Op::F32ToF16,
            (F16, F32) => Op::F16ToF32,
            (F64, F16) => Op::F64ToF16,
            (F16, F64) => Op::F16ToF64,
            (F32, BF16) if std::arch::is_aarch64_feature_detected!("bf16") => Op::F32ToBf16Bfcvtn,
            (F32, BF16) => Op::F32ToBf16,
            (BF16, F32) => Op::Bf16ToF32,
            (F64, F32) => Op::F64ToF32,
            (F32, F64) => Op::F32ToF64,
            _ => return None,
        };
        Some(Kernel(op))
    }

    /// Converts `src` into `dst` (as `Convert::run`).
    pub(super) fn run(self, from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
        let k = Kernels { from, to };
        // SAFETY: the called functions enable NEON, which every build of
        // this module has (its cfg: target_feature = "neon"), and FEAT_BF16
        // for `bfcvtn`, which `detect` found on this CPU before building
        // that op (the invariant).
        let done = unsafe {
            match self.0 {
                Op::Swap2 => k.swap::<2>(src, dst),
                Op::Swap4 => k.swap::<4>(src, dst),
                Op::Swap8 => k.swap::<8>(src, dst),
                Op::F32ToF16 => k.f32_to_f16(src, dst),
                Op::F16ToF32 => k.f16_to_f32(src, dst),
                Op::F64ToF16 => k.f64_to_f16(src, dst),
                Op::F16ToF64 => k.f16_to_f64(src, dst),
                Op::F32ToBf16 => k.f32_to_bf16(src, dst),
                Op::F32ToBf16Bfcvtn => k.f32_to_bf16_bfcvtn(src, dst),
                Op::Bf16ToF32 => k.bf16_to_f32(src, dst),
                Op::F64ToF32 => k.f64_to_f32(src, dst),
                Op::F32ToF64 => k.f32_to_f64(src, dst),
            }
        };
        let (a, b) = (from.dtype.size(), to.dtype.size());
        scalar::run(from, to, &src[done * a..], &mut dst[done * b..]);
    }

    /// The kernel with `F32ToBf16Bfcvtn` replaced by the integer rounding
    /// (for tests of both on a CPU with FEAT_BF16).
    #[cfg(test)]
    fn without_bf16(self) -> Kernel {
        match self.0 {
            Op::F32ToBf16Bfcvtn => Kernel(Op::F32ToBf16),
            _ => self,
        }
    }
}

/// The first 16 bytes of `bytes`.
#[inline]
#[target_feature(enable = "neon")]
fn load(bytes: &[u8]) -> uint8x16_t {
    let bytes = &bytes[..16];
    // SAFETY: `bytes` is 16 readable bytes; `vld1q_u8` needs no alignment.
    unsafe { vld1q_u8(bytes.as_ptr()) }
}

/// Writes `v` into the first 16 bytes of `bytes`.
#[inline]
#[target_feature(enable = "neon")]
fn store(bytes: &mut [u8], v: uint8x16_t) {
    let bytes = &mut bytes[..16];
    // SAFETY: `bytes` is 16 writable bytes, borrowed mutably; `vst1q_u8`
    // needs no alignment.
    unsafe { vst1q_u8(bytes.as_mut_ptr(), v) }
}

/// `v` with each `size`-byte element's bytes reversed when `swap`.
#[inline]
#[target_feature(enable = "neon")]
fn rev(size: usize, swap: bool, v: uint8x16_t) -> uint8x16_t {
    match (swap, size) {
        (false, _) => v,
        (true, 2) => vrev16q_u8(v),
        (true, 4) => vrev32q_u8(v),
        _ => vrev64q_u8(v),
    }
}

/// Eight float16 lanes as float32: `fcvtl`, `fcvtl2`.
#[inline]
#[target_feature(enable = "neon")]
fn f16_to_f32_lanes(h: uint8x16_t) -> (float32x4_t, float32x4_t) {
    let (lo, hi): (float32x4_t, float32x4_t);
    // SAFETY: base ARMv8.0 AdvSIMD instructions on registers only. `lo`
    // is a plain `out`, so it never shares `h`'s register, which the
    // second instruction still reads.
    unsafe {
        asm!(
            "fcvtl {lo:v}.4s, {h:v}.4h",
            "fcvtl2 {hi:v}.4s, {h:v}.8h",
            h = in(vreg) h,
            lo = out(vreg) lo,
            hi = lateout(vreg) hi,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    (lo, hi)
}

/// Eight float32 lanes (`a`'s, then `b`'s) as float16, rounded as FPCR
/// says: `fcvtn`, `fcvtn2`.
#[inline]
#[target_feature(enable = "neon")]
fn f32_to_f16_lanes(a: float32x4_t, b: float32x4_t) -> uint8x16_t {
    let h: uint8x16_t;
    // SAFETY: base ARMv8.0 AdvSIMD instructions on registers only. `h` is
    // a plain `out`, so it never shares `b`'s register, which the second
    // instruction reads after the first wrote `h`.
    unsafe {
        asm!(
            "fcvtn {h:v}.4h, {a:v}.4s",
            "fcvtn2 {h:v}.8h, {b:v}.4s",
            a = in(vreg) a,
            b = in(vreg) b,
            h = out(vreg) h,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    h
}

/// Eight float32 lanes as bfloat16 by `bfcvtn`, `bfcvtn2` (FEAT_BF16),
/// rounded as FPCR says; NaNs keep their payloads (the caller replaces them).
#[inline]
#[target_feature(enable = "neon,bf16")]
fn bfcvtn_lanes(a: float32x4_t, b: float32x4_t) -> uint16x8_t {
    let h: uint16x8_t;
    // SAFETY: FEAT_BF16 instructions (enabled for this function) on
    // registers only; `h` is a plain `out`, as in `f32_to_f16_lanes`.
    unsafe {
        asm!(
            "bfcvtn {h:v}.4h, {a:v}.4s",
            "bfcvtn2 {h:v}.8h, {b:v}.4s",
            a = in(vreg) a,
            b = in(vreg) b,
            h = out(vreg) h,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    h
}

/// Whether any lane of `x` is a NaN.
#[inline]
#[target_feature(enable = "neon")]
fn has_nan(x: float32x4_t) -> bool {
    vminvq_u32(vceqq_f32(x, x)) == 0
}

/// Whether any lane of `x` or `y` is a NaN.
#[inline]
#[target_feature(enable = "neon")]
fn has_nan64(x: float64x2_t, y: float64x2_t) -> bool {
    let ordered = vandq_u64(vceqq_f64(x, x), vceqq_f64(y, y));
    vminvq_u32(vreinterpretq_u32_u64(ordered)) == 0
}

/// Whether any of the eight float16 lanes of `h` is a NaN.
#[inline]
#[target_feature(enable = "neon")]
fn has_half_nan(h: uint8x16_t) -> bool {
    let magnitude = vandq_u16(vreinterpretq_u16_u8(h), vdupq_n_u16(0x7fff));
    vmaxvq_u16(vcgtq_u16(magnitude, vdupq_n_u16(0x7c00))) != 0
}

/// For four float32 lanes: a mask of the NaN lanes, narrowed to 16 bits,
/// and each lane's bfloat16 NaN (the quiet NaN with the lane's sign).
#[inline]
#[target_feature(enable = "neon")]
fn bf16_nans(v: uint32x4_t) -> (uint16x4_t, uint16x4_t) {
    let x = vreinterpretq_f32_u32(v);
    let is_nan = vmovn_u32(vmvnq_u32(vceqq_f32(x, x)));
    let sign = vand_u16(vshrn_n_u32::<16>(v), vdup_n_u16(0x8000));
    (is_nan, vorr_u16(sign, vdup_n_u16(0x7fc0)))
}

/// bfloat16 bits of four float32 lanes: rounded to nearest even, a NaN as
/// the quiet NaN with its sign.
#[inline]
#[target_feature(enable = "neon")]
fn bf16_lanes(v: uint32x4_t) -> uint16x4_t {
    // As the reference: adding just under half a unit, plus one when the
    // kept part is odd, carries exactly when rounding goes up.
    let odd = vandq_u32(vshrq_n_u32::<16>(v), vdupq_n_u32(1));
    let biased = vaddq_u32(vaddq_u32(v, vdupq_n_u32(0x7fff)), odd);
    let rounded = vshrn_n_u32::<16>(biased);
    let (is_nan, nan) = bf16_nans(v);
    vbsl_u16(is_nan, nan, rounded)
}

impl Kernels {
    #[target_feature(enable = "neon")]
    fn swap<const N: usize>(&self, src: &[u8], dst: &mut [u8]) -> usize {
        self.blocks::<64, 64>(src, dst, |s, d| {
            let v = [load(s), load(&s[16..]), load(&s[32..]), load(&s[48..])];
            for (k, v) in v.into_iter().enumerate() {
                store(&mut d[16 * k..], rev(N, true, v));
            }
            false
        })
    }

    #[target_feature(enable = "neon")]
    fn f32_to_f16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<32, 16>(src, dst, |s, d| {
            let a = vreinterpretq_f32_u8(rev(4, si, load(s)));
            let b = vreinterpretq_f32_u8(rev(4, si, load(&s[16..])));
            store(d, rev(2, so, f32_to_f16_lanes(a, b)));
            has_nan(a) || has_nan(b)
        })
    }

    #[target_feature(enable = "neon")]
    fn f16_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<16, 32>(src, dst, |s, d| {
            let h = rev(2, si, load(s));
            let (lo, hi) = f16_to_f32_lanes(h);
            store(d, rev(4, so, vreinterpretq_u8_f32(lo)));
            store(&mut d[16..], rev(4, so, vreinterpretq_u8_f32(hi)));
            has_half_nan(h)
        })
    }

    #[target_feature(enable = "neon")]
    fn f64_to_f16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<64, 16>(src, dst, |s, d| {
            let x = [0, 16, 32, 48].map(|at| vreinterpretq_f64_u8(rev(8, si, load(&s[at..]))));
            // Rounded to odd (`fcvtxn`): float16 keeps 13 bits fewer than
            // float32, so rounding that once more is a single rounding.
            let a = vcvtx_high_f32_f64(vcvtx_f32_f64(x[0]), x[1]);
            let b = vcvtx_high_f32_f64(vcvtx_f32_f64(x[2]), x[3]);
            store(d, rev(2, so, f32_to_f16_lanes(a, b)));
            has_nan64(x[0], x[1]) || has_nan64(x[2], x[3])
        })
    }

    #[target_feature(enable = "neon")]
    fn f16_to_f64(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<16, 64>(src, dst, |s, d| {
            let h = rev(2, si, load(s));
            let (lo, hi) = f16_to_f32_lanes(h);
            let x = [
                vcvt_f64_f32(vget_low_f32(lo)),
                vcvt_high_f64_f32(lo),
                vcvt_f64_f32(vget_low_f32(hi)),
                vcvt_high_f64_f32(hi),
            ];
            for (k, x) in x.into_iter().enumerate() {
                store(&mut d[16 * k..], rev(8, so, vreinterpretq_u8_f64(x)));
            }
            has_half_nan(h)
        })
    }

    #[target_feature(enable = "neon")]
    fn f32_to_bf16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<32, 16>(src, dst, |s, d| {
            let a = vreinterpretq_u32_u8(rev(4, si, load(s)));
            let b = vreinterpretq_u32_u8(rev(4, si, load(&s[16..])));
            let h = vcombine_u16(bf16_lanes(a), bf16_lanes(b));
            store(d, rev(2, so, vreinterpretq_u8_u16(h)));
            false
        })
    }

    #[target_feature(enable = "neon,bf16")]
    fn f32_to_bf16_bfcvtn(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<32, 16>(src, dst, |s, d| {
            let a = vreinterpretq_u32_u8(rev(4, si, load(s)));
            let b = vreinterpretq_u32_u8(rev(4, si, load(&s[16..])));
            let h = bfcvtn_lanes(vreinterpretq_f32_u32(a), vreinterpretq_f32_u32(b));
            // `bfcvtn` keeps NaN payloads; ml_dtypes makes every NaN the
            // quiet NaN with its sign.
            let ((na, qa), (nb, qb)) = (bf16_nans(a), bf16_nans(b));
            let h = vbslq_u16(vcombine_u16(na, nb), vcombine_u16(qa, qb), h);
            store(d, rev(2, so, vreinterpretq_u8_u16(h)));
            false
        })
    }

    #[target_feature(enable = "neon")]
    fn bf16_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<16, 32>(src, dst, |s, d| {
            let h = vreinterpretq_u16_u8(rev(2, si, load(s)));
            let lo = vshll_n_u16::<16>(vget_low_u16(h));
            let hi = vshll_high_n_u16::<16>(h);
            store(d, rev(4, so, vreinterpretq_u8_u32(lo)));
            store(&mut d[16..], rev(4, so, vreinterpretq_u8_u32(hi)));
            false
        })
    }

    #[target_feature(enable = "neon")]
    fn f64_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<32, 16>(src, dst, |s, d| {
            let lo = vreinterpretq_f64_u8(rev(8, si, load(s)));
            let hi = vreinterpretq_f64_u8(rev(8, si, load(&s[16..])));
            // The hardware's rounding (to nearest even) and NaNs (quieted,
            // payload truncated) are the C cast's, which numpy uses.
            let x = vcvt_high_f32_f64(vcvt_f32_f64(lo), hi);
            store(d, rev(4, so, vreinterpretq_u8_f32(x)));
            false
        })
    }

    #[target_feature(enable = "neon")]
    fn f32_to_f64(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        self.blocks::<16, 32>(src, dst, |s, d| {
            let x = vreinterpretq_f32_u8(rev(4, si, load(s)));
            let lo = vcvt_f64_f32(vget_low_f32(x));
            let hi = vcvt_high_f64_f32(x);
            store(d, rev(8, so, vreinterpretq_u8_f64(lo)));
            store(&mut d[16..], rev(8, so, vreinterpretq_u8_f64(hi)));
            false
        })
    }
}

#[cfg(test)]
mod tests {
    use bytelens_core::{ByteOrder, DType, Descr};

    use super::super::tests::{KERNEL_PAIRS, Rng, kernel_matches_reference};
    use super::{Kernel, Op};

    /// Every NEON kernel (the integer float32 → bfloat16 rounding too, and
    /// `bfcvtn` where this CPU has FEAT_BF16), both byte orders on both
    /// sides, against the scalar reference.
    #[test]
    fn kernels_match_the_reference() {
        let orders = [ByteOrder::Little, ByteOrder::Big];
        let mut rng = Rng(0x6e65_6f6e_6b65_726e);
        let (mut checked, mut bfcvtn) = (0, 0);
        for (from, to) in KERNEL_PAIRS {
            for a in orders {
                for b in orders {
                    let (f, t) = (Descr::new(from, a), Descr::new(to, b));
                    if from == to && a == b {
                        continue;
                    }
                    let kernel = Kernel::detect(f, t).expect("a NEON kernel for every pair");
                    let mut kernels = vec![kernel.without_bf16()];
                    if kernel != kernel.without_bf16() {
                        kernels.push(kernel);
                    }
                    for k in kernels {
                        let n =
                            kernel_matches_reference(&mut rng, f, t, &format!("{k:?}"), |s, d| {
                                k.run(f, t, s, d)
                            });
                        checked += n;
                        if k.0 == Op::F32ToBf16Bfcvtn {
                            bfcvtn += n;
                        }
                    }
                }
            }
        }
        assert!(checked > 400_000, "{checked} elements checked");
        println!("{checked} elements checked, {bfcvtn} of them by bfcvtn");
        assert_eq!(
            bfcvtn > 0,
            std::arch::is_aarch64_feature_detected!("bf16"),
            "bfcvtn is tested exactly where the CPU has FEAT_BF16"
        );
    }

    /// Every pair the x86-64 kernels cover has its NEON kernel; float32 →
    /// bfloat16 is `bfcvtn` exactly where FEAT_BF16 is detected.
    /// `BYTELENS_EXPECT_BF16=1` (or `0`) also asserts that this CPU has
    /// (or lacks) it, so that a run under `qemu-aarch64 -cpu cortex-a72`
    /// is known to have tested the integer rounding as the chosen kernel.
    #[test]
    fn a_neon_kernel_is_chosen_for_every_pair() {
        let bf16 = std::arch::is_aarch64_feature_detected!("bf16");
        match std::env::var("BYTELENS_EXPECT_BF16").as_deref() {
            Ok("1") => assert!(bf16, "this CPU was expected to have FEAT_BF16"),
            Ok("0") => assert!(!bf16, "this CPU was expected to lack FEAT_BF16"),
            _ => {}
        }
        println!("FEAT_BF16: {bf16}");
        let le = |d| Descr::new(d, ByteOrder::Little);
        let be = |d| Descr::new(d, ByteOrder::Big);
        let k = |f, t| Kernel::detect(f, t).map(|k| k.0);
        use DType::*;
        assert_eq!(k(le(U16), be(U16)), Some(Op::Swap2));
        assert_eq!(k(be(I32), le(I32)), Some(Op::Swap4));
        assert_eq!(k(le(F64), be(F64)), Some(Op::Swap8));
        assert_eq!(k(be(F32), le(F16)), Some(Op::F32ToF16));
        assert_eq!(k(le(F16), le(F32)), Some(Op::F16ToF32));
        assert_eq!(k(be(F64), be(F16)), Some(Op::F64ToF16));
        assert_eq!(k(le(F16), be(F64)), Some(Op::F16ToF64));
        assert_eq!(k(le(BF16), le(F32)), Some(Op::Bf16ToF32));
        assert_eq!(k(le(F64), le(F32)), Some(Op::F64ToF32));
        assert_eq!(k(be(F32), be(F64)), Some(Op::F32ToF64));
        let to_bf16 = if bf16 {
            Op::F32ToBf16Bfcvtn
        } else {
            Op::F32ToBf16
        };
        assert_eq!(k(le(F32), be(BF16)), Some(to_bf16));
        assert_eq!(k(le(I32), le(F32)), None);
        assert_eq!(k(le(F32), le(F8E4M3FN)), None);
    }
}
