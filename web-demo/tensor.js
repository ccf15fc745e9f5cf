// The tensor panel: one array of the file view, its values in its dtype in
// a paged table in C order (any shape, C or Fortran order; a quantised
// GGUF tensor dequantised), read a page at a time from the file's bytes by
// the core; and statistics, a histogram and a heatmap of the whole tensor,
// with a progress bar and a cancel button: computed on the GPU where
// WebGPU is and reads the dtype (tensor-gpu.js, in tensor-gpu-worker.js),
// else by the core in a worker (tensor-worker.js) over the file's bytes
// streamed in bounded chunks; with "compare with wasm", both, side by side.
// This file reads bytes, moves them and draws.

import { el } from "./dom.js";
import { cutText, flatOf, formatValue, indexAt, parseIntList, unravel } from "./numbers.js";
import { Pictures, heatSize, readable } from "./pictures.js";
import { comparison, gpuRefusal } from "./tensor-gpu.js";

const COLS = 8; // elements per table row
const ROWS = 16; // rows per page
const PAGE = COLS * ROWS;
const CHUNK = 8 * 1024 * 1024; // bytes per request of the statistics' stream
const GAP = 64 * 1024; // a Fortran page's element ranges closer than this are read as one

const mib = (x) => (x / 1048576).toFixed(1);

/** A run stopped by its cancel (the wasm worker's or the GPU's). */
const cancelledError = (err) => err?.cancelled === true || err?.name === "AbortError";

/** The element count of `shape`, whose lengths are numbers or, past 2^53, BigInts (readHeader's). */
function count(shape) {
  return Number(shape.reduce((n, k) => n * BigInt(k), 1n));
}

export class TensorPanel {
  constructor(wasm, fileView) {
    this.wasm = wasm;
    this.view = fileView;
    this.array = null;
    this.first = 0; // the first element on the page (C order)
    this.hit = -1; // the element a jump went to
    this.pageSeq = 0;
    this.runId = 0;
    this.runs = new Map(); // wasm run id → { resolve, reject, heat, draw, prefix, started } and what it sent: stats, hist, pictures
    this.current = null; // the run in progress: { id, controller }, whose abort cancels it
    this.compared = null; // the last comparison: { gpu, wasm, rows, agree }
    this.worker = null;
    this.fetcher = null;
    this.gpuWorker = null; // tensor-gpu-worker.js, made at the first whole run
    this.gpuCalls = new Map(); // its call id → { resolve, reject, onProgress }
    this.gpuCallId = 0;
    this.gpuInfo = null; // its device: a promise of { adapter, limits } or { reason }
    const $ = (id) => document.getElementById(id);
    this.box = $("tensor");
    this.title = $("tensor-title");
    this.note = $("tensor-note");
    this.table = $("tensor-table");
    this.pageLine = $("tensor-page");
    this.progress = $("tensor-progress");
    this.progressText = $("tensor-progress-text");
    this.cancelButton = $("tensor-cancel");
    this.sliceForm = $("tensor-slice-form");
    this.sliceInput = $("tensor-slice");
    this.engine = $("tensor-engine");
    this.compareBox = $("tensor-compare");
    this.compareTable = $("tensor-compare-table");
    this.pictures = new Pictures($("tensor-pictures"), "tensor");
    $("tensor-prev").addEventListener("click", () => this.showPage(this.first - PAGE));
    $("tensor-next").addEventListener("click", () => this.showPage(this.first + PAGE));
    this.cancelButton.addEventListener("click", () => this.cancel());
    // Ticked: the statistics again, both ways; unticked: the comparison goes.
    this.compareBox.addEventListener("change", () => {
      if (this.compareBox.checked && this.array && this.readable && this.box.dataset.state !== "running") this.run("all").catch(() => {});
      if (!this.compareBox.checked) this.compareTable.hidden = true;
    });
    $("tensor-jump").addEventListener("submit", (e) => {
      e.preventDefault();
      this.jump($("tensor-jump-index"));
    });
    // A refused entry's message goes once it is edited: the browser runs no
    // submit handler while a box holds one.
    for (const box of [$("tensor-jump-index"), this.sliceInput]) box.addEventListener("input", () => box.setCustomValidity(""));
    this.sliceForm.addEventListener("submit", (e) => {
      e.preventDefault();
      this.chooseSlice();
    });
    this.table.addEventListener("keydown", (e) => {
      if (!this.array || e.altKey || e.ctrlKey || e.metaKey) return;
      const n = this.total;
      const step = { PageDown: PAGE, PageUp: -PAGE, ArrowDown: COLS, ArrowUp: -COLS, Home: -Infinity, End: Infinity }[e.key];
      if (step === undefined) return;
      e.preventDefault();
      const to = step === Infinity ? n - 1 : step === -Infinity ? 0 : this.first + step;
      this.showPage(to);
    });
  }

  /** Closes the panel (another file opened): its run cancelled. */
  close() {
    this.cancel();
    this.array = null;
    this.box.hidden = true;
  }

  get total() {
    return count(this.array.shape);
  }

  /** Opens array `a` of the file view (one of `fileView.arrays`): its first page, then its statistics. */
  async open(a) {
    this.cancel();
    this.setState("opening");
    this.array = a;
    this.box.hidden = false;
    this.hit = -1;
    this.pictures.clear();
    this.note.classList.remove("error");
    this.title.title = a.name;
    this.title.textContent = `${cutText(a.name)}: ${a.dtype} (${a.shape.join(", ")}${a.shape.length === 1 ? "," : ""})${a.fortran ? ", Fortran order" : ""}, `
      + `${count(a.shape).toLocaleString("en")} elements, bytes ${a.offset}..${a.offset + a.nbytes}`;
    this.box.dataset.array = a.name;
    const blocks = a.blockBytes !== undefined;
    this.readable = blocks || a.descr !== null;
    if (!this.readable) {
      this.note.textContent = a.ggml === null ? `bytelens does not read ${a.dtype}` : `no bytelens dtype for ${a.dtype}`;
      this.table.replaceChildren();
      this.setState("none");
      return;
    }
    if (this.total === 0) {
      // A GGUF tensor of no elements may have a length past 2^53 (a BigInt) beside its 0.
      this.readable = false;
      this.note.textContent = "no elements: no values, statistics or pictures";
      this.table.replaceChildren();
      this.pageLine.textContent = "";
      this.setState("none");
      return;
    }
    this.note.textContent = blocks ? `${a.dtype} blocks, dequantised by the core (${a.block} elements in ${a.blockBytes} bytes each)` : "";
    this.described = blocks ? this.wasm.describeDType("<f4") : this.wasm.describeDType(a.descr);
    this.slice = this.heatPlan(a.shape.slice(0, -2).map(() => 0));
    this.sliceForm.hidden = !(this.slice && this.slice.lead.length > 0);
    this.sliceInput.value = this.slice?.lead.join(", ") ?? "";
    this.box.scrollIntoView({ block: "nearest" });
    if (!(await this.showPage(0))) return;
    this.run("all").catch(() => {});
  }

  /** Says why the panel could not read what it was asked for (its state "error"). */
  failed(err) {
    this.setState("error");
    this.note.textContent = `Could not read ${this.array?.name ?? "the array"}: ${err?.message ?? err}`;
    this.note.classList.add("error");
  }

  // ------------------------------------------------------------ the table

  /**
   * Shows the page holding element `k` (clamped), rows of COLS in C order;
   * false (and the panel says why) where it could not be read.
   */
  async showPage(k) {
    if (!this.array || !this.readable) return false;
    const n = this.total;
    const first = Math.max(0, Math.min(Math.floor(Math.min(k, n - 1) / COLS) * COLS, Math.floor((n - 1) / COLS) * COLS));
    const last = Math.min(n, first + PAGE);
    const seq = ++this.pageSeq;
    let values;
    try {
      values = await this.readValues(first, last);
    } catch (err) {
      if (seq === this.pageSeq) this.failed(err);
      return false;
    }
    if (seq !== this.pageSeq) return true;
    this.first = first;
    this.draw(first, last, values);
    return true;
  }

  /** Elements first..last (C order) of the array, as the core reads them (a typed array). */
  async readValues(first, last) {
    const a = this.array;
    const read = (s, e) => this.view.source.read(a.offset + s, a.offset + e);
    if (a.blockBytes !== undefined) {
      const b0 = Math.floor(first / a.block);
      const b1 = Math.ceil(last / a.block);
      const out = this.wasm.dequantize(a.ggml, await read(b0 * a.blockBytes, b1 * a.blockBytes));
      return out.subarray(first - b0 * a.block, last - b0 * a.block);
    }
    const size = this.described.size;
    const n = last - first;
    let bytes;
    if (!a.fortran || a.shape.length < 2) {
      bytes = await read(first * size, last * size);
    } else {
      // Fortran order: each element's bytes at its stored offset (the core's
      // Layout strides), those near each other read as one range.
      const { c, stored } = this.view.stridesOf(a);
      const at = [];
      for (let k = first; k < last; k++) {
        const index = indexAt(k * size, a.shape, c);
        at.push(index.reduce((o, i, d) => o + i * stored[d], 0));
      }
      const sorted = [...new Set(at)].sort((x, y) => x - y);
      const ranges = [];
      for (const o of sorted) {
        const r = ranges.at(-1);
        if (r && o - r.end < GAP) r.end = o + size;
        else ranges.push({ start: o, end: o + size });
      }
      for (const r of ranges) r.bytes = await read(r.start, r.end);
      bytes = new Uint8Array(n * size);
      at.forEach((o, i) => {
        const r = ranges.find((x) => o >= x.start && o < x.end);
        bytes.set(r.bytes.subarray(o - r.start, o - r.start + size), i * size);
      });
    }
    const buf = new this.wasm.Buffer(bytes.length);
    try {
      buf.setBytes(0, bytes);
      return buf.read(a.descr, { offset: 0, shape: [n] });
    } finally {
      buf.free();
    }
  }

  draw(first, last, values) {
    const a = this.array;
    const head = el("tr", {}, el("th", { scope: "col", text: "index" }),
      ...Array.from({ length: COLS }, (_, j) => el("th", { scope: "col", text: `+${j}` })));
    const rows = [];
    for (let r = first; r < last; r += COLS) {
      const cells = [];
      for (let k = r; k < Math.min(last, r + COLS); k++) {
        const v = values[k - first];
        const text = formatValue(v, this.described);
        cells.push(el("td", {
          class: k === this.hit ? "hit" : "",
          "data-testid": `tensor-cell-${k - first}`,
          "data-flat": k,
          "data-index": JSON.stringify(unravel(k, a.shape)),
          "data-exact": Object.is(v, -0) ? "-0" : String(v),
          title: `${a.name}[${unravel(k, a.shape).join(", ")}] (element ${k} in C order) = ${text}`,
          text,
        }));
      }
      rows.push(el("tr", {}, el("th", { scope: "row", text: `[${unravel(r, a.shape).join(", ")}]` }), ...cells));
    }
    this.table.replaceChildren(el("caption", { class: "vh", text: `Values of ${a.name} in C order` }), el("thead", {}, head), el("tbody", {}, ...rows));
    this.table.dataset.first = String(first);
    this.table.dataset.last = String(last);
    this.pageLine.textContent = `elements ${first.toLocaleString("en")}..${last.toLocaleString("en")} of ${this.total.toLocaleString("en")} (C order)`;
  }

  /** Jumps to the index typed: a multi-index ("3, 4" or "[3, 4]") or a flat one ("123"). */
  async jump(input) {
    const a = this.array;
    if (!a || !this.readable) return;
    let index;
    try {
      index = parseIntList(input.value, "index") ?? [];
    } catch (err) {
      input.setCustomValidity(err.message);
      input.reportValidity();
      return;
    }
    let k;
    if (index.length === 1 && a.shape.length !== 1) k = index[0];
    else if (index.length === a.shape.length && index.every((i, d) => i >= 0 && i < a.shape[d])) k = flatOf(index, a.shape);
    if (!(Number.isSafeInteger(k) && k >= 0 && k < this.total)) {
      input.setCustomValidity(`a flat index 0..${this.total - 1}, or ${a.shape.length} indices below (${a.shape.join(", ")})`);
      input.reportValidity();
      return;
    }
    input.setCustomValidity("");
    this.hit = k;
    await this.showPage(k);
  }

  // ------------------------------------------------- statistics and pictures

  /**
   * What the heatmap draws, for leading indices `lead`: a 2-D array (a
   * Fortran-order one as stored, drawn transposed), the 2-D slice
   * `[...lead, :, :]` of a C-order n-d one, or an image (H, W, 1|3|4) as
   * H rows of W pixels (each the mean or max of its channels); null when
   * there is none. `start` and `nbytes`: its bytes in the tensor;
   * `first`: its first element.
   */
  heatPlan(lead) {
    const a = this.array;
    const s = a.shape;
    const blocks = a.blockBytes !== undefined;
    const elementBytes = blocks ? null : this.described.size;
    const bytesOf = (k) => (blocks ? (k / a.block) * a.blockBytes : k * elementBytes);
    let rows, cols, transposed = false, label = "", start = 0, heatLead = [];
    if (s.length < 2) return null;
    if (s.length === 3 && [1, 3, 4].includes(s[2]) && !a.fortran) {
      [rows, cols] = [s[0], s[1] * s[2]];
      label = `an image ${s[0]} × ${s[1]} with ${s[2]} channel${s[2] === 1 ? "" : "s"}: each pixel over its channels`;
      const { outH, outW } = heatSize(rows, s[1]);
      if (blocks && (rows * cols) % a.block) return null;
      return { rows, cols, outH, outW, transposed, label, start, first: 0, nbytes: bytesOf(rows * cols), lead: [] };
    }
    if (s.length === 2) {
      [rows, cols] = a.fortran ? [s[1], s[0]] : s;
      transposed = a.fortran;
    } else {
      if (a.fortran) return null;
      heatLead = lead;
      [rows, cols] = s.slice(-2);
      const leadFlat = lead.reduce((f, i, d) => f * s[d] + i, 0);
      start = leadFlat * rows * cols;
      label = `the slice [${lead.join(", ")}, :, :]`;
    }
    if (rows * cols === 0) return null;
    if (blocks && (rows * cols) % a.block) return null;
    const { outH, outW } = heatSize(rows, cols);
    return { rows, cols, outH, outW, transposed, label, start: bytesOf(start), first: start, nbytes: bytesOf(rows * cols), lead: heatLead };
  }

  /** The n-d array's slice typed in the slice box: its heatmap alone is fetched and drawn. */
  chooseSlice() {
    const a = this.array;
    let lead;
    try {
      lead = parseIntList(this.sliceInput.value, "slice") ?? [];
    } catch (err) {
      this.sliceInput.setCustomValidity(err.message);
      this.sliceInput.reportValidity();
      return;
    }
    const want = a.shape.length - 2;
    if (lead.length !== want || lead.some((i, d) => !(i >= 0 && i < a.shape[d]))) {
      this.sliceInput.setCustomValidity(`${want} indices below (${a.shape.slice(0, want).join(", ")})`);
      this.sliceInput.reportValidity();
      return;
    }
    this.sliceInput.setCustomValidity("");
    this.slice = this.heatPlan(lead);
    this.run("heat").catch(() => {});
  }

  worker_() {
    if (!this.worker) {
      this.worker = new Worker(new URL("./tensor-worker.js", import.meta.url), { type: "module" });
      // Its ranges are read by a second worker, so that its arithmetic
      // never stalls a download; the two talk through a port of their own.
      this.fetcher = new Worker(new URL("./fetch-worker.js", import.meta.url), { type: "module" });
      const channel = new MessageChannel();
      this.fetcher.postMessage({ port: channel.port2 }, [channel.port2]);
      this.worker.postMessage({ type: "fetcher", port: channel.port1 }, [channel.port1]);
      this.worker.onmessage = (e) => this.onMessage(e.data);
      this.worker.onerror = (e) => {
        for (const [id, r] of this.runs) r.reject(new Error(e.message ?? "the worker failed"));
        this.runs.clear();
      };
    }
    return this.worker;
  }

  /**
   * The statistics of the tensor: `kind` "all" (statistics, histogram and
   * heatmap, as opening it does), "heat" (the heatmap's slice alone) or
   * "fetch" (the same ranges fetched and nothing computed: the benchmark's
   * baseline). A whole run ("all") goes to the GPU where there is one that
   * reads the dtype (`options.engine: "wasm"` says not), and with "compare
   * with wasm" ticked to both, one after the other; anything else streams
   * the tensor's bytes through the worker, a slice's heatmap included
   * (only its bytes read: loadToGpu loads whole tensors). Resolves with
   * the worker's "done" message for a wasm run, `{ engine: "gpu", ms,
   * loadMs, computeMs }` for a GPU one, and `{ engine: "compare", gpuMs,
   * wasmMs, agree }` for both. `options` (for tests): `chunk` (bytes per
   * request), `cacheBytes` (the largest tensor whose chunks the
   * histogram's pass takes from memory), `opfs: false` (fetch again rather
   * than keep the bytes in the browser's storage), `engine`,
   * `gpuBufferBytes` (the GPU's buffers no bigger: a tensor split).
   */
  run(kind = "all", options = {}) {
    const a = this.array;
    if (!a || !this.readable) return Promise.reject(new Error("no readable array"));
    this.cancel();
    const id = ++this.runId;
    const controller = new AbortController();
    this.current = { id, controller };
    const blocks = a.blockBytes !== undefined;
    const want = options.chunk ?? CHUNK;
    const chunk = blocks ? Math.max(1, Math.floor(want / a.blockBytes)) * a.blockBytes : want;
    const heat = this.slice && kind !== "fetch" ? this.slice : null;
    const range = kind === "heat" ? { start: a.offset + heat.start, nbytes: heat.nbytes } : { start: a.offset, nbytes: a.nbytes };
    const message = {
      type: "run", id, source: this.view.source.spec, ...range, chunk,
      descr: blocks ? null : a.descr, qtype: blocks ? a.ggml : null, blockBytes: a.blockBytes, blockElements: a.block,
      stats: kind === "all", hist: kind === "all", fetchOnly: kind === "fetch",
      cacheBytes: options.cacheBytes, opfs: options.opfs,
      heat: heat ? { rows: heat.rows, cols: heat.cols, outH: heat.outH, outW: heat.outW, start: kind === "heat" ? 0 : heat.start, nbytes: heat.nbytes } : null,
    };
    if (kind === "all") {
      this.pictures.clear("Reading the whole tensor …");
      if (!heat) this.pictures.noHeatmap(a.shape.length < 2 ? "A 1-D array: no heatmap." : "No heatmap for this array (a Fortran-order array of more than 2 axes, or an empty one).");
      this.compareTable.hidden = true;
      this.compared = null;
    }
    this.setState("running");
    this.progress.value = 0;
    this.progressText.textContent = "";
    this.cancelButton.disabled = false;
    return this.execute({ id, kind, message, heat, options, signal: controller.signal });
  }

  /** `run`'s work, once its message is made: the GPU's, the worker's or both, then the panel's last lines. */
  async execute({ id, kind, message, heat, options, signal }) {
    const mine = () => id === this.runId;
    const a = this.array;
    try {
      let gpu = null;
      if (kind === "all") {
        gpu = options.engine === "wasm" ? { reason: "Statistics by wasm (asked for)." } : await this.gpuFor(a);
        signal.throwIfAborted();
        if (!mine()) return null;
        const quantised = a.blockBytes !== undefined ? `, its ${a.dtype} blocks dequantised there` : "";
        this.engine.textContent = gpu.device ? `Statistics, histogram and heatmap on the GPU (WebGPU, ${gpu.adapter})${quantised}.` : gpu.reason;
        if (options.engine !== "wasm") {
          this.compareBox.disabled = !gpu.device;
          this.compareBox.parentElement.title = gpu.device ? "Compute the statistics both ways, and show both" : gpu.reason;
        }
      }
      const compare = Boolean(gpu?.device) && this.compareBox.checked;
      let onGpu = null;
      if (gpu?.device) {
        try {
          onGpu = await this.runGpu(id, gpu, heat, signal, compare ? "WebGPU: " : "", options.gpuBufferBytes);
        } catch (err) {
          if (signal.aborted || !mine()) throw err;
          // Said, and computed by wasm instead.
          this.engine.textContent = `The GPU run failed (${err?.message ?? err}): statistics by wasm.`;
        }
      }
      let byWasm = null;
      let wasmFailed = "";
      if (!onGpu || compare) {
        try {
          byWasm = await this.runWasm(message, heat, signal, { draw: !onGpu, prefix: onGpu ? "wasm: " : "" });
        } catch (err) {
          // A comparison whose wasm half failed: the GPU's results stay, and the line says why.
          if (!onGpu || cancelledError(err) || !mine()) throw err;
          wasmFailed = err?.message ?? String(err);
        }
      }
      if (!mine()) return null;
      this.setState("done");
      this.progress.value = 1;
      if (onGpu && byWasm) return this.compareDone(onGpu, byWasm);
      if (onGpu) {
        const done = this.gpuDone(onGpu);
        if (wasmFailed) this.progressText.textContent += `; no comparison: wasm failed (${wasmFailed})`;
        return done;
      }
      this.wasmDone(byWasm.message);
      return byWasm.message;
    } catch (err) {
      if (mine()) this.stopped(err);
      throw err;
    } finally {
      if (this.current?.id === id) this.current = null;
    }
  }

  /** `{ device: true, adapter, format }` where the GPU computes array `a`'s statistics, else `{ reason }`. */
  async gpuFor(a) {
    this.gpuInfo ??= this.gpuCall({ type: "device" });
    const gpu = await this.gpuInfo;
    if (!gpu.limits) return { reason: gpu.reason };
    const format = this.described.name;
    const reason = gpuRefusal(this.wasm, gpu.limits, a, format, this.total);
    return reason ? { reason } : { device: true, adapter: gpu.adapter, format };
  }

  /**
   * Asks the GPU's worker (`message`: its "device" or "run"); resolves with
   * its answer, rejects with its error (`cancelled: true` for a cancel).
   * `onProgress` takes its progress; `signal` cancels a run.
   */
  gpuCall(message, onProgress = null, signal = null) {
    if (!this.gpuWorker) {
      this.gpuWorker = new Worker(new URL("./tensor-gpu-worker.js", import.meta.url), { type: "module" });
      this.gpuWorker.onmessage = ({ data: m }) => {
        const call = this.gpuCalls.get(m.id);
        if (!call) return;
        if (m.type === "progress") {
          call.onProgress?.(m);
          return;
        }
        this.gpuCalls.delete(m.id);
        if (m.type === "cancelled" || m.type === "error") call.reject(Object.assign(new Error(m.message), { cancelled: m.type === "cancelled" }));
        else call.resolve(m.type === "done" ? m.result : m);
      };
      this.gpuWorker.onerror = (e) => {
        for (const call of this.gpuCalls.values()) call.reject(new Error(e.message ?? "the GPU's worker failed"));
        this.gpuCalls.clear();
        // A worker that failed to start (its module, say) is made again next time.
        this.gpuWorker = null;
        this.gpuInfo = null;
      };
    }
    const id = ++this.gpuCallId;
    return new Promise((resolve, reject) => {
      this.gpuCalls.set(id, { resolve, reject, onProgress });
      this.gpuWorker.postMessage({ ...message, id });
      signal?.addEventListener("abort", () => this.gpuWorker?.postMessage({ type: "cancel", id }), { once: true });
    });
  }

  /** The statistics on the GPU (tensor-gpu.js's, in its worker), drawn; `prefix` heads its progress lines. */
  async runGpu(id, gpu, heat, signal, prefix, maxBufferSize) {
    const a = this.array;
    const mine = () => id === this.runId;
    const spec = this.view.source.spec;
    const quantised = a.blockBytes !== undefined;
    const started = performance.now();
    signal.throwIfAborted();
    const options = {
      source: spec.url ?? spec.file,
      name: a.name,
      quantised,
      format: gpu.format,
      dtype: quantised ? "<f4" : a.descr,
      count: this.total,
      heat: heat && { rows: heat.rows, cols: heat.cols, outH: heat.outH, outW: heat.outW, first: heat.first },
      maxBufferSize,
    };
    const onProgress = ({ loaded, total }) => {
      if (!mine()) return;
      this.progress.value = loaded / total;
      this.progressText.textContent = `${prefix}${mib(loaded)} of ${mib(total)} MiB to the GPU${loaded === total ? ", computing …" : ""}`;
    };
    const result = await this.gpuCall({ type: "run", options }, onProgress, signal);
    result.ms = performance.now() - started;
    result.nbytes = a.nbytes;
    if (mine()) {
      this.pictures.showStats(result.stats);
      if (result.hist?.refused) this.pictures.noHistogram(`No histogram: ${result.hist.refused}.`);
      else if (result.hist) this.pictures.showHistogram(result.hist.counts, result.hist.edges);
      if (heat && result.heat) this.pictures.showHeatmap(result.heat, { ...heat, label: `${heat.label ? `${heat.label}, ` : ""}computed on the GPU` });
    }
    return result;
  }

  /**
   * Streams the tensor's bytes through the worker: resolves with `{
   * message, stats, hist, heat, ms }` (its "done" message, what it sent, and
   * the time the page waited), which it draws with `draw` (`heat`: the
   * heatmap's plan); rejects on a cancel (`cancelled: true`, `requests`) or
   * an error.
   */
  runWasm(message, heat, signal, { draw, prefix }) {
    const { id } = message;
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(Object.assign(new Error("cancelled"), { cancelled: true, requests: 0 }));
        return;
      }
      this.runs.set(id, { resolve, reject, heat, draw, prefix, started: performance.now() });
      this.worker_().postMessage(message);
      signal.addEventListener("abort", () => this.worker?.postMessage({ type: "cancel", id }), { once: true });
    });
  }

  /** Stops the run in progress: the worker asks for no more ranges, the GPU's load and shaders stop. */
  cancel() {
    const run = this.current;
    if (!run || run.controller.signal.aborted) return;
    run.controller.abort();
    this.progressText.textContent = "Cancelling …";
  }

  setState(s) {
    this.box.dataset.state = s;
    this.cancelButton.disabled = s !== "running";
  }

  /** A wasm run's last lines: how its bytes were read. */
  wasmDone(m) {
    const secs = (m.ms / 1000).toFixed(2);
    const bytes = (x) => `${mib(x)} MiB`;
    const rest = `, for the ${(m.left ?? 0).toLocaleString("en")} elements near its edges`;
    const how = {
      tally: "; the histogram counted in the one pass (by the elements' leading bits)",
      opfs: `; the histogram's pass read them back from the browser's storage (OPFS, ${bytes(m.spilledBytes)} written)${rest}`,
      memory: `; the histogram's pass took them from memory${rest}`,
      refetch: `; the histogram's pass fetched ${bytes(m.refetchedBytes)} again (${m.why})${rest}`,
    }[m.from] ?? "";
    this.progressText.textContent = `${bytes(m.fetched)} in ${m.requests} requests, ${secs} s${how}`;
    Object.assign(this.box.dataset, {
      engine: "wasm", ms: String(m.ms), pass1: String(m.pass1), requests: String(m.requests), fetched: String(m.fetched), wasm: String(m.wasmBytes),
      second: m.from ?? "", left: String(m.left ?? ""), spilled: String(m.spilledBytes ?? 0), refetched: String(m.refetchedBytes), write: String(m.writeMs), read: String(m.readMs),
    });
  }

  /** A GPU run's last lines. */
  gpuDone(g) {
    this.progressText.textContent = `${mib(g.nbytes)} MiB to the GPU in ${(g.loadMs / 1000).toFixed(2)} s, computed there in ${(g.computeMs / 1000).toFixed(2)} s`;
    Object.assign(this.box.dataset, { engine: "gpu", ms: String(g.ms), load: String(g.loadMs), compute: String(g.computeMs) });
    return { engine: "gpu", ms: g.ms, loadMs: g.loadMs, computeMs: g.computeMs };
  }

  /** Both runs' results side by side, with their times and whether they agree. */
  compareDone(g, w) {
    const wasm = { stats: w.stats, hist: w.hist, heat: w.heat, ms: w.ms };
    const { rows, agree } = comparison(g, wasm);
    this.compared = { gpu: g, wasm, rows, agree };
    const ms = (x) => `${Math.round(x).toLocaleString("en")} ms`;
    const shown = (v) => (Number.isSafeInteger(v) ? v.toLocaleString("en") : typeof v === "number" ? readable(v) : String(v ?? "—"));
    const head = el("tr", {}, el("th", { scope: "col", text: "" }), el("th", { scope: "col", text: "WebGPU" }),
      el("th", { scope: "col", text: "wasm" }), el("th", { scope: "col", text: "agree" }));
    const time = el("tr", { "data-testid": "tensor-compare-time" }, el("th", { scope: "row", text: "time" }),
      el("td", { text: `${ms(g.ms)} (load ${ms(g.loadMs)}, compute ${ms(g.computeMs)})` }), el("td", { text: ms(w.ms) }), el("td", { text: "" }));
    const body = rows.map((r) => el("tr", { "data-testid": `tensor-compare-${r.what}`, "data-agree": String(r.agree), class: r.agree ? "" : "differ" },
      el("th", { scope: "row", text: r.what }), el("td", { text: shown(r.gpu) }), el("td", { text: shown(r.wasm) }),
      el("td", { text: r.agree ? (r.note ? `yes (${r.note})` : "yes") : `no${r.note ? ` (${r.note})` : ""}` })));
    this.compareTable.replaceChildren(el("caption", { text: "WebGPU against wasm, the same tensor" }), el("thead", {}, head), el("tbody", {}, time, ...body));
    this.compareTable.hidden = false;
    this.progressText.textContent = `WebGPU ${ms(g.ms)}, wasm ${ms(w.ms)}: ${agree ? "they agree" : "they differ"}`;
    Object.assign(this.box.dataset, { engine: "gpu", ms: String(g.ms), load: String(g.loadMs), compute: String(g.computeMs), wasmMs: String(w.ms), agree: String(agree) });
    return { engine: "compare", gpuMs: g.ms, wasmMs: w.ms, agree };
  }

  /** A run's end by a cancel or an error: the panel says which. */
  stopped(err) {
    if (cancelledError(err)) {
      this.setState("cancelled");
      this.progressText.textContent = err.requests !== undefined ? `Cancelled after ${err.requests} requests.` : "Cancelled.";
      if (!this.pictures.stats.dataset.count) this.pictures.clear("Cancelled.");
    } else {
      const message = err?.message ?? String(err);
      this.setState("error");
      this.progressText.textContent = `Failed: ${message}`;
      this.pictures.clear(`The statistics failed: ${message}`);
    }
  }

  onMessage(m) {
    const r = this.runs.get(m.id);
    if (!r) return;
    const mine = m.id === this.runId;
    const show = mine && r.draw;
    if (m.type === "progress" && mine) {
      this.progress.value = m.done / m.total;
      const pass2 = { opfs: " (the histogram's pass, read back from the browser's storage)", memory: " (the histogram's pass, from memory)", refetch: " (the histogram's pass, fetched again)" };
      this.progressText.textContent = `${r.prefix}${mib(m.done)} of ${mib(m.total)} MiB${m.pass === 2 ? pass2[m.from] : ""}, ${m.requests} requests`;
    } else if (m.type === "stats") {
      r.stats = m.result;
      if (show) this.pictures.showStats(m.result);
    } else if (m.type === "hist") {
      r.hist = { counts: Array.from(m.counts), edges: Array.from(m.edges) };
      if (show) this.pictures.showHistogram(m.counts, m.edges);
    } else if (m.type === "hist-refused") {
      // The statistics and heatmap go on: only the bins are refused, as numpy refuses them.
      r.hist = { refused: m.message };
      if (show) this.pictures.noHistogram(`No histogram: ${m.message}.`);
    } else if (m.type === "heat") {
      r.pictures = { mean: m.mean, max: m.max };
      if (show) this.pictures.showHeatmap({ mean: m.mean, max: m.max }, r.heat);
    } else if (m.type === "heat-refused" && show) {
      const { rows, cols } = r.heat;
      this.pictures.noHeatmap(`No heatmap of ${rows.toLocaleString("en")} × ${cols.toLocaleString("en")} elements: ${m.message}`);
    } else if (m.type === "done") {
      this.runs.delete(m.id);
      r.resolve({ message: m, stats: r.stats, hist: r.hist, heat: r.pictures ?? null, ms: performance.now() - r.started });
    } else if (m.type === "cancelled" || m.type === "error") {
      this.runs.delete(m.id);
      const cancelled = m.type === "cancelled";
      r.reject(Object.assign(new Error(cancelled ? "cancelled" : m.message), { cancelled, requests: m.requests }));
    }
  }
}
