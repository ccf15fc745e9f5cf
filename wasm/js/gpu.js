// The JavaScript half of bytelens-wasm's WebGPU calls: `uploadView`'s
// buffer and writes (src/gpu.rs), and `loadToGpu` (src/gpu_files.rs), which
// streams a model file's tensors from a URL or a Blob straight into GPU
// buffers. The core reads the header and writes the shaders (through
// `api`, the package's own functions); here are only the WebGPU calls and
// the streaming, so that a file's bytes never pass through wasm memory.

// GPUBufferUsage's flags, by number: the constants exist only where
// WebGPU does, and this module loads everywhere.
const COPY_SRC = 0x04;
const COPY_DST = 0x08;
const UNIFORM = 0x40;
const STORAGE = 0x80;

/** Bytes rounded up to a multiple of 4, at least 4 (WebGPU's copy alignment). */
const padded = (n) => Math.max(4, Math.ceil(n / 4) * 4);

/** `value` as an error message shows it: strings quoted (80 characters at most), objects by kind. */
function shown(value) {
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return String(value);
  if (value === null || typeof value !== "object") return String(value);
  return Array.isArray(value) ? "an array" : `an object (${value.constructor?.name ?? "no prototype"})`;
}

/** `options.usage` for `call`: GPUBufferUsage flags, a number (`STORAGE | COPY_SRC` when absent). */
function usageOf(options, call) {
  const usage = options?.usage;
  if (usage == null) return STORAGE | COPY_SRC;
  if (typeof usage !== "number") {
    throw new TypeError(`${call}: usage must be a number of GPUBufferUsage flags (GPUBufferUsage.STORAGE, ...), not ${shown(usage)}`);
  }
  if (!Number.isInteger(usage) || usage < 0 || usage > 0xffffffff) {
    throw new RangeError(`${call}: usage must be GPUBufferUsage flags, a whole number from 0 to 2^32 - 1, not ${usage}`);
  }
  return usage;
}

/** `options` for `call`: an object, or nothing. */
function optionsOf(options, call) {
  if (options != null && typeof options !== "object") {
    throw new TypeError(`${call}: options must be an object, not ${shown(options)}`);
  }
  return options ?? {};
}

/**
 * uploadView's buffer: `nbytes` (padded) for `options` ({ usage, label }),
 * `COPY_DST` added. A buffer must be smaller than the device's
 * maxBufferSize: one of exactly that size is out of memory on some
 * adapters (SwiftShader's 1 GiB), which a synchronous call could not report.
 */
export function gpuCreate(device, nbytes, options) {
  options = optionsOf(options, "uploadView");
  const usage = usageOf(options, "uploadView");
  const max = device.limits.maxBufferSize;
  if (padded(nbytes) >= max) {
    throw new RangeError(`uploadView: ${options.label ?? "the view"} takes ${nbytes} bytes (a buffer of ${padded(nbytes)}); `
      + `buffers must be smaller than this device's maxBufferSize of ${max}`);
  }
  return device.createBuffer({ size: padded(nbytes), usage: usage | COPY_DST, label: options.label });
}

/** Writes `bytes` at `offset` of `buffer`, padded with zeros to a multiple of 4. */
export function gpuWrite(device, buffer, offset, bytes) {
  if (bytes.length % 4 !== 0) {
    const copy = new Uint8Array(padded(bytes.length));
    copy.set(bytes);
    bytes = copy;
  }
  device.queue.writeBuffer(buffer, offset, bytes);
}

/** What `dtype` may be, to the dtype bytelens names. */
const OUTPUTS = new Map([
  ["f32", "float32"], ["float32", "float32"], ["f16", "float16"], ["float16", "float16"], ["bf16", "bfloat16"], ["bfloat16", "bfloat16"],
]);
const OUTPUT_SIZE = { float32: 4, float16: 2, bfloat16: 2 };

/** Bytes read first for a header; bytes staged before each write to the GPU. */
const HEAD = 65536;
const STAGE = 8 << 20;
/** Bytes written between waits for the GPU's queue, which bounds what it holds. */
const IN_FLIGHT = 256 << 20;
/** WebGPU calls made before the load waits for the GPU's process to catch up. */
const CALLS = 2048;
/** Headers past this many bytes are read in a worker (a few milliseconds' work below it). */
const WORKER_FROM = 256 << 10;
/** Arrays of a header made at once (a few milliseconds' work). */
const HEADER_SLICE = 2048;
/** Tensors closer than this are read in one request, the bytes between them dropped. */
const GAP = 1 << 20;
/**
 * The smallest `maxBufferSize`: buffers are multiples of 256 bytes below
 * it (SwiftShader refuses one of exactly its limit), so at least 256.
 */
const MIN_BUFFER = 257;
/** The default `timeout`: the longest wait for a response or a read's next bytes, in ms. */
const TIMEOUT = 30_000;
/** The longest the load works on the page's thread before it lets the page run, in ms. */
const SLICE = 8;

/** loadToGpu's `options`, each checked: a TypeError or RangeError naming the option and the value. */
function loadOptions(device, options) {
  options = optionsOf(options, "loadToGpu");
  const { dtype, onProgress, signal, names, maxBufferSize, timeout } = options;
  const to = dtype == null ? null : typeof dtype === "string" ? OUTPUTS.get(dtype) : undefined;
  if (to === undefined) {
    throw new TypeError(`loadToGpu: dtype must be "f32", "f16" or "bf16" (or "float32", "float16", "bfloat16"), not ${shown(dtype)}`);
  }
  if (onProgress != null && typeof onProgress !== "function") {
    throw new TypeError(`loadToGpu: onProgress must be a function, not ${shown(onProgress)}`);
  }
  if (signal != null && !(signal instanceof AbortSignal)) {
    throw new TypeError(`loadToGpu: signal must be an AbortSignal, not ${shown(signal)}`);
  }
  let wanted = null;
  if (names != null) {
    if (typeof names !== "object" || typeof names[Symbol.iterator] !== "function") {
      throw new TypeError(`loadToGpu: names must be an array of tensor names (strings), not ${shown(names)}`);
    }
    wanted = [...names];
    const bad = wanted.findIndex((name) => typeof name !== "string");
    if (bad >= 0) throw new TypeError(`loadToGpu: names[${bad}] must be a string (a tensor's name), not ${shown(wanted[bad])}`);
  }
  const usage = usageOf(options, "loadToGpu");
  let cap = device.limits.maxBufferSize;
  if (maxBufferSize != null) {
    if (typeof maxBufferSize !== "number") {
      throw new TypeError(`loadToGpu: maxBufferSize must be a number of bytes, not ${shown(maxBufferSize)}`);
    }
    if (!(Number.isInteger(maxBufferSize) || maxBufferSize === Infinity) || maxBufferSize < MIN_BUFFER) {
      throw new RangeError(`loadToGpu: maxBufferSize must be a whole number of bytes, at least ${MIN_BUFFER} `
        + `(buffers are multiples of 256 bytes below it), not ${maxBufferSize}`);
    }
    cap = Math.min(cap, maxBufferSize);
  }
  let wait = TIMEOUT;
  if (timeout != null) {
    if (typeof timeout !== "number") throw new TypeError(`loadToGpu: timeout must be a number of milliseconds, not ${shown(timeout)}`);
    if (!(timeout > 0)) throw new RangeError(`loadToGpu: timeout must be more than 0 ms (Infinity: no timeout), not ${timeout}`);
    wait = timeout;
  }
  const limits = { maxBufferSize: cap, maxStorageBufferBindingSize: Math.min(cap, device.limits.maxStorageBufferBindingSize) };
  return { to, onProgress, signal, wanted, usage, limits, timeout: wait };
}

/** Per device: whether it is lost (`device.lost`'s info) and the loads running on it, to stop when it is. */
const devices = new WeakMap();
function deviceState(device) {
  let state = devices.get(device);
  if (!state) {
    state = { lost: null, loads: new Set() };
    devices.set(device, state);
    device.lost.then((info) => {
      state.lost = info;
      for (const load of state.loads) load.stop(lostError(info));
    });
  }
  return state;
}

function lostError(info) {
  const how = info.reason === "destroyed" ? "destroyed" : "lost";
  return new Error(`loadToGpu: the GPU device was ${how}${info.message ? ` (${info.message})` : ""}; its buffers hold nothing`);
}

/** The next task: the page's own work runs before it. */
const nextTask = () => (globalThis.scheduler?.yield ? globalThis.scheduler.yield() : new Promise((resolve) => setTimeout(resolve, 0)));

/**
 * A load's ways out besides finishing: its signal aborted, its device lost,
 * a response or read that stalls past `timeout`. `wait` settles with a
 * promise or rejects with the first of those, at once; `close` ends every
 * fetch of the load (their bodies too) and cancels every reader.
 */
class Exits {
  constructor(device, signal, timeout) {
    this.signal = signal;
    this.timeout = timeout;
    this.reason = null;
    this.controller = new AbortController(); // every fetch's signal
    this.readers = new Set();
    this.stopped = new Promise((_, reject) => { this.reject = reject; });
    this.stopped.catch(() => {});
    this.onAbort = () => this.stop(signal.reason);
    signal?.addEventListener("abort", this.onAbort);
    this.device = deviceState(device);
    this.device.loads.add(this);
    if (this.device.lost) this.stop(lostError(this.device.lost));
    this.sliced = performance.now();
  }

  stop(reason) {
    if (this.reason !== null) return;
    this.reason = reason;
    this.reject(reason);
    this.controller.abort(reason);
  }

  /** Throws where the load must stop (aborted, device lost). */
  check() {
    this.signal?.throwIfAborted();
    if (this.reason !== null) throw this.reason;
  }

  /** `promise`, or the first way out; `what` stalled past the timeout names itself. */
  async wait(promise, what) {
    if (what === undefined || !(this.timeout < 2 ** 31)) return Promise.race([promise, this.stopped]);
    let timer;
    const stall = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`loadToGpu: ${what} stalled: nothing came for ${this.timeout} ms (options.timeout)`)), this.timeout);
    });
    try {
      return await Promise.race([promise, this.stopped, stall]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A reader of `stream`, cancelled by `close` unless it ends first. */
  reader(stream) {
    const reader = stream.getReader();
    this.readers.add(reader);
    return reader;
  }

  /** The next chunk of `reader` (`what` names it for a stall). */
  async read(reader, what) {
    let chunk;
    try {
      chunk = await this.wait(reader.read(), what);
    } catch (err) {
      this.check();
      // The browser's "network error" says neither what nor where.
      if (err instanceof TypeError) throw new TypeError(`loadToGpu: reading ${what}: ${err.message}`, { cause: err });
      throw err;
    }
    if (chunk.done) this.readers.delete(reader);
    return chunk;
  }

  /** Whether the load has held the page's thread for a slice. */
  due() {
    return performance.now() - this.sliced > SLICE;
  }

  /** Lets the page run (its input, its rendering), then goes on. */
  async pause() {
    await this.wait(nextTask());
    this.sliced = performance.now();
    this.check();
  }

  close() {
    this.signal?.removeEventListener("abort", this.onAbort);
    this.device.loads.delete(this);
    for (const reader of this.readers) reader.cancel().catch(() => {});
    this.readers.clear();
    // Nothing of a finished load is still fetching; a failed one's fetches end here.
    this.controller.abort(this.reason ?? new DOMException("the load is over", "AbortError"));
  }
}

/**
 * Error scopes around a load's own WebGPU calls only: pushed before them
 * and popped after them in one synchronous run, so that no call of the
 * page (its own, or its onProgress) falls inside one, and two loads on one
 * device never pop each other's. `error` is the first they caught.
 */
class Scopes {
  constructor(device, name, total) {
    this.device = device;
    this.name = name;
    this.total = total;
    this.open = false;
    this.error = null;
    this.pending = [];
  }

  enter() {
    if (this.open) return;
    this.device.pushErrorScope("out-of-memory");
    this.device.pushErrorScope("validation");
    this.open = true;
  }

  leave() {
    if (!this.open) return;
    this.open = false;
    const invalid = this.device.popErrorScope();
    const memory = this.device.popErrorScope();
    this.pending.push(Promise.all([memory, invalid]).then(([memory, invalid]) => {
      // Out of memory first: a buffer that could not be made makes every later use of it invalid.
      if (memory) this.error ??= new RangeError(`loadToGpu: the GPU ran out of memory for the ${this.total} bytes of tensors of ${this.name}: ${memory.message}`);
      if (invalid) this.error ??= new Error(`loadToGpu: WebGPU refused loading ${this.name}: ${invalid.message}`);
    }, () => {})); // a lost device's scopes: the lost device is the error
  }

  check() {
    if (this.error) throw this.error;
  }

  /** Waits for every scope popped so far, then throws what they caught. */
  async settle(exits) {
    await exits.wait(Promise.all(this.pending.splice(0)));
    this.check();
  }
}

/** A `Content-Range` header: `{ text, start, end (exclusive), size }`, the numbers NaN where it is not `bytes a-b/size`. */
function contentRange(response) {
  const text = response.headers.get("Content-Range");
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec((text ?? "").trim());
  if (!m) return { text, start: NaN, end: NaN, size: NaN };
  return { text, start: Number(m[1]), end: Number(m[2]) + 1, size: m[3] === "*" ? NaN : Number(m[3]) };
}

/** Ends a response's body unread. */
const drop = (response) => response.body?.cancel().catch(() => {});

/**
 * A file to read: `{ name, size, stream(start, end) }`, from a URL (HTTP
 * ranges, each response checked against the range asked for) or a Blob.
 */
async function openSource(source, exits) {
  if (typeof Blob !== "undefined" && source instanceof Blob) {
    const name = source.name ? JSON.stringify(source.name) : "the blob";
    if (source.size === 0) throw new RangeError(`loadToGpu: ${name} is empty (0 bytes)`);
    return { name, size: source.size, stream: async (start, end) => source.slice(start, end).stream() };
  }
  if (typeof source !== "string" && !(source instanceof URL)) {
    throw new TypeError(`loadToGpu: source must be a URL (a string or a URL) or a File or Blob, not ${shown(source)}`);
  }
  const url = String(source);
  const get = async (start, end) => {
    try {
      return await exits.wait(fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal: exits.controller.signal }),
        `${url}'s answer to a request for bytes ${start}..${end}`);
    } catch (err) {
      exits.check();
      if (err instanceof TypeError) throw new TypeError(`loadToGpu: ${url}: ${err.message}`, { cause: err });
      throw err;
    }
  };
  const first = await get(0, 1);
  const said = `${url} answered HTTP ${first.status}${first.statusText ? ` ${first.statusText}` : ""} to a request for its first byte`;
  drop(first);
  if (first.status === 416) throw new RangeError(`loadToGpu: ${url} is empty (${said}: 416 Range Not Satisfiable)`);
  if (first.status === 200 && first.headers.get("Content-Length") === "0") throw new RangeError(`loadToGpu: ${url} is empty (${said}, 0 bytes)`);
  if (first.status === 200) {
    throw new Error(`loadToGpu: ${said}, the whole file: the server ignores Range headers, and loadToGpu reads files `
      + `in byte ranges (206 Partial Content); serve it from a server that serves ranges`);
  }
  if (first.status !== 206) throw new Error(`loadToGpu: ${said}`);
  const range = contentRange(first);
  if (range.text === null) {
    throw new Error(first.type === "cors"
      ? `loadToGpu: ${url} answered 206 but its Content-Range header is not exposed to this page; `
        + `a server of another origin must send "Access-Control-Expose-Headers: Content-Range"`
      : `loadToGpu: ${url} answered 206 with no Content-Range header: its size is unknown`);
  }
  if (range.start !== 0 || range.end !== 1 || !Number.isSafeInteger(range.size)) {
    throw new Error(`loadToGpu: ${url} answered "Content-Range: ${range.text}" to a request for bytes 0-0 (want "bytes 0-0/SIZE")`);
  }
  const size = range.size;
  const stream = async (start, end) => {
    const response = await get(start, end);
    const came = contentRange(response);
    if (response.status !== 206 || came.start !== start || came.end !== end || came.size !== size) {
      drop(response);
      const what = response.status === 206 ? `"Content-Range: ${came.text}"` : `HTTP ${response.status} ${response.statusText}`.trim();
      throw new Error(`loadToGpu: ${url} answered ${what} to a request for bytes ${start}-${end - 1} of ${size}`);
    }
    return response.body;
  };
  return { name: url, size, stream };
}

/** Bytes start..end of `file`, read whole (for the header); more or fewer than asked is an error. */
async function readRange(file, start, end, exits) {
  const out = new Uint8Array(end - start);
  let at = 0;
  const reader = exits.reader(await file.stream(start, end));
  const what = `${file.name} (bytes ${start}..${end})`;
  for (;;) {
    const { done, value } = await exits.read(reader, what);
    if (done) break;
    if (value.length > out.length - at) throw new Error(`loadToGpu: ${file.name} sent more than the bytes ${start}..${end} asked for`);
    out.set(value, at);
    at += value.length;
  }
  if (at < out.length) throw new Error(`loadToGpu: ${file.name}: asked for bytes ${start}..${end}, got ${at}`);
  return out;
}

// A worker that reads a header with the package's `readHeader`, off the
// page's thread (the core's reading of 100,000 tensors takes longer than a
// task may), and posts its arrays a slice at a time, each a short task
// here. It imports the package's JS from where wasm-bindgen puts this
// file (pkg/snippets/CRATE/js/); where that fails (a bundler moved it, a
// policy forbids workers), the header is read on the page's thread.
const WORKER = `
let api = null;
onmessage = async ({ data: { glue, bytes, size } }) => {
  try {
    api ??= await import(glue).then(async (m) => { await m.default(); return m; });
  } catch (err) {
    postMessage({ broken: String(err?.message ?? err) });
    return;
  }
  try {
    const header = api.readHeader(bytes, size);
    if (header.need !== undefined) return postMessage({ need: Number(header.need) });
    for (let from = 0; from < header.arrays.length; from += ${HEADER_SLICE}) {
      postMessage({ arrays: header.arrays.slice(from, from + ${HEADER_SLICE}) });
    }
    postMessage({ format: header.format });
  } catch (err) {
    postMessage({ error: { name: err?.name, message: String(err?.message ?? err), kind: err?.kind } });
  }
};`;

/** Whether workers failed here once: then headers are read on the page's thread. */
let noWorker = typeof Worker === "undefined";

/**
 * A worker for one load's header reads: `read(bytes, size)` is
 * `readHeader(bytes, size)` there, `{ need }` or `{ format, arrays }`, or
 * null where the worker could not start; `close()` ends it.
 */
function headerWorker(exits) {
  let worker = null;
  let code = null;
  const close = () => {
    worker?.terminate();
    if (code) URL.revokeObjectURL(code);
    worker = code = null;
  };
  const read = async (bytes, size) => {
    if (noWorker) return null;
    try {
      if (!worker) {
        code = URL.createObjectURL(new Blob([WORKER], { type: "text/javascript" }));
        worker = new Worker(code, { type: "module" });
      }
      const arrays = [];
      const answer = new Promise((resolve, reject) => {
        worker.onerror = () => resolve(null);
        worker.onmessage = ({ data }) => {
          if (data.arrays) arrays.push(...data.arrays);
          else if (data.broken !== undefined) resolve(null);
          else if (data.error) {
            const { name, message, kind } = data.error;
            reject(Object.assign(new (name === "TypeError" ? TypeError : name === "RangeError" ? RangeError : Error)(message), { kind }));
          } else resolve(data.need !== undefined ? { need: data.need } : { format: data.format, arrays });
        };
      });
      const glue = new URL("../../../bytelens_wasm.js", import.meta.url).href;
      worker.postMessage({ glue, bytes, size }, [bytes.buffer]);
      const header = await exits.wait(answer);
      if (header === null) {
        noWorker = true;
        close();
      }
      return header;
    } catch (err) {
      if (exits.reason !== null || err?.kind !== undefined) throw err;
      noWorker = true;
      close();
      return null;
    }
  };
  return { read, close };
}

/**
 * The header by the core: the first bytes, then as many as it asks for;
 * `{ format, arrays }`. Past WORKER_FROM bytes in a worker, where one
 * starts; on the page's thread, its arrays are taken from the core a
 * slice at a time.
 */
async function readHeader(api, file, exits) {
  let want = Math.min(HEAD, file.size);
  const worker = headerWorker(exits);
  try {
    for (let reads = 0; reads < 16; reads++) {
      const bytes = await readRange(file, 0, want, exits);
      let header = want > WORKER_FROM ? await worker.read(bytes.slice(), file.size) : null;
      if (header === null) {
        await exits.pause();
        const read = api.openHeader(bytes, file.size);
        header = read.need === undefined ? await sliced(read, exits) : read;
      }
      if (header.need === undefined) return header;
      const need = Number(header.need);
      if (!(need > want) || need > file.size) break;
      want = need;
    }
  } finally {
    worker.close();
  }
  throw new Error(`loadToGpu: ${file.name}: its header is not whole after 16 reads (${want} bytes)`);
}

/** `{ format, arrays }` of `header` (a GpuHeader, freed here), a slice at a time. */
async function sliced(header, exits) {
  try {
    const arrays = [];
    for (let from = 0; from < header.count; from += HEADER_SLICE) {
      if (exits.due()) await exits.pause();
      arrays.push(...header.arrays(from, from + HEADER_SLICE).arrays);
    }
    return { format: header.format, arrays };
  } finally {
    header.free();
  }
}

/** A compute pipeline for `code`, made once per device. */
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

/** Quoted for a message: a tensor's name. */
const quote = (name) => JSON.stringify(name.length > 80 ? `${name.slice(0, 77)}...` : name);

/** The smallest binding that one pass of `ggml` into `to` needs (whatever the block count). */
function smallestBinding(api, ggml, to) {
  const fits = (bytes) => {
    try {
      api.dequantPasses(ggml, 1, to, bytes);
      return true;
    } catch {
      return false;
    }
  };
  let [low, high] = [4, 1 << 16];
  while (!fits(high) && high < 2 ** 40) high *= 2;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (fits(mid)) high = mid;
    else low = mid;
  }
  return high;
}

/**
 * Each array of `header` as what loadToGpu makes of it: `{ array, name,
 * start, nbytes, segments (sizes), swap, dequant }`, or a RangeError naming
 * the tensor and the limit it passes. Lets the page run between slices.
 */
async function plan(api, format, arrays, to, limits, exits) {
  // Buffers of multiples of 256 bytes below maxBufferSize, never at it:
  // SwiftShader refuses a buffer of exactly its 1 GiB limit.
  const segment = Math.floor((limits.maxBufferSize - 1) / 256) * 256;
  const names = new Map(); // descr -> dtype name
  const items = [];
  for (const array of arrays) {
    if (exits.due()) await exits.pause();
    const name = format === "npy" ? "array" : array.name;
    const nbytes = Number(array.nbytes);
    // A GGUF type bytelens does not read (IQ2_XXS, ...) but whose size the header gives: its blocks.
    const other = format === "gguf" && array.ggml === null && !array.dtype.startsWith("ggml type ");
    const quantized = array.blocks !== undefined || other;
    if (!quantized && array.descr === null) {
      throw new RangeError(`loadToGpu: tensor ${quote(name)}: its dtype ${array.dtype} is not one bytelens has`);
    }
    if (array.fortran && array.shape.length > 1) {
      throw new RangeError(`loadToGpu: tensor ${quote(name)} is in Fortran order; loadToGpu puts elements on the GPU in C order only`);
    }
    let dtype = "uint8";
    if (!quantized) {
      if (!names.has(array.descr)) names.set(array.descr, api.dtypeName(array.descr));
      dtype = names.get(array.descr);
    }
    const qtype = quantized ? (array.ggml ?? array.dtype) : undefined;
    const item = { array, name, dtype, qtype, start: Number(array.offset), nbytes, swap: 0, dequant: null, segments: [] };
    if (quantized && to) {
      if (other) {
        throw new RangeError(`loadToGpu: tensor ${quote(name)} is of type ${array.dtype}, which bytelens cannot dequantise; `
          + `load it without dtype (as its blocks), or leave it out of names`);
      }
      const values = Number(array.blocks) * array.block * OUTPUT_SIZE[to];
      for (const [what, bytes] of [["blocks", nbytes], [`${to} values`, values]]) {
        if (padded(bytes) > segment) {
          throw new RangeError(`loadToGpu: tensor ${quote(name)}: its ${what} take ${bytes} bytes, more than one buffer holds under this `
            + `device's maxBufferSize of ${limits.maxBufferSize}; load it without dtype (as blocks, split into buffers) `
            + `or on a device with a larger limit`);
        }
      }
      let passes;
      try {
        passes = api.dequantPasses(array.ggml, array.blocks, to, limits.maxStorageBufferBindingSize);
      } catch {
        const least = smallestBinding(api, array.ggml, to);
        throw new RangeError(`loadToGpu: tensor ${quote(name)}: dequantising ${array.ggml} into ${to} needs buffers and bindings of `
          + `at least ${least} bytes, more than maxBufferSize ${limits.maxBufferSize} (or maxStorageBufferBindingSize `
          + `${limits.maxStorageBufferBindingSize}) allows`);
      }
      item.dequant = { values, passes, code: api.dequantShader(array.ggml, to), key: `${array.ggml}->${to}` };
      item.segments = [nbytes];
    } else {
      // As few buffers as the limit allows, of even sizes (multiples of
      // 256 bytes but the last), none at the limit itself.
      const count = Math.max(1, Math.ceil(nbytes / segment));
      const each = Math.ceil(nbytes / count / 256) * 256;
      for (let k = 0; k < count; k++) item.segments.push(k < count - 1 ? each : nbytes - each * (count - 1));
      const size = array.descr?.slice(2) ?? "1";
      if (array.descr?.startsWith(">") && size !== "1") item.swap = Number(size);
    }
    items.push(item);
  }
  return items;
}

/** Reverses each `size`-byte element of `bytes` in place (big-endian to little-endian). */
function swapBytes(bytes, size) {
  for (let i = 0; i + size <= bytes.length; i += size) bytes.subarray(i, i + size).reverse();
}

/**
 * Runs `item`'s dequantising passes from its blocks buffer into a new
 * values buffer (pushed to `made` before anything can fail).
 */
function dequantize(device, item, blocks, usage, made) {
  const { values, passes, code, key } = item.dequant;
  const out = device.createBuffer({ size: padded(values), usage: usage | STORAGE | COPY_DST, label: item.name });
  made.push(out);
  if (passes.length === 0) return out;
  const params = new Uint8Array(passes.length * 256);
  passes.forEach((pass, i) => params.set(pass.params, i * 256));
  const uniform = device.createBuffer({ size: params.length, usage: UNIFORM | COPY_DST });
  device.queue.writeBuffer(uniform, 0, params);
  const compute = pipeline(device, key, code);
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(compute);
  passes.forEach((p, i) => {
    pass.setBindGroup(0, device.createBindGroup({
      layout: compute.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: blocks, offset: p.srcOffset, size: p.srcSize } },
        { binding: 1, resource: { buffer: out, offset: p.dstOffset, size: p.dstSize } },
        { binding: 2, resource: { buffer: uniform, offset: i * 256, size: 16 } },
      ],
    }));
    pass.dispatchWorkgroups(p.groups[0], p.groups[1]);
  });
  pass.end();
  device.queue.submit([encoder.finish()]);
  // Destroyed once the submitted work that reads them is done.
  blocks.destroy();
  uniform.destroy();
  return out;
}

/** What loadToGpu gives for one tensor. */
function described(item, buffers, to) {
  const { array, name } = item;
  const tensor = { name, shape: array.shape, buffers, buffer: buffers.length === 1 ? buffers[0] : null };
  if (item.dequant) return { ...tensor, dtype: to, nbytes: item.dequant.values };
  if (item.qtype !== undefined) return { ...tensor, dtype: "uint8", qtype: item.qtype, nbytes: item.nbytes };
  return { ...tensor, dtype: item.dtype, nbytes: item.nbytes };
}

/**
 * loadToGpu (src/gpu_files.rs documents it). Loads on one device may run
 * at once: each scopes only its own WebGPU calls. Every way out of a load
 * (an error, its signal, its device lost, a stalled read) ends its reads
 * and destroys the buffers it made.
 */
export async function loadModel(device, source, options, api) {
  if (typeof GPUDevice !== "undefined" && !(device instanceof GPUDevice)) {
    throw new TypeError(`loadToGpu: device must be a GPUDevice, not ${shown(device)}`);
  }
  const checked = loadOptions(device, options);
  checked.signal?.throwIfAborted();
  const exits = new Exits(device, checked.signal, checked.timeout);
  const made = [];
  try {
    return await loadOne(device, source, checked, api, exits, made);
  } catch (err) {
    for (const buffer of made) buffer.destroy();
    throw err;
  } finally {
    exits.close();
  }
}

/**
 * Every tensor of the file at `source` (or those `options.names` names)
 * into its own GPU buffers, streamed in one ranged read per run of
 * tensors, staged STAGE bytes at a time.
 */
async function loadOne(device, source, options, api, exits, made) {
  const { to, onProgress, wanted, usage, limits } = options;
  const file = await exits.wait(openSource(source, exits));
  const header = await readHeader(api, file, exits);
  const nameOf = (array) => (header.format === "npy" ? "array" : array.name);
  let arrays = header.arrays;
  if (wanted !== null) {
    // Only those planned: a tensor nobody asked for cannot refuse the load.
    const asked = new Set(wanted);
    const known = new Set(arrays.map(nameOf));
    const missing = [...asked].filter((name) => !known.has(name));
    if (missing.length) {
      throw new RangeError(`loadToGpu: ${file.name} has no tensor ${quote(missing[0])}${missing.length > 1 ? ` (nor ${missing.length - 1} more)` : ""}`);
    }
    arrays = arrays.filter((array) => asked.has(nameOf(array)));
  }
  const items = await plan(api, header.format, arrays, to, limits, exits);
  items.sort((a, b) => a.start - b.start);
  const total = items.reduce((n, item) => n + item.nbytes, 0);
  const scopes = new Scopes(device, file.name, total);
  // WebGPU calls since the GPU's process last caught up: past CALLS, the
  // load waits for it, where the browser would block the page's thread
  // once its queue of calls to that process is full (100,000 tensors).
  let calls = 0;
  const caughtUp = async () => {
    calls = 0;
    await exits.wait(device.queue.onSubmittedWorkDone());
  };
  const targets = [];
  for (const item of items) {
    if (exits.due() || calls >= CALLS) {
      scopes.leave();
      if (calls >= CALLS) await caughtUp();
      await exits.pause();
    }
    scopes.enter();
    targets.push(item.segments.map((size) => {
      const buffer = device.createBuffer({ size: padded(size), usage: item.dequant ? STORAGE | COPY_DST : usage | COPY_DST, label: item.name });
      made.push(buffer);
      return buffer;
    }));
    calls += item.segments.length;
  }
  scopes.leave();
  const result = new Map();
  const stage = new Uint8Array(Math.min(STAGE, padded(items.reduce((n, item) => Math.max(n, item.nbytes), 0))));
  let loaded = 0;
  let sinceWait = 0;
  let sinceProgress = 0;
  let previous = null; // the queue's promise at the last checkpoint
  let i = 0; // the tensor bytes go to
  let at = 0; // bytes of it written
  let staged = 0;
  let finished = false; // a tensor was finished since the last progress
  // Writes the staged bytes, padded, swapped where the tensor is
  // big-endian, where tensor i's bytes `at..` go. Inside a scope.
  const flush = () => {
    const item = items[i];
    const bytes = stage.subarray(0, padded(staged));
    bytes.fill(0, staged);
    if (item.swap) swapBytes(bytes.subarray(0, staged), item.swap);
    const segment = Math.floor(at / item.segments[0]);
    device.queue.writeBuffer(targets[i][segment], at - segment * item.segments[0], bytes);
    calls++;
    at += staged;
    loaded += staged;
    sinceWait += staged;
    sinceProgress += staged;
    staged = 0;
  };
  // Tensor i is whole: dequantised (unless the load was stopped), described. Inside a scope.
  const finish = () => {
    const item = items[i];
    let buffers = targets[i];
    if (item.dequant) {
      exits.check();
      buffers = [dequantize(device, item, targets[i][0], usage | COPY_DST, made)];
    }
    result.set(item.name, described(item, buffers, to));
    finished = true;
    i++;
    at = 0;
  };
  // Between chunks, outside any scope: progress, the queue's checkpoint, the page's turn.
  const between = async (tensor) => {
    scopes.check();
    if (sinceProgress >= STAGE || finished) {
      sinceProgress = 0;
      finished = false;
      onProgress?.({ loaded, total, tensor });
      exits.check();
    }
    if (sinceWait >= IN_FLIGHT) {
      // At most two checkpoints' bytes queued: wait for the one before
      // last, so the queue never runs dry while this one streams in.
      sinceWait = 0;
      if (previous) await exits.wait(previous);
      previous = device.queue.onSubmittedWorkDone();
      await scopes.settle(exits);
    }
    if (calls >= CALLS) await caughtUp();
    if (exits.due()) await exits.pause();
  };
  // Runs of tensors less than GAP apart, each streamed in one ranged read.
  while (i < items.length) {
    if (items[i].nbytes === 0) {
      scopes.enter();
      try {
        finish();
      } finally {
        scopes.leave();
      }
      await between(items[i - 1].name);
      continue;
    }
    let last = i;
    while (last + 1 < items.length && items[last + 1].start - (items[last].start + items[last].nbytes) < GAP) last++;
    const [first, end] = [items[i].start, items[last].start + items[last].nbytes];
    const reader = exits.reader(await file.stream(first, end));
    const what = `${file.name} (bytes ${first}..${end})`;
    let position = first;
    let chunk = new Uint8Array(0);
    while (i <= last) {
      if (chunk.length === 0) {
        const { done, value } = await exits.read(reader, what);
        if (done) throw new Error(`loadToGpu: ${file.name}: the file ended inside tensor ${quote(items[i].name)} (at byte ${position})`);
        if (value.length > end - position) throw new Error(`loadToGpu: ${file.name} sent more than the bytes ${first}..${end} asked for`);
        chunk = value;
      }
      const tensor = items[i].name;
      scopes.enter();
      try {
        // The chunk, or as much of it as one slice of the page's thread allows.
        while (chunk.length > 0 && i <= last) {
          const item = items[i];
          if (position < item.start) {
            const skip = Math.min(chunk.length, item.start - position);
            chunk = chunk.subarray(skip);
            position += skip;
            continue;
          }
          // Up to the end of the tensor, of the stage, and of the segment.
          const segmentLeft = item.segments[0] - ((at + staged) % item.segments[0]);
          const take = Math.min(chunk.length, item.nbytes - at - staged, stage.length - staged, segmentLeft);
          stage.set(chunk.subarray(0, take), staged);
          staged += take;
          chunk = chunk.subarray(take);
          position += take;
          if (staged === stage.length || take === segmentLeft || at + staged === item.nbytes) flush();
          if (at === item.nbytes) {
            finish();
            while (i <= last && items[i].nbytes === 0) finish();
            if (exits.due() || calls >= CALLS) break;
          }
        }
      } finally {
        scopes.leave();
      }
      await between(i <= last ? items[i].name : tensor);
    }
    // The run is whole: its response must end here.
    if (chunk.length > 0 || !(await exits.read(reader, what)).done) {
      throw new Error(`loadToGpu: ${file.name} sent more than the bytes ${first}..${end} asked for`);
    }
  }
  // The bytes on the GPU, every scope answered, the load not stopped meanwhile.
  await exits.wait(device.queue.onSubmittedWorkDone());
  await scopes.settle(exits);
  await exits.pause();
  exits.check();
  // The file's order, as its header lists the tensors.
  return new Map(arrays.map(nameOf).map((name) => [name, result.get(name)]));
}
