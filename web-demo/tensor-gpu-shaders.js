// The WGSL of the tensor panel's GPU path (tensor-gpu.js runs it): the
// statistics', heatmap's and histogram's compute shaders, each after a
// prelude that reads one dtype's elements as float32 bits.

/**
 * Invocations per workgroup; elements per invocation of the statistics'
 * and histogram's shaders (strided by WG, so that neighbours read
 * neighbouring words), and so per workgroup. No shader waits at a barrier
 * per element, nor the statistics' at all: each invocation writes its own
 * record (a barrier is dear on SwiftShader, Chromium's CPU adapter).
 */
export const WG = 64;
export const PER = 1024;
export const TILE = WG * PER;
/** Words of an invocation's statistics record (see STATS_SHADER). */
export const RECORD = 12;
export const BINS = 64;
/*
 * Blocked pairwise sums in float32, written out in WGSL by the helpers
 * below: a few values summed one after another, then such sums two at a
 * time, so that each value meets about log2(n) + 7 roundings on its way
 * to the total, where a running sum allows n - 1 (a constant 0.1, summed
 * 1024 times, came out 1e-5 off; now 7e-8). Partial sums in variables,
 * never in an array (one indexed by a variable lives in memory), and the
 * scale k fixed before they start (a loop that may rescale every level
 * ran twice as long on SwiftShader, which runs both sides of every branch
 * for each value).
 */

/** WGSL declaring partial sums `${s}0`..`${s}${levels}`, zero. */
function sumVars(s, levels) {
  return Array.from({ length: levels + 1 }, (_, l) => `var ${s}${l} = 0.0;`).join(" ");
}

/**
 * WGSL adding `v` to pairwise sums `s`, `n` (u32) values with it: the
 * value into level 0, and each second sum of level l into level l + 1
 * (the carries of n in binary); `${s}${levels}`, past 2^levels values,
 * a running sum.
 */
function sumAdd(s, n, levels, v) {
  let code = "";
  for (let l = levels; l >= 1; l--) {
    code = `if ((${n} & ${2 ** l - 1}u) == 0u) { ${s}${l} = ${s}${l} + ${s}${l - 1}; ${s}${l - 1} = 0.0;${code ? ` ${code}` : ""} }`;
  }
  return `${s}0 = ${s}0 + ${v}; ${code}`;
}

/** The WGSL total of sums `s`, the smallest levels first. */
function sumTotal(s, levels) {
  let code = `${s}0`;
  for (let l = 1; l <= levels; l++) code = `(${code} + ${s}${l})`;
  return code;
}

/**
 * WGSL summing a statistics invocation's elements, first, first + WG, ...
 * below `end` (PER of them at most, so that loops do what `sumAdd`'s tests
 * would, for no test a value): `body` (which reads element `i` and adds
 * to `${s}0`) for each in order, in a loop of 8 inside loops of 2, each
 * level's partial sum the loop's own; `${s}${STAT_LEVELS}`, declared
 * before, the total. 7 + 7 roundings for 1024 elements at most.
 */
function sumLoops(s, first, end, body) {
  const levels = STAT_LEVELS;
  // The innermost loop's first element: first + (j1 * 8 + j2 * 16 + ...) * WG.
  const block = Array.from({ length: levels - 1 }, (_, m) => `j${m + 1} * ${8 * 2 ** m}u`).join(" + ");
  let code = `var ${s}0 = 0.0;\nlet start = ${first} + (${block}) * ${WG}u;\nfor (var i = start; i < min(start + ${8 * WG}u, ${end}); i = i + ${WG}u) {\n${body}\n}\n${s}1 = ${s}1 + ${s}0;`;
  for (let l = 1; l < levels; l++) {
    code = `var ${s}${l} = 0.0;\nfor (var j${l} = 0u; j${l} < 2u; j${l} = j${l} + 1u) {\n${code}\n}\n${s}${l + 1} = ${s}${l + 1} + ${s}${l};`;
  }
  return code;
}

/** Levels of `sumLoops` for a statistics invocation's PER elements; of `sumAdd` for a heatmap pixel's blocks of 8 (2^16 elements before the top's running sum). */
const STAT_LEVELS = 1 + Math.log2(PER / 8);
const PIXEL_LEVELS = 13;

/** What the GPU holds of each readable dtype: the WGSL that reads element i's float32 bits, and the smallest normal's bits. */
export const FORMATS = {
  float32: { read: "return words[i];", tiny: 0x00800000 },
  bfloat16: { read: "return ((words[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu) << 16u;", tiny: 0x00800000 },
  float16: { read: "return half_bits((words[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu);", tiny: 0x38800000 },
};
export const SIZES = { float32: 4, bfloat16: 2, float16: 2 };

/**
 * The WGSL every shader starts with, for elements of `format`: binding 0
 * the elements as u32 words; `bits_of(i)`, element i as float32 bits;
 * `key` and `unkey`, the bits to an unsigned integer in the floats' order
 * (-0 just below +0) and back; `scaled(b, k)`, the value times 2^k.
 */
export function prelude(format) {
  const { read, tiny } = FORMATS[format];
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> words: array<u32>;

const TINY: u32 = ${tiny}u; // the dtype's smallest normal magnitude, as float32 bits

// float16 bits to float32 bits, exactly (subnormals normalised, NaN payloads kept).
fn half_bits(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return sign | 0x7f800000u | (m << 13u); }
  if (e != 0u) { return sign | ((e + 112u) << 23u) | (m << 13u); }
  if (m == 0u) { return sign; }
  let p = firstLeadingBit(m);
  return sign | ((p + 103u) << 23u) | ((m << (23u - p)) & 0x7fffffu);
}

fn bits_of(i: u32) -> u32 {
  ${read}
}

fn is_finite(b: u32) -> bool {
  return (b & 0x7fffffffu) < 0x7f800000u;
}

fn key(b: u32) -> u32 {
  return select(b | 0x80000000u, ~b, b >= 0x80000000u);
}

fn unkey(k: u32) -> u32 {
  return select(~k, k & 0x7fffffffu, k >= 0x80000000u);
}

// The finite value of bits b times 2^k (|k| <= 100), a subnormal one's
// from its integer mantissa, so that a GPU that flushes subnormals loses
// nothing that counts.
fn scaled(b: u32, k: i32) -> f32 {
  if ((b & 0x7f800000u) == 0u) {
    let v = ldexp(f32(b & 0x7fffffu), k - 149);
    return select(v, -v, b >= 0x80000000u);
  }
  return ldexp(bitcast<f32>(b), k);
}

// The power of two that brings a largest magnitude of bits b just under 1.
fn scale_of(b: u32) -> i32 {
  return clamp(126 - i32((b & 0x7fffffffu) >> 23u), -100, 100);
}
`;
}

/**
 * Each invocation's record of its PER elements, RECORD words: finite, nan,
 * posinf, neginf, zero, subnormal, the smallest and largest finite key,
 * then (as float32 bits) the sum of the finite values scaled by 2^k, their
 * mean c in the same units, the sum of squared deviations from c, and k
 * (i32). k brings the invocation's largest finite magnitude (found by
 * the first pass, with the counts and extremes) just under 1, so that the
 * sum never overflows; the sum and the squared deviations take a pass
 * each, blocked pairwise (`sumLoops`: 14 roundings at most on a value's
 * way).
 */
export const STATS_SHADER = /* wgsl */ `
struct Params { count: u32, tiles: u32, first: u32, pad: u32 }
@group(0) @binding(1) var<storage, read_write> records: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let tile = params.first + wid.x;
  if (tile >= params.tiles) { return; }
  let begin = tile * ${TILE}u;
  let end = min(begin + ${TILE}u, params.count);
  var finite = 0u;
  var nan = 0u;
  var posinf = 0u;
  var neginf = 0u;
  var zero = 0u;
  var subnormal = 0u;
  var lo = 0xffffffffu;
  var hi = 0u;
  var top = 0u;
  for (var i = begin + t; i < end; i = i + ${WG}u) {
    let b = bits_of(i);
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
      nan = nan + 1u;
    } else if (a == 0x7f800000u) {
      if (b == a) { posinf = posinf + 1u; } else { neginf = neginf + 1u; }
    } else {
      finite = finite + 1u;
      if (a == 0u) { zero = zero + 1u; } else if (a < TINY) { subnormal = subnormal + 1u; }
      let key = key(b);
      lo = min(lo, key);
      hi = max(hi, key);
      top = max(top, a);
    }
  }
  // The sums, a pass each now that k is known.
  let k = select(100, scale_of(top), finite > 0u);
  var s${STAT_LEVELS} = 0.0;
  ${sumLoops("s", "begin + t", "end", `
    let b = bits_of(i);
    s0 = s0 + select(0.0, scaled(b, k), is_finite(b));`)}
  let sum = s${STAT_LEVELS};
  let c = sum / f32(max(finite, 1u));
  var q${STAT_LEVELS} = 0.0;
  ${sumLoops("q", "begin + t", "end", `
    let b = bits_of(i);
    let d = select(0.0, scaled(b, k) - c, is_finite(b));
    q0 = q0 + d * d;`)}
  let m2 = q${STAT_LEVELS};
  let o = (tile * ${WG}u + t) * ${RECORD}u;
  records[o] = finite;
  records[o + 1u] = nan;
  records[o + 2u] = posinf;
  records[o + 3u] = neginf;
  records[o + 4u] = zero;
  records[o + 5u] = subnormal;
  records[o + 6u] = lo;
  records[o + 7u] = hi;
  records[o + 8u] = bitcast<u32>(sum);
  records[o + 9u] = bitcast<u32>(c);
  records[o + 10u] = bitcast<u32>(m2);
  records[o + 11u] = bitcast<u32>(k);
}
`;

/**
 * The heatmap's pixels, one invocation each, over the elements of one of
 * the tensor's buffers (tensor elements lo..hi; a pixel's elements in
 * another buffer are that buffer's dispatch's): per pixel its finite
 * count, largest finite key, and the sum of its finite values scaled by
 * 2^k (float32 bits, k from the pixel's largest finite magnitude, as the
 * statistics' is; a second pass sums each row's elements 8 at a time and
 * those sums pairwise, `sumAdd`: 7 + 7 roundings for a pixel of 1024
 * elements) with k, for pixels start..end. Pixel (i, j) covers rows
 * row_at[i]..row_at[i + 1] and columns col_at[j]..col_at[j + 1] of the
 * 2-D array whose element (r, c) is tensor element first + r * cols + c.
 */
export const HEAT_SHADER = /* wgsl */ `
struct Heat { first: u32, cols: u32, out_w: u32, start: u32, end: u32, lo: u32, hi: u32, pad: u32 }
@group(0) @binding(1) var<storage, read> row_at: array<u32>;
@group(0) @binding(2) var<storage, read> col_at: array<u32>;
@group(0) @binding(3) var<storage, read_write> pixels: array<vec4<u32>>;
@group(0) @binding(4) var<uniform> heat: Heat;

@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let p = heat.start + g.x;
  if (p >= heat.end) { return; }
  let i = p / heat.out_w;
  let j = p % heat.out_w;
  let c0 = col_at[j];
  let c1 = col_at[j + 1u];
  var n = 0u;
  var hi = 0u;
  var top = 0u;
  for (var r = row_at[i]; r < row_at[i + 1u]; r = r + 1u) {
    let row = heat.first + r * heat.cols;
    for (var e = max(row + c0, heat.lo); e < min(row + c1, heat.hi); e = e + 1u) {
      let bits = bits_of(e - heat.lo);
      let m = bits & 0x7fffffffu;
      if (m < 0x7f800000u) {
        n = n + 1u;
        hi = max(hi, key(bits));
        top = max(top, m);
      }
    }
  }
  // The pixel's sum, now that k is known: each row's elements 8 at a time
  // into one sum (7 roundings), those sums pairwise (sumAdd, one rounding a
  // level): 7 + 13 for 2^16 elements.
  let k = select(100, scale_of(top), n > 0u);
  ${sumVars("s", PIXEL_LEVELS)}
  var blocks = 0u;
  for (var r = row_at[i]; r < row_at[i + 1u]; r = r + 1u) {
    let row = heat.first + r * heat.cols;
    let stop = min(row + c1, heat.hi);
    for (var at = max(row + c0, heat.lo); at < stop; at = at + 8u) {
      var part = 0.0;
      for (var e = at; e < min(at + 8u, stop); e = e + 1u) {
        let bits = bits_of(e - heat.lo);
        part = part + select(0.0, scaled(bits, k), is_finite(bits));
      }
      blocks = blocks + 1u;
      ${sumAdd("s", "blocks", PIXEL_LEVELS, "part")}
    }
  }
  let sum = ${sumTotal("s", PIXEL_LEVELS)};
  pixels[p] = vec4<u32>(n, hi, bitcast<u32>(sum), bitcast<u32>(k));
}
`;

/**
 * The histogram's counts over one buffer: each finite element with a key
 * from edges[0] to edges[64] counted in the last bin b whose edges[b] it
 * reaches (the keys of the smallest float32 at or above each edge, and of
 * the largest at or below the last): numpy's bins, each lower edge in and
 * the last bin's upper edge too, compared exactly. The bin is first
 * guessed in float32 (x * scale - offset, the bins being of equal width)
 * and then moved until the edges agree, so the guess's rounding, or a GPU's
 * flushing of subnormals, never counts.
 */
export const HIST_SHADER = /* wgsl */ `
struct Params { count: u32, tiles: u32, first: u32, pad: u32, scale: f32, offset: f32, pad1: u32, pad2: u32 }
@group(0) @binding(1) var<storage, read> edges: array<u32, ${BINS + 1}>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>, ${BINS}>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> local_counts: array<atomic<u32>, ${BINS}>;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let tile = params.first + wid.x;
  let live = tile < params.tiles;
  // A workgroup past the last tile runs an empty loop: every one reaches the barrier.
  let begin = select(params.count, tile * ${TILE}u, live);
  let end = select(params.count, min(begin + ${TILE}u, params.count), live);
  let first = edges[0];
  let last = edges[${BINS}];
  for (var i = begin + t; i < end; i = i + ${WG}u) {
    let b = bits_of(i);
    if (!is_finite(b)) { continue; }
    let k = key(b);
    if (k < first || k > last) { continue; }
    var bin = min(u32(clamp(bitcast<f32>(b) * params.scale - params.offset, 0.0, ${BINS - 1}.0)), ${BINS - 1}u);
    loop {
      if (bin == 0u || k >= edges[bin]) { break; }
      bin = bin - 1u;
    }
    loop {
      if (bin == ${BINS - 1}u || k < edges[bin + 1u]) { break; }
      bin = bin + 1u;
    }
    atomicAdd(&local_counts[bin], 1u);
  }
  workgroupBarrier();
  let n = atomicLoad(&local_counts[t]);
  if (n > 0u) { atomicAdd(&counts[t], n); }
}
`;
