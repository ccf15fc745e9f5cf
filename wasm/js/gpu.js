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

/** A buffer of `nbytes` (padded) for `options` ({ usage, label }), `COPY_DST` added. */
export function gpuCreate(device, nbytes, options) {
  const max = device.limits.maxBufferSize;
  if (padded(nbytes) > max) {
    throw new RangeError(`${options?.label ?? "the view"}: ${nbytes} bytes, more than this device's maxBufferSize of ${max}`);
  }
  return device.createBuffer({
    size: padded(nbytes),
    usage: (options?.usage ?? (STORAGE | COPY_SRC)) | COPY_DST,
    label: options?.label,
  });
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
const OUTPUTS = {
  f32: "float32", float32: "float32", f16: "float16", float16: "float16", bf16: "bfloat16", bfloat16: "bfloat16",
};
const OUTPUT_SIZE = { float32: 4, float16: 2, bfloat16: 2 };

/** Bytes read first for a header; bytes staged before each write to the GPU. */
const HEAD = 65536;
const STAGE = 8 << 20;
/** Bytes written between waits for the GPU's queue, which bounds what it holds. */
const IN_FLIGHT = 256 << 20;
/** Tensors closer than this are read in one request, the bytes between them dropped. */
const GAP = 1 << 20;

/** A file to read: `{ name, size, stream(start, end, signal) }`, from a URL (HTTP ranges) or a Blob. */
async function openSource(source, signal) {
  if (typeof Blob !== "undefined" && source instanceof Blob) {
    return {
      name: source.name ?? "the blob",
      size: source.size,
      stream: async (start, end) => source.slice(start, end).stream(),
    };
  }
  if (typeof source !== "string" && !(source instanceof URL)) {
    throw new TypeError("loadToGpu's source must be a URL (a string or a URL) or a File or Blob");
  }
  const url = String(source);
  const ranged = async (start, end) => {
    const response = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal });
    if (response.status !== 206) {
      await response.body?.cancel();
      throw new Error(`${url} answered HTTP ${response.status} to a request for bytes ${start}..${end}, not 206 (byte ranges)`);
    }
    return response;
  };
  const first = await fetch(url, { headers: { Range: "bytes=0-0" }, signal });
  await first.arrayBuffer();
  const size = Number((first.headers.get("Content-Range") ?? "").split("/")[1]);
  if (first.status !== 206 || !Number.isSafeInteger(size)) {
    throw new Error(`${url} answered HTTP ${first.status} without its size to a request for its first byte (it must serve byte ranges)`);
  }
  return { name: url, size, stream: async (start, end) => (await ranged(start, end)).body };
}

/** Bytes start..end of `file`, read whole (for the header). */
async function readRange(file, start, end) {
  const out = new Uint8Array(end - start);
  let at = 0;
  const reader = (await file.stream(start, end)).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out.set(value.subarray(0, out.length - at), at);
    at += value.length;
  }
  if (at < out.length) throw new Error(`${file.name}: asked for bytes ${start}..${end}, got ${at}`);
  return out;
}

/** The header by the core: the first bytes, then as many as it asks for. */
async function readHeader(api, file) {
  let want = Math.min(HEAD, file.size);
  for (let reads = 0; reads < 16; reads++) {
    const header = api.readHeader(await readRange(file, 0, want), file.size);
    if (header.need === undefined) return header;
    const need = Number(header.need);
    if (!(need > want) || need > file.size) break;
    want = need;
  }
  throw new Error(`${file.name}: its header is not whole after 16 reads (${want} bytes)`);
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

/**
 * Each array of `header` as what loadToGpu makes of it: `{ array, name,
 * start, nbytes, segments (sizes), swap, dequant }`, or a RangeError naming
 * the tensor and the limit it passes.
 */
function plan(api, format, arrays, to, limits) {
  // Buffers of multiples of 256 bytes below maxBufferSize, never at it:
  // SwiftShader refuses a buffer of exactly its 1 GiB limit.
  const segment = Math.floor((limits.maxBufferSize - 1) / 256) * 256;
  return arrays.map((array) => {
    const name = format === "npy" ? "array" : array.name;
    const nbytes = Number(array.nbytes);
    const quantized = array.blocks !== undefined;
    if (!quantized && array.descr === null) {
      throw new RangeError(`tensor ${quote(name)}: its dtype ${array.dtype} is not one bytelens has`);
    }
    if (array.fortran && array.shape.length > 1) {
      throw new RangeError(`tensor ${quote(name)} is in Fortran order; loadToGpu puts elements on the GPU in C order only`);
    }
    const dtype = quantized ? "uint8" : api.dtypeName(array.descr);
    const item = { array, name, dtype, start: Number(array.offset), nbytes, swap: 0, dequant: null, segments: [] };
    if (quantized && to) {
      const values = Number(array.blocks) * array.block * OUTPUT_SIZE[to];
      for (const [what, bytes] of [["blocks", nbytes], [`${to} values`, values]]) {
        if (padded(bytes) > segment) {
          throw new RangeError(`tensor ${quote(name)}: its ${what} take ${bytes} bytes, more than one buffer holds under this `
            + `device's maxBufferSize of ${limits.maxBufferSize}; load it without dtype (as blocks, split into buffers) `
            + `or on a device with a larger limit`);
        }
      }
      const passes = api.dequantPasses(array.ggml, array.blocks, to, limits.maxStorageBufferBindingSize);
      item.dequant = { values, passes, code: api.dequantShader(array.ggml, to), key: `${array.ggml}->${to}` };
      item.segments = [nbytes];
    } else {
      // As few buffers as the limit allows, of even sizes (multiples of
      // 256 bytes but the last), none at the limit itself: SwiftShader
      // refuses a buffer of exactly its 1 GiB maxBufferSize.
      const count = Math.max(1, Math.ceil(nbytes / segment));
      const each = Math.ceil(nbytes / count / 256) * 256;
      for (let k = 0; k < count; k++) item.segments.push(k < count - 1 ? each : nbytes - each * (count - 1));
      const size = array.descr?.slice(2) ?? "1";
      if (array.descr?.startsWith(">") && size !== "1") item.swap = Number(size);
    }
    return item;
  });
}

/** Reverses each `size`-byte element of `bytes` in place (big-endian to little-endian). */
function swapBytes(bytes, size) {
  for (let i = 0; i + size <= bytes.length; i += size) bytes.subarray(i, i + size).reverse();
}

/** Runs `item`'s dequantising passes from its blocks buffer into a new values buffer. */
function dequantize(device, item, blocks, usage) {
  const { values, passes, code, key } = item.dequant;
  const out = device.createBuffer({ size: padded(values), usage: usage | STORAGE | COPY_DST, label: item.name });
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
  if (array.blocks !== undefined) return { ...tensor, dtype: "uint8", qtype: array.ggml, nbytes: item.nbytes };
  return { ...tensor, dtype: item.dtype, nbytes: item.nbytes };
}

const loading = new WeakMap(); // device -> the load last started on it

/**
 * loadToGpu (src/gpu_files.rs documents it), one load at a time per
 * device: each pushes and pops its own error scopes, which two loads
 * running at once would pop for each other.
 */
export function loadModel(device, source, options, api) {
  const before = loading.get(device) ?? Promise.resolve();
  const load = before.then(() => loadOne(device, source, options, api));
  loading.set(device, load.catch(() => {}));
  return load;
}

/**
 * Every tensor of the file at `source` (or those `options.names` names)
 * into its own GPU buffers, streamed in one ranged read per run of
 * tensors, staged STAGE bytes at a time.
 */
async function loadOne(device, source, options, api) {
  const { dtype, onProgress, signal } = options ?? {};
  const usage = (options?.usage ?? (STORAGE | COPY_SRC)) | COPY_DST;
  const to = dtype == null ? null : OUTPUTS[dtype];
  if (to === undefined) throw new TypeError(`dtype must be "f32", "f16" or "bf16" (or "float32", "float16", "bfloat16"), not ${JSON.stringify(dtype)}`);
  signal?.throwIfAborted();
  const file = await openSource(source, signal);
  const header = await readHeader(api, file);
  // Buffers of at most options.maxBufferSize, where that is below the device's.
  const cap = Math.min(device.limits.maxBufferSize, options?.maxBufferSize ?? Infinity);
  const limits = { maxBufferSize: cap, maxStorageBufferBindingSize: Math.min(cap, device.limits.maxStorageBufferBindingSize) };
  const nameOf = (array) => (header.format === "npy" ? "array" : array.name);
  let arrays = header.arrays;
  if (options?.names != null) {
    // Only those planned: a tensor nobody asked for cannot refuse the load.
    const wanted = new Set(options.names);
    const known = new Set(arrays.map(nameOf));
    const missing = [...wanted].filter((name) => !known.has(name));
    if (missing.length) throw new RangeError(`${file.name} has no tensor ${quote(String(missing[0]))}${missing.length > 1 ? ` (nor ${missing.length - 1} more)` : ""}`);
    arrays = arrays.filter((array) => wanted.has(nameOf(array)));
  }
  const items = plan(api, header.format, arrays, to, limits);
  items.sort((a, b) => a.start - b.start);
  const total = items.reduce((n, item) => n + item.nbytes, 0);
  const made = [];
  const result = new Map();
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let scopes = 2; // pushed and not yet popped
  const pop = () => {
    scopes--;
    return device.popErrorScope();
  };
  try {
    const targets = items.map((item) => item.segments.map((size) => {
      const buffer = device.createBuffer({ size: padded(size), usage: item.dequant ? STORAGE | COPY_DST : usage, label: item.name });
      made.push(buffer);
      return buffer;
    }));
    const stage = new Uint8Array(STAGE);
    let loaded = 0;
    let sinceWait = 0;
    let previous = null; // the queue's promise at the last checkpoint
    let i = 0; // the tensor bytes go to
    let at = 0; // bytes of it written
    let staged = 0;
    let sinceProgress = 0;
    // Writes `bytes` (a multiple of 4) where tensor i's bytes `at..` go,
    // of which `count` are the tensor's (the rest padding).
    const write = async (bytes, count = bytes.length) => {
      const item = items[i];
      const segment = Math.floor(at / item.segments[0]);
      device.queue.writeBuffer(targets[i][segment], at - segment * item.segments[0], bytes);
      at += count;
      loaded += count;
      sinceWait += count;
      sinceProgress += count;
      if (sinceProgress >= STAGE || at === item.nbytes) {
        sinceProgress = 0;
        onProgress?.({ loaded, total, tensor: item.name });
      }
      if (sinceWait >= IN_FLIGHT) {
        // At most two checkpoints' bytes queued: wait for the one before
        // last, so the queue never runs dry while this one streams in.
        sinceWait = 0;
        if (previous) await previous;
        previous = device.queue.onSubmittedWorkDone();
      }
    };
    // Writes the staged bytes, padded, swapped where the tensor is big-endian.
    const flush = async () => {
      const bytes = stage.subarray(0, padded(staged));
      bytes.fill(0, staged);
      if (items[i].swap) swapBytes(bytes.subarray(0, staged), items[i].swap);
      const count = staged;
      staged = 0;
      await write(bytes, count);
    };
    const finish = () => {
      const item = items[i];
      const buffers = item.dequant ? [dequantize(device, item, targets[i][0], usage)] : targets[i];
      if (item.dequant) made.push(buffers[0]);
      result.set(item.name, described(item, buffers, to));
      i++;
      at = 0;
    };
    // Runs of tensors less than GAP apart, each streamed in one ranged read.
    while (i < items.length) {
      if (items[i].nbytes === 0) {
        finish();
        continue;
      }
      let last = i;
      while (last + 1 < items.length && items[last + 1].start - (items[last].start + items[last].nbytes) < GAP) last++;
      const end = items[last].start + items[last].nbytes;
      const reader = (await file.stream(items[i].start, end, signal)).getReader();
      let position = items[i].start;
      while (i <= last) {
        signal?.throwIfAborted();
        const { done, value } = await reader.read();
        if (done) throw new Error(`${file.name}: the file ended inside tensor ${quote(items[i].name)}`);
        let chunk = value;
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
          const take = Math.min(chunk.length, item.nbytes - at - staged, STAGE - staged, segmentLeft);
          stage.set(chunk.subarray(0, take), staged);
          staged += take;
          if (staged === STAGE || take === segmentLeft || at + staged === item.nbytes) await flush();
          chunk = chunk.subarray(take);
          position += take;
          if (at === item.nbytes) {
            finish();
            while (i <= last && items[i].nbytes === 0) finish();
          }
        }
      }
      await reader.cancel();
    }
    const invalid = await pop();
    const memory = await pop();
    // Out of memory first: a buffer that could not be made makes every later use of it invalid.
    if (memory) throw new RangeError(`${file.name}: the GPU ran out of memory for its tensors: ${memory.message}`);
    if (invalid) throw new Error(`WebGPU refused loading ${file.name}: ${invalid.message}`);
    // The file's order, as its header lists the tensors.
    return new Map(arrays.map(nameOf).map((name) => [name, result.get(name)]));
  } catch (err) {
    for (const buffer of made) buffer.destroy();
    throw err;
  } finally {
    // Our scopes only, whatever happened: never one the caller pushed.
    while (scopes > 0) await pop().catch(() => {});
  }
}
