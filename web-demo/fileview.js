// The file view: a file of any size, read only where it is shown (File.slice
// for a picked file, HTTP range requests for one `cargo xtask demo FILE`
// serves), drawn as a virtualised grid of 16-byte rows. The arrays its
// header describes (.npy or safetensors, read by the core's readHeader in
// the wasm package, the checks bl.load uses) are drawn as bands over the
// bytes and listed; a misaligned array is marked. Only the rows on screen
// and the header's first bytes are held in memory.

import { el } from "./dom.js";

const ROW = 16; // bytes per row
const ROW_PX = 22; // a row's height in CSS pixels (.frow in style.css)
const VISIBLE = 24; // rows drawn
const HEAD = 65536; // bytes read first for the header
// Browsers cap an element's height (Chromium at about 33.5 million pixels):
// past this, the scroll position maps to rows in proportion.
const MAX_SCROLL_PX = 8_000_000;
const MAX_LISTED = 1000; // arrays listed in the table (all are drawn)
const HUES = [210, 28, 140, 330, 265, 95, 0, 185, 50, 300];


/** A picked file, read through File.slice. */
export function fileSource(file) {
  return {
    name: file.name,
    size: file.size,
    read: async (start, end) => new Uint8Array(await file.slice(start, end).arrayBuffer()),
  };
}

/** A served file, read in HTTP byte ranges; its size is what the first answer's Content-Range says. */
export async function urlSource(url) {
  const ranged = async (start, end) => {
    const response = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: "no-store" });
    if (response.status !== 206 && response.status !== 200) {
      throw new Error(`${url} answered HTTP ${response.status} to a request for bytes ${start}..${end}`);
    }
    return response;
  };
  // Its size: 206 with "bytes 0-0/N", or 416 with "bytes */0" for an empty file.
  const first = await fetch(url, { headers: { Range: "bytes=0-0" }, cache: "no-store" });
  if (first.status !== 206 && first.status !== 416) {
    await first.body?.cancel(); // a whole file, perhaps: not read
    throw new Error(`${url} answered HTTP ${first.status} to a request for its first byte, not a byte range`);
  }
  await first.arrayBuffer();
  const total = Number((first.headers.get("Content-Range") ?? "").split("/")[1]);
  if (!Number.isSafeInteger(total)) throw new Error(`${url} did not say its size (no Content-Range)`);
  return {
    name: decodeURIComponent(new URL(url, location.href).pathname.split("/").pop()),
    size: total,
    read: async (start, end) => (end <= start ? new Uint8Array(0) : new Uint8Array(await (await ranged(start, end)).arrayBuffer())),
  };
}

/** Reading a file's header failed (not a header the core refused: the file
 * changed, or a read came back short). */
export class HeaderReadError extends Error {}

/** Reads a header of more bytes than this never ends in a header. */
const MAX_HEADER_READS = 16;

/**
 * The header by the core (`wasm.readHeader`): the file's first bytes, then
 * as many as it asks for, until it has them all. Each read must bring every
 * byte asked for, and each request must ask for more than the last: a file
 * that shrank since its size was taken (a read comes back short) or a
 * header that never ends throws a `HeaderReadError` after a read or two,
 * rather than asking again forever. A header the core refuses throws its
 * `RangeError`.
 *
 *     const header = await readHeader(wasm, fileSource(picked));
 *     header.arrays.map((a) => [a.name, a.offset, a.nbytes]);
 */
export async function readHeader(wasm, source) {
  let want = Math.min(HEAD, source.size);
  for (let reads = 1; ; reads++) {
    const head = await source.read(0, want);
    if (head.length < want) {
      throw new HeaderReadError(`${source.name}: asked for bytes 0..${want}, got ${head.length}; `
        + `the file is shorter than the ${source.size} bytes it had when opened (did it change?)`);
    }
    const header = wasm.readHeader(head, source.size);
    if (header.need === undefined) return header;
    const need = Number(header.need);
    if (!(need > want) || need > source.size) {
      throw new HeaderReadError(`${source.name}: the header asks for ${need} bytes after ${want}, `
        + `of a file of ${source.size}`);
    }
    if (reads === MAX_HEADER_READS) {
      throw new HeaderReadError(`${source.name}: the header is not whole after ${reads} reads (${want} bytes)`);
    }
    want = need;
  }
}

function alignmentOf(offset) {
  if (offset === 0) return "any";
  let a = 1;
  while (offset % (a * 2) === 0 && a < 4096) a *= 2;
  return a === 4096 ? "4096+" : String(a);
}

function shapeText(shape) {
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}

export class FileView {
  constructor(wasm) {
    this.wasm = wasm;
    this.source = null;
    this.arrays = []; // sorted by offset, each with its hue
    this.seq = 0; // the latest render; older reads are dropped
    this.firstRow = -1;
    this.pin = null; // { row, top }: the row a jump showed, at scrollTop `top`
    this.scroller = document.getElementById("file-scroll");
    this.spacer = el("div", { class: "fspacer" });
    this.window = el("div", { class: "fwindow", role: "presentation" });
    this.rows = [];
    for (let r = 0; r < VISIBLE; r++) {
      const offset = el("span", { class: "foff" });
      const bytes = [];
      const line = el("div", { class: "frow", "data-testid": `file-row-${r}` }, offset);
      for (let c = 0; c < ROW; c++) {
        const b = el("span", { class: "fb" });
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
    this.source = source;
    this.firstRow = -1;
    this.pin = null;
    const section = document.getElementById("file");
    section.hidden = false;
    let header = null;
    let note = "";
    try {
      header = await readHeader(this.wasm, source);
    } catch (err) {
      note = err instanceof HeaderReadError
        ? `its header could not be read (${err.message}): its raw bytes`
        : `no .npy or safetensors header (${err?.message ?? err}): its raw bytes`;
    }
    this.arrays = (header?.arrays ?? [])
      .map((a, i) => ({ ...a, hue: HUES[i % HUES.length] }))
      .sort((a, b) => a.offset - b.offset);
    const what = header ? `${header.format}${header.format === "npy" ? ` ${header.version.join(".")}` : ""}` : "a file";
    document.getElementById("file-summary").textContent =
      `${source.name}: ${what}, ${source.size.toLocaleString("en")} bytes, ${this.arrays.length} array${this.arrays.length === 1 ? "" : "s"}`
      + (note ? `; ${note}` : "")
      + (header?.metadata?.length ? `; metadata ${header.metadata.map(([k, v]) => `${k}=${v}`).join(", ").slice(0, 200)}` : "");
    this.drawBands();
    this.drawTable();
    this.spacer.style.height = `${this.scrollPx}px`;
    this.scroller.scrollTop = 0;
    await this.render();
    section.scrollIntoView({ block: "start" });
  }

  drawBands() {
    const bands = document.getElementById("file-bands");
    bands.replaceChildren();
    const pct = (x) => (x / Math.max(1, this.source.size)) * 100;
    // The smallest on top, where several overlap.
    for (const a of [...this.arrays].sort((x, y) => y.nbytes - x.nbytes)) {
      const band = el("button", {
        type: "button",
        class: `fband${a.aligned ? "" : " misaligned"}`,
        style: `left:${pct(a.offset)}%;width:max(3px, ${pct(a.nbytes)}%);--hue:${a.hue}`,
        title: `${a.name}: ${a.dtype} ${shapeText(a.shape)}, bytes ${a.offset}..${a.offset + a.nbytes}${a.aligned ? "" : ", misaligned"}`,
        "aria-label": `Jump to ${a.name}`,
        "data-testid": `file-band-${a.name}`,
      });
      band.addEventListener("click", () => this.jumpTo(a.offset));
      bands.append(band);
    }
  }

  drawTable() {
    const tbody = document.getElementById("file-arrays").querySelector("tbody");
    tbody.replaceChildren();
    for (const a of this.arrays.slice(0, MAX_LISTED)) {
      const jump = el("button", { type: "button", class: "small", "aria-label": `Jump to ${a.name}`, text: "Jump", "data-testid": `file-jump-${a.name}` });
      jump.addEventListener("click", () => this.jumpTo(a.offset));
      const load = a.descr === null ? `no bytelens dtype for ${a.dtype}`
        : a.aligned ? "view" : "misaligned: bl.load copies it";
      tbody.append(el("tr", { class: a.aligned ? "" : "misaligned", "data-testid": `file-array-${a.name}` },
        el("th", { scope: "row" }, el("span", { class: "swatch", style: `--hue:${a.hue}`, "aria-hidden": "true" }), a.name),
        el("td", {}, el("code", { text: a.dtype })),
        el("td", { text: shapeText(a.shape) }),
        el("td", { text: `${a.offset}..${a.offset + a.nbytes}` }),
        el("td", { text: alignmentOf(a.offset) }),
        el("td", { text: load }),
        el("td", {}, jump)));
    }
    document.getElementById("file-more").textContent = this.arrays.length > MAX_LISTED
      ? `The first ${MAX_LISTED} of ${this.arrays.length} arrays are listed; the bands show all of them.` : "";
  }

  /** Scrolls so that the row holding byte `offset` is the first one drawn. */
  async jumpTo(offset) {
    const row = Math.min(Math.floor(offset / ROW), this.lastFirstRow);
    this.scroller.scrollTop = this.scrollTopFor(row);
    this.pin = { row, top: this.scroller.scrollTop };
    await this.render(row);
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

  async render(row = this.rowAt(this.scroller.scrollTop)) {
    if (!this.source) return;
    this.window.style.transform = `translateY(${this.scroller.scrollTop}px)`;
    if (row === this.firstRow) return;
    const seq = ++this.seq;
    const start = row * ROW;
    const end = Math.min(this.source.size, start + VISIBLE * ROW);
    const bytes = await this.source.read(start, end);
    if (seq !== this.seq) return; // a later scroll is being drawn
    this.firstRow = row;
    this.window.dataset.first = String(start);
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
          cell.className = a ? `fb in${a.aligned ? "" : " misaligned"}` : "fb";
          cell.style.setProperty("--hue", a ? a.hue : "");
          cell.title = a ? `${a.name} byte ${base + c - a.offset} (file byte ${base + c})` : `byte ${base + c}`;
          text += v >= 0x20 && v < 0x7f ? String.fromCharCode(v) : ".";
        } else {
          cell.textContent = "";
          cell.className = "fb";
          cell.title = "";
        }
      }
      ascii.textContent = text;
    }
  }
}
