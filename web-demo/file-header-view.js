// What a file's header describes, drawn in the file view (file-view.js):
// its arrays as bands over the file and as a virtualised table, a GGUF
// file's metadata (long arrays by their first values), and the legend of
// the block fields of the quantised tensors in view. Each draw takes the
// file view, `view`, whose arrays, rows and source it reads.

import { el } from "./dom.js";
import { cutText, formatFloat } from "./numbers.js";

const MAX_BANDS = 400; // bands over the file; past this, neighbours share one
const NAME_SHOWN = 64; // characters of a name or key shown (all in its title)
// A quantised block's fields, by ggml's names, the same colour in every
// type; other names take the next of FIELD_HUES.
const FIELD_HUE = { d: 0, m: 35, dmin: 35, e: 0, scales: 275, scales_h: 275, scales_l: 305, qh: 190, hmask: 55, ql: 100, qs: 130 };
const FIELD_HUES = [230, 160, 20, 320];
const META_SHOWN = 4; // values of a metadata array shown before "… N more"
const META_TEXT = 120; // characters of a metadata string shown

function alignmentOf(offset) {
  if (offset === 0) return "any";
  let a = 1;
  while (offset % (a * 2) === 0 && a < 4096) a *= 2;
  return a === 4096 ? "4096+" : String(a);
}

function shapeText(shape) {
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}

/** An array of a dtype bytelens has, at an offset that dtype's alignment
 * does not divide (not one it has no dtype for: nothing views that). */
export function isMisaligned(a) {
  return !a.aligned && a.descr !== null;
}

/** A quantised GGUF tensor (readHeader gives it `blockBytes` and `fields`). */
export function isBlocks(a) {
  return a.blockBytes !== undefined;
}

/** Each field of a block with its colour and byte range: { name, dtype, count, offset, end, hue }. */
export function blockFields(a) {
  let spare = 0;
  return a.fields.map((f) => {
    const size = Number(f.dtype.slice(2)); // "<f2", "|u1": the itemsize
    const hue = FIELD_HUE[f.name] ?? FIELD_HUES[spare++ % FIELD_HUES.length];
    return { ...f, end: f.offset + f.count * size, size, hue };
  });
}

/** One GGUF metadata value as text: a string quoted and cut at META_TEXT characters, a float32 as numpy shows it. */
function metaValueText(value, type, float32) {
  if (type === "string") {
    const text = JSON.stringify(value);
    return text.length > META_TEXT ? `${text.slice(0, META_TEXT)}…" (${value.length.toLocaleString("en")} characters)` : text;
  }
  if (type === "float32" && typeof value === "number") return formatFloat(value, float32);
  return String(value); // integers past 2^53 come as their decimal text
}

/** A metadata entry's value as the table shows it: an array by its first
 * META_SHOWN values and "… N more" (exported for the unit tests). */
export function metaText(entry, float32) {
  if (entry.type !== "array") return metaValueText(entry.value, entry.type, float32);
  const shown = entry.value.slice(0, META_SHOWN).map((v) => metaValueText(v, entry.elementType, float32));
  const more = entry.count - shown.length;
  return `[${shown.join(", ")}${more > 0 ? `, … ${more.toLocaleString("en")} more` : ""}]`;
}

/**
 * The arrays as bands over the whole file, at most MAX_BANDS of them:
 * past that, arrays next to each other share a band (each at least
 * 1/MAX_BANDS of the file, or one array), titled with how many and
 * which; a click jumps to its first.
 */
export function drawBands(view) {
  const bands = document.getElementById("file-bands");
  const size = Math.max(1, view.source.size);
  const pct = (x) => (x / size) * 100;
  // Each band: { first, last, count, start, end } (the arrays are sorted by offset).
  const groups = [];
  const span = view.arrays.length <= MAX_BANDS ? 0 : size / MAX_BANDS;
  for (const a of view.arrays) {
    const g = groups.at(-1);
    const end = a.offset + a.nbytes;
    if (g && end - g.start <= span) {
      g.last = a;
      g.count++;
      g.end = Math.max(g.end, end);
    } else {
      groups.push({ first: a, last: a, count: 1, start: a.offset, end });
    }
  }
  // The smallest on top, where several overlap.
  groups.sort((x, y) => (y.end - y.start) - (x.end - x.start));
  bands.replaceChildren(...groups.map((g) => {
    const a = g.first;
    const one = g.count === 1;
    const band = el("button", {
      type: "button",
      class: `fband${one && isMisaligned(a) ? " misaligned" : ""}${one ? "" : " group"}`,
      style: `left:${pct(g.start)}%;width:max(3px, ${pct(g.end - g.start)}%);--hue:${a.hue}`,
      title: one
        ? `${a.name}: ${a.dtype} ${shapeText(a.shape)}, bytes ${a.offset}..${a.offset + a.nbytes}${isMisaligned(a) ? ", misaligned" : ""}`
        : `${g.count.toLocaleString("en")} arrays, bytes ${g.start}..${g.end}: ${cutText(a.name, NAME_SHOWN)} … ${cutText(g.last.name, NAME_SHOWN)}`,
      "aria-label": one ? `Jump to ${a.name}` : `Jump to ${a.name}, the first of ${g.count} arrays`,
      "data-testid": `file-band-${a.name}`,
      "data-arrays": g.count,
    });
    band.addEventListener("click", () => view.jumpTo(a.offset));
    return band;
  }));
  bands.dataset.arrays = String(view.arrays.length);
}

/** The arrays' table, every one listed, virtualised: only the rows in view are drawn. */
export function drawTable(view) {
  document.getElementById("file-more").textContent = "";
  return view.arrayRows.set(view.arrays.length, (from, to) => view.arrays.slice(from, to), (a) => {
    const jump = el("button", { type: "button", class: "small", "aria-label": `Jump to ${a.name}`, text: "Jump", "data-testid": `file-jump-${a.name}` });
    jump.addEventListener("click", () => view.jumpTo(a.offset));
    const openIt = el("button", { type: "button", class: "small", "aria-label": `Open ${a.name} in the tensor panel`, text: "Values", "data-testid": `file-open-${a.name}` });
    openIt.addEventListener("click", () => view.tensor.open(a));
    const load = isBlocks(a) ? `${a.dtype} blocks, dequantised on access`
      : a.descr === null ? (a.ggml === null ? `bytelens does not read ${a.dtype}` : `no bytelens dtype for ${a.dtype}`)
        : a.aligned ? "view" : "misaligned: bl.load copies it";
    const blocks = isBlocks(a)
      ? `${a.blocks.toLocaleString("en")} × ${a.blockBytes} bytes (${a.block} elements each)` : "";
    const shape = shapeText(a.shape);
    const bytes = `${a.offset}..${a.offset + a.nbytes}`;
    return el("tr", { class: isMisaligned(a) ? "misaligned" : "", "data-testid": `file-array-${a.name}` },
      el("th", { scope: "row", title: a.name }, el("span", { class: "swatch", style: `--hue:${a.hue}`, "aria-hidden": "true" }), cutText(a.name, NAME_SHOWN)),
      el("td", {}, el("code", { text: a.dtype })),
      el("td", { text: shape, title: shape }),
      el("td", { text: bytes, title: bytes }),
      el("td", { text: alignmentOf(a.offset) }),
      el("td", { text: load, title: load }),
      el("td", { text: blocks, title: blocks }),
      el("td", {}, jump, " ", openIt));
  });
}

/** A GGUF file's metadata, one row per key, virtualised: the rows in view asked of the header worker (hidden for other files). */
export function drawMetadata(view) {
  const box = document.getElementById("file-meta");
  box.hidden = !view.gguf;
  document.getElementById("file-meta-more").textContent = "";
  if (!view.gguf) return view.metaRows.set(0, () => [], () => null);
  const float32 = view.wasm.describeDType("float32").format;
  const seq = view.openSeq;
  const items = async (from, to) => (seq === view.openSeq ? view.headers.items("gguf", from, to) : []);
  return view.metaRows.set(view.gguf.length, items, (m) => {
    const jump = el("button", { type: "button", class: "small", "aria-label": `Jump to ${m.key}'s value`, text: "Jump", "data-testid": `file-meta-jump-${m.key}` });
    jump.addEventListener("click", () => view.jumpTo(m.offset));
    const type = m.type === "array" ? `${m.elementType}[${m.count.toLocaleString("en")}]` : m.type;
    const value = metaText(m, float32);
    return el("tr", { "data-testid": `file-meta-${m.key}` },
      el("th", { scope: "row", title: m.key }, el("code", { text: cutText(m.key, NAME_SHOWN) })),
      el("td", {}, el("code", { text: type })),
      el("td", { class: "meta-value", text: value, title: value }),
      el("td", { text: `${m.offset}..${m.offset + m.nbytes}` }),
      el("td", {}, jump));
  });
}

/** The legend of the block fields of the quantised tensors in bytes `start..end`. */
export function drawLegend(view, start, end) {
  const legend = document.getElementById("file-legend");
  const shown = view.arrays.filter((a) => isBlocks(a) && a.offset < end && a.offset + a.nbytes > start);
  legend.hidden = shown.length === 0;
  legend.replaceChildren(...shown.map((a) => {
    const first = Math.max(0, Math.floor((start - a.offset) / a.blockBytes));
    const last = Math.min(a.blocks, Math.ceil((end - a.offset) / a.blockBytes)) - 1;
    const blocks = first === last ? `block ${first}` : `blocks ${first}..${last}`;
    return el("p", { class: "flegend", "data-testid": `file-legend-${a.name}` },
      el("span", { class: "swatch", style: `--hue:${a.hue}`, "aria-hidden": "true" }),
      el("strong", { text: cutText(a.name, NAME_SHOWN), title: a.name }),
      ` ${blocks} of ${a.blocks}: ${a.dtype}, ${a.block} elements in ${a.blockBytes} bytes: `,
      ...a.blockFields.flatMap((f, i) => [i ? " " : "", el("span", {
        class: "ffield", style: `--hue:${f.hue}`, "data-testid": `file-legend-${a.name}-${f.name}`,
        title: `${f.name}: ${f.count} × ${f.dtype} at bytes ${f.offset}..${f.end} of each block`,
      }, el("code", { text: f.name }), ` ${f.dtype}${f.count > 1 ? `×${f.count}` : ""} @${f.offset}`)]));
  }));
}
