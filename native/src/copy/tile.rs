//! Square tiles transposed in registers: the inner step of copying a
//! transposed view into C order.
//!
//! A tile of `T`×`T` elements of `N` bytes is read as `T` runs of `T`
//! adjacent elements (run `k` at `src + k * src_pitch`) and written as `T`
//! runs (run `m` at `dst + m * dst_pitch`) where written run `m` holds the
//! `m`-th element of every read run. Pitches may be negative, which is how
//! a view whose rows run backwards is transposed.
//!
//! Tiles move a grid at a time ([`Tile::move_tiles`]): the bounds of the
//! whole grid are checked once, and the loops over its tiles are compiled
//! together with the tile so the kernel inlines. The SIMD kernels are
//! chosen once per copy ([`Tile::for_itemsize`]): on x86-64 at run time,
//! from what the CPU has; on aarch64 the NEON ones, which every aarch64
//! CPU has. The portable kernel is the reference they are tested against,
//! and the only one Miri runs.

/// Where the tiles of a grid lie in a slice: tile `(r, j)` has its run `k`
/// at byte `at + r * r_step + j * j_step + k * pitch`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Grid {
    pub(super) at: isize,
    pub(super) pitch: isize,
    pub(super) r_step: isize,
    pub(super) j_step: isize,
}

impl Grid {
    /// Whether every run of `rows × cols` tiles of `side` runs, `run`
    /// bytes each, lies in `0..len`. Addresses are affine in the tile and
    /// run indices, so the extremes are at the corners.
    fn within(&self, len: usize, rows: usize, cols: usize, side: usize, run: usize) -> bool {
        let mut lo = self.at;
        let mut hi = self.at;
        for (step, count) in [(self.r_step, rows), (self.j_step, cols), (self.pitch, side)] {
            let reach = step * (count as isize - 1);
            lo += reach.min(0);
            hi += reach.max(0);
        }
        lo >= 0 && (hi as usize).checked_add(run).is_some_and(|end| end <= len)
    }
}

/// A tile kernel: `T`, and the function that moves a grid of tiles.
#[derive(Clone, Copy)]
pub(super) struct Tile {
    /// Elements along each side.
    pub(super) side: usize,
    /// Bytes of each element: the kernel's, so the bounds it is checked
    /// against are the bounds it moves.
    itemsize: usize,
    kernel: Kernel,
}

/// Moves `rows × cols` tiles, column of tiles by column of tiles (all `r`
/// for one `j`, then the next `j`).
#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
type Grids = unsafe fn(*const u8, Grid, *mut u8, Grid, usize, usize);

#[derive(Clone, Copy)]
enum Kernel {
    Portable,
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    X86(Grids),
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
    Neon(Grids),
}

impl Tile {
    /// The fastest kernel this CPU has for `itemsize`-byte elements.
    pub(super) fn for_itemsize(itemsize: usize) -> Tile {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if let Some((side, kernel)) = x86::kernel(itemsize) {
            return Tile {
                side,
                itemsize,
                kernel: Kernel::X86(kernel),
            };
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
        if let Some((side, kernel)) = neon::kernel(itemsize) {
            return Tile {
                side,
                itemsize,
                kernel: Kernel::Neon(kernel),
            };
        }
        Tile::portable(itemsize)
    }

    /// The reference kernel: 8×8 tiles, element by element.
    pub(super) fn portable(itemsize: usize) -> Tile {
        Tile {
            side: 8,
            itemsize,
            kernel: Kernel::Portable,
        }
    }

    /// Moves a grid of `rows × cols` tiles from `src` to `dst`: tile
    /// `(r, j)` reads its runs where `from` places them and writes run `m`
    /// of the transposed tile where `to` places run `m`. The tiles go
    /// column by column (every `r` for one `j`).
    ///
    /// # Panics
    /// When a run falls outside `src` or `dst`.
    pub(super) fn move_tiles(
        &self,
        src: &[u8],
        from: Grid,
        dst: &mut [u8],
        to: Grid,
        rows: usize,
        cols: usize,
    ) {
        if rows == 0 || cols == 0 {
            return;
        }
        let run = self.side * self.itemsize;
        assert!(
            from.within(src.len(), rows, cols, self.side, run)
                && to.within(dst.len(), rows, cols, self.side, run)
        );
        match self.kernel {
            Kernel::Portable => {
                for j in 0..cols as isize {
                    for r in 0..rows as isize {
                        let s = from.at + r * from.r_step + j * from.j_step;
                        let d = to.at + r * to.r_step + j * to.j_step;
                        portable(
                            self.itemsize,
                            self.side,
                            src,
                            s,
                            from.pitch,
                            dst,
                            d,
                            to.pitch,
                        );
                    }
                }
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the assertion above proved that every run of every
            // tile of the grid (T runs of T * itemsize bytes) lies in `src`
            // for reading and in `dst` for writing; `dst` is borrowed
            // mutably, so nothing else sees the writes; the kernel was
            // chosen by `x86::kernel` only when the CPU has its features.
            Kernel::X86(kernel) => unsafe {
                kernel(src.as_ptr(), from, dst.as_mut_ptr(), to, rows, cols)
            },
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
            // SAFETY: as for `X86`; NEON, the kernels' only feature, is in
            // every build of the `neon` module (its cfg).
            Kernel::Neon(kernel) => unsafe {
                kernel(src.as_ptr(), from, dst.as_mut_ptr(), to, rows, cols)
            },
        }
    }
}

/// The reference: one tile, one element at a time.
#[allow(clippy::too_many_arguments)]
fn portable(
    n: usize,
    side: usize,
    src: &[u8],
    src_at: isize,
    src_pitch: isize,
    dst: &mut [u8],
    dst_at: isize,
    dst_pitch: isize,
) {
    for k in 0..side {
        let from = (src_at + k as isize * src_pitch) as usize;
        for m in 0..side {
            let to = (dst_at + m as isize * dst_pitch) as usize + k * n;
            dst[to..to + n].copy_from_slice(&src[from + m * n..from + m * n + n]);
        }
    }
}

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
/// A grid kernel around a tile kernel: the loops compiled with the
/// tile inlined, under the tile's target features.
macro_rules! grid {
    ($(#[$feature:meta])* $name:ident => $tile:ident) => {
        /// Moves a grid of tiles with [`
        #[doc = stringify!($tile)]
        /// `].
        ///
        /// # Safety
        /// Every run of every tile of the grid lies in memory readable
        /// from `src` and writable from `dst`; the CPU has the tile's
        /// features.
        $(#[$feature])*
        unsafe fn $name(src: *const u8, from: Grid, dst: *mut u8, to: Grid, rows: usize, cols: usize) {
            for j in 0..cols as isize {
                for r in 0..rows as isize {
                    let s = from.at + r * from.r_step + j * from.j_step;
                    let d = to.at + r * to.r_step + j * to.j_step;
                    // SAFETY: the runs of tile (r, j) are among the
                    // grid's, in bounds by this function's contract.
                    unsafe { $tile(src.offset(s), from.pitch, dst.offset(d), to.pitch) }
                }
            }
        }
    };
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use core::arch::x86_64::*;

    use super::{Grid, Grids};

    /// The side and grid kernel for `itemsize`, when this CPU has one.
    pub(super) fn kernel(itemsize: usize) -> Option<(usize, Grids)> {
        match itemsize {
            // SSE2 is part of x86-64 itself.
            1 => Some((8, grid_u8 as Grids)),
            2 => Some((8, grid_u16 as Grids)),
            4 if is_x86_feature_detected!("avx") => Some((8, grid_u32_avx as Grids)),
            4 => Some((4, grid_u32 as Grids)),
            8 if is_x86_feature_detected!("avx") => Some((4, grid_u64_avx as Grids)),
            8 => Some((2, grid_u64 as Grids)),
            _ => None,
        }
    }

    grid!(grid_u8 => t8x8_u8);
    grid!(grid_u16 => t8x8_u16);
    grid!(#[target_feature(enable = "avx")] grid_u32_avx => t8x8_u32);
    grid!(grid_u32 => t4x4_u32);
    grid!(#[target_feature(enable = "avx")] grid_u64_avx => t4x4_u64);
    grid!(grid_u64 => t2x2_u64);

    // The kernels' contract (module docs): run k of the source is T
    // elements at `src + k * sp`, run m of the destination is T elements at
    // `dst + m * dp`; the caller proved every run in bounds.

    /// 8×8 bytes: 8-byte loads, three rounds of interleaving.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    unsafe fn t8x8_u8(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: each load and store touches one run, in bounds by the
        // contract; the unaligned forms are used throughout.
        unsafe {
            let r = |k: isize| _mm_loadl_epi64(src.offset(k * sp) as *const __m128i);
            // a_k: bytes of runs 2k, 2k+1 interleaved.
            let a0 = _mm_unpacklo_epi8(r(0), r(1));
            let a1 = _mm_unpacklo_epi8(r(2), r(3));
            let a2 = _mm_unpacklo_epi8(r(4), r(5));
            let a3 = _mm_unpacklo_epi8(r(6), r(7));
            let b0 = _mm_unpacklo_epi16(a0, a1);
            let b1 = _mm_unpackhi_epi16(a0, a1);
            let b2 = _mm_unpacklo_epi16(a2, a3);
            let b3 = _mm_unpackhi_epi16(a2, a3);
            let c = [
                _mm_unpacklo_epi32(b0, b2),
                _mm_unpackhi_epi32(b0, b2),
                _mm_unpacklo_epi32(b1, b3),
                _mm_unpackhi_epi32(b1, b3),
            ];
            for (q, v) in c.into_iter().enumerate() {
                let m = 2 * q as isize;
                _mm_storel_epi64(dst.offset(m * dp) as *mut __m128i, v);
                _mm_storel_epi64(
                    dst.offset((m + 1) * dp) as *mut __m128i,
                    _mm_unpackhi_epi64(v, v),
                );
            }
        }
    }

    /// 8×8 two-byte elements in SSE2 registers.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    unsafe fn t8x8_u16(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let r = |k: isize| _mm_loadu_si128(src.offset(k * sp) as *const __m128i);
            let a0 = _mm_unpacklo_epi16(r(0), r(1));
            let a1 = _mm_unpackhi_epi16(r(0), r(1));
            let a2 = _mm_unpacklo_epi16(r(2), r(3));
            let a3 = _mm_unpackhi_epi16(r(2), r(3));
            let a4 = _mm_unpacklo_epi16(r(4), r(5));
            let a5 = _mm_unpackhi_epi16(r(4), r(5));
            let a6 = _mm_unpacklo_epi16(r(6), r(7));
            let a7 = _mm_unpackhi_epi16(r(6), r(7));
            let b0 = _mm_unpacklo_epi32(a0, a2);
            let b1 = _mm_unpackhi_epi32(a0, a2);
            let b2 = _mm_unpacklo_epi32(a1, a3);
            let b3 = _mm_unpackhi_epi32(a1, a3);
            let b4 = _mm_unpacklo_epi32(a4, a6);
            let b5 = _mm_unpackhi_epi32(a4, a6);
            let b6 = _mm_unpacklo_epi32(a5, a7);
            let b7 = _mm_unpackhi_epi32(a5, a7);
            let out = [
                _mm_unpacklo_epi64(b0, b4),
                _mm_unpackhi_epi64(b0, b4),
                _mm_unpacklo_epi64(b1, b5),
                _mm_unpackhi_epi64(b1, b5),
                _mm_unpacklo_epi64(b2, b6),
                _mm_unpackhi_epi64(b2, b6),
                _mm_unpacklo_epi64(b3, b7),
                _mm_unpackhi_epi64(b3, b7),
            ];
            for (m, v) in out.into_iter().enumerate() {
                _mm_storeu_si128(dst.offset(m as isize * dp) as *mut __m128i, v);
            }
        }
    }

    /// 8×8 four-byte elements in AVX registers.
    ///
    /// # Safety
    /// The kernels' contract, and the CPU has AVX.
    #[inline]
    #[target_feature(enable = "avx")]
    unsafe fn t8x8_u32(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let r = |k: isize| _mm256_loadu_ps(src.offset(k * sp) as *const f32);
            let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
            let (r4, r5, r6, r7) = (r(4), r(5), r(6), r(7));
            let t0 = _mm256_unpacklo_ps(r0, r1);
            let t1 = _mm256_unpackhi_ps(r0, r1);
            let t2 = _mm256_unpacklo_ps(r2, r3);
            let t3 = _mm256_unpackhi_ps(r2, r3);
            let t4 = _mm256_unpacklo_ps(r4, r5);
            let t5 = _mm256_unpackhi_ps(r4, r5);
            let t6 = _mm256_unpacklo_ps(r6, r7);
            let t7 = _mm256_unpackhi_ps(r6, r7);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let out = [
                _mm256_permute2f128_ps::<0x20>(u0, u4),
                _mm256_permute2f128_ps::<0x20>(u1, u5),
                _mm256_permute2f128_ps::<0x20>(u2, u6),
                _mm256_permute2f128_ps::<0x20>(u3, u7),
                _mm256_permute2f128_ps::<0x31>(u0, u4),
                _mm256_permute2f128_ps::<0x31>(u1, u5),
                _mm256_permute2f128_ps::<0x31>(u2, u6),
                _mm256_permute2f128_ps::<0x31>(u3, u7),
            ];
            for (m, v) in out.into_iter().enumerate() {
                _mm256_storeu_ps(dst.offset(m as isize * dp) as *mut f32, v);
            }
        }
    }

    /// 4×4 four-byte elements in SSE registers (CPUs without AVX).
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    unsafe fn t4x4_u32(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let r = |k: isize| _mm_loadu_ps(src.offset(k * sp) as *const f32);
            let t0 = _mm_unpacklo_ps(r(0), r(1));
            let t1 = _mm_unpacklo_ps(r(2), r(3));
            let t2 = _mm_unpackhi_ps(r(0), r(1));
            let t3 = _mm_unpackhi_ps(r(2), r(3));
            let out = [
                _mm_movelh_ps(t0, t1),
                _mm_movehl_ps(t1, t0),
                _mm_movelh_ps(t2, t3),
                _mm_movehl_ps(t3, t2),
            ];
            for (m, v) in out.into_iter().enumerate() {
                _mm_storeu_ps(dst.offset(m as isize * dp) as *mut f32, v);
            }
        }
    }

    /// 4×4 eight-byte elements in AVX registers.
    ///
    /// # Safety
    /// The kernels' contract, and the CPU has AVX.
    #[inline]
    #[target_feature(enable = "avx")]
    unsafe fn t4x4_u64(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let r = |k: isize| _mm256_loadu_pd(src.offset(k * sp) as *const f64);
            let t0 = _mm256_unpacklo_pd(r(0), r(1));
            let t1 = _mm256_unpackhi_pd(r(0), r(1));
            let t2 = _mm256_unpacklo_pd(r(2), r(3));
            let t3 = _mm256_unpackhi_pd(r(2), r(3));
            let out = [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ];
            for (m, v) in out.into_iter().enumerate() {
                _mm256_storeu_pd(dst.offset(m as isize * dp) as *mut f64, v);
            }
        }
    }

    /// 2×2 eight-byte elements in SSE2 registers (CPUs without AVX).
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    unsafe fn t2x2_u64(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let a = _mm_loadu_pd(src as *const f64);
            let b = _mm_loadu_pd(src.offset(sp) as *const f64);
            _mm_storeu_pd(dst as *mut f64, _mm_unpacklo_pd(a, b));
            _mm_storeu_pd(dst.offset(dp) as *mut f64, _mm_unpackhi_pd(a, b));
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
mod neon {
    use core::arch::aarch64::*;

    use super::{Grid, Grids};

    /// The side and grid kernel for `itemsize` (NEON is in every aarch64
    /// CPU, so nothing is detected). Each side makes runs of 8 bytes or
    /// more (one or two 16-byte registers for the wider elements).
    pub(super) fn kernel(itemsize: usize) -> Option<(usize, Grids)> {
        match itemsize {
            1 => Some((8, grid_u8 as Grids)),
            2 => Some((8, grid_u16 as Grids)),
            4 => Some((8, grid_u32 as Grids)),
            8 => Some((4, grid_u64 as Grids)),
            _ => None,
        }
    }

    grid!(#[target_feature(enable = "neon")] grid_u8 => t8x8_u8);
    grid!(#[target_feature(enable = "neon")] grid_u16 => t8x8_u16);
    grid!(#[target_feature(enable = "neon")] grid_u32 => t8x8_u32);
    grid!(#[target_feature(enable = "neon")] grid_u64 => t4x4_u64);

    // The kernels' contract (module docs): run k of the source is T
    // elements at `src + k * sp`, run m of the destination is T elements at
    // `dst + m * dp`; the caller proved every run in bounds.
    //
    // Each transposes by rounds of `trn1`/`trn2` on lanes twice as wide as
    // the round before: after the round on 2^i-element lanes, lane pairs
    // hold 2^(i+1) consecutive rows of one column.

    /// 8×8 bytes in 8-byte registers.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn t8x8_u8(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: each load and store touches one run, in bounds by the
        // contract; `vld1`/`vst1` take any alignment.
        unsafe {
            let r: [uint8x8_t; 8] = core::array::from_fn(|k| vld1_u8(src.offset(k as isize * sp)));
            // Byte lanes: s[2p] holds even columns, s[2p + 1] odd ones, of
            // rows 2p, 2p + 1.
            let s: [uint16x4_t; 8] = core::array::from_fn(|k| {
                let (a, b) = (r[k & !1], r[k | 1]);
                vreinterpret_u16_u8(if k & 1 == 0 {
                    vtrn1_u8(a, b)
                } else {
                    vtrn2_u8(a, b)
                })
            });
            // 16-bit lanes: t holds columns {0, 4}, {1, 5}, {2, 6}, {3, 7}
            // of rows 0-3 (t[0..4]) and 4-7 (t[4..8]).
            let t: [uint32x2_t; 8] = core::array::from_fn(|k| {
                let base = k & 4;
                let (a, b) = (s[base + (k & 1)], s[base + 2 + (k & 1)]);
                vreinterpret_u32_u16(if k & 2 == 0 {
                    vtrn1_u16(a, b)
                } else {
                    vtrn2_u16(a, b)
                })
            });
            // t[q] for q in 0..4 holds columns q and q + 4 (q = 2i + h:
            // column h + 2i); 32-bit lanes join rows 0-3 and 4-7.
            for q in 0..4 {
                let col = (q & 1) + 2 * (q >> 1);
                let (a, b) = (t[q], t[q + 4]);
                let lo = vreinterpret_u8_u32(vtrn1_u32(a, b));
                let hi = vreinterpret_u8_u32(vtrn2_u32(a, b));
                vst1_u8(dst.offset(col as isize * dp), lo);
                vst1_u8(dst.offset((col + 4) as isize * dp), hi);
            }
        }
    }

    /// 8×8 two-byte elements in 16-byte registers.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn t8x8_u16(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            let r: [uint16x8_t; 8] =
                core::array::from_fn(|k| vld1q_u16(src.offset(k as isize * sp) as *const u16));
            let s: [uint32x4_t; 8] = core::array::from_fn(|k| {
                let (a, b) = (r[k & !1], r[k | 1]);
                vreinterpretq_u32_u16(if k & 1 == 0 {
                    vtrn1q_u16(a, b)
                } else {
                    vtrn2q_u16(a, b)
                })
            });
            let t: [uint64x2_t; 8] = core::array::from_fn(|k| {
                let base = k & 4;
                let (a, b) = (s[base + (k & 1)], s[base + 2 + (k & 1)]);
                vreinterpretq_u64_u32(if k & 2 == 0 {
                    vtrn1q_u32(a, b)
                } else {
                    vtrn2q_u32(a, b)
                })
            });
            for q in 0..4 {
                let col = (q & 1) + 2 * (q >> 1);
                let (a, b) = (t[q], t[q + 4]);
                let lo = vreinterpretq_u16_u64(vtrn1q_u64(a, b));
                let hi = vreinterpretq_u16_u64(vtrn2q_u64(a, b));
                vst1q_u16(dst.offset(col as isize * dp) as *mut u16, lo);
                vst1q_u16(dst.offset((col + 4) as isize * dp) as *mut u16, hi);
            }
        }
    }

    /// 4×4 four-byte elements, in registers: row `k` in, column `m` out.
    #[inline]
    #[target_feature(enable = "neon")]
    fn t4x4_u32(r: [uint32x4_t; 4]) -> [uint32x4_t; 4] {
        let s: [uint64x2_t; 4] = [
            vreinterpretq_u64_u32(vtrn1q_u32(r[0], r[1])),
            vreinterpretq_u64_u32(vtrn2q_u32(r[0], r[1])),
            vreinterpretq_u64_u32(vtrn1q_u32(r[2], r[3])),
            vreinterpretq_u64_u32(vtrn2q_u32(r[2], r[3])),
        ];
        [
            vreinterpretq_u32_u64(vtrn1q_u64(s[0], s[2])),
            vreinterpretq_u32_u64(vtrn1q_u64(s[1], s[3])),
            vreinterpretq_u32_u64(vtrn2q_u64(s[0], s[2])),
            vreinterpretq_u32_u64(vtrn2q_u64(s[1], s[3])),
        ]
    }

    /// 8×8 four-byte elements: four 4×4 quarters, quarter (i, j) of the
    /// source becoming quarter (j, i) of the destination.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn t8x8_u32(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`: quarter (i, j) reads elements 4j..4j+4
        // of runs 4i..4i+4 and writes elements 4i..4i+4 of runs 4j..4j+4.
        unsafe {
            for i in 0..2isize {
                for j in 0..2isize {
                    let rows: [uint32x4_t; 4] = core::array::from_fn(|k| {
                        let at = src.offset((4 * i + k as isize) * sp + 16 * j);
                        vld1q_u32(at as *const u32)
                    });
                    for (m, v) in t4x4_u32(rows).into_iter().enumerate() {
                        let at = dst.offset((4 * j + m as isize) * dp + 16 * i);
                        vst1q_u32(at as *mut u32, v);
                    }
                }
            }
        }
    }

    /// 4×4 eight-byte elements, each run two 16-byte registers.
    ///
    /// # Safety
    /// The kernels' contract.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn t4x4_u64(src: *const u8, sp: isize, dst: *mut u8, dp: isize) {
        // SAFETY: as for `t8x8_u8`.
        unsafe {
            // r[k][h]: elements 2h, 2h + 1 of run k.
            let r: [[uint64x2_t; 2]; 4] = core::array::from_fn(|k| {
                let at = src.offset(k as isize * sp) as *const u64;
                [vld1q_u64(at), vld1q_u64(at.add(2))]
            });
            for m in 0..4 {
                let h = m / 2;
                let pick = |a, b| {
                    if m % 2 == 0 {
                        vtrn1q_u64(a, b)
                    } else {
                        vtrn2q_u64(a, b)
                    }
                };
                let at = dst.offset(m as isize * dp) as *mut u64;
                vst1q_u64(at, pick(r[0][h], r[1][h]));
                vst1q_u64(at.add(2), pick(r[2][h], r[3][h]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tile;

    /// On aarch64 every itemsize the walk tiles has a NEON kernel.
    #[test]
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
    fn neon_kernels_are_chosen_on_aarch64() {
        for (itemsize, side) in [(1, 8), (2, 8), (4, 8), (8, 4)] {
            let tile = Tile::for_itemsize(itemsize);
            assert!(
                matches!(tile.kernel, super::Kernel::Neon(_)),
                "itemsize {itemsize}"
            );
            assert_eq!(tile.side, side, "itemsize {itemsize}");
        }
        assert!(matches!(
            Tile::for_itemsize(16).kernel,
            super::Kernel::Portable
        ));
    }

    /// A tile moved by the chosen kernel equals the portable kernel's, for
    /// every itemsize, with pitches of either sign and a grid of 2 × 3
    /// tiles.
    #[test]
    #[cfg_attr(miri, ignore = "Miri's chosen kernel is the portable one itself")]
    fn chosen_kernels_move_tiles_as_the_portable_one() {
        for itemsize in [1usize, 2, 4, 8, 16] {
            let fast = Tile::for_itemsize(itemsize);
            // The reference, on tiles of the chosen kernel's side.
            let slow = Tile {
                side: fast.side,
                ..Tile::portable(itemsize)
            };
            let side = fast.side as isize;
            let run = side * itemsize as isize;
            let (rows, cols) = (2, 3);
            for (sp, dp) in [(run * 4 + 3, run * 3), (-(run * 4 + 5), run * 2 + 1)] {
                // Source tile (r, j): runs of tile row r, tile column j.
                let src_len = (sp.abs() * side * rows + run * cols + 64) as usize;
                let src: Vec<u8> = (0..src_len).map(|i| (i * 31 + i / 7) as u8).collect();
                let from = super::Grid {
                    at: if sp < 0 {
                        src_len as isize - run * cols - 1
                    } else {
                        0
                    },
                    pitch: sp,
                    r_step: sp * side,
                    j_step: run,
                };
                let dst_len = (dp * side * cols + run * rows + 64) as usize;
                let to = super::Grid {
                    at: 5,
                    pitch: dp,
                    r_step: run,
                    j_step: dp * side,
                };
                let mut want = vec![0xa5; dst_len];
                let mut got = want.clone();
                slow.move_tiles(&src, from, &mut want, to, rows as usize, cols as usize);
                fast.move_tiles(&src, from, &mut got, to, rows as usize, cols as usize);
                assert!(got == want, "itemsize {itemsize}, pitches {sp}, {dp}");
            }
        }
    }
}
