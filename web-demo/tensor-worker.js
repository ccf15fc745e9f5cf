// The tensor panel's worker (a module worker): streams one array's bytes
// from the file in bounded chunks and feeds them to the core in wasm:
// `Stats`, numpy's `Histogram` and the `Heatmap` downsampler (a quantised
// GGUF tensor's blocks `dequantize`d first). Off the main thread, so the
// page stays responsive however big the tensor; the page only draws what
// this sends back. Nothing here computes a number of its own.
//
// Messages in:  { type: "run", id, source, start, nbytes, descr | qtype,
//                 blockBytes, chunk, stats, hist, heat, fetchOnly }
//               { type: "cancel", id }
// Messages out: { type: "progress" | "stats" | "hist" | "heat" | "done" |
//                 "cancelled" | "error", id, ... }
//
// `source` is { url } (read in HTTP byte ranges) or { file } (a File, read
// by slice). Each chunk is fetched once: the statistics and the heatmap
// take it in the same pass; the histogram needs the finite range first, so
// it takes the chunks kept in a bounded cache (CACHE_BYTES) in that pass,
// and fetches only the others again, in a second pass.

import init, { Stats, Histogram, Heatmap, dequantize } from "./pkg/bytelens_wasm.js";

/** The chunks kept for the histogram's pass: a tensor this big or smaller is fetched once. */
const CACHE_BYTES = 32 * 1024 * 1024;
const BINS = 64;

const ready = init();
let memory = null;
ready.then((exports) => { memory = exports.memory; });
const cancelled = new Set();

self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "cancel") {
    cancelled.add(m.id);
    return;
  }
  if (m.type === "run") {
    run(m).catch((err) => post({ type: "error", id: m.id, message: String(err?.message ?? err) }));
  }
};

function post(message, transfer = []) {
  self.postMessage(message, transfer);
}

class Cancelled extends Error {}

/** Reads bytes start..end of the source; the AbortController lets a cancel stop a request in flight. */
async function readRange(source, start, end, signal) {
  if (source.file) return new Uint8Array(await source.file.slice(start, end).arrayBuffer());
  const response = await fetch(source.url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: "no-store", signal });
  if (response.status !== 206 && response.status !== 200) {
    throw new Error(`${source.url} answered HTTP ${response.status} to a request for bytes ${start}..${end}`);
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length !== end - start) throw new Error(`asked for bytes ${start}..${end}, got ${bytes.length}: did the file change?`);
  return bytes;
}

/**
 * The chunks of `m` (each `m.chunk` bytes but the last), one request
 * ahead: the next one is in flight while this one is computed. `skip(i)`
 * gives a chunk without fetching it (the cache's), or null.
 */
async function* chunks(m, state, skip = () => null) {
  const count = Math.ceil(m.nbytes / m.chunk);
  const controller = new AbortController();
  state.controller = controller;
  const fetchOne = (i) => {
    const cached = skip(i);
    if (cached) return Promise.resolve(cached);
    const a = m.start + i * m.chunk;
    const b = Math.min(m.start + m.nbytes, a + m.chunk);
    state.requests++;
    state.fetched += b - a;
    return readRange(m.source, a, b, controller.signal);
  };
  let next = count > 0 ? fetchOne(0) : null;
  for (let i = 0; i < count; i++) {
    if (cancelled.has(m.id)) {
      controller.abort();
      next?.catch(() => {});
      throw new Cancelled();
    }
    const bytes = await next;
    next = i + 1 < count && !cancelled.has(m.id) ? fetchOne(i + 1) : null;
    if (cancelled.has(m.id)) {
      controller.abort();
      next?.catch(() => {});
      throw new Cancelled();
    }
    yield [i, bytes];
  }
}

/** A chunk as elements the core reads: a quantised one dequantised to float32. */
function elements(m, bytes) {
  if (!m.qtype) return bytes;
  const out = dequantize(m.qtype, bytes);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

async function run(m) {
  const exports = await ready;
  memory ??= exports.memory;
  const started = performance.now();
  const state = { requests: 0, controller: null, fetched: 0, wasmMax: memory.buffer.byteLength };
  const dtype = m.qtype ? "<f4" : m.descr;
  const stats = m.stats ? new Stats(dtype) : null;
  // Both pictures of each kind in the one pass: switching mean and max fetches nothing.
  const heat = m.heat ? ["mean", "max"].map((mode) => new Heatmap(m.heat.rows, m.heat.cols, m.heat.outH, m.heat.outW, dtype, mode)) : null;
  const cache = new Map();
  let cached = 0;
  let histogram = null;
  const total = m.nbytes * (m.hist ? 2 : 1);
  let done = 0;
  const progress = (pass) => post({ type: "progress", id: m.id, done, total, pass, requests: state.requests });
  try {
    for await (const [i, bytes] of chunks(m, state)) {
      if (!m.fetchOnly) {
        const values = elements(m, bytes);
        stats?.push(values);
        if (heat) {
          // The heatmap's elements: those of the chosen 2-D slice in this chunk.
          const a = i * m.chunk;
          const lo = Math.max(a, m.heat.start);
          const hi = Math.min(a + bytes.length, m.heat.start + m.heat.nbytes);
          if (lo < hi) {
            const scale = values.length / bytes.length; // dequantised: 4 bytes per element out
            const part = values.subarray((lo - a) * scale, (hi - a) * scale);
            for (const h of heat) h.pushRows(part);
          }
        }
        if (m.hist && cached + bytes.length <= CACHE_BYTES) {
          cache.set(i, bytes);
          cached += bytes.length;
        }
      }
      state.wasmMax = Math.max(state.wasmMax, memory.buffer.byteLength);
      done += bytes.length;
      progress(1);
    }
    const pass1 = performance.now() - started;
    if (stats) {
      const result = stats.result();
      post({ type: "stats", id: m.id, result });
      if (m.hist) {
        if (result.min !== null) histogram = Histogram.forRange(result.min, result.max, BINS, dtype);
        else done += m.nbytes; // nothing finite: no histogram, nothing more to fetch
      }
    }
    if (heat) {
      for (const h of heat) h.done();
      const pictures = heat.map((h) => ({ values: h.values(), range: h.range() }));
      post({ type: "heat", id: m.id, mean: pictures[0], max: pictures[1] }, pictures.map((p) => p.values.buffer));
    }
    if (histogram) {
      const firstPass = state.requests;
      for await (const [i, bytes] of chunks(m, state, (k) => cache.get(k) ?? null)) {
        histogram.push(elements(m, bytes), dtype);
        cache.delete(i);
        done += bytes.length;
        progress(2);
      }
      post({ type: "hist", id: m.id, counts: histogram.counts(), edges: histogram.edges(), refetched: state.requests - firstPass });
    }
    post({
      type: "done", id: m.id, ms: performance.now() - started, requests: state.requests,
      fetched: state.fetched, wasmBytes: state.wasmMax, cachedBytes: cached, pass1,
    });
  } catch (err) {
    if (err instanceof Cancelled || err?.name === "AbortError") {
      post({ type: "cancelled", id: m.id, requests: state.requests, done });
      return;
    }
    throw err;
  } finally {
    cancelled.delete(m.id);
    stats?.free();
    histogram?.free();
    for (const h of heat ?? []) h.free();
  }
}
