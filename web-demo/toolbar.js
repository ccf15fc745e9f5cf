// The toolbar over the grid: the byte order every reading uses, the
// buffer's size, and going back to the example.

import { state, $, MAX_BYTES, announce } from "./page.js";
import { refresh } from "./grid.js";
import { EXAMPLE, setBuffer, resizeTo } from "./buffer.js";

export function wireToolbar() {
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
