// The file view: a file of any size, read only where it is shown (through
// a source of sources.js), drawn as a virtualised grid of 16-byte rows. The
// arrays its header describes (.npy, safetensors or GGUF, read by the core's
// readHeader in the wasm package, the checks bl.load uses: header-reader.js)
// are drawn as bands over the bytes and listed; a misaligned array is
// marked. A GGUF file's metadata is listed, and the bytes of a quantised
// tensor are coloured by its block's fields (d, dmin, scales, qs, ...: the
// core's ggml table), with a legend for the blocks in view (those drawings:
// file-header-view.js). Only the rows on screen and the header's first bytes
// are held in memory. A data inspector beside the rows (inspector.js) reads
// the selected byte as every dtype; the arrow keys move the selection and
// scroll, reading only rows not read.

import { el } from "./dom.js";
import { nextTask } from "./tasks.js";
import { flatOf, indexAt, readingsOf, stridesFor } from "./numbers.js";
import { VirtualRows } from "./vtable.js";
import { Inspector } from "./inspector.js";
import { TensorPanel } from "./tensor.js";
import { HeaderReadError, HeaderWorker, readHeader } from "./header-reader.js";
import {
  blockFields, drawBands, drawLegend, drawMetadata, drawTable, isBlocks, isMisaligned,
} from "./file-header-view.js";

const ROW = 16; // bytes per row
const ROW_PX = 22; // a row's height in CSS pixels (.frow in style.css)
const VISIBLE = 24; // rows drawn
// Browsers cap an element's height (Chromium at about 33.5 million pixels):
// past this, the scroll position maps to rows in proportion.
const MAX_SCROLL_PX = 8_000_000;
const BATCH = 2000; // arrays the header worker sends a message (a short task to take in)
const HUES = [210, 28, 140, 330, 265, 95, 0, 185, 50, 300];
const INSPECT = 8; // bytes the inspector reads from the selection: the widest dtype's
const NONE = Object.freeze({ row: -1, promise: Promise.resolve() });


export class FileView {
  constructor(wasm) {
    this.wasm = wasm;
    this.source = null;
    this.arrays = []; // sorted by offset, each with its hue
    this.seq = 0; // the latest render; older reads are dropped
    this.firstRow = -1;
    this.target = NONE; // the row being drawn (or drawn last) and its promise
    this.held = null; // { start, bytes }: the rows drawn, read once
    this.selected = null; // the byte offset the inspector reads
    this.moves = Promise.resolve(); // the selection's moves, one after another
    this.inspectSeq = 0;
    this.layouts = new Map(); // array name → its strides, from the core's Layout
    this.pin = null; // { row, top }: the row a jump showed, at scrollTop `top`
    this.scroller = document.getElementById("file-scroll");
    this.inspector = new Inspector(wasm, document.getElementById("file-inspector"), "file-inspector", readingsOf(wasm.dtypes()));
    this.tensor = new TensorPanel(wasm, this);
    this.headers = new HeaderWorker();
    this.openSeq = 0;
    this.arrayRows = new VirtualRows(document.getElementById("file-arrays-scroll"), document.querySelector("#file-arrays tbody"), 8);
    this.metaRows = new VirtualRows(document.getElementById("file-meta-scroll"), document.querySelector("#file-meta tbody"), 5);
    this.spacer = el("div", { class: "fspacer" });
    this.window = el("div", { class: "fwindow", role: "presentation" });
    this.rows = [];
    for (let r = 0; r < VISIBLE; r++) {
      const offset = el("span", { class: "foff" });
      const bytes = [];
      const line = el("div", { class: "frow", "data-testid": `file-row-${r}` }, offset);
      for (let c = 0; c < ROW; c++) {
        const b = el("span", { class: "fb", "data-col": c });
        bytes.push(b);
        line.append(b);
      }
      const ascii = el("span", { class: "fascii" });
      line.append(ascii);
      this.rows.push({ line, offset, bytes, ascii });
      this.window.append(line);
    }
    this.scroller.replaceChildren(this.window, this.spacer);
    this.scroller.addEventListener("scroll", () => this.render());
    this.window.addEventListener("click", (e) => {
      const cell = e.target.closest?.(".fb");
      const line = cell?.closest(".frow");
      if (!cell || !this.source) return;
      const b = Number(line.dataset.offset) + Number(cell.dataset.col);
      if (b >= this.source.size) return;
      this.scroller.focus({ preventScroll: true });
      this.select(b);
    });
    this.scroller.addEventListener("keydown", (e) => {
      const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -ROW, ArrowDown: ROW }[e.key];
      if (step === undefined || !this.source?.size || e.altKey || e.ctrlKey || e.metaKey) return;
      e.preventDefault(); // the keys move the selection, not the scroll position
      if (this.selected === null) {
        this.select(Math.max(0, this.target.row) * ROW); // the first byte drawn
        return;
      }
      const to = this.selected + step;
      if (to < 0 || to >= this.source.size) return; // nothing before the first byte or past the last
      this.select(to);
    });
    document.getElementById("file-goto").addEventListener("submit", (e) => {
      e.preventDefault();
      const input = document.getElementById("file-goto-offset");
      const text = input.value.trim();
      const offset = /^0x[0-9a-f]+$/i.test(text) ? parseInt(text, 16) : Number(text);
      if (!Number.isSafeInteger(offset) || offset < 0 || offset >= this.source.size) {
        input.setCustomValidity(`an offset from 0 to ${this.source.size - 1}`);
        input.reportValidity();
        return;
      }
      input.setCustomValidity("");
      this.jumpTo(offset);
    });
    // A refused offset's message goes once it is edited: the browser runs no
    // submit handler while the box holds one.
    const gotoBox = document.getElementById("file-goto-offset");
    gotoBox.addEventListener("input", () => gotoBox.setCustomValidity(""));
  }

  get rowCount() {
    return Math.max(1, Math.ceil(this.source.size / ROW));
  }

  get lastFirstRow() {
    return Math.max(0, this.rowCount - VISIBLE);
  }

  /** The scrollable height: every row's, or MAX_SCROLL_PX scaled. */
  get scrollPx() {
    return Math.min(this.rowCount * ROW_PX, MAX_SCROLL_PX);
  }

  rowAt(scrollTop) {
    // Where a jump put the view: scaled positions round, so the row it
    // asked for is kept until the view scrolls again.
    if (this.pin && Math.abs(scrollTop - this.pin.top) < 1) return this.pin.row;
    const room = this.scrollPx - this.scroller.clientHeight;
    const row = this.rowCount * ROW_PX <= MAX_SCROLL_PX
      ? Math.floor(scrollTop / ROW_PX)
      : Math.round((scrollTop / Math.max(1, room)) * this.lastFirstRow);
    return Math.min(Math.max(0, row), this.lastFirstRow);
  }

  scrollTopFor(row) {
    const room = this.scrollPx - this.scroller.clientHeight;
    return this.rowCount * ROW_PX <= MAX_SCROLL_PX
      ? row * ROW_PX
      : (row / Math.max(1, this.lastFirstRow)) * room;
  }

  async open(source) {
    const seq = ++this.openSeq;
    this.source = source;
    this.firstRow = -1;
    this.target = NONE;
    this.held = null;
    this.selected = null;
    this.layouts.clear();
    this.inspector.clear();
    this.tensor.close();
    this.pin = null;
    const section = document.getElementById("file");
    section.hidden = false;
    // The last file's lists go now: a big header takes a while.
    this.arrays = [];
    this.gguf = null;
    document.getElementById("file-summary").textContent = "";
    document.getElementById("file-bands").replaceChildren();
    this.arrayRows.set(0, () => [], () => null);
    this.metaRows.set(0, () => [], () => null);
    document.getElementById("file-meta").hidden = true;
    document.getElementById("file-more").textContent = `Reading the header of ${source.name} …`;
    let header = null;
    let note = "";
    let arrays = [];
    try {
      // Read by the header worker, off this thread: a header of 100,000
      // tensors or a million keys takes seconds.
      header = await readHeader(this.headers, source);
      for (let from = 0; from < header.arrayCount; from += BATCH) {
        const part = await this.headers.items("arrays", from, from + BATCH);
        if (seq !== this.openSeq) return;
        // Sorted by offset (the worker's order), each coloured by its place
        // in the header: a batch's work in its own task (100,000 arrays
        // took 30 ms at once).
        for (const a of part) {
          a.hue = HUES[a.index % HUES.length];
          if (isBlocks(a)) a.blockFields = blockFields(a);
          arrays.push(a);
        }
      }
    } catch (err) {
      if (seq !== this.openSeq) return; // another file is opening
      header = null;
      arrays = [];
      note = err instanceof HeaderReadError
        ? `its header could not be read (${err.message}): its raw bytes`
        : `no .npy, safetensors or GGUF header (${err?.message ?? err}): its raw bytes`;
    }
    if (seq !== this.openSeq) return;
    this.arrays = arrays;
    const keys = header?.ggufCount ?? null;
    this.gguf = keys === null ? null : { length: keys };
    const version = header?.format === "npy" ? ` ${header.version.join(".")}` : header?.format === "gguf" ? ` ${header.version[0]}` : "";
    const what = header ? `${header.format}${version}` : "a file";
    const keyCount = keys !== null ? `, ${keys.toLocaleString("en")} metadata key${keys === 1 ? "" : "s"}` : "";
    // The bands, then the rows, each in a task of its own: a header of
    // 100,000 arrays takes some 40 ms for each on a 2-core machine.
    if (this.arrays.length > BATCH) {
      await nextTask();
      if (seq !== this.openSeq) return;
    }
    drawBands(this);
    if (this.arrays.length > BATCH) {
      await nextTask();
      if (seq !== this.openSeq) return;
    }
    this.spacer.style.height = `${this.scrollPx}px`;
    this.scroller.scrollTop = 0;
    // The lists' first rows drawn before the summary says the file is open.
    await Promise.allSettled([drawTable(this), drawMetadata(this)]);
    if (seq !== this.openSeq) return;
    document.getElementById("file-summary").textContent =
      `${source.name}: ${what}, ${source.size.toLocaleString("en")} bytes, ${this.arrays.length.toLocaleString("en")} array${this.arrays.length === 1 ? "" : "s"}${keyCount}`
      + (note ? `; ${note}` : "")
      + (header?.metadata?.length ? `; metadata ${header.metadata.map(([k, v]) => `${k}=${v}`).join(", ").slice(0, 200)}` : "");
    await this.render();
    section.scrollIntoView({ block: "start" });
  }

  /** Scrolls so that the row holding byte `offset` is the first one drawn, and selects that byte. */
  async jumpTo(offset) {
    this.selected = offset;
    await this.scrollToRow(Math.min(Math.floor(offset / ROW), this.lastFirstRow));
    await this.inspect();
  }

  async scrollToRow(row) {
    this.scroller.scrollTop = this.scrollTopFor(row);
    this.pin = { row, top: this.scroller.scrollTop };
    await this.render(row);
  }

  /** Rows wholly inside the scroller: those a selection may be on without a scroll. */
  get rowsOnScreen() {
    return Math.min(VISIBLE, Math.max(1, Math.floor(this.scroller.clientHeight / ROW_PX)));
  }

  /**
   * Selects byte `b`: scrolls by as few rows as it takes to show it (the
   * rows already read are not read again), then reads it in the inspector.
   */
  select(b) {
    this.selected = b;
    this.markSelection();
    // One move at a time: each reads after the last has drawn its rows, so
    // that quick key presses never ask for a row twice.
    const move = this.moves.then(() => this.follow());
    this.moves = move.catch(() => {});
    return move;
  }

  /** Scrolls to the selection, if it is off screen, and reads it. */
  async follow() {
    // Keys pressed while the rows were read may have moved it on: again until it is shown.
    for (;;) {
      const row = Math.floor(this.selected / ROW);
      const first = this.target.row;
      const shown = this.rowsOnScreen;
      let want = first;
      if (first === -1 || row < first) want = Math.min(row, this.lastFirstRow);
      else if (row >= first + shown) want = Math.min(row - shown + 1, this.lastFirstRow);
      if (want === first) break;
      await this.scrollToRow(want);
    }
    this.markSelection();
    await this.inspect();
  }

  /** Marks the selected byte among the rows drawn. */
  markSelection() {
    for (const { line, bytes } of this.rows) {
      const base = Number(line.dataset.offset);
      for (let c = 0; c < ROW; c++) {
        const on = base + c === this.selected;
        bytes[c].classList.toggle("sel", on);
        if (on) bytes[c].setAttribute("aria-selected", "true");
        else bytes[c].removeAttribute("aria-selected");
      }
    }
  }

  /**
   * Bytes `start..end` of the file: those inside the rows drawn from
   * them, and only the rest read (one range before them, one after).
   * A short read gives fewer bytes, as `source.read` does.
   */
  async readAround(start, end) {
    const held = this.held;
    const lo = held ? Math.max(start, held.start) : end;
    const hi = held ? Math.min(end, held.start + held.bytes.length) : end;
    if (lo >= hi) return this.source.read(start, end);
    const before = start < lo ? await this.source.read(start, lo) : new Uint8Array(0);
    if (before.length < lo - start) return before;
    const after = hi < end ? await this.source.read(hi, end) : new Uint8Array(0);
    const out = new Uint8Array(before.length + (hi - lo) + after.length);
    out.set(before);
    out.set(held.bytes.subarray(lo - held.start, hi - held.start), before.length);
    out.set(after, before.length + hi - lo);
    return out;
  }

  /**
   * The strides of array `a`, in bytes: `c`, its C order's, and `stored`,
   * those of its bytes (Fortran order's for a Fortran-order array), as
   * the core's `Layout` gives them; worked out in JS (`stridesFor`), as
   * no `Layout` of an array past 2 GiB fits wasm32's address space.
   */
  stridesOf(a) {
    let strides = this.layouts.get(a.name);
    if (!strides) {
      const size = this.wasm.describeDType(a.descr).size;
      const c = stridesFor(a.shape, size);
      strides = { c, stored: a.fortran ? stridesFor(a.shape, size, true) : c };
      this.layouts.set(a.name, strides);
    }
    return strides;
  }

  /**
   * What the inspector says of byte `b` of array `a`: where the element
   * (or a quantised tensor's block field element) holding it lies, `at`,
   * and how to describe it from its bytes, `describe(bytes)`.
   */
  elementPlan(a, b) {
    const rel = b - a.offset;
    if (isBlocks(a)) {
      const field = this.fieldAt(a, rel);
      const block = Math.floor(rel / a.blockBytes);
      if (!field) return { describe: () => ({ name: a.name, note: `block ${block}, between its fields` }) };
      const { f } = field;
      const item = Math.floor((field.rel - f.offset) / f.size);
      const at = a.offset + block * a.blockBytes + f.offset + item * f.size;
      return {
        at, size: f.size,
        describe: (bytes) => ({ name: a.name, block, field: f.count > 1 ? `${f.name}[${item}]` : f.name, ...this.inspector.readOne(f.dtype, bytes) }),
      };
    }
    if (a.descr === null) return { describe: () => ({ name: a.name, note: `no bytelens dtype for ${a.dtype}` }) };
    const size = this.wasm.describeDType(a.descr).size;
    const k = Math.floor(rel / size);
    const { stored } = this.stridesOf(a);
    const index = indexAt(k * size, a.shape, stored);
    const flat = flatOf(index, a.shape);
    return {
      at: a.offset + k * size, size,
      describe: (bytes) => ({ name: a.name, index, flat, fortran: a.fortran, ...this.inspector.readOne(a.descr, bytes) }),
    };
  }

  /** Reads the selection in the inspector: its 8 bytes (fewer at the end) and its array's element, in one read at most. */
  async inspect() {
    const b = this.selected;
    if (b === null || !this.source) return;
    const seq = ++this.inspectSeq;
    const a = this.arrayAt(b);
    // What fails is said in the inspector, never left showing the last byte.
    const failed = (err) => ({ name: a.name, note: `its element could not be read: ${err?.message ?? err}` });
    let plan = null;
    let element = null;
    try {
      plan = a ? this.elementPlan(a, b) : null;
    } catch (err) {
      element = failed(err);
    }
    const end = Math.min(this.source.size, b + INSPECT);
    const from = plan?.at !== undefined ? Math.min(b, plan.at) : b;
    const to = plan?.at !== undefined ? Math.max(end, plan.at + plan.size) : end;
    let bytes;
    try {
      bytes = await this.readAround(from, to);
    } catch (err) {
      if (seq === this.inspectSeq) this.inspector.fail(b, this.source.size, err?.message ?? String(err));
      return;
    }
    if (seq !== this.inspectSeq) return;
    try {
      if (plan) element = plan.describe(plan.at === undefined ? null : bytes.subarray(plan.at - from, plan.at - from + plan.size));
    } catch (err) {
      element = failed(err);
    }
    this.inspector.show(b, bytes.subarray(b - from, end - from), this.source.size, element);
  }

  /** The array holding byte `b`: a binary search of the sorted arrays. */
  arrayAt(b) {
    let lo = 0;
    let hi = this.arrays.length - 1;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2); // not >> 1: no 32-bit arithmetic here
      const a = this.arrays[mid];
      if (b < a.offset) hi = mid - 1;
      else if (b >= a.offset + a.nbytes) lo = mid + 1;
      else return a;
    }
    return null;
  }

  /** The block field holding byte `at` of quantised tensor `a`: { f, block, rel }, or null in a gap. */
  fieldAt(a, at) {
    const block = Math.floor(at / a.blockBytes);
    const rel = at - block * a.blockBytes;
    const f = a.blockFields.find((x) => rel >= x.offset && rel < x.end);
    return f ? { f, block, rel } : null;
  }

  /** Draws the rows from `row` (by default, the scroll position's); a row asked for again waits for the same read. */
  render(row = this.rowAt(this.scroller.scrollTop)) {
    if (!this.source) return Promise.resolve();
    this.window.style.transform = `translateY(${this.scroller.scrollTop}px)`;
    if (row === this.target.row) return this.target.promise;
    const promise = this.draw(row, ++this.seq);
    this.target = { row, promise };
    promise.catch(() => {
      if (this.target.promise === promise) this.target = NONE; // drawn again on the next scroll
    });
    return promise;
  }

  async draw(row, seq) {
    const start = row * ROW;
    const end = Math.min(this.source.size, start + VISIBLE * ROW);
    const bytes = await this.readAround(start, end);
    if (seq !== this.seq) return; // a later scroll is being drawn
    this.held = { start, bytes };
    this.firstRow = row;
    this.window.dataset.first = String(start);
    drawLegend(this, start, end);
    for (let r = 0; r < VISIBLE; r++) {
      const { line, offset, bytes: cells, ascii } = this.rows[r];
      const base = start + r * ROW;
      line.hidden = base >= this.source.size && base > 0;
      line.dataset.offset = String(base);
      offset.textContent = base.toString(16).padStart(10, "0");
      let text = "";
      for (let c = 0; c < ROW; c++) {
        const i = base - start + c;
        const cell = cells[c];
        if (i < bytes.length) {
          const v = bytes[i];
          cell.textContent = v.toString(16).padStart(2, "0");
          const a = this.arrayAt(base + c);
          const at = a ? base + c - a.offset : 0;
          const field = a?.blockFields ? this.fieldAt(a, at) : null;
          if (field) {
            // A quantised tensor: the byte's block field, coloured as the legend says.
            const { f, block, rel } = field;
            const item = f.count > 1 ? `[${Math.floor((rel - f.offset) / f.size)}]` : "";
            cell.className = `fb in field${rel === 0 ? " bstart" : ""}`;
            cell.dataset.field = f.name;
            cell.style.setProperty("--hue", f.hue);
            cell.title = `${a.name} block ${block}, ${f.name}${item} (${f.dtype}), byte ${rel} of the block (file byte ${base + c})`;
          } else {
            cell.className = a ? `fb in${isMisaligned(a) ? " misaligned" : ""}` : "fb";
            delete cell.dataset.field;
            cell.style.setProperty("--hue", a ? a.hue : "");
            cell.title = a ? `${a.name} byte ${at} (file byte ${base + c})` : `byte ${base + c}`;
          }
          text += v >= 0x20 && v < 0x7f ? String.fromCharCode(v) : ".";
        } else {
          cell.textContent = "";
          cell.className = "fb";
          delete cell.dataset.field;
          cell.title = "";
        }
      }
      ascii.textContent = text;
    }
    this.markSelection();
  }
}
