//! SIMD kernels for x86-64, chosen at run time: AVX2 for byte swaps,
//! float32 ↔ float64, float32 → bfloat16 and bfloat16 → float32; AVX2 with
//! F16C for float16 ↔ float32 and float16 ↔ float64. Each byte order on
//! either side is a byte shuffle in registers before or after converting.
//! Conversions to and from float8 are the portable float8 kernel compiled
//! here for AVX2, where the compiler vectorises its loops eight lanes wide
//! (twice as fast as the baseline SSE2 build on float32 → float8_e4m3fn).
//!
//! Every kernel gives the scalar reference's bits. Where the hardware's
//! answer can differ from numpy's (a NaN converted by F16C keeps less of
//! its payload, and F16C quiets signaling NaNs) a vector holding a NaN is
//! converted again by the reference. float64 → float16 goes through
//! float32 rounded to odd (truncated, then the lowest bit set when
//! inexact), so the one rounding to float16 is as if straight from
//! float64, as numpy's is.
//!
//! The kernels convert whole vectors; the reference converts what is left
//! (fewer elements than a vector). Loads and stores go through `bytemuck`
//! on byte slices, so any alignment is fine and the kernels need no
//! `unsafe` of their own: only calling them does, after detection.

use core::arch::x86_64::*;

use bytelens_core::{DType, Descr};

use super::{Kernels, float8, scalar};

/// A SIMD kernel the CPU supports.
// INVARIANT: only `detect` builds one, after finding on this CPU the
// target features its function enables (`Op::features`).
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
    F32ToBf16,
    Bf16ToF32,
    F64ToF32,
    F32ToF64,
    /// The portable float8 kernel compiled for AVX2 (its loops vectorise
    /// eight lanes wide, with AVX2's unsigned minimum and blends).
    Float8(float8::Kernel),
}

impl Kernel {
    /// The kernel for `from` → `to` (which must not be a plain copy), if
    /// there is one and the CPU has what it needs.
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
            (F32, BF16) => Op::F32ToBf16,
            (BF16, F32) => Op::Bf16ToF32,
            (F64, F32) => Op::F64ToF32,
            (F32, F64) => Op::F32ToF64,
            _ => Op::Float8(float8::Kernel::detect(from, to)?),
        };
        let half = matches!(
            op,
            Op::F32ToF16 | Op::F16ToF32 | Op::F64ToF16 | Op::F16ToF64
        );
        let found = std::arch::is_x86_feature_detected!("avx2")
            && (!half || std::arch::is_x86_feature_detected!("f16c"));
        found.then_some(Kernel(op))
    }

    /// Converts `src` into `dst` (as `Convert::run`).
    pub(super) fn run(self, from: Descr, to: Descr, src: &[u8], dst: &mut [u8]) {
        let k = Kernels { from, to };
        // SAFETY: `self` was built by `detect` (its invariant), which found
        // AVX2 on this CPU, and F16C for the float16 kernels: the features
        // the called function enables.
        let done = unsafe {
            match self.0 {
                Op::Swap2 => k.swap(2, src, dst),
                Op::Swap4 => k.swap(4, src, dst),
                Op::Swap8 => k.swap(8, src, dst),
                Op::F32ToF16 => k.f32_to_f16(src, dst),
                Op::F16ToF32 => k.f16_to_f32(src, dst),
                Op::F64ToF16 => k.f64_to_f16(src, dst),
                Op::F16ToF64 => k.f16_to_f64(src, dst),
                Op::F32ToBf16 => k.f32_to_bf16(src, dst),
                Op::Bf16ToF32 => k.bf16_to_f32(src, dst),
                Op::F64ToF32 => k.f64_to_f32(src, dst),
                Op::F32ToF64 => k.f32_to_f64(src, dst),
                Op::Float8(f) => k.float8(f, src, dst),
            }
        };
        let (a, b) = (from.dtype.size(), to.dtype.size());
        scalar::run(from, to, &src[done * a..], &mut dst[done * b..]);
    }
}

/// The byte shuffle that reverses each `size`-byte element of a vector
/// (`pshufb` indexes within each 16-byte lane).
const fn swap_mask<const N: usize>(size: usize) -> [u8; N] {
    let mut m = [0; N];
    let mut i = 0;
    while i < N {
        let at = i % 16;
        m[i] = (at / size * size + size - 1 - at % size) as u8;
        i += 1;
    }
    m
}

/// Destinations at least this large (beyond the caches) are written with
/// non-temporal stores.
const STREAM_MIN: usize = 1 << 20;

const SWAP2: [u8; 32] = swap_mask(2);
const SWAP4: [u8; 32] = swap_mask(4);
const SWAP8: [u8; 32] = swap_mask(8);
const SWAP2_128: [u8; 16] = swap_mask(2);
const SWAP4_128: [u8; 16] = swap_mask(4);

#[inline(always)]
fn load(bytes: &[u8]) -> __m256i {
    bytemuck::pod_read_unaligned(&bytes[..32])
}

#[inline(always)]
fn load128(bytes: &[u8]) -> __m128i {
    bytemuck::pod_read_unaligned(&bytes[..16])
}

#[inline(always)]
fn store(bytes: &mut [u8], v: __m256i) {
    bytes[..32].copy_from_slice(bytemuck::bytes_of(&v));
}

#[inline(always)]
fn store128(bytes: &mut [u8], v: __m128i) {
    bytes[..16].copy_from_slice(bytemuck::bytes_of(&v));
}

impl Kernels {
    /// The whole run, by the portable float8 kernel inlined here.
    #[target_feature(enable = "avx2")]
    fn float8(&self, kernel: float8::Kernel, src: &[u8], dst: &mut [u8]) -> usize {
        kernel.run(self.from, self.to, src, dst);
        src.len() / self.from.dtype.size()
    }

    #[target_feature(enable = "avx2")]
    fn swap(&self, size: usize, src: &[u8], dst: &mut [u8]) -> usize {
        let mask: __m256i = bytemuck::cast(match size {
            2 => SWAP2,
            4 => SWAP4,
            _ => SWAP8,
        });
        // A large destination is written with non-temporal stores: its
        // lines go to memory without being read into the cache first (a
        // plain store reads each line it writes: a third more traffic). The
        // elements before the first 32-byte boundary go through the reference.
        if dst.len() >= STREAM_MIN && (dst.as_ptr() as usize).is_multiple_of(size) {
            let head = dst.as_ptr().align_offset(32).min(dst.len());
            scalar::run(self.from, self.to, &src[..head], &mut dst[..head]);
            let body = (src.len() - head) / 64 * 64;
            let (src, dst) = (&src[head..head + body], &mut dst[head..head + body]);
            for (s, d) in src.chunks_exact(64).zip(dst.chunks_exact_mut(64)) {
                let (lo, hi) = (load(s), load(&s[32..]));
                let d = d.as_mut_ptr() as *mut __m256i;
                // SAFETY: `d` is the start of a 64-byte chunk of `dst`, which
                // starts at a 32-byte boundary (`head` brought it there), so
                // both 32-byte stores are aligned and within the chunk, which
                // the mutable borrow makes ours alone.
                unsafe {
                    _mm256_stream_si256(d, _mm256_shuffle_epi8(lo, mask));
                    _mm256_stream_si256(d.add(1), _mm256_shuffle_epi8(hi, mask));
                }
            }
            // Non-temporal stores are weakly ordered: fence them before
            // anything else (another thread, the GPU) may read the bytes.
            _mm_sfence();
            return (head + body) / size;
        }
        let done = src.len() / 64 * 64;
        for (s, d) in src.chunks_exact(64).zip(dst.chunks_exact_mut(64)) {
            let (lo, hi) = (load(s), load(&s[32..]));
            store(d, _mm256_shuffle_epi8(lo, mask));
            store(&mut d[32..], _mm256_shuffle_epi8(hi, mask));
        }
        done / size
    }

    #[target_feature(enable = "avx2,f16c")]
    fn f32_to_f16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m4, m2): (__m256i, __m128i) = (bytemuck::cast(SWAP4), bytemuck::cast(SWAP2_128));
        self.blocks::<32, 16>(src, dst, |s, d| {
            let mut v = load(s);
            if si {
                v = _mm256_shuffle_epi8(v, m4);
            }
            let x = _mm256_castsi256_ps(v);
            let mut h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            if so {
                h = _mm_shuffle_epi8(h, m2);
            }
            store128(d, h);
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)) != 0
        })
    }

    #[target_feature(enable = "avx2,f16c")]
    fn f16_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m4, m2): (__m256i, __m128i) = (bytemuck::cast(SWAP4), bytemuck::cast(SWAP2_128));
        self.blocks::<16, 32>(src, dst, |s, d| {
            let mut h = load128(s);
            if si {
                h = _mm_shuffle_epi8(h, m2);
            }
            let mut v = _mm256_castps_si256(_mm256_cvtph_ps(h));
            if so {
                v = _mm256_shuffle_epi8(v, m4);
            }
            store(d, v);
            has_half_nan(h)
        })
    }

    #[target_feature(enable = "avx2,f16c")]
    fn f64_to_f16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m8, m2): (__m256i, __m128i) = (bytemuck::cast(SWAP8), bytemuck::cast(SWAP2_128));
        self.blocks::<64, 16>(src, dst, |s, d| {
            let (mut lo, mut hi) = (load(s), load(&s[32..]));
            if si {
                lo = _mm256_shuffle_epi8(lo, m8);
                hi = _mm256_shuffle_epi8(hi, m8);
            }
            let (lo, hi) = (_mm256_castsi256_pd(lo), _mm256_castsi256_pd(hi));
            let x = _mm256_set_m128i(f32_round_to_odd(hi), f32_round_to_odd(lo));
            let mut h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_castsi256_ps(x));
            if so {
                h = _mm_shuffle_epi8(h, m2);
            }
            store128(d, h);
            let nan = _mm256_or_pd(
                _mm256_cmp_pd::<_CMP_UNORD_Q>(lo, lo),
                _mm256_cmp_pd::<_CMP_UNORD_Q>(hi, hi),
            );
            _mm256_movemask_pd(nan) != 0
        })
    }

    #[target_feature(enable = "avx2,f16c")]
    fn f16_to_f64(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m8, m2): (__m256i, __m128i) = (bytemuck::cast(SWAP8), bytemuck::cast(SWAP2_128));
        self.blocks::<16, 64>(src, dst, |s, d| {
            let mut h = load128(s);
            if si {
                h = _mm_shuffle_epi8(h, m2);
            }
            let x = _mm256_cvtph_ps(h);
            let mut lo = _mm256_castpd_si256(_mm256_cvtps_pd(_mm256_castps256_ps128(x)));
            let mut hi = _mm256_castpd_si256(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
            if so {
                lo = _mm256_shuffle_epi8(lo, m8);
                hi = _mm256_shuffle_epi8(hi, m8);
            }
            store(d, lo);
            store(&mut d[32..], hi);
            has_half_nan(h)
        })
    }

    #[target_feature(enable = "avx2")]
    fn f32_to_bf16(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m4, m2): (__m256i, __m256i) = (bytemuck::cast(SWAP4), bytemuck::cast(SWAP2));
        self.blocks::<64, 32>(src, dst, |s, d| {
            let (mut lo, mut hi) = (load(s), load(&s[32..]));
            if si {
                lo = _mm256_shuffle_epi8(lo, m4);
                hi = _mm256_shuffle_epi8(hi, m4);
            }
            // packus works within 128-bit lanes: restore the order after.
            let packed = _mm256_packus_epi32(bf16_lanes(lo), bf16_lanes(hi));
            let mut b = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
            if so {
                b = _mm256_shuffle_epi8(b, m2);
            }
            store(d, b);
            false
        })
    }

    #[target_feature(enable = "avx2")]
    fn bf16_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m4, m2): (__m256i, __m128i) = (bytemuck::cast(SWAP4), bytemuck::cast(SWAP2_128));
        self.blocks::<16, 32>(src, dst, |s, d| {
            let mut h = load128(s);
            if si {
                h = _mm_shuffle_epi8(h, m2);
            }
            let mut v = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
            if so {
                v = _mm256_shuffle_epi8(v, m4);
            }
            store(d, v);
            false
        })
    }

    #[target_feature(enable = "avx2")]
    fn f64_to_f32(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m8, m4): (__m256i, __m128i) = (bytemuck::cast(SWAP8), bytemuck::cast(SWAP4_128));
        self.blocks::<32, 16>(src, dst, |s, d| {
            let mut v = load(s);
            if si {
                v = _mm256_shuffle_epi8(v, m8);
            }
            // The hardware's rounding (to nearest even) and NaNs (quieted,
            // payload truncated) are the C cast's, which numpy uses.
            let mut x = _mm_castps_si128(_mm256_cvtpd_ps(_mm256_castsi256_pd(v)));
            if so {
                x = _mm_shuffle_epi8(x, m4);
            }
            store128(d, x);
            false
        })
    }

    #[target_feature(enable = "avx2")]
    fn f32_to_f64(&self, src: &[u8], dst: &mut [u8]) -> usize {
        let (si, so) = (self.swap_in(), self.swap_out());
        let (m8, m4): (__m256i, __m128i) = (bytemuck::cast(SWAP8), bytemuck::cast(SWAP4_128));
        self.blocks::<16, 32>(src, dst, |s, d| {
            let mut x = load128(s);
            if si {
                x = _mm_shuffle_epi8(x, m4);
            }
            let mut v = _mm256_castpd_si256(_mm256_cvtps_pd(_mm_castsi128_ps(x)));
            if so {
                v = _mm256_shuffle_epi8(v, m8);
            }
            store(d, v);
            false
        })
    }
}

/// Whether any of the eight float16 lanes of `h` is a NaN.
#[target_feature(enable = "avx2")]
fn has_half_nan(h: __m128i) -> bool {
    let magnitude = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    _mm_movemask_epi8(_mm_cmpgt_epi16(magnitude, _mm_set1_epi16(0x7c00))) != 0
}

/// bfloat16 bits of eight float32 lanes, in the low half of each 32-bit
/// lane: rounded to nearest even, a NaN as the quiet NaN with its sign.
#[target_feature(enable = "avx2")]
fn bf16_lanes(v: __m256i) -> __m256i {
    let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(v), _mm256_set1_epi32(1));
    let biased = _mm256_add_epi32(_mm256_add_epi32(v, _mm256_set1_epi32(0x7fff)), odd);
    let rounded = _mm256_srli_epi32::<16>(biased);
    let sign = _mm256_and_si256(_mm256_srli_epi32::<16>(v), _mm256_set1_epi32(0x8000));
    let nan = _mm256_or_si256(sign, _mm256_set1_epi32(0x7fc0));
    let x = _mm256_castsi256_ps(v);
    let is_nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
    _mm256_blendv_epi8(rounded, nan, is_nan)
}

/// Four float64 lanes as float32 bits rounded to odd: toward zero, then
/// the lowest bit set if that was inexact. Rounding that to float16 (which
/// keeps 13 bits fewer) gives what rounding the float64 directly would.
/// NaN lanes are left to the caller.
#[target_feature(enable = "avx2")]
fn f32_round_to_odd(x: __m256d) -> __m128i {
    let y = _mm256_cvtpd_ps(x);
    let back = _mm256_cvtps_pd(y);
    let sign = _mm256_set1_pd(-0.0);
    let inexact = _mm256_cmp_pd::<_CMP_NEQ_UQ>(back, x);
    // Rounded away from zero: step the bits back toward zero by one.
    let away = _mm256_cmp_pd::<_CMP_GT_OQ>(_mm256_andnot_pd(sign, back), _mm256_andnot_pd(sign, x));
    let low = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let narrow = |m: __m256d| {
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), low))
    };
    let bits = _mm_add_epi32(_mm_castps_si128(y), narrow(away)); // adds -1 where away
    _mm_or_si128(bits, _mm_and_si128(narrow(inexact), _mm_set1_epi32(1)))
}

#[cfg(test)]
mod tests {
    use bytelens_core::{ByteOrder, DType, Descr};

    use super::super::tests::{KERNEL_PAIRS, Rng, kernel_matches_reference};
    use super::{Kernel, Op, float8, scalar};

    /// Every SIMD kernel, both byte orders on both sides, against the
    /// scalar reference.
    #[test]
    fn kernels_match_the_reference() {
        let orders = [ByteOrder::Little, ByteOrder::Big];
        let mut rng = Rng(0x6279_7465_6c65_6e73);
        let mut checked = 0;
        for (from, to) in KERNEL_PAIRS {
            for a in orders {
                for b in orders {
                    let (f, t) = (Descr::new(from, a), Descr::new(to, b));
                    if from == to && a == b {
                        continue;
                    }
                    let Some(kernel) = Kernel::detect(f, t) else {
                        println!("skipped {f} → {t}: this CPU lacks AVX2 or F16C");
                        continue;
                    };
                    checked +=
                        kernel_matches_reference(&mut rng, f, t, &format!("{kernel:?}"), |s, d| {
                            kernel.run(f, t, s, d)
                        });
                }
            }
        }
        println!("{checked} elements checked");
    }

    /// Byte swaps of destinations large enough for non-temporal stores,
    /// at every misalignment of source and destination (whole elements
    /// and not), match the reference and leave the bytes around alone.
    #[test]
    fn large_byte_swaps_match_the_reference() {
        let mut rng = Rng(0x7374_7265_616d);
        for size in [2usize, 4, 8] {
            let dtype = match size {
                2 => DType::U16,
                4 => DType::F32,
                _ => DType::F64,
            };
            let (f, t) = (
                Descr::new(dtype, ByteOrder::Little),
                Descr::new(dtype, ByteOrder::Big),
            );
            let Some(kernel) = Kernel::detect(f, t) else {
                println!("skipped: this CPU lacks AVX2");
                return;
            };
            for (os, od) in [(0, 0), (3, 0), (0, 5), (size, 3 * size), (7, 31)] {
                let n = (super::STREAM_MIN + 777) / size;
                let src: Vec<u8> = (0..os + n * size).map(|_| rng.next() as u8).collect();
                let mut want = vec![0xa5u8; od + n * size + 8];
                let mut got = want.clone();
                scalar::run(f, t, &src[os..], &mut want[od..od + n * size]);
                kernel.run(f, t, &src[os..], &mut got[od..od + n * size]);
                assert!(got == want, "{size}-byte swap at offsets {os}, {od}");
            }
        }
    }

    #[test]
    fn every_kernel_is_found_on_an_avx2_f16c_machine() {
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c"))
        {
            println!("skipped: this CPU lacks AVX2 or F16C");
            return;
        }
        let le = |d| Descr::new(d, ByteOrder::Little);
        let be = |d| Descr::new(d, ByteOrder::Big);
        assert!(Kernel::detect(le(DType::F32), be(DType::F32)).is_some());
        assert!(Kernel::detect(be(DType::F64), le(DType::F16)).is_some());
        assert!(Kernel::detect(le(DType::I32), le(DType::F32)).is_none());
        // float8 both ways: the portable kernel, built for AVX2.
        let narrow = Kernel::detect(be(DType::F32), le(DType::F8E4M3FN));
        assert_eq!(narrow, Some(Kernel(Op::Float8(float8::Kernel::Narrow))));
        let widen = Kernel::detect(le(DType::F8E5M2), be(DType::F64));
        assert_eq!(widen, Some(Kernel(Op::Float8(float8::Kernel::Widen))));
    }
}
