// The byte grid: every reading of the buffer as a row of cells one can
// type into, the bytes row, and the line a layout view is drawn on; what is
// typed is written through the wasm package and every row read again.

import { state, $, LINE, messageOf } from "./page.js";
import { formatValue, hexOf, asciiOf, parseInteger, parseFloatText, parseByte } from "./numbers.js";
import { el } from "./dom.js";
import { updateLayout } from "./layout-panel.js";

function dtypeOf(reading) {
  return reading.typeStrings[state.order];
}

function hexAddress(n) {
  return `0x${n.toString(16).padStart(4, "0")}`;
}

/** Lines built at once: the first (about 400 px tall, most of a screen). */
const FIRST_LINES = 1;
/** A task building the other lines stops after this many ms (or the idle time it was given), so the page draws and takes input between. */
const SLICE_MS = 5;
/** The grid being built: lines of a buffer replaced since are not built. */
let gridSeq = 0;

/**
 * The page's next idle moment (its other work first: a file's header, its
 * lists, input, drawing), or a second from now where there is none:
 * resolves with how many ms it has.
 */
function idle() {
  return new Promise((resolve) => {
    requestIdleCallback((deadline) => resolve(deadline.didTimeout ? 0 : deadline.timeRemaining()), { timeout: 1000 });
  });
}

/**
 * Builds the grid for the buffer's size: cells, not values (see refresh).
 * The first lines now, the others when the page is idle, a few ms at a
 * time, with their values (a picked file's 4 KiB are 128 lines, some
 * 140,000 elements: a task of over a second built at once); `#grid`'s
 * `data-built` says how many lines are there, of `data-lines`, and the
 * layout view is drawn again over them once they all are.
 */
export function buildGrid() {
  const grid = $("grid");
  const n = state.buf.nbytes;
  grid.replaceChildren();
  state.rows = state.readings.map((reading) => ({
    reading, count: Math.floor(n / reading.size), cells: [],
  }));
  state.byteCells = [];
  state.viewRows = [];
  const lines = Math.max(1, Math.ceil(n / LINE));
  const seq = ++gridSeq;
  grid.dataset.lines = String(lines);
  for (let line = 0; line < Math.min(lines, FIRST_LINES); line++) buildLine(line);
  grid.dataset.built = String(state.viewRows.length);
  if (n === 0) grid.append(el("p", { class: "empty", text: "The buffer is empty: load some bytes or resize it." }));
  $("nbytes").textContent = `${n} byte${n === 1 ? "" : "s"} in WebAssembly memory`;
  $("size").value = String(n);
  if (lines > FIRST_LINES) buildRest(seq, lines).catch((err) => console.error(err));
}

/** The lines after the first, a slice a task, each with its values; stops where a new grid is begun. */
async function buildRest(seq, lines) {
  const grid = $("grid");
  while (state.viewRows.length < lines) {
    const budget = Math.min(SLICE_MS, await idle());
    if (seq !== gridSeq) return;
    const started = performance.now();
    const bytes = state.buf.bytes();
    do {
      fillLine(buildLine(state.viewRows.length), bytes);
    } while (state.viewRows.length < lines && performance.now() - started < budget);
    grid.dataset.built = String(state.viewRows.length);
  }
  updateLayout(); // its boxes over the lines built since
}

/** Builds line `line` of the grid (bytes line * LINE on), its cells empty; appends it; returns its overlay. */
function buildLine(line) {
  const grid = $("grid");
  const n = state.buf.nbytes;
  const bytesRow = state.readings.length + 2;
  const viewRow = bytesRow + 1;
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
  return overlay;
}

/** Reads line `overlay`'s elements through bytelens (`bytes`: the buffer's) and updates the text of each cell. */
function fillLine(overlay, bytes) {
  const { base, end } = overlay;
  for (const row of state.rows) {
    const { reading } = row;
    const first = Math.ceil(base / reading.size);
    const last = Math.min(row.count, Math.ceil(end / reading.size));
    if (first >= last) continue;
    const values = state.buf.read(dtypeOf(reading), { offset: first * reading.size, shape: [last - first] });
    for (let i = first; i < last; i++) {
      const { cell, input, sub } = row.cells[i];
      const text = formatValue(values[i - first], reading);
      const hex = hexOf(bytes, i * reading.size, reading.size, state.order);
      if (input.value !== text) input.value = text;
      if (sub.textContent !== hex) sub.textContent = hex;
      cell.dataset.value = text;
      cell.dataset.hex = hex;
      input.removeAttribute("aria-invalid");
    }
  }
  for (let b = base; b < end; b++) {
    const { input, sub } = state.byteCells[b];
    const text = bytes[b].toString(16).padStart(2, "0");
    if (input.value !== text) input.value = text;
    sub.textContent = asciiOf(bytes[b]);
    input.removeAttribute("aria-invalid");
  }
}

/** Re-reads every line built through bytelens and updates the text of each cell (lines built later read their own). */
export function refresh() {
  const bytes = state.buf.bytes();
  for (const overlay of state.viewRows) fillLine(overlay, bytes);
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

export function wireGrid() {
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
