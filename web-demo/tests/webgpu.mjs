// The wasm package's WebGPU functions in Debian's Chromium, on its
// SwiftShader adapter: uploadView, a Plan's WGSL over the bytes it lays out,
// every ggml type dequantised on the GPU equal to the CPU reference
// (dequantize), and loadToGpu of a served 1 GiB safetensors file (of the
// 5 GiB one too, with DEMO_GPU_HUGE=1: `cargo xtask test all`), with
// progress, cancel, split buffers and refusals naming the tensor and the
// limit. Prints the load's time against fetching the same bytes alone.
//
//   DEMO_URL=http://127.0.0.1:8000/ node tests/webgpu.mjs
//
// The demo must be served at DEMO_URL with its package built (the task
// runner does both). Exits 1 with a message per failed check, 2 when it
// cannot run at all (no WebGPU adapter is a failure: SwiftShader is
// Chromium's own).

import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { expect, runChecks } from "./checks.mjs";

const demoUrl = process.env.DEMO_URL;
if (!demoUrl) {
  console.error("webgpu: set DEMO_URL to the served demo, e.g. DEMO_URL=http://127.0.0.1:8000/");
  process.exit(2);
}
const bigFile = process.env.DEMO_BIG_FILE ?? "/file/model-1gib.safetensors";
const hugeFile = process.env.DEMO_HUGE_FILE ?? "/file/model-5gib.safetensors";

// WebGPU on SwiftShader, as shared/TOOLCHAIN.md found it works headless.
const ARGS = ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader",
  "--enable-features=Vulkan", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The ```js webgpu blocks of wasm/README.md (the guide includes them), which Node cannot run. */
async function webgpuExamples() {
  const lines = (await readFile(path.join(root, "wasm/README.md"), "utf8")).split("\n");
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```js webgpu") continue;
    const start = i + 1;
    while (++i < lines.length && lines[i].trim() !== "```");
    found.push({ line: start + 1, code: lines.slice(start, i).join("\n") });
  }
  return found;
}

// Runs in the page: `code`, an example, as a module of its own importing the served package.
async function runExample(code) {
  const module = code.replace(/from\s+["']\.\/pkg\/bytelens_wasm\.js["']/g, `from "${location.origin}/pkg/bytelens_wasm.js"`);
  const url = URL.createObjectURL(new Blob([module], { type: "text/javascript" }));
  try {
    await import(url);
    return "";
  } catch (err) {
    return String(err?.stack ?? err);
  } finally {
    URL.revokeObjectURL(url);
  }
}


// Files made here and in the page (the page gets these functions' source).

/** A safetensors file of `tensors`, `[name, dtype ("F32", ...), shape, bytes]`, as bytes. */
function safetensorsBytes(tensors) {
  const header = {};
  let at = 0;
  for (const [name, dtype, shape, bytes] of tensors) {
    header[name] = { dtype, shape, data_offsets: [at, at + bytes.length] };
    at += bytes.length;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + json.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(new TextEncoder().encode(json), 8);
  let p = 8 + json.length;
  for (const [, , , bytes] of tensors) {
    out.set(bytes, p);
    p += bytes.length;
  }
  return out;
}

/**
 * A GGUF file (version 3, alignment 32, no metadata) of `tensors`, `[name,
 * ggml type code, dims (innermost first), bytes]`, as bytes; each
 * tensor's data at a multiple of 32.
 */
function ggufBytes(tensors) {
  const names = tensors.map(([name]) => new TextEncoder().encode(name));
  let head = 24;
  tensors.forEach(([, , dims], k) => { head += 8 + names[k].length + 4 + 8 * dims.length + 4 + 8; });
  head = Math.ceil(head / 32) * 32;
  const offsets = [];
  let data = 0;
  for (const [, , , bytes] of tensors) {
    offsets.push(data);
    data = Math.ceil((data + bytes.length) / 32) * 32;
  }
  const out = new Uint8Array(head + data);
  const view = new DataView(out.buffer);
  let p = 0;
  const u32 = (v) => { view.setUint32(p, v, true); p += 4; };
  const u64 = (v) => { view.setBigUint64(p, BigInt(v), true); p += 8; };
  out.set([0x47, 0x47, 0x55, 0x46]);
  p = 4;
  u32(3); u64(tensors.length); u64(0);
  tensors.forEach(([, code, dims], k) => {
    u64(names[k].length);
    out.set(names[k], p);
    p += names[k].length;
    u32(dims.length);
    dims.forEach(u64);
    u32(code);
    u64(offsets[k]);
  });
  tensors.forEach(([, , , bytes], k) => out.set(bytes, head + offsets[k]));
  return out;
}

/** `n` bytes of a pattern that differs with `seed` and along the bytes. */
function patternBytes(n, seed = 1) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 131 + seed * 17 + (i >> 8)) & 255;
  return out;
}

// A server of hostile answers (and honest ones) on 127.0.0.1, at another
// origin than the demo's (CORS headers sent, Content-Range exposed but
// under /hidden/), started and stopped by the checks that use it. Paths:
//   /ranges/NAME  honest byte ranges       /whole/NAME  ignores Range: 200, the whole file
//   /wider/NAME   a wider range than asked, honestly labelled
//   /longer/NAME  the right Content-Range, more bytes than it says
//   /stall/NAME   honest up to the tensors' bytes, then headers and silence
//   /hidden/NAME  honest, Content-Range not exposed    /missing  404
//   /empty  416, 0 bytes    /empty200  200, 0 bytes
// NAME is small.safetensors (a few tensors, held here) or big.safetensors
// (one float32 tensor of 256 MiB, its bytes made as they are sent). Each
// answer is logged: `{ path, range, sent, finished, closed }`.
const SMALL = safetensorsBytes([["a", "F32", [16], patternBytes(64, 1)], ["w", "F32", [32, 32], patternBytes(4096, 2)],
  ["b", "U8", [3], patternBytes(3, 3)]]);

function bigServedFile() {
  // The header names 256 MiB of data that BIG_HEADER lacks: its offsets say so.
  const json = JSON.stringify({ w: { dtype: "F32", shape: [64 << 20], data_offsets: [0, 256 << 20] } });
  const text = json + " ".repeat((8 - (json.length % 8)) % 8);
  const head = new Uint8Array(8 + text.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(text.length), true);
  head.set(new TextEncoder().encode(text), 8);
  return {
    size: head.length + (256 << 20),
    bytes: (a, b) => {
      const out = new Uint8Array(b - a);
      for (let i = a; i < b; i++) out[i - a] = i < head.length ? head[i] : (i * 7) & 255;
      return out;
    },
  };
}

async function hostileServer() {
  const files = {
    "small.safetensors": { size: SMALL.length, bytes: (a, b) => SMALL.slice(a, b) },
    "big.safetensors": bigServedFile(),
  };
  const log = [];
  const open = new Set();
  const server = http.createServer(async (req, res) => {
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader("Access-Control-Allow-Headers", "Range");
    const [, kind, name] = req.url.split("/");
    if (kind !== "hidden") res.setHeader("Access-Control-Expose-Headers", "Content-Range");
    if (req.method === "OPTIONS") return res.writeHead(204).end();
    const entry = { path: req.url, range: req.headers.range ?? null, sent: 0, finished: false, closed: false };
    log.push(entry);
    open.add(res);
    res.on("finish", () => { entry.finished = true; });
    res.on("close", () => { entry.closed = true; open.delete(res); });
    if (kind === "missing") return res.writeHead(404, "Not Found").end("no such file");
    if (kind === "empty") return res.writeHead(416, { "Content-Range": "bytes */0" }).end();
    if (kind === "empty200") return res.writeHead(200, { "Content-Length": 0 }).end();
    const file = files[name];
    if (!file) return res.writeHead(404, "Not Found").end();
    const send = async (start, end) => {
      for (let at = start; at < end && !res.destroyed;) {
        const n = Math.min(65536, end - at);
        const more = res.write(file.bytes(at, at + n));
        entry.sent += n;
        at += n;
        if (!more) {
          await new Promise((resolve) => {
            const done = () => {
              res.off("drain", done).off("close", done);
              resolve();
            };
            res.on("drain", done).on("close", done);
          });
        }
      }
    };
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    if (kind === "whole" || !m) {
      res.writeHead(200, { "Content-Length": file.size, "Content-Type": "application/octet-stream" });
      await send(0, file.size);
      if (!res.destroyed) res.end();
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]) + 1, file.size);
    if (kind === "stall" && start > 0 && end - start > 65536) {
      res.writeHead(206, { "Content-Range": `bytes ${start}-${end - 1}/${file.size}` });
      res.flushHeaders();
      return; // and nothing more, until the server stops
    }
    const from = kind === "wider" && start > 0 ? start - 8 : start;
    const extra = kind === "longer" && start > 0 ? 8 : 0;
    res.writeHead(206, { "Content-Range": `bytes ${from}-${end - 1}/${file.size}`, "Content-Length": end - from + extra });
    await send(from, end);
    if (extra) {
      res.write(new Uint8Array(extra));
      entry.sent += extra;
    }
    if (!res.destroyed) res.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    log,
    async stop() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// Runs in the page: the package, an adapter and a device with the
// adapter's buffer limits, and helpers every check uses, on `window.gpuTest`.
async function setUp() {
  const wasm = await import("/pkg/bytelens_wasm.js");
  const exports = await wasm.default();
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) return { error: "no WebGPU adapter (navigator.gpu " + (navigator.gpu ? "present" : "absent") + ")" };
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxBufferSize: adapter.limits.maxBufferSize,
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    },
  });
  const readAt = async (buffer, offset, size) => {
    const out = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, offset, out, 0, size);
    device.queue.submit([encoder.finish()]);
    await out.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8Array(out.getMappedRange().slice(0));
    out.destroy();
    return bytes;
  };
  const read = (buffer, size = buffer.size) => readAt(buffer, 0, size);
  // The header of the file served at `url` (its size from a one-byte range; a header within 64 KiB).
  const servedHeader = async (url) => {
    const sized = await fetch(url, { headers: { Range: "bytes=0-0" } });
    await sized.arrayBuffer();
    const head = new Uint8Array(await (await fetch(url, { headers: { Range: "bytes=0-65535" } })).arrayBuffer());
    return wasm.readHeader(head, Number(sized.headers.get("Content-Range").split("/")[1]));
  };
  window.gpuTest = { wasm, memory: exports.memory, device, read, readAt, servedHeader };
  const info = adapter.info ?? {};
  return { vendor: info.vendor, architecture: info.architecture, maxBufferSize: adapter.limits.maxBufferSize,
    maxBinding: adapter.limits.maxStorageBufferBindingSize, f16: adapter.features.has("shader-f16") };
}

// Runs in the page: a strided float32 view, a big-endian int16 view and a
// reversed uint8 view uploaded, read back, compared with Buffer.read.
async function uploadViews() {
  const { wasm, device, read } = window.gpuTest;
  const buf = new wasm.Buffer(64 * 48 * 4);
  const bytes = new Uint8Array(buf.nbytes);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 255;
  buf.setBytes(0, bytes);
  const cases = [
    ["<f4", { shape: [64, 48] }, (l) => l.transpose()],
    [">i2", { shape: [7, 9], offset: 2 }, (l) => l],
    ["|u1", { shape: [101] }, (l) => l.slice(0, null, null, -1)],
    ["<f4", { shape: [3] }, (l) => l],
  ];
  const out = [];
  for (const [dtype, spec, op] of cases) {
    const layout = op(new wasm.Layout(dtype, spec));
    const gpu = wasm.uploadView(device, buf, layout, { label: dtype });
    const got = await read(gpu);
    const want = buf.read(layout.dtype, layout.options());
    const wantBytes = new Uint8Array(new (want.constructor)(want).buffer);
    const same = wantBytes.every((b, i) => b === got[i]) && got.length === Math.max(4, Math.ceil(wantBytes.length / 4) * 4);
    out.push([dtype, JSON.stringify(layout.shape), same, gpu.size]);
  }
  let refused = "";
  try {
    wasm.uploadView(device, buf, new wasm.Layout("<f4", { shape: [64 * 48 + 1] }), {});
  } catch (err) {
    refused = `${err.name}: ${err.message}`;
  }
  return { out, refused };
}

// Runs in the page: the seed's overlapping arrays as a Plan, its WGSL
// struct bound to the bytes uploadView put up, each field copied out by a
// shader and compared with the CPU's reading of the same bytes.
async function planOnGpu() {
  const { wasm, device, read } = window.gpuTest;
  const plan = wasm.Plan.fromText("Seed\na <f4 4\nb <f4 4\nunion\nd <i4 6");
  const buf = new wasm.Buffer(plan.nbytes);
  const bytes = new Uint8Array(plan.nbytes);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 53 + 1) & 255;
  buf.setBytes(0, bytes);
  const src = wasm.uploadView(device, buf, new wasm.Layout("|u1", { shape: [plan.nbytes] }), {});
  const out = device.createBuffer({ size: 14 * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const wgsl = plan.wgsl();
  const code = `${wgsl}
@group(0) @binding(0) var<storage, read> p0: Seed0;
@group(0) @binding(1) var<storage, read> p1: Seed1;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() {
  for (var i = 0u; i < 4u; i++) { out[i] = bitcast<u32>(p0.a[i]); out[4u + i] = bitcast<u32>(p0.b[i]); }
  for (var i = 0u; i < 6u; i++) { out[8u + i] = bitcast<u32>(p1.d[i]); }
}`;
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error").map((m) => m.message);
  if (errors.length) return { errors, code };
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [
    { binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: src } }, { binding: 2, resource: { buffer: out } }] });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(1);
  pass.end();
  device.queue.submit([encoder.finish()]);
  const got = new Uint32Array((await read(out)).buffer);
  const want = new Uint32Array(bytes.buffer, 0, 8);
  const d = new Uint32Array(bytes.buffer, 0, 6);
  return { errors, same: [...want, ...d].every((w, i) => w === got[i]) };
}

// Runs in the page: a GGUF file (made here) with one tensor of every type
// the core dequantises, random blocks with finite float16 scales, loaded by
// loadToGpu from a Blob with dtype f32: each tensor's values read back
// equal, bit for bit, to `dequantize`'s (the CPU reference) of its blocks.
// Then as blocks (no dtype), and with bf16.
async function everyTypeDequantised() {
  const { wasm, device, read } = window.gpuTest;
  // [name, ggml code, elements per block, bytes per block]
  const TYPES = [["Q4_0", 2, 32, 18], ["Q4_1", 3, 32, 20], ["Q5_0", 6, 32, 22], ["Q5_1", 7, 32, 24],
    ["Q8_0", 8, 32, 34], ["Q2_K", 10, 256, 84], ["Q3_K", 11, 256, 110], ["Q4_K", 12, 256, 144],
    ["Q5_K", 13, 256, 176], ["Q6_K", 14, 256, 210], ["IQ4_NL", 20, 32, 18], ["IQ4_XS", 23, 256, 136],
    ["TQ1_0", 34, 256, 54], ["TQ2_0", 35, 256, 66], ["MXFP4", 39, 32, 17]];
  const BLOCKS = 96;
  let seed = 12345;
  const random = () => {
    seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
    return seed >>> 0;
  };
  const head = [];
  const u32 = (v) => head.push(...new Uint8Array(new Uint32Array([v]).buffer));
  const u64 = (v) => head.push(...new Uint8Array(new BigUint64Array([BigInt(v)]).buffer));
  head.push(0x47, 0x47, 0x55, 0x46);
  u32(3); u64(TYPES.length); u64(0);
  let at = 0;
  for (const [name, code, block, bytes] of TYPES) {
    const label = new TextEncoder().encode(`t.${name}`);
    u64(label.length); head.push(...label);
    u32(2); u64(block * 4); u64(BLOCKS / 4); // 2-D, innermost first: (BLOCKS/4, 4 blocks)
    u32(code); u64(at);
    at = Math.ceil((at + BLOCKS * bytes) / 32) * 32;
  }
  while (head.length % 32) head.push(0);
  const file = new Uint8Array(head.length + at);
  file.set(head);
  // The blocks: random, then each float16 field a finite value, MXFP4's exponent from 2 up.
  const header = wasm.readHeader(file, file.length);
  for (const array of header.arrays) {
    const start = Number(array.offset);
    for (let i = 0; i < array.nbytes; i++) file[start + i] = random() & 255;
    for (let b = 0; b < BLOCKS; b++) {
      for (const field of array.fields) {
        const p = start + b * array.blockBytes + field.offset;
        if (field.dtype === "float16") {
          const bits = (random() & 0x83ff) | ((random() % 30) << 10);
          file[p] = bits & 255; file[p + 1] = bits >> 8;
        } else if (field.name === "e") {
          file[p] = 2 + (random() % 250);
        }
      }
    }
  }
  const blob = new Blob([file]);
  const results = [];
  let progress = 0;
  const f32 = await wasm.loadToGpu(device, blob, { dtype: "f32", onProgress: (p) => { progress = p.loaded / p.total; } });
  const blocks = await wasm.loadToGpu(device, blob, {});
  const bf16 = await wasm.loadToGpu(device, blob, { dtype: "bf16" });
  for (const array of header.arrays) {
    const start = Number(array.offset);
    const raw = file.subarray(start, start + array.nbytes);
    const cpu = wasm.dequantize(array.ggml, raw);
    const cpuBits = new Uint32Array(cpu.buffer, cpu.byteOffset, cpu.length);
    const tensor = f32.get(array.name);
    const got = new Uint32Array((await read(tensor.buffer)).buffer);
    let first = -1;
    for (let i = 0; i < cpuBits.length && first < 0; i++) if (cpuBits[i] !== got[i]) first = i;
    const asBlocks = blocks.get(array.name);
    const rawBack = (await read(asBlocks.buffer)).subarray(0, array.nbytes);
    // bfloat16: the CPU's float32 values rounded to nearest even here.
    const gotBf16 = new Uint16Array((await read(bf16.get(array.name).buffer)).buffer);
    let bfFirst = -1;
    for (let i = 0; i < cpuBits.length && bfFirst < 0; i++) {
      const b = cpuBits[i];
      const want = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
      if (want !== gotBf16[i]) bfFirst = i;
    }
    results.push({ name: array.ggml, dtype: tensor.dtype, shape: tensor.shape.map(Number), values: cpu.length,
      first, firstCpu: first < 0 ? 0 : cpuBits[first], firstGpu: first < 0 ? 0 : got[first], bfFirst,
      blocks: [asBlocks.dtype, asBlocks.qtype, rawBack.every((b, i) => b === raw[i])] });
  }
  return { results, progress };
}

// Runs in the page: loadToGpu of a served safetensors file with
// progress; each tensor sampled back against the file's bytes fetched
// alone; the same bytes fetched alone, timed, against the load; peak wasm
// memory. `split` caps buffers at that many bytes (loadToGpu's
// `maxBufferSize`).
async function loadServed({ url, split }) {
  const { wasm, device, readAt, memory, servedHeader } = window.gpuTest;
  const sizes = [];
  const before = memory.buffer.byteLength;
  let peak = before;
  let calls = 0;
  let last = 0;
  let monotone = true;
  const t0 = performance.now();
  const tensors = await wasm.loadToGpu(device, url, {
    maxBufferSize: split,
    onProgress: ({ loaded, total }) => {
      calls++;
      monotone &&= loaded >= last && loaded <= total;
      last = loaded;
      peak = Math.max(peak, memory.buffer.byteLength);
    },
  });
  await device.queue.onSubmittedWorkDone(); // the bytes in the buffers, not only queued
  const loadMs = performance.now() - t0;
  const out = [];
  const ranged = async (start, end) => new Uint8Array(await (await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` } })).arrayBuffer());
  const header = await servedHeader(url);
  for (const array of header.arrays) {
    const tensor = tensors.get(array.name);
    const segment = tensor.buffers[0].size;
    const samples = [];
    for (const at of [0, Math.floor(array.nbytes / 2 / 4) * 4, Math.max(0, Math.floor((array.nbytes - 16) / 4) * 4)]) {
      const n = Math.min(16, array.nbytes - at);
      if (n <= 0) continue;
      const s = Math.floor(at / segment);
      const got = await readAt(tensor.buffers[s], at - s * segment, Math.ceil(n / 4) * 4);
      const want = await ranged(Number(array.offset) + at, Number(array.offset) + at + n);
      samples.push(want.every((b, i) => b === got[i]));
    }
    sizes.push([array.name, tensor.dtype, tensor.buffers.length, tensor.buffer === null]);
    out.push([array.name, samples.every(Boolean) && samples.length > 0]);
    for (const b of tensor.buffers) b.destroy();
  }
  // The same tensor bytes fetched alone, streamed and dropped.
  await device.queue.onSubmittedWorkDone();
  const first = Math.min(...header.arrays.map((a) => Number(a.offset)));
  const end = Math.max(...header.arrays.map((a) => Number(a.offset) + Number(a.nbytes)));
  const t1 = performance.now();
  const reader = (await fetch(url, { headers: { Range: `bytes=${first}-${end - 1}` } })).body.getReader();
  let fetched = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    fetched += value.length;
  }
  const fetchMs = performance.now() - t1;
  return { out, sizes, loadMs, fetchMs, fetched, calls, monotone, last, peakWasm: peak, before };
}

// Runs in the page: one tensor of `url` three ways, each timed to the
// GPU's queue finishing, median of three: its bytes fetched alone;
// loadToGpu; and the usual way, the bytes in one ArrayBuffer, then one
// writeBuffer into one buffer (the smallest thing a page does without it).
async function usualWay({ url, name }) {
  const { wasm, device, servedHeader } = window.gpuTest;
  const array = (await servedHeader(url)).arrays.find((a) => a.name === name);
  const [start, nbytes] = [Number(array.offset), Number(array.nbytes)];
  const range = { headers: { Range: `bytes=${start}-${start + nbytes - 1}` } };
  const median = async (run) => {
    const times = [];
    for (let k = 0; k < 3; k++) {
      const t = performance.now();
      await run();
      await device.queue.onSubmittedWorkDone();
      times.push(performance.now() - t);
    }
    return times.sort((a, b) => a - b)[1];
  };
  const fetchMs = await median(async () => {
    const reader = (await fetch(url, range)).body.getReader();
    while (!(await reader.read()).done);
  });
  const loadMs = await median(async () => {
    const tensors = await wasm.loadToGpu(device, url, { names: [name] });
    await device.queue.onSubmittedWorkDone();
    tensors.get(name).buffers.forEach((b) => b.destroy());
  });
  const usualMs = await median(async () => {
    const bytes = await (await fetch(url, range)).arrayBuffer();
    const buffer = device.createBuffer({ size: Math.ceil(nbytes / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(buffer, 0, bytes, 0, Math.floor(nbytes / 4) * 4);
    await device.queue.onSubmittedWorkDone();
    buffer.destroy();
  });
  return { nbytes, fetchMs, loadMs, usualMs };
}

// Runs in the page: numpy's files: a big-endian int16 .npy (swapped on
// the way to little-endian) and a Fortran-order one (refused).
async function npyFiles() {
  const { wasm, device, read } = window.gpuTest;
  const tensors = await wasm.loadToGpu(device, "/file/int16_be.npy", {});
  const array = tensors.get("array");
  const got = Array.from(new Int16Array((await read(array.buffer)).buffer).subarray(0, 35));
  let fortran = "";
  try {
    await wasm.loadToGpu(device, "/file/fortran.npy", {});
  } catch (err) {
    fortran = `${err.name}: ${err.message}`;
  }
  return { names: [...tensors.keys()], dtype: array.dtype, shape: array.shape.map(Number), got, fortran };
}

// Runs in the page: a load cancelled after its first progress, and
// refusals naming the tensor and the limit.
async function cancelAndRefuse(url) {
  const { wasm, device } = window.gpuTest;
  const abort = new AbortController();
  let cancelled = "";
  try {
    await wasm.loadToGpu(device, url, { signal: abort.signal, onProgress: () => abort.abort() });
  } catch (err) {
    cancelled = err.name;
  }
  // A Q8_0 tensor of 4096 blocks: 139,264 bytes of blocks, 524,288 of f32 values.
  const head = [];
  const u32 = (v) => head.push(...new Uint8Array(new Uint32Array([v]).buffer));
  const u64 = (v) => head.push(...new Uint8Array(new BigUint64Array([BigInt(v)]).buffer));
  head.push(0x47, 0x47, 0x55, 0x46); u32(3); u64(1); u64(0);
  const label = new TextEncoder().encode("big.weight");
  u64(label.length); head.push(...label); u32(1); u64(4096 * 32); u32(8); u64(0);
  while (head.length % 32) head.push(0);
  const file = new Uint8Array(head.length + 4096 * 34);
  file.set(head);
  let refused = "";
  try {
    await wasm.loadToGpu(device, new Blob([file]), { dtype: "f32", maxBufferSize: 256 * 1024 });
  } catch (err) {
    refused = `${err.name}: ${err.message}`;
  }
  let badDtype = "";
  try {
    await wasm.loadToGpu(device, new Blob([file]), { dtype: "f64" });
  } catch (err) {
    badDtype = `${err.name}: ${err.message}`;
  }
  return { cancelled, refused, badDtype };
}

// Runs in the page: `run()`'s outcome, "resolved: KEYS" or "NAME: MESSAGE",
// or "unsettled" after `ms`.
function settleHelpers() {
  window.outcome = (promise, ms = 60_000) => Promise.race([
    promise.then((m) => `resolved: ${m instanceof Map ? [...m.keys()].join(",") : m}`, (err) => `${err?.name}: ${err?.message}`),
    new Promise((resolve) => setTimeout(() => resolve("unsettled"), ms)),
  ]);
  window.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
}

// Runs in the page: loadToGpu's options checked before anything is read,
// each error naming the option and the value; the smallest maxBufferSize
// works, and a dequantisation that needs more names the tensor and what it needs.
async function badOptions() {
  const { wasm, device, read } = window.gpuTest;
  const blob = new Blob([files.safetensorsBytes([["w", "F32", [100], files.patternBytes(400, 5)]])]);
  const out = {};
  const cases = {
    nan: { maxBufferSize: NaN }, text: { maxBufferSize: "abc" }, zero: { maxBufferSize: 0 }, negative: { maxBufferSize: -5 },
    small: { maxBufferSize: 100 }, fraction: { maxBufferSize: 1000.5 }, names: { names: "weight" }, nameType: { names: [7] },
    usage: { usage: "STORAGE" }, progress: { onProgress: "yes" }, signal: { signal: {} }, timeout: { timeout: -1 },
  };
  for (const [key, options] of Object.entries(cases)) out[key] = await outcome(wasm.loadToGpu(device, blob, options), 10_000);
  try {
    wasm.uploadView(device, new wasm.Buffer(8), new wasm.Layout("<f4", { shape: [2] }), { usage: "STORAGE" });
    out.upload = "accepted";
  } catch (err) {
    out.upload = `${err.name}: ${err.message}`;
  }
  // 257 bytes: buffers of 256, the tensor's 400 bytes in two.
  const smallest = await wasm.loadToGpu(device, blob, { maxBufferSize: 257 });
  const w = smallest.get("w");
  const got = new Uint8Array([...await read(w.buffers[0]), ...(await read(w.buffers[1])).subarray(0, 144)]);
  const want = files.patternBytes(400, 5);
  out.smallest = [w.buffers.map((b) => b.size).join(), got.every((b, i) => b === want[i])];
  // One Q8_0 block (34 bytes, 128 of float32): a pass needs more than 1024 bytes.
  const q8 = new Blob([files.ggufBytes([["q", 8, [32], new Uint8Array(34)]])]);
  out.dequant = await outcome(wasm.loadToGpu(device, q8, { dtype: "f32", maxBufferSize: 1024 }), 10_000);
  return out;
}

// Runs in the page: loads from the hostile server at `base`, each answer
// refused saying what came; the honest one loads.
async function hostileAnswers(base) {
  const { wasm, device, read } = window.gpuTest;
  const out = {};
  for (const path of ["/whole/big.safetensors", "/wider/small.safetensors", "/longer/small.safetensors", "/missing",
    "/hidden/small.safetensors", "/empty", "/empty200"]) {
    out[path] = await outcome(wasm.loadToGpu(device, base + path, {}), 30_000);
  }
  const honest = await wasm.loadToGpu(device, `${base}/ranges/small.safetensors`, {});
  const w = new Uint8Array(await read(honest.get("w").buffer));
  const want = files.patternBytes(4096, 2);
  out.honest = [[...honest.keys()].join(), w.every((b, i) => b === want[i])];
  return out;
}

// Runs in the page: a load stalled on the hostile server's silence, and
// beside it an aborted load (settles at once), a later load (not held up),
// and an aborted stalled load; the stalled load times out naming the URL.
async function stalledLoads(base) {
  const { wasm, device } = window.gpuTest;
  const url = `${base}/stall/big.safetensors`;
  const stalled = outcome(wasm.loadToGpu(device, url, { timeout: 4000 }), 20_000);
  await sleep(500);
  const abort = new AbortController();
  const small = `${base}/ranges/small.safetensors`;
  const second = outcome(wasm.loadToGpu(device, small, { signal: abort.signal }), 2000);
  abort.abort();
  const aborted = await second;
  const later = await outcome(wasm.loadToGpu(device, small, {}), 3000);
  const running = new AbortController();
  const third = outcome(wasm.loadToGpu(device, url, { signal: running.signal }), 2000);
  await sleep(500);
  running.abort(new Error("enough"));
  return { aborted, later, runningAborted: await third, stalled: await stalled };
}

// Runs in the page: a load whose onProgress throws, from the hostile
// server's big file: it rejects with that error (the test then asks the
// server whether the response was closed).
async function progressThrows(base) {
  const { wasm, device } = window.gpuTest;
  return outcome(wasm.loadToGpu(device, `${base}/ranges/big.safetensors`, {
    onProgress: () => { throw new Error("the page's onProgress failed"); },
  }), 30_000);
}

// Runs in the page: the page's own invalid buffers, made while a load
// streams (from its onProgress and from a timer), reach the page's
// uncapturederror handler, and the load resolves.
async function pageErrorsStayThePages() {
  const { wasm, device } = window.gpuTest;
  const tensors = [0, 1, 2, 3].map((k) => [`t${k}`, "F32", [2 << 20], files.patternBytes(8 << 20, k)]);
  const blob = new Blob([files.safetensorsBytes(tensors)]);
  const seen = [];
  const onError = (event) => seen.push(event.error.message);
  device.addEventListener("uncapturederror", onError);
  let made = 0;
  const bad = () => {
    made++;
    device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE }); // not a valid usage
  };
  const load = outcome(wasm.loadToGpu(device, blob, { onProgress: bad }), 60_000);
  setTimeout(bad, 0);
  const result = await load;
  await device.queue.onSubmittedWorkDone();
  await sleep(300);
  device.removeEventListener("uncapturederror", onError);
  return { result, made, seen: seen.length };
}

// Runs in the page: loads on a device destroyed before, and during, the load.
async function destroyedDevices() {
  const { wasm } = window.gpuTest;
  // An adapter gives one device.
  const newDevice = async () => (await navigator.gpu.requestAdapter()).requestDevice();
  const small = new Blob([files.safetensorsBytes([["w", "F32", [256], files.patternBytes(1024, 4)]])]);
  const before = await newDevice();
  before.destroy();
  const out = { before: await outcome(wasm.loadToGpu(before, small, {}), 20_000) };
  const during = await newDevice();
  const tensors = [0, 1, 2].map((k) => [`t${k}`, "F32", [2 << 20], files.patternBytes(8 << 20, k)]);
  out.during = await outcome(wasm.loadToGpu(during, new Blob([files.safetensorsBytes(tensors)]), {
    onProgress: () => during.destroy(),
  }), 20_000);
  return out;
}

// Runs in the page: a GGUF with a tensor of a type bytelens does not
// dequantise (IQ2_XXS, 66-byte blocks of 256): as blocks without dtype;
// named as the one that cannot be dequantised with it; left out by names.
async function otherGgmlType() {
  const { wasm, device, read } = window.gpuTest;
  const iq = files.patternBytes(132, 9);
  const norm = files.patternBytes(64, 8);
  const blob = new Blob([files.ggufBytes([["iq", 16, [512], iq], ["norm", 0, [16], norm]])]);
  const raw = await wasm.loadToGpu(device, blob, {});
  const t = raw.get("iq");
  const bytes = (await read(t.buffer)).subarray(0, 132);
  return {
    raw: [t.dtype, t.qtype, t.nbytes, bytes.every((b, i) => b === iq[i])],
    f32: await outcome(wasm.loadToGpu(device, blob, { dtype: "f32" }), 10_000),
    named: await outcome(wasm.loadToGpu(device, blob, { dtype: "f32", names: ["norm"] }), 10_000),
  };
}

// Runs in the page: a GGUF of 100,000 small tensors loaded from a Blob
// while a PerformanceObserver records the page's long tasks; a few
// tensors read back.
async function manyTensors() {
  const { wasm, device, read } = window.gpuTest;
  const count = 100_000;
  // Views of one buffer, dropped before the load: no garbage of the test's own for the load's tasks to collect.
  const values = new Float32Array(count * 4);
  for (let k = 0; k < count; k++) {
    values[4 * k] = k;
    values[4 * k + 1] = k + 0.5;
    values[4 * k + 2] = -k;
    values[4 * k + 3] = 1;
  }
  const bytes = files.ggufBytes(Array.from({ length: count }, (_, k) => [`blk.${k}.weight`, 0, [4], new Uint8Array(values.buffer, k * 16, 16)]));
  const blob = new Blob([bytes]);
  const t0 = performance.now();
  wasm.readHeader(bytes, bytes.length);
  const headerMs = performance.now() - t0;
  await sleep(50); // the task above (the test's own) ends before the observer starts
  const long = [];
  const observer = new PerformanceObserver((list) => long.push(...list.getEntries().map((e) => e.duration)));
  observer.observe({ type: "longtask" });
  const t = performance.now();
  const loaded = await wasm.loadToGpu(device, blob, {});
  const ms = performance.now() - t;
  await sleep(100);
  observer.disconnect();
  const same = [];
  for (const k of [0, 54321, count - 1]) {
    const got = new Float32Array((await read(loaded.get(`blk.${k}.weight`).buffer)).buffer);
    same.push(got[0] === k && got[1] === k + 0.5 && got[2] === -k && got[3] === 1);
  }
  for (const tensor of loaded.values()) tensor.buffer.destroy();
  return { size: loaded.size, ms, long, same, headerMs };
}

// Runs in the page: an abort from onProgress at the last bytes (a Blob
// read in one chunk) rejects the load, dequantising or not.
async function lateAbort() {
  const { wasm, device } = window.gpuTest;
  const blob = new Blob([files.ggufBytes([["q", 8, [64], new Uint8Array(68)]])]);
  const out = {};
  for (const dtype of ["f32", null]) {
    const abort = new AbortController();
    out[dtype ?? "blocks"] = await outcome(wasm.loadToGpu(device, blob, {
      dtype, signal: abort.signal, onProgress: ({ loaded, total }) => { if (loaded === total) abort.abort(); },
    }), 10_000);
  }
  return out;
}

// Runs in the page: dequantPasses of 2^40 blocks is refused at once.
function hugePasses() {
  const { wasm } = window.gpuTest;
  const t = performance.now();
  let refused = "";
  try {
    wasm.dequantPasses("Q8_0", 2 ** 40, "f32", 128 << 20);
  } catch (err) {
    refused = `${err.name}: ${err.message}`;
  }
  const ms = performance.now() - t;
  const fine = wasm.dequantPasses("Q8_0", 2 ** 24, "f32", 128 << 20).length;
  return { refused, ms, fine };
}

// Runs in the page: uploadView of a view of exactly maxBufferSize
// (SwiftShader's 1 GiB) is refused naming the size, with no uncaptured error.
async function uploadAtTheLimit() {
  const { wasm, device } = window.gpuTest;
  const max = device.limits.maxBufferSize;
  let errors = 0;
  const onError = () => errors++;
  device.addEventListener("uncapturederror", onError);
  const buf = new wasm.Buffer(max);
  let out = "";
  try {
    const gpu = wasm.uploadView(device, buf, new wasm.Layout("|u1", { shape: [max] }), {});
    out = `a buffer of ${gpu.size} bytes`;
    gpu.destroy();
  } catch (err) {
    out = `${err.name}: ${err.message}`;
  }
  buf.free();
  await device.queue.onSubmittedWorkDone();
  await sleep(300);
  device.removeEventListener("uncapturederror", onError);
  return { out, max, errors };
}

const checks = [
  ["the guide's WebGPU examples run", async (page) => {
    const examples = await webgpuExamples();
    expect(examples.length >= 1, "wasm/README.md has no ```js webgpu example");
    for (const { line, code } of examples) {
      const error = await page.evaluate(runExample, code);
      expect(error === "", `wasm/README.md:${line}: ${error}`);
    }
  }],
  ["uploadView: strided, byte-swapped and reversed views in C order", async (page) => {
    const { out, refused } = await page.evaluate(uploadViews);
    for (const [dtype, shape, same, size] of out) expect(same, `${dtype} ${shape}: the GPU buffer (${size} bytes) differs from Buffer.read`);
    expect(/RangeError/.test(refused), `a view past the buffer: ${refused || "not refused"}`);
  }],
  ["a Plan's WGSL reads the bytes it lays out", async (page) => {
    const result = await page.evaluate(planOnGpu);
    expect(result.errors.length === 0, `WGSL errors: ${result.errors.join("; ")}\n${result.code}`);
    expect(result.same, "the shader read other values than the CPU");
  }],
  ["every ggml type dequantised on the GPU equals the CPU reference", async (page) => {
    const { results, progress } = await page.evaluate(everyTypeDequantised);
    expect(results.length === 15, `${results.length} types`);
    expect(progress === 1, `progress ended at ${progress}`);
    for (const r of results) {
      expect(r.first < 0, `${r.name}: value ${r.first} is ${r.firstGpu.toString(16)} on the GPU, ${r.firstCpu.toString(16)} on the CPU`);
      expect(r.bfFirst < 0, `${r.name} into bfloat16: value ${r.bfFirst} differs`);
      expect(r.dtype === "float32" && r.shape.join() === `24,${r.values / 24}`, `${r.name}: ${r.dtype} ${r.shape}`);
      expect(r.blocks[0] === "uint8" && r.blocks[1] === r.name && r.blocks[2], `${r.name} as blocks: ${r.blocks}`);
    }
  }],
  ["loadToGpu of a served 1 GiB safetensors file", async (page) => {
    const r = await page.evaluate(loadServed, { url: bigFile });
    for (const [name, same] of r.out) expect(same, `${name}: sampled bytes differ from the file's`);
    expect(r.monotone && r.calls > 10, `progress: ${r.calls} calls, monotone ${r.monotone}`);
    expect(r.peakWasm <= 64 << 20, `wasm memory reached ${r.peakWasm} bytes (from ${r.before})`);
    console.log(`  loadToGpu ${(r.fetched / 2 ** 30).toFixed(2)} GiB: ${r.loadMs.toFixed(0)} ms; fetching the same bytes alone `
      + `${r.fetchMs.toFixed(0)} ms; ratio ${(r.loadMs / r.fetchMs).toFixed(2)}x (goal <= 1.3x); wasm memory ${(r.peakWasm / 2 ** 20).toFixed(1)} MiB at most`);
    if (!process.env.DEMO_GPU_HUGE) return; // the benchmark's (and `test all`'s) comparison
    const one = await page.evaluate(usualWay, { url: bigFile, name: "weights" });
    console.log(`  its largest tensor, ${(one.nbytes / 2 ** 20).toFixed(0)} MiB, each way, median of 3: fetched alone ${one.fetchMs.toFixed(0)} ms; `
      + `loadToGpu ${one.loadMs.toFixed(0)} ms (${(one.loadMs / one.fetchMs).toFixed(2)}x); the usual way, one ArrayBuffer `
      + `and one writeBuffer, ${one.usualMs.toFixed(0)} ms (${(one.usualMs / one.fetchMs).toFixed(2)}x)`);
  }],
  ["loadToGpu splits a tensor past maxBufferSize into buffers", async (page) => {
    const r = await page.evaluate(loadServed, { url: bigFile, split: 64 << 20 });
    for (const [name, same] of r.out) expect(same, `${name}: sampled bytes differ from the file's`);
    const weights = r.sizes.find(([name]) => name === "weights");
    expect(weights && weights[2] === 16 && weights[3], `weights: ${JSON.stringify(weights)}`);
  }],
  ["loadToGpu of numpy's files: big-endian swapped on the way, Fortran order refused", async (page) => {
    const r = await page.evaluate(npyFiles);
    const want = Array.from({ length: 35 }, (_, i) => ((i * 937 - 16000) << 16) >> 16);
    expect(r.names.join() === "array" && r.dtype === "int16" && r.shape.join() === "5,7", `${r.names} ${r.dtype} ${r.shape}`);
    expect(r.got.every((v, i) => v === want[i]), `values ${r.got.slice(0, 5)}..., want ${want.slice(0, 5)}...`);
    expect(/RangeError: .*Fortran order/.test(r.fortran), `fortran.npy: ${r.fortran || "not refused"}`);
  }],
  ["loadToGpu cancels, and refuses naming the tensor and the limit", async (page) => {
    const r = await page.evaluate(cancelAndRefuse, bigFile);
    expect(r.cancelled === "AbortError", `cancelled: ${r.cancelled}`);
    expect(r.refused.includes('tensor "big.weight"') && r.refused.includes("maxBufferSize of 262144"), r.refused);
    expect(r.badDtype.startsWith("TypeError") && r.badDtype.includes('"f32"'), r.badDtype);
  }],
  ["loadToGpu checks its options first, each error naming the option and the value", async (page) => {
    const r = await page.evaluate(badOptions);
    const refused = (key, name, ...parts) => expect(r[key].startsWith(`${name}: `) && parts.every((part) => r[key].includes(part)), `${key}: ${r[key]}`);
    refused("nan", "RangeError", "maxBufferSize", "NaN", "257");
    refused("text", "TypeError", "maxBufferSize", '"abc"');
    refused("zero", "RangeError", "maxBufferSize", "not 0", "at least 257");
    refused("negative", "RangeError", "maxBufferSize", "-5");
    refused("small", "RangeError", "maxBufferSize", "100");
    refused("fraction", "RangeError", "maxBufferSize", "1000.5");
    refused("names", "TypeError", "names", '"weight"');
    refused("nameType", "TypeError", "names[0]", "7");
    refused("usage", "TypeError", "usage", '"STORAGE"');
    refused("upload", "TypeError", "usage", '"STORAGE"');
    refused("progress", "TypeError", "onProgress");
    refused("signal", "TypeError", "signal", "AbortSignal");
    refused("timeout", "RangeError", "timeout", "-1");
    expect(r.smallest[0] === "256,144" && r.smallest[1], `maxBufferSize 257: buffers ${r.smallest[0]}, bytes right ${r.smallest[1]}`);
    refused("dequant", "RangeError", 'tensor "q"', "Q8_0", "at least", "1024");
  }],
  ["loadToGpu refuses what a server answers wrong, saying what came", async (page) => {
    const server = await hostileServer();
    try {
      const r = await page.evaluate(hostileAnswers, server.url);
      const url = (path) => `${server.url}${path}`;
      const whole = r["/whole/big.safetensors"];
      expect(/Error: .*whole file.*ranges/.test(whole) && whole.includes(url("/whole/big.safetensors")), `a server ignoring Range: ${whole}`);
      const sent = server.log.filter((e) => e.path.startsWith("/whole/")).map((e) => e.sent);
      expect(sent.length > 0 && sent.every((n) => n < 32 << 20), `a server ignoring Range sent ${sent} bytes of 256 MiB before the load stopped reading`);
      for (const path of ["/wider/small.safetensors", "/longer/small.safetensors"]) {
        expect(r[path].startsWith("Error: ") && r[path].includes(url(path)) && /bytes \d+.\d+/.test(r[path]), `${path}: ${r[path]}`);
      }
      expect(r["/wider/small.safetensors"].includes("Content-Range"), `a wider range: ${r["/wider/small.safetensors"]}`);
      expect(r["/missing"].includes("404 Not Found") && !r["/missing"].includes("ranges"), `a 404: ${r["/missing"]}`);
      expect(r["/hidden/small.safetensors"].includes("Access-Control-Expose-Headers: Content-Range"), `a hidden Content-Range: ${r["/hidden/small.safetensors"]}`);
      expect(/empty/.test(r["/empty"]), `an empty file: ${r["/empty"]}`);
      expect(/empty/.test(r["/empty200"]), `an empty file answered whole: ${r["/empty200"]}`);
      expect(r.honest[0] === "a,w,b" && r.honest[1], `the honest server's file: ${r.honest}`);
    } finally {
      await server.stop();
    }
  }],
  ["loadToGpu: an abort settles at once beside a stalled load, which times out naming its URL", async (page) => {
    const server = await hostileServer();
    try {
      const r = await page.evaluate(stalledLoads, server.url);
      expect(r.aborted.startsWith("AbortError"), `an aborted load beside a stalled one: ${r.aborted}`);
      expect(r.later === "resolved: a,w,b", `a later load beside a stalled one: ${r.later}`);
      expect(r.runningAborted === "Error: enough", `a stalled load aborted: ${r.runningAborted}`);
      expect(r.stalled.startsWith("Error: ") && r.stalled.includes(`${server.url}/stall/big.safetensors`) && r.stalled.includes("stalled"),
        `the stalled load: ${r.stalled}`);
    } finally {
      await server.stop();
    }
  }],
  ["loadToGpu: a load that fails closes its response", async (page) => {
    const server = await hostileServer();
    try {
      const r = await page.evaluate(progressThrows, server.url);
      expect(r === "Error: the page's onProgress failed", `the load: ${r}`);
      const data = () => server.log.filter((e) => e.path === "/ranges/big.safetensors" && e.range && !e.range.startsWith("bytes=0-"));
      for (let waited = 0; waited < 3000 && !data().every((e) => e.closed); waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
      const open = data().filter((e) => !e.closed || e.finished);
      expect(data().length === 1 && open.length === 0, `the tensor's response, 3 s after the load failed: ${JSON.stringify(data())}`);
    } finally {
      await server.stop();
    }
  }],
  ["loadToGpu leaves the page's own WebGPU errors to the page", async (page) => {
    const r = await page.evaluate(pageErrorsStayThePages);
    expect(r.result === "resolved: t0,t1,t2,t3", `the load: ${r.result}`);
    expect(r.made >= 2 && r.seen === r.made, `the page made ${r.made} invalid buffers, its uncapturederror handler saw ${r.seen}`);
  }],
  ["loadToGpu on a destroyed device rejects saying so", async (page) => {
    const r = await page.evaluate(destroyedDevices);
    expect(/destroyed/.test(r.before) && !r.before.startsWith("resolved"), `destroyed before: ${r.before}`);
    expect(/destroyed/.test(r.during) && !r.during.startsWith("resolved"), `destroyed during: ${r.during}`);
  }],
  ["loadToGpu: a GGUF type bytelens does not dequantise goes up as blocks", async (page) => {
    const r = await page.evaluate(otherGgmlType);
    expect(r.raw.join() === "uint8,IQ2_XXS,132,true", `as blocks: ${r.raw}`);
    expect(r.f32.startsWith("RangeError") && r.f32.includes('"iq"') && r.f32.includes("IQ2_XXS"), `with dtype: ${r.f32}`);
    expect(r.named === "resolved: norm", `with dtype, names leaving it out: ${r.named}`);
  }],
  ["loadToGpu of 100,000 small tensors: no long task", async (page) => {
    const r = await page.evaluate(manyTensors);
    const longest = Math.max(0, ...r.long);
    console.log(`  100,000 tensors loaded in ${r.ms.toFixed(0)} ms; main-thread tasks over 50 ms: ${r.long.length} (${r.long.map((d) => d.toFixed(0)).join(", ")}), `
      + `longest ${longest.toFixed(0)} ms (the bound: 200 ms); readHeader of its header, one task, ${r.headerMs.toFixed(0)} ms (read in a worker by the load)`);
    expect(r.size === 100_000 && r.same.every(Boolean), `${r.size} tensors, values right: ${r.same}`);
    expect(longest < 200, `a main-thread task of ${longest.toFixed(0)} ms (tasks over 50 ms: ${r.long.map((d) => d.toFixed(0)).join(", ")})`);
  }],
  ["loadToGpu: an abort after the last read still rejects", async (page) => {
    const r = await page.evaluate(lateAbort);
    expect(r.f32.startsWith("AbortError"), `aborted at the last bytes, dequantising: ${r.f32}`);
    expect(r.blocks.startsWith("AbortError"), `aborted at the last bytes, as blocks: ${r.blocks}`);
  }],
  ["dequantPasses refuses a block count no GPU buffer holds", async (page) => {
    const r = await page.evaluate(hugePasses);
    expect(r.refused.startsWith("RangeError") && r.refused.includes("blocks") && r.refused.includes("1099511627776"), `2^40 blocks: ${r.refused || "not refused"}`);
    expect(r.ms < 1000, `refused after ${r.ms.toFixed(0)} ms`);
    expect(r.fine === 16, `2^24 blocks: ${r.fine} passes`);
  }],
];

if (process.env.DEMO_GPU_HUGE) {
  checks.push(["loadToGpu of a served 5 GiB safetensors file", async (page) => {
    const r = await page.evaluate(loadServed, { url: hugeFile });
    for (const [name, same] of r.out) expect(same, `${name}: sampled bytes differ from the file's`);
    expect(r.peakWasm <= 64 << 20, `wasm memory reached ${r.peakWasm} bytes`);
    console.log(`  loadToGpu ${(r.fetched / 2 ** 30).toFixed(2)} GiB: ${r.loadMs.toFixed(0)} ms, fetch alone ${r.fetchMs.toFixed(0)} ms; `
      + `wasm memory ${(r.peakWasm / 2 ** 20).toFixed(1)} MiB at most (goal <= 64 MiB)`);
  }]);
}

// Last: it grows wasm memory to the device's maxBufferSize, past what the loads check.
checks.push(["uploadView of a view of exactly maxBufferSize is refused, naming the size", async (page) => {
  const r = await page.evaluate(uploadAtTheLimit);
  expect(r.out.startsWith("RangeError") && r.out.includes(String(r.max)), `a view of ${r.max} bytes: ${r.out}`);
  expect(r.errors === 0, `${r.errors} uncaptured WebGPU errors`);
}]);

async function main() {
  const profile = await mkdtemp(path.join(tmpdir(), "bytelens-webgpu-"));
  let context;
  const failures = [];
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: "/usr/bin/chromium", args: ARGS });
    context.setDefaultTimeout(120_000);
    const page = context.pages()[0] ?? (await context.newPage());
    const errors = [];
    page.on("pageerror", (err) => errors.push(String(err)));
    await page.goto(demoUrl);
    const setup = await page.evaluate(setUp);
    if (setup.error) throw new Error(setup.error);
    await page.evaluate(`window.files = { safetensorsBytes: ${safetensorsBytes}, ggufBytes: ${ggufBytes}, patternBytes: ${patternBytes} }`);
    await page.evaluate(settleHelpers);
    console.log(`webgpu: adapter ${setup.vendor}/${setup.architecture}, maxBufferSize ${setup.maxBufferSize}, `
      + `maxStorageBufferBindingSize ${setup.maxBinding}, shader-f16 ${setup.f16}`);
    failures.push(...(await runChecks(page, checks)));
    if (errors.length) {
      failures.push("page errors");
      console.log(`not ok - the page threw: ${errors.join("\n")}`);
    }
  } finally {
    await context?.close();
    await rm(profile, { recursive: true, force: true });
  }
  if (failures.length) {
    console.error(`webgpu: ${failures.length} checks failed against ${demoUrl}`);
    process.exitCode = 1;
  } else {
    console.log(`webgpu: all ${checks.length} checks passed`);
  }
}

main().catch((err) => {
  console.error(`webgpu: could not run: ${err?.stack ?? err}`);
  process.exitCode = 2;
});
