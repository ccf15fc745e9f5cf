//! The reference dequantisers, one per ggml block type: the contract
//! every other build of them is held to, and gguf-py's
//! `gguf.quants.dequantize` bit for bit (tests/vectors/dequant.txt), but
//! for the payload of a NaN an operation makes (an infinite scale times a
//! zero), which is the hardware's in numpy and in Rust alike. Where two
//! NaNs meet (a NaN scale times a code, plus or minus a NaN minimum: Q4_1
//! and Q5_1's `d` and `m`, the K types' `d` and `dmin`), the result is the
//! product's NaN, the scale's payload quieted, as gguf-py gives it for two
//! blocks or more; for a single Q4_1 or Q5_1 block gguf-py gives the
//! minimum's (numpy's loop for one row differs), and there alone they
//! differ.
//!
//! Each computes in float32 with the operations in gguf-py's order (it is
//! numpy's float32 arithmetic, one rounding per operation, no fused
//! multiply-add): a group's scale is `d * sc` first, then `scale * q`, then
//! `- min` or `+ m`. Each reads one block as a fixed-size array and writes
//! its elements to a fixed-size array, loops over constant bounds with no
//! branch on the data, so that the compiler vectorises them. They are
//! `#[inline(always)]` so that another crate compiles them into its own
//! loops: the native crate's AVX2 and NEON kernels are these functions
//! compiled for those features, which cannot change a bit of the result;
//! [`dequantize_blocks`] is the portable loop (the web demo's).
//!
//! # Examples
//! ```
//! use bytelens_core::files::{GgmlType, dequant};
//! // One Q8_0 block: a float16 scale of 0.5, then 32 int8 values.
//! let mut block = [0u8; 34];
//! block[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
//! for (i, q) in block[2..].iter_mut().enumerate() {
//!     *q = (i as i8 - 16) as u8;
//! }
//! let mut out = [0f32; 32];
//! assert_eq!(dequant::dequantize_blocks(GgmlType::Q8_0, &block, &mut out), 1);
//! assert_eq!(out[..3], [-8.0, -7.5, -7.0]);
//! let mut y = [0f32; 32];
//! dequant::q8_0(&block, &mut y);
//! assert_eq!(y, out);
//! ```
#![forbid(unsafe_code)]

use half::f16;

use super::GgmlType;

/// A little-endian float16 at `at`, as float32 (exact).
#[inline(always)]
fn half(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// Q4_0: 18 bytes (a float16 scale, 16 bytes of 4-bit codes) to 32 values.
#[inline(always)]
pub fn q4_0(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[2 + l];
        y[l] = d * ((q & 15) as i8 - 8) as f32;
        y[l + 16] = d * ((q >> 4) as i8 - 8) as f32;
    }
}

/// `p + m`, where `p` is a scale times a code: the product's NaN where
/// both are NaN. gguf-py's `d * q + m` gives the product's for any file of
/// two blocks or more (numpy keeps its first operand's NaN there; a single
/// block goes through another loop, which keeps `m`'s), and Rust's `+`
/// leaves it to the compiler, which may put either operand first (it did,
/// for 4 of Q5_1's 32 values): the select makes it a rule, and compiles to
/// a blend, no branch.
#[inline(always)]
fn plus_min(p: f32, m: f32) -> f32 {
    let sum = p + m;
    if p.is_nan() { p } else { sum }
}

/// Q4_1: 20 bytes (float16 scale and minimum, 16 bytes of 4-bit codes) to 32 values.
#[inline(always)]
pub fn q4_1(b: &[u8; 20], y: &mut [f32; 32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for l in 0..16 {
        let q = b[4 + l];
        y[l] = plus_min(d * (q & 15) as f32, m);
        y[l + 16] = plus_min(d * (q >> 4) as f32, m);
    }
}

/// The high bits of Q5_0 and Q5_1: bit `l` of the little-endian u32 at
/// `at`, as 16 or 0.
#[inline(always)]
fn high5(b: &[u8], at: usize, l: usize) -> u8 {
    ((b[at + l / 8] >> (l % 8)) & 1) << 4
}

/// Q5_0: 22 bytes (float16 scale, 32 high bits, 16 bytes of low nibbles) to 32 values.
#[inline(always)]
pub fn q5_0(b: &[u8; 22], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[6 + l];
        y[l] = d * (((q & 15) | high5(b, 2, l)) as i8 - 16) as f32;
        y[l + 16] = d * (((q >> 4) | high5(b, 2, l + 16)) as i8 - 16) as f32;
    }
}

/// Q5_1: 24 bytes (float16 scale and minimum, 32 high bits, 16 bytes of low nibbles) to 32 values.
#[inline(always)]
pub fn q5_1(b: &[u8; 24], y: &mut [f32; 32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for l in 0..16 {
        let q = b[8 + l];
        y[l] = plus_min(d * ((q & 15) | high5(b, 4, l)) as f32, m);
        y[l + 16] = plus_min(d * ((q >> 4) | high5(b, 4, l + 16)) as f32, m);
    }
}

/// Q8_0: 34 bytes (a float16 scale, 32 int8 codes) to 32 values.
#[inline(always)]
pub fn q8_0(b: &[u8; 34], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..32 {
        y[l] = (b[2 + l] as i8) as f32 * d;
    }
}

/// Q2_K: an 84-byte super-block to 256 values.
#[inline(always)]
pub fn q2_k(b: &[u8; 84], y: &mut [f32; 256]) {
    let (d, dmin) = (half(b, 80), half(b, 82));
    for g in 0..16 {
        let dl = d * (b[g] & 15) as f32;
        let ml = dmin * (b[g] >> 4) as f32;
        // Element e = g * 16 + i lies in half e / 128, shift 2 * (e / 32 % 4),
        // byte 16 + half * 32 + e % 32 of the block.
        for i in 0..16 {
            let e = g * 16 + i;
            let q = (b[16 + e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3;
            y[e] = dl * q as f32 - ml;
        }
    }
}

/// Q3_K: a 110-byte super-block to 256 values.
#[inline(always)]
pub fn q3_k(b: &[u8; 110], y: &mut [f32; 256]) {
    let d = half(b, 108);
    let s = &b[96..108];
    for g in 0..16 {
        let low = if g < 8 { s[g] & 15 } else { s[g - 8] >> 4 };
        let high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
        let dl = d * ((low | high << 4) as i8 - 32) as f32;
        for i in 0..16 {
            let e = g * 16 + i;
            let low = (b[32 + e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3;
            // The high bit subtracts 4 where it is clear.
            let clear = ((b[e % 32] >> (e / 32)) & 1) ^ 1;
            y[e] = dl * (low as i8 - (clear << 2) as i8) as f32;
        }
    }
}

/// The six-bit scale and minimum of group `j` (0..8) of a Q4_K or Q5_K
/// block's 12 scale bytes.
#[inline(always)]
fn scale_min(s: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 15) | ((s[j - 4] >> 2) & 48),
            (s[j + 4] >> 4) | ((s[j] >> 2) & 48),
        )
    }
}

/// Q4_K: a 144-byte super-block to 256 values.
#[inline(always)]
pub fn q4_k(b: &[u8; 144], y: &mut [f32; 256]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    for j in 0..8 {
        let (sc, m) = scale_min(&b[4..16], j);
        let (dl, ml) = (d * sc as f32, dmin * m as f32);
        let (qs, shift) = (&b[16 + j / 2 * 32..][..32], 4 * (j % 2));
        for l in 0..32 {
            y[j * 32 + l] = dl * ((qs[l] >> shift) & 15) as f32 - ml;
        }
    }
}

/// Q5_K: a 176-byte super-block to 256 values.
#[inline(always)]
pub fn q5_k(b: &[u8; 176], y: &mut [f32; 256]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    for j in 0..8 {
        let (sc, m) = scale_min(&b[4..16], j);
        let (dl, ml) = (d * sc as f32, dmin * m as f32);
        let (qs, shift) = (&b[48 + j / 2 * 32..][..32], 4 * (j % 2));
        let (qh, bit) = (&b[16..48], 1u8 << j);
        for l in 0..32 {
            // Bit j of qh[l] as 16 (a compare, which vectorises where a
            // shift of bytes by a variable does not).
            let high = if qh[l] & bit != 0 { 16 } else { 0 };
            y[j * 32 + l] = dl * ((qs[l] >> shift) & 15 | high) as f32 - ml;
        }
    }
}

/// Q6_K: a 210-byte super-block to 256 values.
#[inline(always)]
pub fn q6_k(b: &[u8; 210], y: &mut [f32; 256]) {
    let d = half(b, 208);
    for h in 0..2 {
        let (ql, qh) = (&b[h * 64..][..64], &b[128 + h * 32..][..32]);
        for s in 0..4 {
            // Quarter s of the half: the low nibbles of ql[0..32] and
            // ql[32..64], then their high nibbles; qh's bits 2s and 2s + 1.
            let (low, shift) = (&ql[s % 2 * 32..][..32], 4 * (s / 2));
            let dl = [0, 1].map(|k| d * (b[192 + h * 8 + s * 2 + k] as i8) as f32);
            for l in 0..32 {
                let q = ((low[l] >> shift) & 15) | (((qh[l] >> (2 * s)) & 3) << 4);
                y[h * 128 + s * 32 + l] = dl[l / 16] * (q as i8 - 32) as f32;
            }
        }
    }
}

/// IQ4_NL's and IQ4_XS's values of the sixteen four-bit codes.
const IQ4: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// IQ4_NL: 18 bytes (a float16 scale, 16 bytes of 4-bit codes of a non-linear table) to 32 values.
#[inline(always)]
pub fn iq4_nl(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[2 + l];
        y[l] = d * IQ4[(q & 15) as usize] as f32;
        y[l + 16] = d * IQ4[(q >> 4) as usize] as f32;
    }
}

/// IQ4_XS: a 136-byte super-block to 256 values.
#[inline(always)]
pub fn iq4_xs(b: &[u8; 136], y: &mut [f32; 256]) {
    let d = half(b, 0);
    let high = u16::from_le_bytes([b[2], b[3]]);
    for j in 0..8 {
        let low = (b[4 + j / 2] >> (4 * (j % 2))) & 15;
        let sc = low | (((high >> (2 * j)) & 3) as u8) << 4;
        let dl = d * (sc as i8 - 32) as f32;
        let qs = &b[8 + j * 16..][..16];
        for l in 0..16 {
            y[j * 32 + l] = dl * IQ4[(qs[l] & 15) as usize] as f32;
            y[j * 32 + 16 + l] = dl * IQ4[(qs[l] >> 4) as usize] as f32;
        }
    }
}

/// MXFP4's E2M1 values, doubled (the scale is halved to match).
const E2M1: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// MXFP4: 17 bytes (an E8M0 scale, 16 bytes of E2M1 codes) to 32 values.
#[inline(always)]
pub fn mxfp4(b: &[u8; 17], y: &mut [f32; 32]) {
    // Half of 2^(e - 127), as ggml's `ggml_e8m0_to_fp32_half`: a float32
    // subnormal below e = 2.
    let e = u32::from(b[0]);
    let d = f32::from_bits(if e < 2 {
        0x0020_0000 << e
    } else {
        (e - 1) << 23
    });
    for l in 0..16 {
        let q = b[1 + l];
        y[l] = d * E2M1[(q & 15) as usize] as f32;
        y[l + 16] = d * E2M1[(q >> 4) as usize] as f32;
    }
}

/// A ternary digit: the byte scaled by 3 and its top two bits of 9 (0, 1
/// or 2), less one.
#[inline(always)]
fn trit(v: u8) -> i8 {
    ((u16::from(v) * 3) >> 8) as i8 - 1
}

/// TQ1_0: a 54-byte block of base-3 packed ternary digits to 256 values.
#[inline(always)]
pub fn tq1_0(b: &[u8; 54], y: &mut [f32; 256]) {
    let d = half(b, 52);
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    for p in 0..5 {
        for l in 0..32 {
            y[p * 32 + l] = d * trit(b[l].wrapping_mul(POW3[p])) as f32;
        }
        for l in 0..16 {
            y[160 + p * 16 + l] = d * trit(b[32 + l].wrapping_mul(POW3[p])) as f32;
        }
    }
    for p in 0..4 {
        for l in 0..4 {
            y[240 + p * 4 + l] = d * trit(b[48 + l].wrapping_mul(POW3[p])) as f32;
        }
    }
}

/// TQ2_0: a 66-byte block of 2-bit ternary digits to 256 values.
#[inline(always)]
pub fn tq2_0(b: &[u8; 66], y: &mut [f32; 256]) {
    let d = half(b, 64);
    for e in 0..256 {
        let q = (b[e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3;
        y[e] = d * (q as i8 - 1) as f32;
    }
}

/// Runs `f` over each `B`-byte block of `blocks` and each `N`-element run
/// of `out`, as many as both hold.
#[inline(always)]
fn each<const B: usize, const N: usize>(
    blocks: &[u8],
    out: &mut [f32],
    f: impl Fn(&[u8; B], &mut [f32; N]),
) -> usize {
    let mut done = 0;
    for (b, y) in blocks.chunks_exact(B).zip(out.chunks_exact_mut(N)) {
        // Both exact chunks: the conversions cannot fail.
        if let (Ok(b), Ok(y)) = (b.try_into(), y.try_into()) {
            f(b, y);
            done += 1;
        }
    }
    done
}

/// Whether [`dequantize_blocks`] dequantises `ggml`: every quantised type
/// of the table.
///
/// # Examples
/// ```
/// use bytelens_core::files::{GgmlType, dequant::can_dequantize};
/// assert!(can_dequantize(GgmlType::Q4_K));
/// assert!(!can_dequantize(GgmlType::F32));
/// ```
pub fn can_dequantize(ggml: GgmlType) -> bool {
    use GgmlType::*;
    matches!(
        ggml,
        Q4_0 | Q4_1
            | Q5_0
            | Q5_1
            | Q8_0
            | Q2_K
            | Q3_K
            | Q4_K
            | Q5_K
            | Q6_K
            | IQ4_NL
            | IQ4_XS
            | MXFP4
            | TQ1_0
            | TQ2_0
    )
}

/// Dequantises whole blocks of `ggml` from the start of `blocks` into
/// float32s at the start of `out` (a block's elements in order), as many
/// blocks as both hold, with the reference functions of this module.
/// Returns how many blocks it dequantised: 0 for a type without a
/// dequantiser ([`can_dequantize`]). A partial block at the end of either
/// is left alone.
///
/// # Examples
/// ```
/// use bytelens_core::files::{GgmlType, dequant::dequantize_blocks};
/// let info = GgmlType::Q4_0.info();
/// let blocks = vec![0u8; 2 * info.bytes as usize]; // scale 0: every value 0
/// let mut out = vec![1f32; 2 * info.block as usize];
/// assert_eq!(dequantize_blocks(GgmlType::Q4_0, &blocks, &mut out), 2);
/// assert!(out.iter().all(|&v| v == 0.0));
/// assert_eq!(dequantize_blocks(GgmlType::F32, &blocks, &mut out), 0);
/// ```
pub fn dequantize_blocks(ggml: GgmlType, blocks: &[u8], out: &mut [f32]) -> usize {
    match ggml {
        GgmlType::Q4_0 => each(blocks, out, q4_0),
        GgmlType::Q4_1 => each(blocks, out, q4_1),
        GgmlType::Q5_0 => each(blocks, out, q5_0),
        GgmlType::Q5_1 => each(blocks, out, q5_1),
        GgmlType::Q8_0 => each(blocks, out, q8_0),
        GgmlType::Q2_K => each(blocks, out, q2_k),
        GgmlType::Q3_K => each(blocks, out, q3_k),
        GgmlType::Q4_K => each(blocks, out, q4_k),
        GgmlType::Q5_K => each(blocks, out, q5_k),
        GgmlType::Q6_K => each(blocks, out, q6_k),
        GgmlType::IQ4_NL => each(blocks, out, iq4_nl),
        GgmlType::IQ4_XS => each(blocks, out, iq4_xs),
        GgmlType::MXFP4 => each(blocks, out, mxfp4),
        GgmlType::TQ1_0 => each(blocks, out, tq1_0),
        GgmlType::TQ2_0 => each(blocks, out, tq2_0),
        _ => 0,
    }
}
