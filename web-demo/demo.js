// The bytelens web demo: one buffer in WebAssembly memory, drawn as a byte
// grid with every typed reading over it, a layout panel that walks one view
// element by element, and a plan panel. Every read, write and check goes
// through the wasm package; this file only draws and parses what is typed.

import {
  readingsOf, formatValue, hexOf, asciiOf, parseInteger,
  parseFloatText, parseByte, parseHexBytes, formatHexBytes, parseIntList, nestedRepr,
} from "./numbers.js";
import { el } from "./dom.js";
import { FileView, fileSource, urlSource } from "./fileview.js";
import { Inspector } from "./inspector.js";
import { Pictures, heatSize } from "./pictures.js";

const MAX_BYTES = 4096;
const LINE = 32; // bytes per line of the grid: a multiple of every itemsize
const EXAMPLE = Uint8Array.from([
  0x00, 0x00, 0x80, 0x3f, //  0: float32 1.0
  0xdb, 0x0f, 0x49, 0x40, //  4: float32 pi
  0x18, 0x2d, 0x44, 0x54, 0xfb, 0x21, 0x09, 0x40, //  8: float64 pi
  0x44, 0x33, 0x22, 0x11, // 16: int32 0x11223344, int16 0x3344 and 0x1122
  0xff, 0xff, 0xff, 0xff, // 20: int32 -1, uint32 4294967295
  0x00, 0x3c, // 24: float16 1.0
  0x80, 0x3f, // 26: bfloat16 1.0
  0x6c, 0x65, 0x6e, 0x73, // 28: "lens"
]);

const LAYOUT_EXAMPLES = [
  { label: "transposed 3×4 int16: a column-major walk", dtype: "<i2", offset: 0, shape: "3, 4", strides: "2, 6" },
  { label: "3×4 int16 in C order", dtype: "<i2", offset: 0, shape: "3, 4", strides: "" },
  { label: "every other float32 (stride 8)", dtype: "<f4", offset: 0, shape: "4", strides: "8" },
  { label: "int32 backwards (stride -4)", dtype: "<i4", offset: 28, shape: "8", strides: "-4" },
  { label: "one float64 four times (stride 0)", dtype: "<f8", offset: 8, shape: "4", strides: "0" },
  { label: "big-endian int16 over the whole buffer", dtype: ">i2", offset: 0, shape: "", strides: "" },
  { label: "misaligned int16 (offset 1): an error", dtype: "<i2", offset: 1, shape: "4", strides: "" },
  { label: "five float64 in 32 bytes: an error", dtype: "<f8", offset: 0, shape: "5", strides: "" },
  { label: "a stride that is not a multiple of 4: an error", dtype: "<f4", offset: 0, shape: "2, 2", strides: "8, 2" },
];

const $ = (id) => document.getElementById(id);

/** Everything the page holds: the wasm module, the buffer, the drawn grid. */
const state = {
  wasm: null,
  readings: [], // the grid's rows: the wasm package's dtype table (readingsOf)
  buf: null,
  order: "little",
  rows: [], // per reading: { reading, count, cells: [{cell, input, sub}], values }
  byteCells: [], // per byte: { cell, input, sub }
  viewRows: [], // per grid line: the element holding the layout overlay
  plan: null,
  errorInput: null,
  fileView: null, // the file view (fileview.js)
  inspector: null, // the data inspector beside the grid (inspector.js)
  selected: 0, // the byte it reads from: the focused cell's first
  pictures: null, // the layout view's statistics, histogram and heatmap (pictures.js)
};


function announce(text) {
  const status = $("status");
  status.textContent = "";
  // A fresh text node so screen readers announce a repeated message.
  requestAnimationFrame(() => { status.textContent = text; });
}

function messageOf(err) {
  if (err && typeof err === "object" && "message" in err) return String(err.message);
  return String(err);
}

// ---------------------------------------------------------------- the grid

function dtypeOf(reading) {
  return reading.typeStrings[state.order];
}

function hexAddress(n) {
  return `0x${n.toString(16).padStart(4, "0")}`;
}

/** Builds the grid for the buffer's size: cells, not values (see refresh). */
function buildGrid() {
  const grid = $("grid");
  const n = state.buf.nbytes;
  grid.replaceChildren();
  state.rows = state.readings.map((reading) => ({
    reading, count: Math.floor(n / reading.size), cells: [], values: [],
  }));
  state.byteCells = [];
  state.viewRows = [];
  const lines = Math.max(1, Math.ceil(n / LINE));
  const bytesRow = state.readings.length + 2;
  const viewRow = bytesRow + 1;
  for (let line = 0; line < lines; line++) {
    const base = line * LINE;
    const end = Math.min(n, base + LINE);
    const block = el("div", {
      class: "block",
      role: "group",
      "aria-label": n ? `bytes ${base} to ${end - 1}` : "an empty buffer",
      "data-testid": `line-${line}`,
    });
    // Column offsets: on every line, so each one reads on its own.
    block.append(el("div", { class: "label ruler-label", style: "grid-row:1;grid-column:1", text: "offset", "aria-hidden": "true" }));
    for (let c = 0; c < end - base; c++) {
      block.append(el("div", {
        class: "ruler", style: `grid-row:1;grid-column:${c + 2}`, "aria-hidden": "true",
        text: `+${c.toString(16).padStart(2, "0")}`,
      }));
    }
    state.readings.forEach((reading, r) => {
      const row = state.rows[r];
      const gridRow = r + 2;
      block.append(el("div", {
        class: `label kind-${reading.family}`, style: `grid-row:${gridRow};grid-column:1`,
        "data-reading": reading.name,
      }, el("span", { class: "name", text: reading.name }), " ", el("code", { class: "tstr", text: dtypeOf(reading) })));
      const first = Math.ceil(base / reading.size);
      for (let i = first; i < row.count && i * reading.size < end; i++) {
        const start = i * reading.size;
        const col = start - base + 2;
        const input = el("input", {
          type: "text", class: "value", spellcheck: "false", autocomplete: "off",
          "aria-label": `${reading.name}[${i}], bytes ${start} to ${start + reading.size - 1}`,
          "data-testid": `input-${reading.name}-${i}`,
          "data-reading": r, "data-index": i,
        });
        const sub = el("span", { class: "sub", "data-testid": `hex-${reading.name}-${i}` });
        const cell = el("div", {
          class: `cell r-${reading.name} kind-${reading.family} w-${reading.size}`,
          style: `grid-row:${gridRow};grid-column:${col} / span ${reading.size}`,
          "data-testid": `cell-${reading.name}-${i}`,
          "data-start": start, "data-end": start + reading.size,
        }, input, sub);
        row.cells[i] = { cell, input, sub };
        block.append(cell);
      }
      // Bytes left over at the end that make no whole element.
      const tailStart = row.count * reading.size;
      if (tailStart < end && tailStart >= base) {
        block.append(el("div", {
          class: "cell rest",
          style: `grid-row:${gridRow};grid-column:${tailStart - base + 2} / span ${end - tailStart}`,
          title: `${end - tailStart} byte${end - tailStart > 1 ? "s" : ""} left over: not a whole ${reading.name}`,
          text: "·",
        }));
      }
    });
    block.append(el("div", {
      class: "label bytes-label", style: `grid-row:${bytesRow};grid-column:1`,
    }, el("span", { class: "name", text: "bytes" }), " ", el("code", { text: hexAddress(base) })));
    for (let b = base; b < end; b++) {
      const input = el("input", {
        type: "text", class: "value byte", spellcheck: "false", autocomplete: "off", maxlength: 4,
        "aria-label": `byte ${b} (hex)`, "data-testid": `byte-input-${b}`, "data-byte": b,
      });
      const sub = el("span", { class: "sub ascii", "aria-hidden": "true" });
      const cell = el("div", {
        class: "cell byte-cell", style: `grid-row:${bytesRow};grid-column:${b - base + 2}`,
        "data-testid": `byte-${b}`, "data-start": b, "data-end": b + 1,
      }, input, sub);
      state.byteCells[b] = { cell, input, sub };
      block.append(cell);
    }
    block.append(el("div", {
      class: "label view-label", style: `grid-row:${viewRow};grid-column:1`, text: "layout view",
    }));
    const overlay = { block, row: viewRow, base, end, items: [] };
    state.viewRows.push(overlay);
    grid.append(block);
  }
  if (n === 0) grid.append(el("p", { class: "empty", text: "The buffer is empty: load some bytes or resize it." }));
  $("nbytes").textContent = `${n} byte${n === 1 ? "" : "s"} in WebAssembly memory`;
  $("size").value = String(n);
}

/** Re-reads every row through bytelens and updates the text of each cell. */
function refresh() {
  const { buf } = state;
  const bytes = buf.bytes();
  for (const row of state.rows) {
    const { reading } = row;
    if (row.count === 0) { row.values = []; continue; }
    row.values = buf.read(dtypeOf(reading), { offset: 0, shape: [row.count] });
    for (let i = 0; i < row.count; i++) {
      const { cell, input, sub } = row.cells[i];
      const text = formatValue(row.values[i], reading);
      const hex = hexOf(bytes, i * reading.size, reading.size, state.order);
      if (input.value !== text) input.value = text;
      if (sub.textContent !== hex) sub.textContent = hex;
      cell.dataset.value = text;
      cell.dataset.hex = hex;
      input.removeAttribute("aria-invalid");
    }
  }
  for (let b = 0; b < bytes.length; b++) {
    const { input, sub } = state.byteCells[b];
    const text = bytes[b].toString(16).padStart(2, "0");
    if (input.value !== text) input.value = text;
    sub.textContent = asciiOf(bytes[b]);
    input.removeAttribute("aria-invalid");
  }
  for (const label of document.querySelectorAll(".grid .label[data-reading] .tstr")) {
    const reading = state.readings.find((r) => r.name === label.parentElement.dataset.reading);
    label.textContent = dtypeOf(reading);
  }
  hideEditError();
  inspect();
}

/** The inspector reads the bytes from the selection (the focused cell's first byte). */
function inspect() {
  const n = state.buf.nbytes;
  if (state.selected >= n) state.selected = Math.max(0, n - 1);
  if (n === 0) {
    state.inspector.clear();
    return;
  }
  const bytes = state.buf.bytes();
  state.inspector.show(state.selected, bytes.subarray(state.selected, state.selected + 8), n);
}

/** The tooltip of a cell, made when it is pointed at or focused. */
function describeCell(cell) {
  const input = cell.querySelector("input");
  if (!input) return;
  if (input.dataset.byte !== undefined) {
    const b = Number(input.dataset.byte);
    const v = parseInt(input.value, 16);
    cell.title = Number.isNaN(v) ? `byte ${b}` : `byte ${b} = 0x${input.value} = ${v}, ${JSON.stringify(asciiOf(v))}`;
    return;
  }
  const row = state.rows[Number(input.dataset.reading)];
  const i = Number(input.dataset.index);
  const { reading } = row;
  const start = i * reading.size;
  cell.title = `${reading.name}[${i}] = ${cell.dataset.value} (${cell.dataset.hex}), `
    + `bytes ${start}..${start + reading.size} read as ${dtypeOf(reading)}`;
}

function lightBytes(start, end, cls, on) {
  for (let b = start; b < end; b++) state.byteCells[b]?.cell.classList.toggle(cls, on);
}

// ------------------------------------------------------------- edit errors

function showEditError(input, message) {
  const box = $("edit-error");
  const wrap = $("grid-wrap");
  box.textContent = message;
  box.hidden = false;
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", "edit-error");
  state.errorInput = input;
  const cell = input.closest(".cell");
  const wr = wrap.getBoundingClientRect();
  const cr = cell.getBoundingClientRect();
  const left = Math.max(0, Math.min(cr.left - wr.left + wrap.scrollLeft, wrap.scrollWidth - 360));
  box.style.left = `${left}px`;
  box.style.top = `${cr.bottom - wr.top + wrap.scrollTop + 4}px`;
}

function hideEditError() {
  const box = $("edit-error");
  box.hidden = true;
  box.textContent = "";
  if (state.errorInput) {
    state.errorInput.removeAttribute("aria-invalid");
    state.errorInput.removeAttribute("aria-describedby");
    state.errorInput = null;
  }
}

/** Writes what was typed into one cell; every row is re-read on success. */
function commit(input) {
  try {
    if (input.dataset.byte !== undefined) {
      const b = Number(input.dataset.byte);
      state.buf.setBytes(b, Uint8Array.of(parseByte(input.value)));
    } else {
      const row = state.rows[Number(input.dataset.reading)];
      const i = Number(input.dataset.index);
      const { reading } = row;
      let value;
      if (reading.family === "int") {
        const big = parseInteger(input.value);
        value = reading.size === 8 ? big : Number(big);
      } else {
        value = parseFloatText(input.value);
      }
      state.buf.write(dtypeOf(reading), { offset: i * reading.size }, [value]);
    }
  } catch (err) {
    showEditError(input, messageOf(err));
    return false;
  }
  refresh();
  updateLayout();
  return true;
}

function revert(input) {
  if (input.dataset.byte !== undefined) {
    const b = Number(input.dataset.byte);
    input.value = state.buf.bytes()[b].toString(16).padStart(2, "0");
  } else {
    input.value = input.closest(".cell").dataset.value ?? "";
  }
  if (state.errorInput === input) hideEditError();
}

/** Up and down move to the reading above or below that covers the same byte. */
function moveVertically(input, step) {
  const cell = input.closest(".cell");
  const start = Number(cell.dataset.start);
  const ordered = [...state.rows.map((row) => ({ size: row.reading.size, cells: row.cells })),
    { size: 1, cells: state.byteCells }];
  let r = input.dataset.byte !== undefined ? ordered.length - 1 : Number(input.dataset.reading);
  for (r += step; r >= 0 && r < ordered.length; r += step) {
    const target = ordered[r].cells[Math.floor(start / ordered[r].size)];
    if (target) {
      target.input.focus();
      target.input.select();
      return;
    }
  }
}

function wireGrid() {
  const grid = $("grid");
  grid.addEventListener("change", (e) => {
    if (e.target.matches("input.value")) commit(e.target);
  });
  grid.addEventListener("keydown", (e) => {
    const input = e.target;
    if (!input.matches("input.value")) return;
    if (e.key === "Escape") {
      revert(input);
      e.preventDefault();
    } else if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      e.preventDefault();
      moveVertically(input, e.key === "ArrowUp" ? -1 : 1);
    }
  });
  const light = (e, cls, on) => {
    const cell = e.target.closest?.(".cell[data-start]");
    if (!cell) return;
    if (on) describeCell(cell);
    cell.classList.toggle(cls, on);
    lightBytes(Number(cell.dataset.start), Number(cell.dataset.end), cls, on);
  };
  grid.addEventListener("focusin", (e) => {
    light(e, "lit", true);
    const cell = e.target.closest?.(".cell[data-start]");
    if (cell && Number(cell.dataset.start) !== state.selected) {
      state.selected = Number(cell.dataset.start);
      inspect();
    }
  });
  grid.addEventListener("focusout", (e) => light(e, "lit", false));
  grid.addEventListener("mouseover", (e) => light(e, "hover-lit", true));
  grid.addEventListener("mouseout", (e) => light(e, "hover-lit", false));
}

// ------------------------------------------------------------ the buffer

/** Replaces the buffer with these bytes (a new wasm Buffer of their length). */
function setBuffer(bytes) {
  const next = new state.wasm.Buffer(bytes.length);
  if (bytes.length) next.setBytes(0, bytes);
  const old = state.buf;
  state.buf = next;
  old?.free();
  buildGrid();
  refresh();
  updateLayout();
  updatePlanFit();
}

function resizeTo(n) {
  const bytes = state.buf.bytes();
  const next = new Uint8Array(n);
  next.set(bytes.subarray(0, Math.min(n, bytes.length)));
  setBuffer(next);
}

function wireToolbar() {
  $("toolbar").addEventListener("change", (e) => {
    if (e.target.name !== "order") return;
    state.order = e.target.value;
    refresh();
    announce(`Every reading is now ${state.order}-endian`);
  });
  $("toolbar").addEventListener("submit", (e) => {
    e.preventDefault();
    const size = $("size");
    const n = Number(size.value);
    if (!Number.isInteger(n) || n < 0 || n > MAX_BYTES) {
      size.setCustomValidity(`a size from 0 to ${MAX_BYTES} bytes`);
      size.reportValidity();
      return;
    }
    size.setCustomValidity("");
    resizeTo(n);
    announce(`The buffer now holds ${n} bytes`);
  });
  $("size").addEventListener("input", () => $("size").setCustomValidity(""));
  $("reset").addEventListener("click", () => {
    setBuffer(EXAMPLE);
    announce("Back to the example's 32 bytes");
  });
}

// -------------------------------------------------------------- the layout

function clearOverlay() {
  for (const line of state.viewRows) {
    for (const item of line.items) item.remove();
    line.items = [];
  }
  for (const b of state.byteCells) b?.cell.classList.remove("in-view");
}

/** Reads the layout panel's boxes: { dtype, layout, shape } or throws. */
function readLayoutForm() {
  const dtype = $("lay-dtype").value.trim();
  if (dtype === "") throw new Error("type a dtype, e.g. <i2, >f4, uint8");
  const offsetText = $("lay-offset").value.trim();
  const layout = {};
  // Whether the offset, shape and strides make a view is the core's to say.
  if (offsetText !== "") {
    layout.offset = Number(offsetText);
  } else if ($("lay-offset").validity.badInput) {
    throw new Error("offset: type a number of bytes");
  }
  const shape = parseIntList($("lay-shape").value, "shape");
  const strides = parseIntList($("lay-strides").value, "strides");
  if (shape !== undefined) layout.shape = shape;
  if (strides !== undefined) layout.strides = strides;
  return { dtype, layout };
}

/** Views with more elements than this are described, not drawn. */
const MAX_VIEW_ELEMENTS = 65536;
/** A view of more elements than this shows its values as numpy summarises them (the first and last 3 of each axis). */
const SUMMARY_AT = 1000;
/** The elements a box over the grid names in its title (stride 0 puts them all in one box). */
const TITLE_ELEMENTS = 8;

function updateLayout() {
  if (!state.buf) return;
  clearOverlay();
  const errorBox = $("layout-error");
  const summary = $("layout-summary");
  const walk = $("layout-walk");
  const valuesBox = $("layout-values");
  let dtype, layout, values, offsets, described;
  try {
    ({ dtype, layout } = readLayoutForm());
    const count = (layout.shape ?? []).reduce((n, k) => n * k, 1);
    if (layout.shape && count > MAX_VIEW_ELEMENTS) {
      // Stride 0 lets a view have far more elements than the buffer has bytes.
      throw new Error(`this view has ${count} elements; the panel draws at most ${MAX_VIEW_ELEMENTS}`);
    }
    values = state.buf.read(dtype, layout);
    offsets = Array.from(state.buf.offsets(dtype, layout), Number);
    described = state.wasm.describeDType(dtype);
  } catch (err) {
    errorBox.textContent = messageOf(err);
    errorBox.hidden = false;
    summary.textContent = "";
    walk.textContent = "";
    valuesBox.textContent = "";
    $("layout").classList.add("has-error");
    state.pictures.clear();
    return;
  }
  errorBox.textContent = "";
  errorBox.hidden = true;
  $("layout").classList.remove("has-error");
  const { name, size } = described;
  const shape = layout.shape ?? [values.length];
  // Each element's text, made only for the elements shown (a view of 65,536
  // elements shows a few dozen: numpy's summary past 1000, a few a box).
  const texts = (k) => formatValue(values[k], described);

  // Elements either sit on exactly the same bytes or on disjoint ones
  // (offsets and strides are multiples of the itemsize), so one band holds
  // them all: one box per distinct start, numbered in index order.
  const byStart = new Map();
  offsets.forEach((off, k) => {
    if (!byStart.has(off)) byStart.set(off, []);
    byStart.get(off).push(k);
  });
  const total = offsets.length;
  const indexOf = (k) => {
    const idx = [];
    let rest = k;
    for (let d = shape.length - 1; d >= 0; d--) {
      idx.unshift(shape[d] ? rest % shape[d] : 0);
      rest = shape[d] ? Math.floor(rest / shape[d]) : 0;
    }
    return idx;
  };
  for (const [start, ks] of byStart) {
    const line = state.viewRows[Math.floor(start / LINE)];
    if (!line) continue;
    const span = Math.min(size, line.end - start);
    const hue = Math.round((ks[0] / Math.max(1, total - 1)) * 280);
    const label = ks.length > 3 ? `${ks.slice(0, 2).join(",")},…` : ks.join(",");
    const what = ks.slice(0, TITLE_ELEMENTS).map((k) => `#${k} [${indexOf(k).join(", ")}] = ${texts(k)}`).join("; ")
      + (ks.length > TITLE_ELEMENTS ? `; … ${ks.length - TITLE_ELEMENTS} more` : "");
    const item = el("div", {
      class: "view-el",
      style: `grid-row:${line.row};grid-column:${start - line.base + 2} / span ${span};--hue:${hue}`,
      title: `${what} at bytes ${start}..${start + size}`,
      "data-testid": `view-at-${start}`,
      "data-elements": ks.join(","),
    }, el("span", { class: "num", text: label }));
    if (ks.length === 1 && shape.length > 1) item.append(el("span", { class: "idx", text: `[${indexOf(ks[0]).join(",")}]` }));
    line.block.append(item);
    line.items.push(item);
    for (let b = start; b < start + size; b++) state.byteCells[b]?.cell.classList.add("in-view");
  }
  let low = Infinity;
  let high = -Infinity;
  for (const at of offsets) {
    if (at < low) low = at;
    if (at > high) high = at;
  }
  const reached = offsets.length ? `bytes ${low}..${high + size}` : "no bytes";
  summary.textContent = `${total} element${total === 1 ? "" : "s"} of ${name} (${size} byte${size === 1 ? "" : "s"} each), `
    + `shape (${shape.join(", ")}${shape.length === 1 ? "," : ""}), reaching ${reached} of ${state.buf.nbytes}.`;
  const shown = offsets.slice(0, 64).join(", ");
  walk.textContent = total ? `Byte offsets in index order: ${shown}${total > 64 ? ", …" : ""}` : "";
  valuesBox.textContent = total || shape.length === 0 ? nestedRepr(texts, shape, total > SUMMARY_AT ? 3 : Infinity) : "[]";
  drawLayoutPictures(dtype, offsets, size, shape);
}

/**
 * The layout view's statistics, histogram and heatmap (a 2-D view's), by
 * the core: the view's element bytes gathered in index order (byte
 * copies only), then `Stats`, `Histogram` and `Heatmap` over them.
 */
function drawLayoutPictures(dtype, offsets, size, shape) {
  const { wasm, pictures } = state;
  if (offsets.length === 0) {
    pictures.clear("No elements: no statistics.");
    return;
  }
  const bytes = state.buf.bytes();
  const gathered = new Uint8Array(offsets.length * size);
  for (let k = 0, to = 0; k < offsets.length; k++) {
    for (let b = offsets[k], end = b + size; b < end; b++) gathered[to++] = bytes[b];
  }
  const stats = new wasm.Stats(dtype);
  let r;
  try {
    stats.push(gathered);
    r = stats.result();
  } finally {
    stats.free();
  }
  pictures.showStats(r);
  if (r.min !== null) {
    const h = wasm.Histogram.forRange(r.min, r.max, 64, dtype);
    try {
      h.push(gathered, dtype);
      pictures.showHistogram(h.counts(), h.edges());
    } finally {
      h.free();
    }
  }
  if (shape.length !== 2 || shape[0] * shape[1] === 0) {
    pictures.noHeatmap(shape.length === 2 ? "" : "A heatmap is drawn for a 2-D view.");
    return;
  }
  const [rows, cols] = shape;
  const { outH, outW } = heatSize(rows, cols);
  const maps = {};
  for (const mode of ["mean", "max"]) {
    const map = new wasm.Heatmap(rows, cols, outH, outW, dtype, mode);
    try {
      map.pushRows(gathered);
      maps[mode] = { values: map.values(), range: map.range() };
    } finally {
      map.free();
    }
  }
  pictures.showHeatmap(maps, { rows, cols, outH, outW, transposed: false, label: "" });
}

/** The layout panel's dtype suggestions: every type string of the table. */
function fillDtypeList(table) {
  const strings = new Set(table.flatMap((d) => [d.typeStrings.little, d.typeStrings.big]));
  $("dtype-list").replaceChildren(...Array.from(strings, (value) => el("option", { value })));
}

function wireLayout() {
  const preset = $("lay-preset");
  LAYOUT_EXAMPLES.forEach((ex, i) => preset.append(el("option", { value: String(i), text: ex.label })));
  preset.value = "0";
  preset.addEventListener("change", () => {
    const ex = LAYOUT_EXAMPLES[Number(preset.value)];
    if (!ex) return;
    $("lay-dtype").value = ex.dtype;
    $("lay-offset").value = String(ex.offset);
    $("lay-shape").value = ex.shape;
    $("lay-strides").value = ex.strides;
    updateLayout();
  });
  const form = $("layout-form");
  form.addEventListener("input", (e) => {
    if (e.target === preset) return;
    preset.value = "custom";
    updateLayout();
  });
  form.addEventListener("submit", (e) => e.preventDefault());
}

/** Shows one plan field in the layout panel (and so over the byte grid). */
function showInLayout(field) {
  $("lay-preset").value = "custom";
  $("lay-dtype").value = field.dtype;
  $("lay-offset").value = String(field.offset);
  $("lay-shape").value = field.shape.length ? field.shape.join(", ") : "()";
  $("lay-strides").value = "";
  updateLayout();
  const fits = field.offset + field.nbytes <= state.buf.nbytes;
  announce(`Field ${field.name} is in the layout panel${fits ? "" : "; the buffer is too small for it"}`);
}

// ---------------------------------------------------------------- the plan

const FIELD_HUES = [210, 28, 140, 330, 265, 95, 0, 185, 50, 300];

function updatePlan() {
  const errorBox = $("plan-error");
  let plan;
  try {
    // The core's text form, read by the core: the plan's name on the first
    // line, then `name dtype length…` per field and `union` between alternatives.
    plan = state.wasm.Plan.fromText($("plan-text").value);
  } catch (err) {
    errorBox.textContent = messageOf(err);
    errorBox.hidden = false;
    $("plan").classList.add("has-error");
    return; // the last good plan stays drawn, dimmed
  }
  errorBox.textContent = "";
  errorBox.hidden = true;
  $("plan").classList.remove("has-error");
  state.plan?.free?.();
  state.plan = plan;
  drawPlan(plan);
}

function drawPlan(plan) {
  const nbytes = Number(plan.nbytes);
  const alternatives = Number(plan.alternatives);
  const fields = Array.from(plan.fields(), (f) => ({
    ...f, offset: Number(f.offset), nbytes: Number(f.nbytes), alternative: Number(f.alternative),
    shape: Array.from(f.shape, Number),
  }));
  $("plan-summary").textContent = `${nbytes} bytes, aligned to ${plan.align}, ${fields.length} field${fields.length === 1 ? "" : "s"} `
    + `in ${alternatives} alternative${alternatives === 1 ? "" : "s"} over the same bytes.`;

  const bands = $("plan-bands");
  bands.replaceChildren();
  const pct = (x) => (nbytes ? (x / nbytes) * 100 : 0);
  const hueOf = new Map(fields.map((f, i) => [f.name, FIELD_HUES[i % FIELD_HUES.length]]));
  const described = [];
  for (let a = 0; a < alternatives; a++) {
    const lane = el("div", { class: "lane", "data-testid": `plan-lane-${a}` });
    const mine = fields.filter((f) => f.alternative === a);
    for (const f of mine) {
      const box = el("div", {
        class: "band", style: `left:${pct(f.offset)}%;width:${pct(f.nbytes)}%;--hue:${hueOf.get(f.name)}`,
        title: `${f.name}: ${f.dtype} (${f.shape.join(", ")}), bytes ${f.offset}..${f.offset + f.nbytes}`,
        "data-testid": `plan-band-${f.name}`,
      }, el("span", { text: f.name }));
      lane.append(box);
    }
    const padding = Array.from(plan.padding(a), ([s, e]) => [Number(s), Number(e)]);
    for (const [s, e] of padding) {
      lane.append(el("div", {
        class: "pad", style: `left:${pct(s)}%;width:${pct(e - s)}%`,
        title: `padding: bytes ${s}..${e}`, "data-testid": `plan-pad-${a}-${s}`,
      }));
    }
    bands.append(el("div", { class: "lane-row" },
      el("span", { class: "lane-label", text: `alternative ${a}` }), lane));
    described.push(`alternative ${a}: ${mine.map((f) => `${f.name} at ${f.offset}..${f.offset + f.nbytes}`).join(", ")}`
      + (padding.length ? `; padding ${padding.map(([s, e]) => `${s}..${e}`).join(", ")}` : ""));
  }
  // A scale with a tick every 2^k bytes, at most about 12 of them.
  let step = 1;
  while (nbytes / step > 12) step *= 2;
  const scale = el("div", { class: "scale", "aria-hidden": "true" });
  for (let x = 0; x <= nbytes; x += step) scale.append(el("span", { style: `left:${pct(x)}%`, text: String(x) }));
  bands.append(el("div", { class: "lane-row" }, el("span", { class: "lane-label", text: "byte" }), scale));
  bands.setAttribute("aria-label", `Plan of ${nbytes} bytes. ${described.join(". ")}.`);

  const tbody = $("plan-fields").querySelector("tbody");
  tbody.replaceChildren();
  for (const f of fields) {
    const button = el("button", { type: "button", class: "small", "aria-label": `Show ${f.name} in the layout panel`, text: "Show in layout" });
    button.addEventListener("click", () => showInLayout(f));
    tbody.append(el("tr", { "data-testid": `plan-field-${f.name}` },
      el("th", { scope: "row" }, el("span", { class: "swatch", style: `--hue:${hueOf.get(f.name)}`, "aria-hidden": "true" }), f.name),
      el("td", {}, el("code", { text: f.dtype })),
      el("td", { text: `(${f.shape.join(", ")}${f.shape.length === 1 ? "," : ""})` }),
      el("td", { text: `${f.offset}..${f.offset + f.nbytes}` }),
      el("td", { text: String(f.alternative) }),
      el("td", {}, button)));
  }

  const wgsl = $("plan-wgsl");
  try {
    wgsl.textContent = plan.wgsl();
    wgsl.classList.remove("note");
  } catch (err) {
    wgsl.textContent = `No WGSL for this plan: ${messageOf(err)}`;
    wgsl.classList.add("note");
  }
  updatePlanFit();
}

function updatePlanFit() {
  const button = $("plan-fit");
  if (!state.plan || !state.buf) return;
  const need = Number(state.plan.nbytes);
  button.textContent = need === state.buf.nbytes
    ? `The buffer holds exactly the plan's ${need} bytes`
    : `Resize the buffer to the plan's ${need} bytes`;
  button.disabled = need === state.buf.nbytes || need > MAX_BYTES;
}

function wirePlan() {
  $("plan-form").addEventListener("input", updatePlan);
  $("plan-form").addEventListener("submit", (e) => e.preventDefault());
  $("plan-fit").addEventListener("click", () => {
    const need = Number(state.plan.nbytes);
    resizeTo(need);
    announce(`The buffer now holds ${need} bytes, as the plan needs`);
  });
}

// ---------------------------------------------------------------- loading

function loadBytes(bytes, from, total = bytes.length) {
  setBuffer(bytes);
  const kept = bytes.length;
  const note = total > kept ? ` (the first ${kept} of its ${total}: ${MAX_BYTES} at most)` : "";
  loadError("");
  $("load-status").textContent = `Loaded ${kept} byte${kept === 1 ? "" : "s"} from ${from}${note}.`;
  announce($("load-status").textContent);
}

function loadError(message) {
  $("load-error").textContent = message;
  if (message) $("load-status").textContent = "";
}

function wireLoad() {
  $("load-file").addEventListener("change", async (e) => {
    const file = e.target.files?.[0];
    if (!file) return;
    try {
      const blob = file.size > MAX_BYTES ? file.slice(0, MAX_BYTES) : file;
      loadBytes(new Uint8Array(await blob.arrayBuffer()), file.name, file.size);
      await state.fileView.open(fileSource(file));
    } catch (err) {
      loadError(`Could not read ${file.name}: ${messageOf(err)}`);
    }
  });
  $("load-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("load-hex").value;
    if (text.trim() === "") {
      loadError("Paste some hex first, e.g. de ad be ef.");
      $("load-hex").focus();
      return;
    }
    let bytes;
    try {
      bytes = parseHexBytes(text);
    } catch (err) {
      loadError(messageOf(err));
      $("load-hex").focus();
      return;
    }
    loadBytes(bytes.subarray(0, MAX_BYTES), "the pasted hex", bytes.length);
  });
  $("load-current").addEventListener("click", () => {
    $("load-hex").value = formatHexBytes(state.buf.bytes());
    announce("The current bytes are in the hex box");
  });
}

// ------------------------------------------------------------------ start

function fatal(message) {
  const box = $("fatal");
  box.textContent = message;
  box.hidden = false;
  document.body.classList.add("failed");
}

async function main() {
  try {
    const wasm = await import("./pkg/bytelens_wasm.js");
    await wasm.default();
    state.wasm = wasm;
  } catch (err) {
    fatal(`The WebAssembly package could not be loaded (pkg/bytelens_wasm.js): ${messageOf(err)}. `
      + "Build it and serve this folder with: cargo xtask demo");
    return;
  }
  try {
    const table = state.wasm.dtypes();
    state.readings = readingsOf(table);
    fillDtypeList(table);
    state.inspector = new Inspector(state.wasm, $("buffer-inspector"), "buffer-inspector", state.readings);
    state.pictures = new Pictures($("layout-pictures"), "layout");
    wireGrid();
    wireToolbar();
    wireLayout();
    wirePlan();
    wireLoad();
    setBuffer(EXAMPLE);
    updatePlan();
    state.fileView = new FileView(state.wasm);
    // For the end-to-end test's benchmarks (tests/e2e.mjs): the file view and its tensor panel.
    window.bytelensDemo = { fileView: state.fileView, tensor: state.fileView.tensor };
    // `cargo xtask demo FILE` serves the file at /file/NAME and opens ?file=/file/NAME.
    const served = new URLSearchParams(location.search).get("file");
    if (served?.startsWith("/file/")) {
      try {
        await state.fileView.open(await urlSource(served));
      } catch (err) {
        loadError(`Could not open ${served}: ${messageOf(err)}`);
      }
    }
    document.body.dataset.ready = "true";
  } catch (err) {
    fatal(`The demo failed to start: ${messageOf(err)}`);
    throw err;
  }
}

main();
