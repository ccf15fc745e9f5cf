// What the tensor panel and the layout panel draw of an array's values: a
// statistics line, a histogram and a heatmap. The numbers all come from
// the core in wasm (`Stats`, `Histogram`, `Heatmap`); this file only draws
// them: bars, colours and text.

import { el } from "./dom.js";

/** The heatmap's largest picture, in pixels: the panel's canvas. */
export const HEAT_W = 480;
export const HEAT_H = 320;
const HIST_W = 480;
const HIST_H = 140;
// viridis at five stops: dark to bright, the luminance rising throughout.
const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

/** The colour of `t` in 0..1 on the scale. */
function colour(t) {
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  return STOPS[i].map((c, k) => Math.round(c + (STOPS[i + 1][k] - c) * f));
}

/** The scale in 1024 steps, as RGBA pixels (little-endian words, as ImageData's bytes are on every browser's platforms). */
const LUT = Uint32Array.from({ length: 1024 }, (_, i) => {
  const [r, g, b] = colour(i / 1023);
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
});
const NAN_PIXEL = ((80 << 24) | (128 << 16) | (128 << 8) | 128) >>> 0;

/** A float64 from the core, readable: 7 significant digits. */
export function readable(v) {
  if (v === null || v === undefined) return "—";
  if (!Number.isFinite(v)) return String(v);
  return String(Number(v.toPrecision(7)));
}

/** The pixel sizes of a heatmap of a rows × cols array: the panel's canvas, no finer than the array. */
export function heatSize(rows, cols) {
  return { outH: Math.max(1, Math.min(rows, HEAT_H)), outW: Math.max(1, Math.min(cols, HEAT_W)) };
}

export class Pictures {
  /** Draws into `box`; `id` prefixes the test ids: `${id}-stats`, `${id}-hist`, `${id}-hist-log`, `${id}-hist-note` (why there is none), `${id}-heatmap`, `${id}-heatmap-mode`, `${id}-heatmap-value`, `${id}-heatmap-note` (why there is none, or what it shows). */
  constructor(box, id) {
    this.id = id;
    this.stats = el("p", { class: "tstats", "data-testid": `${id}-stats`, "aria-live": "polite" });
    this.log = el("input", { type: "checkbox", "data-testid": `${id}-hist-log` });
    this.histNote = el("p", { class: "summary", "data-testid": `${id}-hist-note` });
    this.histCanvas = el("canvas", { class: "hist", width: HIST_W, height: HIST_H, "data-testid": `${id}-hist`, role: "img", "aria-label": "Histogram of the finite values, 64 bins" });
    this.histAxis = el("p", { class: "axis" });
    this.histValue = el("p", { class: "readout", "data-testid": `${id}-hist-value` });
    this.mode = el("select", { "data-testid": `${id}-heatmap-mode`, "aria-label": "Each pixel is" },
      el("option", { value: "mean", text: "mean of its elements" }), el("option", { value: "max", text: "max of its elements" }));
    this.heatCanvas = el("canvas", { class: "heat", width: 1, height: 1, "data-testid": `${id}-heatmap`, role: "img", "aria-label": "Heatmap of the values" });
    this.scale = el("div", { class: "heat-scale" });
    this.heatValue = el("p", { class: "readout", "data-testid": `${id}-heatmap-value` });
    this.heatDims = el("p", { class: "readout" });
    this.heatNote = el("p", { class: "summary", "data-testid": `${id}-heatmap-note` });
    this.histBox = el("figure", { class: "pic", hidden: true },
      el("figcaption", {}, "Histogram (64 bins, numpy's) ", el("label", {}, this.log, " log counts")),
      this.histCanvas, this.histAxis, this.histValue);
    this.heatBox = el("figure", { class: "pic", hidden: true },
      el("figcaption", {}, "Heatmap, each pixel the ", this.mode),
      this.heatCanvas, this.scale, this.heatDims, this.heatValue);
    box.replaceChildren(this.stats, this.histNote, el("div", { class: "pics" }, this.histBox, el("div", {}, this.heatBox, this.heatNote)));
    this.hist = null;
    this.heat = null;
    this.log.addEventListener("change", () => this.drawHistogram());
    this.mode.addEventListener("change", () => this.drawHeatmap());
    this.histCanvas.addEventListener("mousemove", (e) => this.pointHistogram(e));
    this.heatCanvas.addEventListener("mousemove", (e) => this.pointHeatmap(e));
  }

  clear(note = "") {
    this.stats.textContent = note;
    for (const k of Object.keys(this.stats.dataset)) if (k !== "testid") delete this.stats.dataset[k];
    this.hist = null;
    this.heat = null;
    this.histBox.hidden = true;
    this.heatBox.hidden = true;
    this.heatNote.textContent = "";
    this.histNote.textContent = "";
    this.histValue.textContent = "";
    this.heatValue.textContent = "";
  }

  /** The statistics line: `r` is `Stats.result()`. */
  showStats(r) {
    const parts = [`count ${r.count.toLocaleString("en")}`, `min ${readable(r.min)}`, `max ${readable(r.max)}`,
      `mean ${readable(r.mean)}`, `std ${readable(r.std)}`, `NaN ${r.nan}`, `+inf ${r.posinf}`, `−inf ${r.neginf}`,
      `zero ${r.zero}`, `subnormal ${r.subnormal}`];
    this.stats.textContent = parts.join(" · ");
    for (const [k, v] of Object.entries(r)) this.stats.dataset[k] = v === null ? "" : String(v);
  }

  showHistogram(counts, edges) {
    this.hist = { counts: Array.from(counts), edges: Array.from(edges) };
    this.histCanvas.dataset.counts = JSON.stringify(this.hist.counts);
    this.histCanvas.dataset.edges = JSON.stringify(this.hist.edges.map(String));
    this.histBox.hidden = false;
    this.histAxis.textContent = `${readable(this.hist.edges[0])} … ${readable(this.hist.edges.at(-1))}`;
    this.drawHistogram();
  }

  /** No histogram, and why. */
  noHistogram(note) {
    this.hist = null;
    this.histBox.hidden = true;
    this.histNote.textContent = note;
    delete this.histCanvas.dataset.counts;
    delete this.histCanvas.dataset.edges;
  }

  drawHistogram() {
    if (!this.hist) return;
    const ctx = this.histCanvas.getContext("2d");
    const { counts } = this.hist;
    const log = this.log.checked;
    const h = (c) => (log ? Math.log10(1 + c) : c);
    const top = Math.max(1e-9, ...counts.map(h));
    ctx.clearRect(0, 0, HIST_W, HIST_H);
    const w = HIST_W / counts.length;
    ctx.fillStyle = "#3b6fb6";
    counts.forEach((c, i) => {
      const bar = (h(c) / top) * (HIST_H - 4);
      if (c > 0) ctx.fillRect(i * w + 0.5, HIST_H - Math.max(1, bar), Math.max(1, w - 1), Math.max(1, bar));
    });
    this.histCanvas.dataset.log = String(log);
  }

  pointHistogram(e) {
    if (!this.hist) return;
    const rect = this.histCanvas.getBoundingClientRect();
    const i = Math.min(this.hist.counts.length - 1, Math.floor(((e.clientX - rect.left) / rect.width) * this.hist.counts.length));
    const { edges, counts } = this.hist;
    this.histValue.textContent = `[${readable(edges[i])}, ${readable(edges[i + 1])}${i === counts.length - 1 ? "]" : ")"}: ${counts[i].toLocaleString("en")}`;
  }

  /**
   * The heatmaps `{ mean, max }` (each `{ values, range }`, `Heatmap.values()`
   * and `range()`) of an `outH × outW` picture of `rows × cols` elements;
   * `transposed`: the picture is of the stored (Fortran) order, drawn
   * transposed. `label` says what was drawn.
   */
  showHeatmap(pictures, info) {
    this.heat = { pictures, ...info };
    this.heatBox.hidden = false;
    this.heatNote.textContent = info.label ?? "";
    this.drawHeatmap();
  }

  noHeatmap(note) {
    this.heat = null;
    this.heatBox.hidden = true;
    this.heatNote.textContent = note;
  }

  drawHeatmap() {
    if (!this.heat) return;
    const { pictures, outH, outW, transposed } = this.heat;
    const { values, range } = pictures[this.mode.value];
    const [W, H] = transposed ? [outH, outW] : [outW, outH];
    const canvas = this.heatCanvas;
    canvas.width = W;
    canvas.height = H;
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(W, H);
    const [lo, hi] = range ?? [0, 1];
    const scale = hi > lo ? (LUT.length - 1) / (hi - lo) : 0;
    const pixels = new Uint32Array(image.data.buffer);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const v = transposed ? values[x * outW + y] : values[y * outW + x];
        pixels[y * W + x] = Number.isNaN(v) ? NAN_PIXEL : LUT[Math.round((v - lo) * scale)];
      }
    }
    ctx.putImageData(image, 0, 0);
    canvas.dataset.mode = this.mode.value;
    canvas.dataset.range = JSON.stringify(range);
    this.scale.replaceChildren(
      el("span", { text: readable(range?.[0]) }),
      el("span", { class: "ramp", style: `background:linear-gradient(to right, ${STOPS.map((c) => `rgb(${c.join(",")})`).join(", ")})` }),
      el("span", { text: readable(range?.[1]) }));
    this.heatDims.textContent = `${this.heat.rows.toLocaleString("en")} × ${this.heat.cols.toLocaleString("en")} elements in ${H} × ${W} pixels`
      + `${transposed ? " (stored in Fortran order, drawn transposed)" : ""}`;
  }

  /** The value under the mouse: the pixel's, and the rows and columns of the elements it covers. */
  pointHeatmap(e) {
    if (!this.heat) return;
    const { pictures, outH, outW, transposed, rows, cols } = this.heat;
    const rect = this.heatCanvas.getBoundingClientRect();
    const x = Math.floor(((e.clientX - rect.left) / rect.width) * this.heatCanvas.width);
    const y = Math.floor(((e.clientY - rect.top) / rect.height) * this.heatCanvas.height);
    const [i, j] = transposed ? [x, y] : [y, x]; // the picture's pixel, in stored order
    if (i < 0 || j < 0 || i >= outH || j >= outW) return;
    const v = pictures[this.mode.value].values[i * outW + j];
    // The elements pixel (i, j) covers, as the core's Heatmap says (rows floor(i * rows / outH) ..).
    const [sr, sc] = transposed ? [cols, rows] : [rows, cols];
    const r0 = Math.floor((i * sr) / outH), r1 = Math.floor(((i + 1) * sr) / outH);
    const c0 = Math.floor((j * sc) / outW), c1 = Math.floor(((j + 1) * sc) / outW);
    const [a, b] = transposed ? [[c0, c1], [r0, r1]] : [[r0, r1], [c0, c1]];
    this.heatValue.textContent = `rows ${a[0]}..${a[1]}, columns ${b[0]}..${b[1]}: ${this.mode.value} ${Number.isNaN(v) ? "nothing finite" : readable(v)}`;
    this.heatValue.dataset.value = String(v);
  }
}
