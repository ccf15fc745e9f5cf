// The data inspector: the bytes at one offset read as every dtype of the
// core's table, in both byte orders, each with its hex; and, inside an
// array, its name, the element's multi-index and value (or, in a quantised
// GGUF tensor, the block and field). Every value is read by the core (a
// scratch wasm Buffer the bytes are copied into); this file only draws.

import { el } from "./dom.js";
import { cutText, formatValue, hexOf } from "./numbers.js";

const MAX_SIZE = 8; // the widest dtype's bytes: all the inspector reads
const ORDERS = ["little", "big"];

/** The inspector's dtypes, top to bottom: the table's bool first, then the grid's readings. */
function rowsOf(table, readings) {
  return [...table.filter((d) => d.kind === "b"), ...readings];
}

/** The value as JS writes it (every digit of a float's double), bool as true or false, -0 kept. */
function exactText(v, dtype) {
  if (dtype.kind === "b") return String(v === 1);
  return Object.is(v, -0) ? "-0" : String(v);
}

function plural(n, what) {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

export class Inspector {
  /**
   * Draws into `box` (an empty element); `id` prefixes its test ids:
   * `${id}-offset`, `${id}-<dtype>-<order>` (each with `data-value`, the
   * text shown, `data-exact`, the value as JS writes it, `data-hex`, and
   * `data-past` where the bytes run past the end) and `${id}-element`.
   */
  constructor(wasm, box, id, readings) {
    this.wasm = wasm;
    this.scratch = new wasm.Buffer(MAX_SIZE);
    this.id = id;
    this.box = box;
    this.caption = el("p", { class: "insp-offset", "data-testid": `${id}-offset`, text: "Select a byte to read it as every type." });
    this.element = el("p", { class: "insp-element", "data-testid": `${id}-element`, hidden: true });
    const tbody = el("tbody");
    this.cells = [];
    for (const dtype of rowsOf(wasm.dtypes(), readings)) {
      const cells = ORDERS.map((order) => {
        const value = el("span", { class: "insp-value" });
        const hex = el("span", { class: "insp-hex" });
        const td = el("td", { "data-testid": `${id}-${dtype.name}-${order}` }, value, hex);
        return { order, td, value, hex };
      });
      // One byte reads the same in both orders: the second is dimmed.
      if (dtype.size === 1) cells[1].td.classList.add("same");
      this.cells.push({ dtype, cells });
      tbody.append(el("tr", { class: `kind-${dtype.float ? "float" : "int"}` },
        el("th", { scope: "row" }, dtype.name, dtype.code === dtype.name ? "" : " ", dtype.code === dtype.name ? "" : el("code", { class: "tstr", text: dtype.code })),
        ...cells.map((c) => c.td)));
    }
    const table = el("table", { class: "insp-table" },
      el("caption", { class: "vh", text: "The bytes at the selection read as every dtype" }),
      el("thead", {}, el("tr", {},
        el("th", { scope: "col", text: "dtype" }),
        el("th", { scope: "col" }, "little-endian ", el("code", { text: "<" })),
        el("th", { scope: "col" }, "big-endian ", el("code", { text: ">" })))),
      tbody);
    box.replaceChildren(this.caption, this.element, table);
    box.classList.add("inspector");
  }

  /**
   * Shows the readings of `bytes`, the (at most 8) bytes from `offset`
   * (fewer near the end of the data, whose size is `size`), and
   * `element`: null, or what `elementAt` says of the array there.
   */
  show(offset, bytes, size, element = null) {
    const have = Math.min(bytes.length, MAX_SIZE);
    const padded = new Uint8Array(MAX_SIZE);
    padded.set(bytes.subarray(0, have));
    this.scratch.setBytes(0, padded);
    this.caption.textContent = `Byte ${offset.toLocaleString("en")} (0x${offset.toString(16)}) of ${size.toLocaleString("en")}`;
    this.caption.dataset.offset = String(offset);
    delete this.caption.dataset.error;
    for (const { dtype, cells } of this.cells) {
      for (const c of cells) {
        const { td, value, hex } = c;
        if (dtype.size > have) {
          // Past the end: said so, nothing guessed.
          value.textContent = `past the end`;
          hex.textContent = `needs ${dtype.size} bytes, ${plural(have, "byte")} left`;
          td.dataset.past = "true";
          td.dataset.value = "";
          td.dataset.exact = "";
          td.dataset.hex = "";
          continue;
        }
        const v = this.scratch.read(dtype.typeStrings[c.order], { offset: 0, shape: [1] })[0];
        const text = formatValue(v, dtype);
        const h = hexOf(padded, 0, dtype.size, c.order);
        value.textContent = text;
        hex.textContent = h;
        delete td.dataset.past;
        td.dataset.value = text;
        td.dataset.exact = exactText(v, dtype);
        td.dataset.hex = h;
        td.title = `${dtype.typeStrings[c.order]} at byte ${offset}: ${text} (${h})`;
      }
    }
    this.showElement(element);
  }

  /** Byte `offset` (of `size`) is selected but its bytes could not be read: says why, and shows no stale values. */
  fail(offset, size, message) {
    this.caption.textContent = `Byte ${offset.toLocaleString("en")} (0x${offset.toString(16)}) of ${size.toLocaleString("en")}: not read (${message})`;
    this.caption.dataset.offset = String(offset);
    this.caption.dataset.error = message;
    for (const { cells } of this.cells) {
      for (const { td, value, hex } of cells) {
        value.textContent = "";
        hex.textContent = "";
        for (const k of ["value", "exact", "hex", "past"]) delete td.dataset[k];
      }
    }
    this.showElement(null);
  }

  /** Nothing selected (no data). */
  clear() {
    this.caption.textContent = "Select a byte to read it as every type.";
    delete this.caption.dataset.offset;
    delete this.caption.dataset.error;
    this.showElement(null);
  }

  showElement(e) {
    const box = this.element;
    for (const k of Object.keys(box.dataset)) if (k !== "testid") delete box.dataset[k];
    box.hidden = !e;
    if (!e) {
      box.replaceChildren();
      return;
    }
    box.dataset.array = e.name;
    const name = el("strong", { text: cutText(e.name), title: e.name });
    if (e.note) {
      box.replaceChildren(name, `: ${e.note}`);
      return;
    }
    const read = e.value === undefined ? [] : [" = ", el("code", { class: "insp-el-value", text: e.text }), ` (${e.hex}, ${e.dtype})`];
    if (e.block !== undefined) {
      // A quantised tensor: its block and the field holding the byte.
      box.dataset.block = String(e.block);
      box.dataset.field = e.field;
      Object.assign(box.dataset, e.value === undefined ? {} : { value: e.text, exact: exactText(e.value, e.described), hex: e.hex });
      box.replaceChildren(name, ` block ${e.block.toLocaleString("en")}, `, el("code", { text: e.field }), ...read);
      return;
    }
    box.dataset.index = JSON.stringify(e.index);
    box.dataset.flat = String(e.flat);
    box.dataset.value = e.text;
    box.dataset.exact = exactText(e.value, e.described);
    box.dataset.hex = e.hex;
    box.replaceChildren(name, el("code", { text: `[${e.index.join(", ")}]` }), ...read,
      el("span", { class: "insp-flat", text: ` element ${e.flat.toLocaleString("en")} in C order${e.fortran ? ", stored in Fortran order" : ""}` }));
  }

  /** One element of type string `descr` from `bytes` (its bytes, no more), read by the core. */
  readOne(descr, bytes) {
    const dtype = this.wasm.describeDType(descr);
    const padded = new Uint8Array(MAX_SIZE);
    padded.set(bytes.subarray(0, dtype.size));
    this.scratch.setBytes(0, padded);
    const value = this.scratch.read(descr, { offset: 0, shape: [1] })[0];
    return { value, text: formatValue(value, dtype), hex: hexOf(padded, 0, dtype.size, dtype.order), dtype: dtype.typeString, described: dtype };
  }
}
