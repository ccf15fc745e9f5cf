//! The reference dequantisers, one per ggml block type: the contract
//! every other build of them is held to, and gguf-py's
//! `gguf.quants.dequantize` bit for bit (tests/vectors/dequant.txt), but
//! for the payload of a NaN an operation makes (an infinite scale times a
//! zero), which is the hardware's in numpy and in Rust alike.
//!
//! Each computes in float32 with the operations in gguf-py's order (it is
//! numpy's float32 arithmetic, one rounding per operation, no fused
//! multiply-add): a group's scale is `d * sc` first, then `scale * q`, then
//! `- min` or `+ m`. Each reads one block as a fixed-size array and writes
//! its elements to a fixed-size array, loops over constant bounds with no
//! branch on the data, so that the compiler vectorises them: the AVX2 and
//! NEON builds of the kernel are these functions compiled for those
//! features (`super::Kernel`), which cannot change a bit of the result.
#![forbid(unsafe_code)]

use bytelens_core::f16;

/// A little-endian float16 at `at`, as float32 (exact).
#[inline(always)]
fn half(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

pub(super) fn q4_0(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[2 + l];
        y[l] = d * ((q & 15) as i8 - 8) as f32;
        y[l + 16] = d * ((q >> 4) as i8 - 8) as f32;
    }
}

pub(super) fn q4_1(b: &[u8; 20], y: &mut [f32; 32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for l in 0..16 {
        let q = b[4 + l];
        y[l] = d * (q & 15) as f32 + m;
        y[l + 16] = d * (q >> 4) as f32 + m;
    }
}

/// The high bits of Q5_0 and Q5_1: bit `l` of the little-endian u32 at
/// `at`, as 16 or 0.
#[inline(always)]
fn high5(b: &[u8], at: usize, l: usize) -> u8 {
    ((b[at + l / 8] >> (l % 8)) & 1) << 4
}

pub(super) fn q5_0(b: &[u8; 22], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[6 + l];
        y[l] = d * (((q & 15) | high5(b, 2, l)) as i8 - 16) as f32;
        y[l + 16] = d * (((q >> 4) | high5(b, 2, l + 16)) as i8 - 16) as f32;
    }
}

pub(super) fn q5_1(b: &[u8; 24], y: &mut [f32; 32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for l in 0..16 {
        let q = b[8 + l];
        y[l] = d * ((q & 15) | high5(b, 4, l)) as f32 + m;
        y[l + 16] = d * ((q >> 4) | high5(b, 4, l + 16)) as f32 + m;
    }
}

pub(super) fn q8_0(b: &[u8; 34], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..32 {
        y[l] = (b[2 + l] as i8) as f32 * d;
    }
}

pub(super) fn q2_k(b: &[u8; 84], y: &mut [f32; 256]) {
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

pub(super) fn q3_k(b: &[u8; 110], y: &mut [f32; 256]) {
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

pub(super) fn q4_k(b: &[u8; 144], y: &mut [f32; 256]) {
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

pub(super) fn q5_k(b: &[u8; 176], y: &mut [f32; 256]) {
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

pub(super) fn q6_k(b: &[u8; 210], y: &mut [f32; 256]) {
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

pub(super) fn iq4_nl(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half(b, 0);
    for l in 0..16 {
        let q = b[2 + l];
        y[l] = d * IQ4[(q & 15) as usize] as f32;
        y[l + 16] = d * IQ4[(q >> 4) as usize] as f32;
    }
}

pub(super) fn iq4_xs(b: &[u8; 136], y: &mut [f32; 256]) {
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

pub(super) fn mxfp4(b: &[u8; 17], y: &mut [f32; 32]) {
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

pub(super) fn tq1_0(b: &[u8; 54], y: &mut [f32; 256]) {
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

pub(super) fn tq2_0(b: &[u8; 66], y: &mut [f32; 256]) {
    let d = half(b, 64);
    for e in 0..256 {
        let q = (b[e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3;
        y[e] = d * (q as i8 - 1) as f32;
    }
}
