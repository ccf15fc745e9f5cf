// The buffer: the wasm Buffer the page shows, replaced or resized, and the
// example it starts with; every panel drawn from it is drawn again.

import { state } from "./page.js";
import { buildGrid, refresh } from "./grid.js";
import { updateLayout } from "./layout-panel.js";
import { updatePlanFit } from "./plan-panel.js";

export const EXAMPLE = Uint8Array.from([
  0x00, 0x00, 0x80, 0x3f, //  0: float32 1.0
  0xdb, 0x0f, 0x49, 0x40, //  4: float32 pi
  0x18, 0x2d, 0x44, 0x54, 0xfb, 0x21, 0x09, 0x40, //  8: float64 pi
  0x44, 0x33, 0x22, 0x11, // 16: int32 0x11223344, int16 0x3344 and 0x1122
  0xff, 0xff, 0xff, 0xff, // 20: int32 -1, uint32 4294967295
  0x00, 0x3c, // 24: float16 1.0
  0x80, 0x3f, // 26: bfloat16 1.0
  0x6c, 0x65, 0x6e, 0x73, // 28: "lens"
]);

/** Replaces the buffer with these bytes (a new wasm Buffer of their length). */
export function setBuffer(bytes) {
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

export function resizeTo(n) {
  const bytes = state.buf.bytes();
  const next = new Uint8Array(n);
  next.set(bytes.subarray(0, Math.min(n, bytes.length)));
  setBuffer(next);
}
