// The layout panel: one view (dtype, offset, shape, strides) walked
// element by element by the core, drawn over the byte grid, its values
// as numpy prints them, and its statistics, histogram and heatmap.

import { state, $, LINE, announce, messageOf } from "./page.js";
import { formatValue, parseIntList, nestedRepr } from "./numbers.js";
import { el } from "./dom.js";
import { heatSize } from "./pictures.js";

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

export function updateLayout() {
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
export function fillDtypeList(table) {
  const strings = new Set(table.flatMap((d) => [d.typeStrings.little, d.typeStrings.big]));
  $("dtype-list").replaceChildren(...Array.from(strings, (value) => el("option", { value })));
}

export function wireLayout() {
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
export function showInLayout(field) {
  $("lay-preset").value = "custom";
  $("lay-dtype").value = field.dtype;
  $("lay-offset").value = String(field.offset);
  $("lay-shape").value = field.shape.length ? field.shape.join(", ") : "()";
  $("lay-strides").value = "";
  updateLayout();
  const fits = field.offset + field.nbytes <= state.buf.nbytes;
  announce(`Field ${field.name} is in the layout panel${fits ? "" : "; the buffer is too small for it"}`);
}
