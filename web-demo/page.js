// The demo page's shared state and the helpers every panel uses: the one
// module the page's others (grid, buffer, toolbar, layout, plan and load
// panels, demo.js) all import, and it imports none of them.

export const MAX_BYTES = 4096;
export const LINE = 32; // bytes per line of the grid: a multiple of every itemsize

export const $ = (id) => document.getElementById(id);

/** Everything the page holds: the wasm module, the buffer, the drawn grid. */
export const state = {
  wasm: null,
  readings: [], // the grid's rows: the wasm package's dtype table (readingsOf)
  buf: null,
  order: "little",
  rows: [], // per reading: { reading, count, cells: [{cell, input, sub}], values }
  byteCells: [], // per byte: { cell, input, sub }
  viewRows: [], // per grid line: the element holding the layout overlay
  plan: null,
  errorInput: null,
  fileView: null, // the file view (file-view.js)
  inspector: null, // the data inspector beside the grid (inspector.js)
  selected: 0, // the byte it reads from: the focused cell's first
  pictures: null, // the layout view's statistics, histogram and heatmap (pictures.js)
};

export function announce(text) {
  const status = $("status");
  status.textContent = "";
  // A fresh text node so screen readers announce a repeated message.
  requestAnimationFrame(() => { status.textContent = text; });
}

export function messageOf(err) {
  if (err && typeof err === "object" && "message" in err) return String(err.message);
  return String(err);
}
