//! The dequantisers in WGSL: one compute shader per ggml block type that
//! [`dequant`](super::dequant) dequantises, the same shaders for wgpu
//! (native) and the browser's WebGPU (the wasm package), and the passes
//! that cut a tensor into dispatches within a device's binding limit.
//!
//! Each shader is [`shader`]`(ggml, to)`: a prelude (the bindings, a byte
//! reader, float16 decoding, the output conversions), the constants of the
//! type's row of the block table ([`GgmlType::info`]: its block's elements,
//! bytes and every field's offset, so that no offset is written twice), the
//! type's `value(base, e)` (element `e` of the block at byte `base`) and
//! the entry point `main`. Blocks are read as `u32` words
//! (`array<u32>`), never through `f16` arrays: some bytes read as `f16`
//! become NaN on some GPUs, and not every browser bitcasts `f16` to `u32`.
//! Nor does a shader need `shader-f16`: float16 scales are decoded with
//! integer operations, and float16 and bfloat16 outputs rounded to nearest
//! even with integer operations, as the CPU's conversion does.
//!
//! # Against the CPU reference
//! Each `value` does the reference's float32 operations in the
//! reference's order, and WGSL rounds `*`, `+` and `-` correctly, so a
//! shader's values are the reference's bit for bit, with three exceptions
//! WGSL's floating-point rules allow:
//! - a product and a sum are kept apart (`apart`, a select on a uniform
//!   that is always zero), so that no compiler fuses them into one
//!   multiply-add, which would round once instead of twice;
//! - blocks whose float16 scale is infinite or NaN: WGSL leaves the results
//!   of operations on infinities and NaNs to the implementation (the CPU's
//!   are NaN or infinity; a GPU may give any value);
//! - MXFP4 blocks with an exponent byte of 0 or 1, whose scale is a
//!   float32 subnormal: WGSL lets an implementation flush subnormals to
//!   zero, so their values (all below 2^-125 · 6 in magnitude) may be 0.
//!
//! # Examples
//! ```
//! use bytelens_core::DType;
//! use bytelens_core::files::{GgmlType, wgsl};
//! let source = wgsl::shader(GgmlType::Q4_K, DType::F32).unwrap();
//! assert!(source.contains("const BLOCK_BYTES: u32 = 144u;"));
//! assert!(source.contains("const QS: u32 = 16u;")); // from the block table
//! // 10,000 blocks in passes of at most 128 MiB of blocks and of values.
//! let passes = wgsl::passes(GgmlType::Q4_K, 10_000, DType::F32, 128 << 20).unwrap();
//! assert_eq!(passes.len(), 1);
//! assert_eq!((passes[0].src_size, passes[0].dst_size, passes[0].words), (1_440_000, 10_240_000, 2_560_000));
//! assert!(wgsl::shader(GgmlType::F32, DType::F32).is_none()); // not quantised
//! # Ok::<(), bytelens_core::Error>(())
//! ```
#![forbid(unsafe_code)]

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::GgmlType;
use super::dequant::can_dequantize;
use crate::DType;

/// Invocations per workgroup of every dequantising shader.
pub const WORKGROUP_SIZE: u32 = 64;

/// The most workgroups a dispatch has along one dimension (WebGPU's
/// `maxComputeWorkgroupsPerDimension` default, which every device offers).
pub const MAX_GROUPS: u32 = 65_535;

/// Binding offsets are multiples of this: WebGPU's largest allowed
/// `minStorageBufferOffsetAlignment`, so a multiple of any device's.
pub const OFFSET_ALIGN: u64 = 256;

/// Bytes of the uniform each pass binds at binding 2: `words`, `row`, and
/// two zeros (`apart`'s and padding), as four little-endian u32s.
pub const PARAMS_BYTES: u64 = 16;

/// The bindings, the byte reader, float16 decoding, the product/sum
/// separator and the output conversions, shared by every shader.
const PRELUDE: &str = r"// bytelens: ggml blocks to values (generated from the core's block table).
struct Params { words: u32, row: u32, zero: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

// The byte at `a`, blocks read as little-endian u32 words.
fn byte(a: u32) -> u32 {
    return (src[a >> 2u] >> ((a & 3u) * 8u)) & 255u;
}

fn sbyte(a: u32) -> i32 {
    return (i32(byte(a)) << 24u) >> 24u;
}

fn u16at(a: u32) -> u32 {
    return byte(a) | (byte(a + 1u) << 8u);
}

// The little-endian float16 at `a`, as float32 (exact), with integer operations.
fn half(a: u32) -> f32 {
    let h = u16at(a);
    let sign = (h & 0x8000u) << 16u;
    let exp = (h >> 10u) & 31u;
    let man = h & 1023u;
    if exp == 31u {
        return bitcast<f32>(sign | 0x7f800000u | (man << 13u));
    }
    if exp == 0u {
        // man * 2^-24: both exact, the product a float32 normal.
        let v = f32(man) * 5.9604644775390625e-8;
        return select(v, -v, sign != 0u);
    }
    return bitcast<f32>(sign | ((exp + 112u) << 23u) | (man << 13u));
}

// `x`, kept apart from the operation it feeds: a select no compiler can
// see through, so that `apart(a * b) - c` is never fused into one multiply-add.
fn apart(x: f32) -> f32 {
    return select(x, 0.0, params.zero != 0u);
}

// `p + m` where p is a scale times a code (the reference's `plus_min`).
fn plus_min(p: f32, m: f32) -> f32 {
    return apart(p) + m;
}

// float32 to float16 bits, rounded to nearest even (NaN stays NaN, quieted).
fn to_f16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let exp = (b >> 23u) & 255u;
    let man = b & 0x7fffffu;
    if exp == 255u {
        if man != 0u {
            return sign | 0x7e00u | (man >> 13u);
        }
        return sign | 0x7c00u;
    }
    if exp > 142u {
        return sign | 0x7c00u;
    }
    if exp > 112u {
        // A float16 normal: drop 13 bits, round to even (a carry may make it infinite).
        let h = ((exp - 112u) << 10u) | (man >> 13u);
        let rest = man & 0x1fffu;
        let up = u32(rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u));
        return sign | (h + up);
    }
    if exp < 102u {
        return sign;
    }
    // A float16 subnormal (or the smallest normal, by a carry).
    let full = man | 0x800000u;
    let shift = 126u - exp;
    let h = full >> shift;
    let rest = full & ((1u << shift) - 1u);
    let half_way = 1u << (shift - 1u);
    let up = u32(rest > half_way || (rest == half_way && (h & 1u) == 1u));
    return sign | (h + up);
}

// float32 to bfloat16 bits, rounded to nearest even (NaN stays NaN, quieted).
fn to_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if (b & 0x7fffffffu) > 0x7f800000u {
        return (b >> 16u) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// Element `i` of the tensor's values (of this pass).
fn element(i: u32) -> f32 {
    return value(i / BLOCK * BLOCK_BYTES, i % BLOCK);
}
";

/// The entry point writing one float32 per invocation.
const MAIN_F32: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let w = id.x + id.y * params.row;
    if w >= params.words { return; }
    dst[w] = bitcast<u32>(element(w));
}
";

/// The entry point writing two float16s or bfloat16s per invocation
/// (`CONVERT` is replaced by `to_f16` or `to_bf16`).
const MAIN_HALVES: &str = "
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let w = id.x + id.y * params.row;
    if w >= params.words { return; }
    dst[w] = CONVERT(element(2u * w)) | (CONVERT(element(2u * w + 1u)) << 16u);
}
";

/// IQ4_NL's and IQ4_XS's table, and MXFP4's doubled E2M1 values.
const TABLES: &str = "
const IQ4 = array<i32, 16>(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
const E2M1 = array<i32, 16>(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
";

/// The six-bit scale and minimum of group `j` of the 12 scale bytes at `s`
/// (Q4_K, Q5_K).
const SCALE_MIN: &str = "
fn scale_min(s: u32, j: u32) -> vec2<u32> {
    if j < 4u {
        return vec2<u32>(byte(s + j) & 63u, byte(s + j + 4u) & 63u);
    }
    return vec2<u32>(
        (byte(s + j + 4u) & 15u) | ((byte(s + j - 4u) >> 2u) & 48u),
        (byte(s + j + 4u) >> 4u) | ((byte(s + j) >> 2u) & 48u));
}
";

/// Q4_K's and Q5_K's value of code `q` in group `e / 32`: the group's
/// scale times `q`, less its minimum (the reference's operations and order).
const SCALED: &str = "
fn scaled(b: u32, e: u32, q: u32) -> f32 {
    let sm = scale_min(b + SCALES, e / 32u);
    let dl = half(b + D) * f32(sm.x);
    let ml = half(b + DMIN) * f32(sm.y);
    return apart(dl * f32(q)) - ml;
}
";

/// The low nibble of byte `a` for the first half of a 32-element run, its
/// high nibble for the second.
const NIBBLE: &str = "
fn nibble(a: u32, upper: bool) -> u32 {
    return select(byte(a) & 15u, byte(a) >> 4u, upper);
}
// Two-bit code of element e of a 256-element block's codes at `q` (Q2_K, Q3_K, TQ2_0).
fn crumb(q: u32, e: u32) -> u32 {
    return (byte(q + e / 128u * 32u + e % 32u) >> (2u * (e / 32u % 4u))) & 3u;
}
";

/// `value(b, e)`: element `e` of the block starting at byte `b`, per type,
/// in the reference's operations and order (`core/src/files/dequant.rs`).
fn value_fn(ggml: GgmlType) -> Option<&'static str> {
    use GgmlType::*;
    Some(match ggml {
        Q4_0 => {
            "
fn value(b: u32, e: u32) -> f32 {
    return half(b + D) * f32(i32(nibble(b + QS + e % 16u, e >= 16u)) - 8);
}"
        }
        Q4_1 => {
            "
fn value(b: u32, e: u32) -> f32 {
    return plus_min(half(b + D) * f32(nibble(b + QS + e % 16u, e >= 16u)), half(b + M));
}"
        }
        Q5_0 => {
            "
fn value(b: u32, e: u32) -> f32 {
    let high = ((byte(b + QH + e / 8u) >> (e % 8u)) & 1u) << 4u;
    return half(b + D) * f32(i32(nibble(b + QS + e % 16u, e >= 16u) | high) - 16);
}"
        }
        Q5_1 => {
            "
fn value(b: u32, e: u32) -> f32 {
    let high = ((byte(b + QH + e / 8u) >> (e % 8u)) & 1u) << 4u;
    return plus_min(half(b + D) * f32(nibble(b + QS + e % 16u, e >= 16u) | high), half(b + M));
}"
        }
        Q8_0 => {
            "
fn value(b: u32, e: u32) -> f32 {
    return f32(sbyte(b + QS + e)) * half(b + D);
}"
        }
        Q2_K => {
            "
fn value(b: u32, e: u32) -> f32 {
    let sc = byte(b + SCALES + e / 16u);
    let dl = half(b + D) * f32(sc & 15u);
    let ml = half(b + DMIN) * f32(sc >> 4u);
    return apart(dl * f32(crumb(b + QS, e))) - ml;
}"
        }
        Q3_K => {
            "
fn value(b: u32, e: u32) -> f32 {
    let g = e / 16u;
    let s = b + SCALES;
    let low = select(byte(s + g % 8u) >> 4u, byte(s + g % 8u) & 15u, g < 8u);
    let high = (byte(s + 8u + g % 4u) >> (2u * (g / 4u))) & 3u;
    let dl = half(b + D) * f32(i32(low | (high << 4u)) - 32);
    let clear = ((byte(b + HMASK + e % 32u) >> (e / 32u)) & 1u) ^ 1u;
    return dl * f32(i32(crumb(b + QS, e)) - i32(clear << 2u));
}"
        }
        Q4_K => {
            "
fn value(b: u32, e: u32) -> f32 {
    let q = (byte(b + QS + e / 64u * 32u + e % 32u) >> (4u * (e / 32u % 2u))) & 15u;
    return scaled(b, e, q);
}"
        }
        Q5_K => {
            "
fn value(b: u32, e: u32) -> f32 {
    let high = select(0u, 16u, (byte(b + QH + e % 32u) & (1u << (e / 32u))) != 0u);
    let q = ((byte(b + QS + e / 64u * 32u + e % 32u) >> (4u * (e / 32u % 2u))) & 15u) | high;
    return scaled(b, e, q);
}"
        }
        Q6_K => {
            "
fn value(b: u32, e: u32) -> f32 {
    let h = e / 128u;
    let s = e % 128u / 32u;
    let l = e % 32u;
    let low = (byte(b + QL + h * 64u + s % 2u * 32u + l) >> (4u * (s / 2u))) & 15u;
    let q = low | (((byte(b + QH + h * 32u + l) >> (2u * s)) & 3u) << 4u);
    let dl = half(b + D) * f32(sbyte(b + SCALES + h * 8u + s * 2u + l / 16u));
    return dl * f32(i32(q) - 32);
}"
        }
        IQ4_NL => {
            "
fn value(b: u32, e: u32) -> f32 {
    return half(b + D) * f32(IQ4[nibble(b + QS + e % 16u, e >= 16u)]);
}"
        }
        IQ4_XS => {
            "
fn value(b: u32, e: u32) -> f32 {
    let j = e / 32u;
    let low = (byte(b + SCALES_L + j / 2u) >> (4u * (j % 2u))) & 15u;
    let sc = low | (((u16at(b + SCALES_H) >> (2u * j)) & 3u) << 4u);
    let dl = half(b + D) * f32(i32(sc) - 32);
    return dl * f32(IQ4[nibble(b + QS + j * 16u + e % 16u, e % 32u >= 16u)]);
}"
        }
        MXFP4 => {
            "
fn value(b: u32, e: u32) -> f32 {
    // Half of 2^(x - 127), as ggml's e8m0 to float32 half (a subnormal below x = 2).
    let x = byte(b + E);
    let d = bitcast<f32>(select((x - 1u) << 23u, 0x00200000u << x, x < 2u));
    return d * f32(E2M1[nibble(b + QS + e % 16u, e >= 16u)]);
}"
        }
        TQ1_0 => {
            "
fn value(b: u32, e: u32) -> f32 {
    // Five digits to a byte of qs[0..32], then of qs[32..48]; four to a byte of qh.
    var at = QS + e % 32u;
    var p = e / 32u;
    if e >= 240u {
        at = QH + (e - 240u) % 4u;
        p = (e - 240u) / 4u;
    } else if e >= 160u {
        at = QS + 32u + (e - 160u) % 16u;
        p = (e - 160u) / 16u;
    }
    let pow3 = array<u32, 5>(1u, 3u, 9u, 27u, 81u);
    let v = (byte(b + at) * pow3[p]) & 255u;
    return half(b + D) * f32(i32((v * 3u) >> 8u) - 1);
}"
        }
        TQ2_0 => {
            "
fn value(b: u32, e: u32) -> f32 {
    return half(b + D) * f32(i32(crumb(b + QS, e)) - 1);
}"
        }
        _ => return None,
    })
}

/// Whether [`shader`] has a shader for `ggml` into `to`: a type
/// [`dequant`](super::dequant) dequantises, into float32, float16 or
/// bfloat16.
pub fn has_shader(ggml: GgmlType, to: DType) -> bool {
    can_dequantize(ggml) && matches!(to, DType::F32 | DType::F16 | DType::BF16)
}

/// The WGSL compute shader that dequantises `ggml` blocks into `to`
/// (float32, float16 or bfloat16), one output word (one float32, or two
/// halves) per invocation: `None` for a type [`dequant`](super::dequant)
/// does not dequantise or another output dtype.
///
/// Bindings: 0, the blocks (`array<u32>`, read); 1, the values
/// (`array<u32>`, read-write); 2, a uniform of [`PARAMS_BYTES`] (a
/// [`DequantPass::params`]). Entry point `main`, [`WORKGROUP_SIZE`]
/// invocations a workgroup, dispatched as [`DequantPass::groups`].
pub fn shader(ggml: GgmlType, to: DType) -> Option<String> {
    if !has_shader(ggml, to) {
        return None;
    }
    let convert = match to {
        DType::F16 => Some("to_f16"),
        DType::BF16 => Some("to_bf16"),
        _ => None,
    };
    let info = ggml.info();
    let mut source = String::from(PRELUDE);
    // Writing into a String cannot fail.
    let _ = writeln!(source, "\n// {}: the block table's row.", info.name);
    let _ = writeln!(source, "const BLOCK: u32 = {}u;", info.block);
    let _ = writeln!(source, "const BLOCK_BYTES: u32 = {}u;", info.bytes);
    for field in info.fields {
        let _ = writeln!(
            source,
            "const {}: u32 = {}u;",
            field.name.to_ascii_uppercase(),
            field.offset
        );
    }
    source.push_str(TABLES);
    source.push_str(SCALE_MIN);
    source.push_str(NIBBLE);
    if matches!(ggml, GgmlType::Q4_K | GgmlType::Q5_K) {
        source.push_str(SCALED);
    }
    source.push_str(value_fn(ggml)?);
    source.push('\n');
    match convert {
        None => source.push_str(MAIN_F32),
        Some(name) => source.push_str(&MAIN_HALVES.replace("CONVERT", name)),
    }
    Some(source)
}

/// One dispatch of a dequantising shader: the blocks it reads and the
/// values it writes, as byte ranges of the tensor's blocks buffer and of
/// its values buffer (each offset a multiple of [`OFFSET_ALIGN`], each size
/// a multiple of 4 and within the limit [`passes`] was given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DequantPass {
    /// Where the pass's blocks start in the blocks buffer.
    pub src_offset: u64,
    /// Bytes of blocks it binds (rounded up to 4; the blocks buffer is
    /// padded to a multiple of 4).
    pub src_size: u64,
    /// Where its values start in the values buffer.
    pub dst_offset: u64,
    /// Bytes of values it writes.
    pub dst_size: u64,
    /// Output words (u32s) it writes: one invocation each.
    pub words: u32,
    /// Workgroups along x and y.
    pub groups: [u32; 2],
}

impl DequantPass {
    /// The uniform the pass binds at binding 2 ([`PARAMS_BYTES`]).
    pub fn params(&self) -> [u8; PARAMS_BYTES as usize] {
        let mut bytes = [0; PARAMS_BYTES as usize];
        bytes[..4].copy_from_slice(&self.words.to_le_bytes());
        let row = self.groups[0] * WORKGROUP_SIZE;
        bytes[4..8].copy_from_slice(&row.to_le_bytes());
        bytes
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// How many blocks of `ggml` lie between two places where a pass may start
/// when dequantising into `to`: the fewest whose blocks and whose values
/// are both a multiple of [`OFFSET_ALIGN`] bytes (each pass of [`passes`]
/// starts at a multiple of it, so that both bindings' offsets are
/// aligned). A caller that cuts a tensor into runs (a GPU's largest buffer
/// holds part of its values) starts each run at a multiple of it.
pub fn pass_step(ggml: GgmlType, to: DType) -> u64 {
    let info = ggml.info();
    let (block_bytes, values_bytes) = (
        u64::from(info.bytes),
        u64::from(info.block) * to.size() as u64,
    );
    let for_src = OFFSET_ALIGN / gcd(block_bytes, OFFSET_ALIGN);
    let for_dst = OFFSET_ALIGN / gcd(values_bytes, OFFSET_ALIGN);
    for_src / gcd(for_src, for_dst) * for_dst
}

/// The passes that dequantise `blocks` blocks of `ggml` into `to` with no
/// binding larger than `max_binding` bytes (a device's
/// `maxStorageBufferBindingSize`), in order; empty for no blocks. `None`
/// where [`shader`] has no shader for them, or where `max_binding` is too
/// small for the smallest pass whose offsets stay aligned (a few KiB).
pub fn passes(
    ggml: GgmlType,
    blocks: u64,
    to: DType,
    max_binding: u64,
) -> Option<Vec<DequantPass>> {
    if !has_shader(ggml, to) {
        return None;
    }
    let info = ggml.info();
    let (block_bytes, values_bytes) = (
        u64::from(info.bytes),
        u64::from(info.block) * to.size() as u64,
    );
    // Passes start at multiples of `step` blocks, so that both offsets are
    // multiples of OFFSET_ALIGN.
    let step = pass_step(ggml, to);
    // Words per invocation row of a dispatch bound the pass too.
    let words_per_block = values_bytes / 4;
    let most_words = (u64::from(MAX_GROUPS) * u64::from(MAX_GROUPS) * u64::from(WORKGROUP_SIZE))
        .min(u64::from(u32::MAX));
    let fit = (max_binding / block_bytes)
        .min(max_binding / values_bytes)
        .min(most_words / words_per_block);
    let per_pass = fit / step * step;
    if per_pass == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut first = 0;
    while first < blocks {
        let count = per_pass.min(blocks - first);
        let words = count * words_per_block;
        let groups = words.div_ceil(u64::from(WORKGROUP_SIZE));
        let x = groups.min(u64::from(MAX_GROUPS));
        out.push(DequantPass {
            src_offset: first * block_bytes,
            src_size: (count * block_bytes).next_multiple_of(4),
            dst_offset: first * values_bytes,
            dst_size: count * values_bytes,
            // At most `most_words`, which fits a u32.
            words: u32::try_from(words).ok()?,
            groups: [x as u32, groups.div_ceil(x) as u32],
        });
        first += count;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code building 45 strings: nothing for Miri to check, slow under it"
    )]
    fn every_dequantised_type_has_a_shader_with_its_table_row() {
        for ggml in GgmlType::ALL {
            for to in [DType::F32, DType::F16, DType::BF16] {
                let source = shader(ggml, to);
                assert_eq!(source.is_some(), can_dequantize(ggml), "{ggml}");
                let Some(source) = source else { continue };
                let info = ggml.info();
                for field in info.fields {
                    let line = alloc::format!(
                        "const {}: u32 = {}u;",
                        field.name.to_ascii_uppercase(),
                        field.offset
                    );
                    assert!(source.contains(&line), "{ggml}: {line}");
                }
                assert!(
                    source.contains(&alloc::format!("const BLOCK_BYTES: u32 = {}u;", info.bytes))
                );
            }
            assert!(shader(ggml, DType::F64).is_none());
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe arithmetic over 225 tensors: nothing for Miri to check, slow under it"
    )]
    fn passes_cover_every_block_with_aligned_bounded_bindings() {
        for ggml in GgmlType::ALL.into_iter().filter(|&t| can_dequantize(t)) {
            let info = ggml.info();
            for to in [DType::F32, DType::F16, DType::BF16] {
                for (blocks, limit) in [
                    (0u64, 1u64 << 20),
                    (1, 1 << 20),
                    (100_003, 1 << 20),
                    (5_000_000, 1 << 27),
                    (70_000_000, 1 << 30),
                ] {
                    let passes = passes(ggml, blocks, to, limit).unwrap();
                    let (mut src, mut dst) = (0, 0);
                    for pass in &passes {
                        assert_eq!(
                            (pass.src_offset, pass.dst_offset),
                            (src, dst),
                            "{ggml} {to:?}"
                        );
                        assert_eq!(pass.src_offset % OFFSET_ALIGN, 0);
                        assert_eq!(pass.dst_offset % OFFSET_ALIGN, 0);
                        assert!(pass.src_size <= limit && pass.dst_size <= limit);
                        assert_eq!(pass.src_size % 4, 0);
                        let count = pass.dst_size / (u64::from(info.block) * to.size() as u64);
                        assert_eq!(pass.words as u64 * 4, pass.dst_size);
                        let [x, y] = pass.groups;
                        assert!(x <= MAX_GROUPS && y <= MAX_GROUPS);
                        assert!(u64::from(x) * u64::from(y) * 64 >= u64::from(pass.words));
                        assert!(u64::from(x) * u64::from(y - 1) * 64 < u64::from(pass.words));
                        src += count * u64::from(info.bytes);
                        dst += pass.dst_size;
                    }
                    assert_eq!(dst, blocks * u64::from(info.block) * to.size() as u64);
                }
            }
            assert!(passes(ggml, 10, DType::F32, 255).is_none());
        }
    }
}
