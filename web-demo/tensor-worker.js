// The tensor panel's worker (a module worker): streams one array's bytes
// from the file in bounded chunks and feeds them to the core in wasm:
// `Stats`, numpy's `Histogram` and the `Heatmap` downsampler (a quantised
// GGUF tensor's blocks `dequantize`d first). Off the main thread, so the
// page stays responsive however big the tensor; the page only draws what
// this sends back. Nothing here computes a number of its own.
//
// Messages in:  { type: "fetcher", port } (first: fetch-worker.js's port)
//               { type: "run", id, source, start, nbytes, descr | qtype,
//                 blockBytes, blockElements, chunk, stats, hist, heat, fetchOnly,
//                 cacheBytes?, opfs? }
//               { type: "cancel", id }
// Messages out: { type: "progress" | "stats" | "hist" | "hist-refused" |
//                 "heat" | "heat-refused" | "done" | "cancelled" | "error", id, ... }
//
// `source` is { url } (read in HTTP byte ranges) or { file } (a File, read
// by slice). Each chunk is fetched once: the statistics and the heatmap
// take it in the same pass. The histogram's bins need the finite range
// first, so that pass also takes a `Tally` of the elements by their
// leading 16 bits, from which the histogram counts at once every key that
// lies in one bin: nothing is left of a tensor of one- or two-byte
// elements (float16, bfloat16, the float8s: each key is one value), a few
// percent of a float32 one. What is left needs a second pass over the
// bytes, which counts only those elements (`pushRest`): a tensor of
// CACHE_BYTES or less from the chunks kept in memory, a bigger one from a
// file of the browser's Origin Private File System that the first pass
// wrote each chunk into (a synchronous access handle, read back into one
// reused buffer), removed when the run ends or is cancelled. Where there
// is no such file system, too little quota, or a write fails, the chunks
// not in memory are fetched again, and the run says why.

import init, { Stats, Histogram, Heatmap, Tally, dequantize } from "./pkg/bytelens_wasm.js";
import { nextTask } from "./tasks.js";

/** The chunks kept for the histogram's pass: a tensor this big or smaller is fetched once. */
const CACHE_BYTES = 32 * 1024 * 1024;
/** Ranges asked for before the chunk being computed is done with. */
const AHEAD = 2;
const BINS = 64;
/** The OPFS files of the runs: `${SPILL_PREFIX}${uuid}`. */
const SPILL_PREFIX = "bytelens-tensor-";
/** Storage left free beyond the tensor's bytes before a run writes them to OPFS. */
const SPILL_MARGIN = 64 * 1024 * 1024;

const ready = init();
let memory = null;
ready.then((exports) => { memory = exports.memory; });
const cancelled = new Set();
// The files of earlier runs (a tab closed mid-run leaves one): removed
// before this worker writes its own. A file another tab's run is writing
// is locked by its access handle, and stays.
const swept = sweep();

async function sweep() {
  try {
    const root = await navigator.storage.getDirectory();
    const stale = [];
    for await (const name of root.keys()) if (name.startsWith(SPILL_PREFIX)) stale.push(name);
    await Promise.all(stale.map((name) => root.removeEntry(name).catch(() => {})));
  } catch {
    // No OPFS here: nothing to sweep, and runs fetch again.
  }
}

self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "fetcher") {
    fetcher = m.port;
    fetcher.onmessage = fetched;
    return;
  }
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

/**
 * The fetching thread's port (fetch-worker.js, handed over by the page):
 * ranges are read there, so that this thread's arithmetic and its
 * synchronous writes to the browser's storage never stall a download (a
 * worker busy computing drains no response body, and the next range
 * waited on it). The bytes come back transferred, not copied.
 */
let fetcher = null;
const reads = new Map();
let readKey = 0;

function fetched({ data: r }) {
  const read = reads.get(r.key);
  if (!read) return;
  reads.delete(r.key);
  if (r.bytes) read.resolve(r.bytes);
  else read.reject(r.abort ? new DOMException(r.error, "AbortError") : new Error(r.error));
}

/** Reads bytes start..end of the source; the signal's abort stops a request in flight. */
function readRange(source, start, end, signal) {
  if (!fetcher) return Promise.reject(new Error("the page gave this worker no fetching thread"));
  return new Promise((resolve, reject) => {
    const key = ++readKey;
    reads.set(key, { resolve, reject });
    fetcher.postMessage({ type: "read", key, source, start, end });
    signal.addEventListener("abort", () => {
      fetcher.postMessage({ type: "abort", key });
      reads.delete(key);
      reject(new DOMException("the run was cancelled", "AbortError"));
    }, { once: true });
  });
}

/**
 * The chunks of `m` (each `m.chunk` bytes but the last), AHEAD requests
 * ahead: the next ones are in flight while this one is computed. `skip(i)`
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
  const pending = [];
  let asked = 0;
  const ask = () => {
    while (asked < count && pending.length < AHEAD && !cancelled.has(m.id)) pending.push(fetchOne(asked++));
  };
  const stop = () => {
    controller.abort();
    for (const p of pending) p.catch(() => {});
    throw new Cancelled();
  };
  ask();
  for (let i = 0; i < count; i++) {
    if (cancelled.has(m.id)) stop();
    const bytes = await pending.shift();
    ask();
    if (cancelled.has(m.id)) stop();
    yield [i, bytes];
  }
}

const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;

/**
 * A run's chunks in an OPFS file, for the histogram's pass: each as the
 * tally keyed it (`Tally.pushKeyed`: sorted by key, the bytes below the
 * key kept, half a float32 chunk), one after another; `spans` says where.
 */
class Spill {
  constructor(root, name, access) {
    this.root = root;
    this.name = name;
    this.access = access;
    this.buffer = null; // the one buffer reads go into
    this.spans = []; // [offset, length] of each chunk's keyed bytes
    this.written = 0;
    this.writeMs = 0; // the time spent in write and read, for the benchmark's line
    this.readMs = 0;
  }

  /** Appends a chunk's keyed bytes. */
  append(bytes) {
    const t = performance.now();
    const at = this.written;
    const n = this.access.write(bytes, { at });
    if (n !== bytes.length) throw new Error(`wrote ${n} of ${bytes.length} bytes`);
    this.spans.push([at, n]);
    this.written += n;
    this.writeMs += performance.now() - t;
  }

  /** Bytes at..at+length, in the reused buffer (valid until the next read). */
  read(at, length) {
    if (!this.buffer || this.buffer.length < length) this.buffer = new Uint8Array(length);
    const view = this.buffer.subarray(0, length);
    const t = performance.now();
    const n = this.access.read(view, { at });
    this.readMs += performance.now() - t;
    if (n !== length) throw new Error(`read ${n} of ${length} bytes back from the browser's storage at ${at}`);
    return view;
  }

  /** Closes and deletes the file; never throws. */
  async remove() {
    try {
      this.access.close();
    } catch {
      // already closed
    }
    this.buffer = null;
    await this.root.removeEntry(this.name).catch(() => {});
  }
}

/**
 * An OPFS file for `nbytes`, its size reserved: { spill } or, where that
 * cannot be, { reason } (no OPFS or no synchronous access handles in this
 * browser, too little quota, the file refused).
 */
async function openSpill(nbytes) {
  if (!navigator.storage?.getDirectory) return { reason: "this browser has no Origin Private File System" };
  if (typeof self.FileSystemFileHandle?.prototype.createSyncAccessHandle !== "function") {
    return { reason: "this browser has no synchronous access to its Origin Private File System" };
  }
  let root, name, access;
  try {
    const { quota, usage } = await navigator.storage.estimate();
    const room = quota - usage;
    if (!(room >= nbytes + SPILL_MARGIN)) return { reason: `the browser's storage has ${mib(room)} free for this page, ${mib(nbytes + SPILL_MARGIN)} needed` };
    await swept;
    root = await navigator.storage.getDirectory();
    name = `${SPILL_PREFIX}${crypto.randomUUID()}`;
    const handle = await root.getFileHandle(name, { create: true });
    access = await handle.createSyncAccessHandle();
    access.truncate(nbytes); // the quota taken now, not found short half way
    return { spill: new Spill(root, name, access) };
  } catch (err) {
    try {
      access?.close();
    } catch {
      // closed
    }
    if (name) await root.removeEntry(name).catch(() => {});
    return { reason: `the browser's storage refused the file: ${err?.message ?? err}` };
  }
}


/** A chunk as elements the core reads: a quantised one dequantised to float32. */
function elements(m, bytes) {
  if (!m.qtype) return bytes;
  const out = dequantize(m.qtype, bytes);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/**
 * The chunks again, for the histogram's pass: from `spill` (read back
 * from OPFS), else from `cache` and, for the rest, fetched again.
 */
async function* again(m, state, cache, spill) {
  if (!spill) {
    yield* chunks(m, state, (k) => cache.get(k) ?? null);
    return;
  }
  for (const [i, [at, length]] of spill.spans.entries()) {
    await nextTask();
    if (cancelled.has(m.id)) throw new Cancelled();
    yield [i, spill.read(at, length)];
  }
}

/**
 * The most bytes the tally's keyed chunks of `m` take (the file's size,
 * reserved up front): each chunk's elements, a quantised one's as the
 * float32s it dequantises to.
 */
function keyedBytes(m, tally) {
  const values = (n) => (m.qtype ? (n / m.blockBytes) * m.blockElements * 4 : n);
  const count = Math.ceil(m.nbytes / m.chunk);
  const last = m.nbytes - (count - 1) * m.chunk;
  return (count - 1) * tally.keyedLength(values(m.chunk)) + tally.keyedLength(values(last));
}

async function run(m) {
  const exports = await ready;
  memory ??= exports.memory;
  const started = performance.now();
  const state = { requests: 0, controller: null, fetched: 0, wasmMax: memory.buffer.byteLength };
  const dtype = m.qtype ? "<f4" : m.descr;
  const stats = m.stats ? new Stats(dtype) : null;
  // The histogram's first pass; exact for one- and two-byte elements, when
  // no byte need be read twice.
  const tally = m.hist && !m.fetchOnly ? new Tally(dtype) : null;
  const twice = tally !== null && !tally.isExact;
  // Both pictures of each kind in the one pass: switching mean and max
  // fetches nothing. A heatmap the core refuses (its sizes) is said so,
  // and the statistics and histogram go on without it.
  let heat = null;
  if (m.heat) {
    heat = [];
    try {
      for (const mode of ["mean", "max"]) heat.push(new Heatmap(m.heat.rows, m.heat.cols, m.heat.outH, m.heat.outW, dtype, mode));
    } catch (err) {
      for (const h of heat) h.free();
      heat = null;
      post({ type: "heat-refused", id: m.id, message: String(err?.message ?? err) });
      if (!stats && !m.hist && !m.fetchOnly) {
        post({ type: "done", id: m.id, ms: performance.now() - started, requests: 0, fetched: 0, refetchedBytes: 0, wasmBytes: state.wasmMax, pass1: 0, nothing: true });
        stats?.free();
        return;
      }
    }
  }
  const cacheBytes = m.cacheBytes ?? CACHE_BYTES;
  const cache = new Map();
  let cached = 0;
  let histogram = null;
  // Where the histogram's pass reads the bytes: "memory", "opfs" or "refetch" (and why).
  let from = null;
  let why = "";
  let spill = null;
  // The histogram's file, for a tensor bigger than the cache (a few ms,
  // before the first range). A picked file is on this computer already:
  // read again, as OPFS would be.
  const noSpill = m.opfs === false ? "the run asked not to use the browser's storage"
    : m.source.file ? "a file on this computer, read again" : null;
  const opening = twice && m.nbytes > cacheBytes
    ? (noSpill ? Promise.resolve({ reason: noSpill }) : openSpill(keyedBytes(m, tally)))
    : null;
  const total = m.nbytes * (twice ? 2 : 1);
  let done = 0;
  const progress = (pass) => post({ type: "progress", id: m.id, done, total, pass, from, requests: state.requests });
  let outcome = null;
  try {
    if (opening) ({ spill, reason: why = "" } = await opening);
    for await (const [i, bytes] of chunks(m, state)) {
      if (!m.fetchOnly) {
        const values = elements(m, bytes);
        stats?.push(values);
        if (spill) {
          // Tallied and keyed at once; the keyed bytes kept in OPFS.
          const keyed = tally.pushKeyed(values);
          try {
            spill.append(keyed);
          } catch (err) {
            why = `writing to the browser's storage failed after ${mib(spill.written)}: ${err?.message ?? err}`;
            await spill.remove();
            spill = null;
          }
        } else {
          tally?.push(values);
        }
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
        if (twice && !spill && cached + bytes.length <= cacheBytes) {
          cache.set(i, bytes);
          cached += bytes.length;
        }
      }
      state.wasmMax = Math.max(state.wasmMax, memory.buffer.byteLength);
      done += bytes.length;
      progress(1);
    }
    const pass1 = performance.now() - started;
    // Elements the tally left for a second pass over the bytes.
    let left = 0;
    if (stats) {
      const result = stats.result();
      post({ type: "stats", id: m.id, result });
      if (tally && result.min !== null) {
        // Numpy makes no 64 bins of some ranges (too narrow for the dtype's
        // spacing, wider than its largest value): the core refuses them as
        // numpy does, and the run goes on without a histogram, as the
        // GPU's does.
        try {
          histogram = Histogram.forRange(result.min, result.max, BINS, dtype);
        } catch (err) {
          post({ type: "hist-refused", id: m.id, message: String(err?.message ?? err) });
        }
        if (histogram) left = histogram.addTally(tally);
      }
    }
    if (histogram) from = left === 0 ? "tally" : spill ? "opfs" : cached === m.nbytes ? "memory" : "refetch";
    if (twice && left === 0) done += m.nbytes; // nothing more to read
    if (heat) {
      for (const h of heat) h.done();
      const pictures = heat.map((h) => ({ values: h.values(), range: h.range() }));
      post({ type: "heat", id: m.id, mean: pictures[0], max: pictures[1] }, pictures.map((p) => p.values.buffer));
    }
    const firstPass = { requests: state.requests, fetched: state.fetched };
    if (histogram) {
      if (left > 0) {
        for await (const [i, bytes] of again(m, state, cache, spill)) {
          if (spill) {
            histogram.pushKeyed(bytes);
            done += Math.min(m.chunk, m.nbytes - i * m.chunk);
          } else {
            histogram.pushRest(elements(m, bytes));
            cache.delete(i);
            done += bytes.length;
          }
          progress(2);
        }
      }
      post({ type: "hist", id: m.id, counts: histogram.counts(), edges: histogram.edges(), refetched: state.requests - firstPass.requests, from, why, left });
    }
    outcome = {
      type: "done", id: m.id, ms: performance.now() - started, requests: state.requests,
      fetched: state.fetched, refetchedBytes: state.fetched - firstPass.fetched, wasmBytes: state.wasmMax,
      cachedBytes: cached, spilledBytes: spill?.written ?? 0, writeMs: spill?.writeMs ?? 0, readMs: spill?.readMs ?? 0, pass1, from, why, left,
    };
  } catch (err) {
    if (!(err instanceof Cancelled || err?.name === "AbortError")) throw err;
    outcome = { type: "cancelled", id: m.id, requests: state.requests, done };
  } finally {
    cancelled.delete(m.id);
    stats?.free();
    tally?.free();
    histogram?.free();
    for (const h of heat ?? []) h.free();
    // Gone before the page hears the run ended (a cancel during the opening included).
    spill ??= opening ? (await opening).spill ?? null : null;
    await spill?.remove();
  }
  post(outcome);
}
