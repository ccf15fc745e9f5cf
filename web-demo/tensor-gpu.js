// The tensor panel's statistics, histogram and heatmap on the browser's
// GPU (WebGPU), where there is one; run by tensor-gpu-worker.js, off the
// page's thread (the page uses `gpuRefusal` and `comparison` here). The
// tensor's bytes go up with the wasm package's `loadToGpu` (one ranged
// read, a quantised GGUF tensor dequantised to float32 there), then
// compute shaders written here reduce them, each invocation's 1024
// elements to a record (a heatmap's pixel, its elements), read back and
// combined in JS in float64. The wasm path (tensor-worker.js) is the
// reference; this one gives the same counts and histogram, the same
// minimum, maximum and heatmap maxima bit for bit (but for the sign of a
// zero: here -0 < +0, as IEEE 754's maximum has it, where the core's
// answer for a zero extreme depends on which zero came first), and a mean,
// standard deviation and heatmap means within float32 rounding of its
// partial sums (`TOLERANCE`).
//
// Every element is read as the bits of a float32 (float16 decoded with
// integer operations: SwiftShader has no `shader-f16`; bfloat16 shifted),
// and classified by its bits, so that nothing depends on how a GPU treats
// NaN or subnormal floats: the extremes are taken over an order-preserving
// integer key of the bits, and the sums over finite values scaled by a
// power of two that follows the largest magnitude seen (no float32
// overflow, even for values near 3.4e38; subnormals never flushed). A
// run's dispatches are submitted a few hundred workgroups at a time, so
// that a cancel takes effect between two.

import { BINS, FORMATS, HEAT_SHADER, HIST_SHADER, RECORD, SIZES, STATS_SHADER, TILE, WG, prelude } from "./tensor-gpu-shaders.js";

// GPUBufferUsage and GPUMapMode, by number: this module loads where
// WebGPU does not exist too.
const MAP_READ = 0x01;
const COPY_SRC = 0x04;
const COPY_DST = 0x08;
const UNIFORM = 0x40;
const STORAGE = 0x80;
const READ = 0x01;

/**
 * Elements a submission reads, at most: the run waits for each before the
 * next, so that a cancel waits for one at most, and no dispatch runs long
 * enough for a GPU watchdog (SwiftShader reads this many in about 0.3 s).
 */
const STEP = 256 * TILE;
/** Elements the shaders index with 32 bits: the tensor has fewer. */
const MAX_ELEMENTS = 2 ** 32 - 1;

/**
 * The largest buffer a run asks loadToGpu for: one that binds whole
 * (loadToGpu keeps its buffers below the limit it is given, never at it).
 */
function bufferLimit(limits) {
  return Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
}

/**
 * How far the GPU's mean and standard deviation may be from the wasm
 * path's, as a fraction of the largest finite magnitude (max(|min|,
 * |max|)); the same for a heatmap's mean picture, as a fraction of its
 * largest magnitude. Partial sums are float32 (each invocation's 1024
 * values, scaled by a power of two; a pixel's elements), blocked pairwise
 * sums in the shaders (tensor-gpu-shaders.js), combined in float64, so
 * that each value meets at most 14 float32 roundings in the statistics:
 * 14 × 2^-24 = 8.3e-7 of that magnitude, every rounding the same way (a
 * running sum allowed 1023, and a constant 0.1 came out 1e-5 off). A
 * pixel of n elements allows 7 + log2(n / 8): under the tolerance up to
 * 2^12 elements a pixel (a 2-D tensor of 600 million), over it past
 * that only with values chosen against the order they are added in.
 */
export const TOLERANCE = 1e-6;

// ------------------------------------------------------------ the device

let asked = null;

/**
 * This thread's WebGPU device, asked for once: `{ device, adapter, limits
 * }` (`adapter` its vendor and architecture, in words; `limits` its buffer
 * limits, as a plain object), or `{ reason }`, one short line saying why
 * there is none. A lost device is asked for again next time.
 */
export function gpuDevice() {
  asked ??= (async () => {
    if (!navigator.gpu) return { reason: "No WebGPU here (navigator.gpu is missing): statistics by wasm." };
    let adapter = null;
    try {
      adapter = await navigator.gpu.requestAdapter();
    } catch {
      // no adapter, said below
    }
    if (!adapter) return { reason: "No WebGPU here (no adapter found): statistics by wasm." };
    try {
      const device = await adapter.requestDevice({
        requiredLimits: {
          maxBufferSize: adapter.limits.maxBufferSize,
          maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        },
      });
      device.lost.then(() => {
        asked = null;
      });
      const info = adapter.info ?? {};
      const named = [info.vendor, info.architecture].filter(Boolean).join(" ");
      const limits = { maxBufferSize: device.limits.maxBufferSize, maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize };
      return { device, adapter: named || "an adapter", limits };
    } catch (err) {
      asked = null;
      return { reason: `No WebGPU device (${err?.message ?? err}): statistics by wasm.` };
    }
  })();
  return asked;
}

/**
 * Why the GPU path does not read array `a` (the file view's: `dtype`,
 * `descr`, `fortran`, `blockBytes`, `ggml`, `blocks`) of `count` elements
 * on a device of `limits` (gpuDevice's), whose dtype's name is `name`
 * ("float32", "int16"), in a few words for the panel; null where it does.
 * `wasm` checks that the core has a GPU dequantiser for a quantised one.
 */
export function gpuRefusal(wasm, limits, a, name, count) {
  const quantised = a.blockBytes !== undefined;
  if (!quantised && !(name in FORMATS)) {
    const why = name === "float64" ? " (WGSL has no float64)" : "";
    return `${name}: statistics by wasm; the GPU shaders read float32, float16, bfloat16 and quantised GGUF tensors${why}.`;
  }
  if (a.fortran && a.shape.length > 1) return "Fortran order: statistics by wasm; loadToGpu puts tensors on the GPU in C order only.";
  if (count > MAX_ELEMENTS) return `${count.toLocaleString("en")} elements: statistics by wasm; the GPU shaders index at most 2^32 - 1.`;
  const limit = bufferLimit(limits);
  if (quantised) {
    try {
      wasm.dequantShader(a.ggml, "f32");
    } catch {
      return `${a.dtype}: statistics by wasm; the core has no GPU dequantiser for it.`;
    }
    if (count * 4 > limit) return `${a.dtype}: statistics by wasm; its ${(count * 4).toLocaleString("en")} bytes of float32 values pass this GPU's buffer limit of ${limit.toLocaleString("en")}.`;
  }
  return null;
}

// ------------------------------------------------------------ the run

/** A compute pipeline of `code`, made once per device. */
const pipelines = new WeakMap();
function pipeline(device, key, code) {
  let made = pipelines.get(device);
  if (!made) pipelines.set(device, (made = new Map()));
  if (!made.has(key)) {
    const module = device.createShaderModule({ code, label: key });
    made.set(key, device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" }, label: key }));
  }
  return made.get(key);
}

/** Float32 bits to a number, and back; a key's bits. */
const word = new Uint32Array(1);
const float = new Float32Array(word.buffer);
function valueOf(bits) {
  word[0] = bits;
  return float[0];
}
function bitsOf(x) {
  float[0] = x;
  return word[0];
}
const keyOf = (b) => (b >= 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0);
const unkey = (k) => (k >= 0x80000000 ? (k & 0x7fffffff) >>> 0 : ~k >>> 0);

/**
 * The key of the smallest float32 at or above `e` (-0 for 0: -0 >= 0),
 * and of the largest at or below it (+0 for 0), for the histogram's edges.
 */
function keyAtLeast(e) {
  let f = Math.fround(e);
  if (f < e) f = f < 0 ? valueOf(bitsOf(f) - 1) : valueOf(bitsOf(f) + 1);
  return f === 0 ? 0x7fffffff : keyOf(bitsOf(f));
}
function keyAtMost(e) {
  let f = Math.fround(e);
  if (f > e) f = f <= 0 ? valueOf((bitsOf(f) | 0x80000000) + 1) : valueOf(bitsOf(f) - 1);
  return f === 0 ? 0x80000000 : keyOf(bitsOf(f));
}

/** A uniform of u32 `values`, padded to 32 bytes. */
function uniform(device, values, made) {
  const data = new Uint32Array(Math.max(8, Math.ceil(values.length / 4) * 4));
  data.set(values);
  const buffer = device.createBuffer({ size: data.byteLength, usage: UNIFORM | COPY_DST });
  device.queue.writeBuffer(buffer, 0, data);
  made.push(buffer);
  return buffer;
}

/** A storage buffer of u32 `values` (null: `size` zeroed bytes). */
function storage(device, values, made, size = values.byteLength) {
  const buffer = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage: STORAGE | COPY_SRC | COPY_DST });
  if (values) device.queue.writeBuffer(buffer, 0, values);
  made.push(buffer);
  return buffer;
}

/**
 * Copies `buffers` (each [buffer, size]) into mappable ones and calls
 * `use(bytes, i)` with each one's bytes, in order, while they are mapped
 * (no copy of them made); resolves once every `use` has.
 */
async function readBack(device, buffers, made, use) {
  if (buffers.length === 0) return;
  const encoder = device.createCommandEncoder();
  const staged = buffers.map(([buffer, size]) => {
    const out = device.createBuffer({ size, usage: MAP_READ | COPY_DST });
    made.push(out);
    encoder.copyBufferToBuffer(buffer, 0, out, 0, size);
    return [out, size];
  });
  device.queue.submit([encoder.finish()]);
  for (const [i, [out, size]] of staged.entries()) {
    await out.mapAsync(READ);
    try {
      await use(out.getMappedRange(0, size), i);
    } finally {
      out.unmap();
    }
  }
}

/** Lets the thread's other tasks run (a cancel's message): a task of its own (a zero timeout). */
const breathe = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Records combined between two breaths (a few ms of work). */
const SLICE = 16384;

/**
 * The statistics of the invocations' records, added a buffer's at a time
 * (`add`), then `result(total)`: `Stats.result()`'s shape, the moments
 * merged as the core merges them (Chan et al.).
 */
class Totals {
  constructor() {
    this.c = { finite: 0, nan: 0, posinf: 0, neginf: 0, zero: 0, subnormal: 0 };
    this.lo = 0xffffffff;
    this.hi = 0;
    this.n = 0;
    this.mean = 0;
    this.m2 = 0;
  }

  /** Adds the records in `bytes`, breathing every SLICE of them; the signal stops it. */
  async add(bytes, signal) {
    const u = new Uint32Array(bytes);
    const f = new Float32Array(bytes);
    const k = new Int32Array(bytes);
    const c = this.c;
    for (let from = 0; from < u.length; from += SLICE * RECORD) {
      if (from > 0) {
        await breathe();
        check(signal);
      }
      const to = Math.min(u.length, from + SLICE * RECORD);
      for (let o = from; o < to; o += RECORD) {
        const finite = u[o];
        c.finite += finite;
        c.nan += u[o + 1];
        c.posinf += u[o + 2];
        c.neginf += u[o + 3];
        c.zero += u[o + 4];
        c.subnormal += u[o + 5];
        if (finite === 0) continue;
        this.lo = Math.min(this.lo, u[o + 6]);
        this.hi = Math.max(this.hi, u[o + 7]);
        // The invocation's mean and squared deviations, unscaled: sum(x - c)^2
        // less what taking them from c (float32) rather than the mean added.
        const scale = 2 ** -k[o + 11];
        const meanScaled = f[o + 8] / finite;
        const m2 = Math.max(0, f[o + 10] - finite * (meanScaled - f[o + 9]) ** 2) * scale * scale;
        const mean = meanScaled * scale;
        if (this.n === 0) {
          [this.n, this.mean, this.m2] = [finite, mean, m2];
        } else {
          const all = this.n + finite;
          const delta = mean - this.mean;
          this.mean += delta * (finite / all);
          this.m2 += m2 + delta * delta * ((this.n * finite) / all);
          this.n = all;
        }
      }
    }
  }

  /** The statistics; an error where the records do not count `total` elements. */
  result(total) {
    const c = this.c;
    const count = c.finite + c.nan + c.posinf + c.neginf;
    if (count !== total) throw new Error(`the GPU counted ${count} elements of ${total}`);
    const some = this.n > 0;
    return {
      count, ...c,
      min: some ? valueOf(unkey(this.lo)) : null,
      max: some ? valueOf(unkey(this.hi)) : null,
      mean: some ? this.mean : null,
      std: some ? Math.sqrt(this.m2 / this.n) : null,
    };
  }
}

/** The smallest and largest finite pixel (as the core's `range()`), or null. */
function rangeOf(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : null;
}

/** The heatmap's pixels from each buffer's pixel records (`add`), then `result()`: `{ mean, max }`, each `{ values, range }`. */
class Pixels {
  constructor(pixels) {
    this.pixels = pixels;
    this.n = new Float64Array(pixels);
    this.sum = new Float64Array(pixels);
    this.top = new Uint32Array(pixels);
  }

  add(bytes) {
    const u = new Uint32Array(bytes);
    const f = new Float32Array(bytes);
    const k = new Int32Array(bytes);
    for (let p = 0; p < this.pixels; p++) {
      const finite = u[4 * p];
      if (finite === 0) continue;
      this.n[p] += finite;
      this.top[p] = Math.max(this.top[p], u[4 * p + 1]);
      this.sum[p] += f[4 * p + 2] * 2 ** -k[4 * p + 3];
    }
  }

  result() {
    const mean = new Float32Array(this.pixels).fill(NaN);
    const max = new Float32Array(this.pixels).fill(NaN);
    for (let p = 0; p < this.pixels; p++) {
      if (this.n[p] === 0) continue;
      mean[p] = this.sum[p] / this.n[p];
      max[p] = valueOf(unkey(this.top[p]));
    }
    return { mean: { values: mean, range: rangeOf(mean) }, max: { values: max, range: rangeOf(max) } };
  }
}

/** Throws the signal's reason once it is aborted. */
function check(signal) {
  signal?.throwIfAborted();
}

/**
 * Statistics (`Stats.result()`'s shape), the histogram (`{ counts, edges }`,
 * numpy's 64 bins over the finite range, edges from the core's
 * `Histogram.forRange` for `dtype`) and, with `heat` (`{ rows, cols, outH,
 * outW, first }`, `first` its first element), the heatmap's pictures, of
 * tensor `name` of `source` (a URL or a File) computed on `device`:
 * `{ stats, hist, heat, loadMs, computeMs, buffers }` (`buffers`: how
 * many the tensor took). `format` is what the GPU holds
 * ("float32", "float16" or "bfloat16"; a quantised tensor, `quantised`,
 * "float32" once dequantised there). `signal` cancels (loadToGpu's too);
 * every buffer is destroyed before this settles. `maxBufferSize` (for
 * tests) splits the tensor into buffers of at most that many bytes.
 */
export async function gpuStatistics(options) {
  // One run at a time: a cancelled run's error scopes are popped before the next pushes its own.
  const previous = running;
  let done;
  running = new Promise((resolve) => {
    done = resolve;
  });
  await previous;
  try {
    check(options.signal);
    return await statistics(options);
  } finally {
    done();
  }
}

let running = Promise.resolve();

async function statistics({ wasm, device, source, name, quantised, format, dtype, count, heat, signal, onProgress, maxBufferSize }) {
  const made = [];
  const t0 = performance.now();
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let scopes = 2;
  const pop = () => {
    scopes--;
    return device.popErrorScope();
  };
  let tensor = null;
  try {
    // No bigger than `maxBufferSize` either, where a test asks.
    const limit = Math.min(bufferLimit(device.limits), maxBufferSize ?? Infinity);
    const tensors = await wasm.loadToGpu(device, source, {
      names: [name],
      dtype: quantised ? "f32" : undefined,
      usage: STORAGE,
      maxBufferSize: limit,
      signal,
      onProgress,
    });
    tensor = tensors.get(name);
    check(signal);
    await device.queue.onSubmittedWorkDone();
    const loadMs = performance.now() - t0;
    check(signal);
    const t1 = performance.now();
    // Each buffer's elements: all but the last of the first's size.
    const size = SIZES[format];
    const segment = tensor.buffers[0].size;
    const parts = tensor.buffers.map((buffer, b) => {
      const start = (b * segment) / size;
      const n = Math.min(segment / size, count - start);
      return { buffer, start, count: n, tiles: Math.ceil(n / TILE) };
    });
    const stats = pipeline(device, `stats ${format}`, prelude(format) + STATS_SHADER);
    const steps = [];
    for (const part of parts) {
      part.records = storage(device, null, made, part.tiles * WG * RECORD * 4);
      for (let first = 0; first < part.tiles; first += STEP / TILE) {
        const groups = Math.min(STEP / TILE, part.tiles - first);
        steps.push([stats, groups, [
          { binding: 0, resource: { buffer: part.buffer } },
          { binding: 1, resource: { buffer: part.records } },
          { binding: 2, resource: { buffer: uniform(device, [part.count, part.tiles, first], made) } },
        ]]);
      }
    }
    const pixels = heat ? heat.outH * heat.outW : 0;
    const heatOut = [];
    if (heat) {
      const heats = pipeline(device, `heat ${format}`, prelude(format) + HEAT_SHADER);
      const at = (n, out) => Uint32Array.from({ length: out + 1 }, (_, i) => Math.floor((i * n) / out));
      const rowAt = storage(device, at(heat.rows, heat.outH), made);
      const colAt = storage(device, at(heat.cols, heat.outW), made);
      // Pixels a step: about STEP elements.
      const each = Math.ceil(heat.rows / heat.outH) * Math.ceil(heat.cols / heat.outW);
      const chunk = Math.max(WG, Math.floor(STEP / each / WG) * WG);
      for (const part of parts) {
        const out = storage(device, null, made, pixels * 16);
        heatOut.push([out, pixels * 16]);
        for (let from = 0; from < pixels; from += chunk) {
          const to = Math.min(pixels, from + chunk);
          steps.push([heats, Math.ceil((to - from) / WG), [
            { binding: 0, resource: { buffer: part.buffer } },
            { binding: 1, resource: { buffer: rowAt } },
            { binding: 2, resource: { buffer: colAt } },
            { binding: 3, resource: { buffer: out } },
            { binding: 4, resource: { buffer: uniform(device, [heat.first, heat.cols, heat.outW, from, to, part.start, part.start + part.count], made) } },
          ]]);
        }
      }
    }
    await dispatch(device, steps, signal);
    const totals = new Totals();
    await readBack(device, parts.map((part) => [part.records, part.tiles * WG * RECORD * 4]), made, (bytes) => totals.add(bytes, signal));
    const pictures = heat ? new Pixels(pixels) : null;
    await readBack(device, heatOut, made, (bytes) => pictures.add(bytes));
    check(signal);
    const result = totals.result(count);
    let hist = null;
    if (result.min !== null) hist = await histogram({ wasm, device, format, dtype, parts, result, made, signal });
    const invalid = await pop();
    const memory = await pop();
    if (memory) throw new RangeError(`the GPU ran out of memory: ${memory.message}`);
    if (invalid) throw new Error(`WebGPU refused the statistics' shaders: ${invalid.message}`);
    const buffers = parts.length;
    return { stats: result, hist, heat: pictures?.result() ?? null, loadMs, computeMs: performance.now() - t1, buffers };
  } finally {
    for (const buffer of [...made, ...(tensor?.buffers ?? [])]) buffer.destroy();
    while (scopes > 0) await pop().catch(() => {});
  }
}

/** Runs `steps` (each [pipeline, workgroups, bind group entries]), a submission each, waiting for each; the signal stops them between two. */
async function dispatch(device, steps, signal) {
  for (const [compute, groups, entries] of steps) {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(compute);
    pass.setBindGroup(0, device.createBindGroup({ layout: compute.getBindGroupLayout(0), entries }));
    pass.dispatchWorkgroups(groups);
    pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    check(signal);
  }
}

/**
 * The histogram over every part, once the statistics gave the range: `{
 * counts, edges }`, or `{ refused }` (why not) where the core makes no
 * edges of that range (numpy would refuse them too: float16 edges of a
 * range wider than 65504, say).
 */
async function histogram({ wasm, device, format, dtype, parts, result, made, signal }) {
  let edges;
  try {
    const h = wasm.Histogram.forRange(result.min, result.max, BINS, dtype);
    try {
      edges = Array.from(h.edges());
    } finally {
      h.free();
    }
  } catch (err) {
    return { refused: String(err?.message ?? err) };
  }
  const keys = Uint32Array.from(edges, (e, i) => (i === BINS ? keyAtMost(e) : keyAtLeast(e)));
  // The guess: bins of equal width from the first edge (none where they have no width).
  const scale = BINS / (edges[BINS] - edges[0]);
  const [guessScale, guessOffset] = Number.isFinite(scale) ? [scale, edges[0] * scale] : [0, 0];
  const edgeBuffer = storage(device, keys, made);
  const counts = storage(device, null, made, BINS * 4);
  const hist = pipeline(device, `hist ${format}`, prelude(format) + HIST_SHADER);
  const steps = [];
  for (const part of parts) {
    for (let first = 0; first < part.tiles; first += STEP / TILE) {
      steps.push([hist, Math.min(STEP / TILE, part.tiles - first), [
        { binding: 0, resource: { buffer: part.buffer } },
        { binding: 1, resource: { buffer: edgeBuffer, size: (BINS + 1) * 4 } },
        { binding: 2, resource: { buffer: counts, size: BINS * 4 } },
        { binding: 3, resource: { buffer: uniform(device, [part.count, part.tiles, first, 0, bitsOf(guessScale), bitsOf(guessOffset)], made) } },
      ]]);
    }
  }
  await dispatch(device, steps, signal);
  let bins = null;
  await readBack(device, [[counts, BINS * 4]], made, (bytes) => {
    bins = Array.from(new Uint32Array(bytes));
  });
  return { counts: bins, edges };
}

// ------------------------------------------------------------ comparison

/** The largest |x| of a picture's finite values (its range's ends), 1 where it has none or only zeros. */
function magnitude(range) {
  return Math.max(Math.abs(range?.[0] ?? 0), Math.abs(range?.[1] ?? 0)) || 1;
}

/** Equal bit for bit, or both zeros (whose sign in an extreme depends on the order the core saw them in). */
const same = (a, b) => Object.is(a, b) || (a === 0 && b === 0);

/**
 * The GPU's results `gpu` against the wasm path's `wasm` (each `{ stats,
 * hist, heat }`): `{ rows: [{ what, gpu, wasm, agree, note }], agree }`.
 * Counts, extremes, the histogram and the max picture must be equal (the
 * extremes and pixels bit for bit, a zero of either sign); the mean, the
 * standard deviation and the mean picture within TOLERANCE of the largest
 * magnitude (the values', the picture's).
 */
export function comparison(gpu, wasm) {
  const g = gpu.stats;
  const w = wasm.stats;
  const rows = [];
  for (const k of ["count", "finite", "nan", "posinf", "neginf", "zero", "subnormal"]) {
    rows.push({ what: k, gpu: g[k], wasm: w[k], agree: g[k] === w[k] });
  }
  for (const k of ["min", "max"]) rows.push({ what: k, gpu: g[k], wasm: w[k], agree: same(g[k], w[k]) });
  const scale = magnitude([w.min, w.max]);
  for (const k of ["mean", "std"]) {
    const off = g[k] === null || w[k] === null ? (g[k] === w[k] ? 0 : Infinity) : Math.abs(g[k] - w[k]) / scale;
    rows.push({ what: k, gpu: g[k], wasm: w[k], off, agree: off <= TOLERANCE, note: off === 0 ? "equal" : `off by ${off.toExponential(1)} of the largest |x|` });
  }
  const gh = gpu.hist?.counts ? gpu.hist : null;
  const wh = wasm.hist?.counts ? wasm.hist : null;
  const total = (h) => (h ? `${h.counts.reduce((a, b) => a + b, 0).toLocaleString("en")} in ${h.counts.length} bins` : null);
  const bins = gh && wh ? gh.counts.filter((c, i) => c !== wh.counts[i]).length + Math.abs(gh.counts.length - wh.counts.length) : 0;
  const edges = gh && wh ? gh.edges.every((e, i) => Object.is(e, wh.edges[i])) && gh.edges.length === wh.edges.length : !gh === !wh;
  rows.push({ what: "histogram", gpu: total(gh), wasm: total(wh), agree: !gh === !wh && bins === 0 && edges, note: bins ? `${bins} bins differ` : edges ? "" : "edges differ" });
  if (gpu.heat || wasm.heat) {
    for (const mode of ["mean", "max"]) {
      const a = gpu.heat?.[mode].values;
      const b = wasm.heat?.[mode].values;
      let agree = Boolean(a && b) && a.length === b.length;
      let off = 0;
      let differ = 0;
      const size = magnitude(wasm.heat?.[mode].range);
      for (let p = 0; agree && p < a.length; p++) {
        if (Number.isNaN(a[p]) !== Number.isNaN(b[p])) differ++;
        else if (mode === "max" ? !same(a[p], b[p]) : Math.abs(a[p] - b[p]) > 0) {
          off = Math.max(off, Math.abs(a[p] - b[p]) / size);
          if (mode === "max" || Math.abs(a[p] - b[p]) > TOLERANCE * size) differ++;
        }
      }
      agree &&= differ === 0;
      const pixels = (v) => (v ? `${v.length.toLocaleString("en")} pixels` : null);
      const note = !a || !b ? "" : differ ? `${differ} pixels differ` : off === 0 ? "equal" : `within ${off.toExponential(1)} of the largest |pixel|`;
      rows.push({ what: `heatmap-${mode}`, gpu: pixels(a), wasm: pixels(b), off, agree, note });
    }
  }
  return { rows, agree: rows.every((r) => r.agree) };
}
