// The bytelens web demo: one buffer in WebAssembly memory, drawn as a byte
// grid with every typed reading over it, a layout panel that walks one view
// element by element, and a plan panel. Every read, write and check goes
// through the wasm package; the modules only draw and parse what is typed.
// This one is the page's entry point: it loads the package and wires the
// panels (grid.js, toolbar.js, layout-panel.js, plan-panel.js,
// load-panel.js over buffer.js and page.js, and file-view.js).

import { readingsOf } from "./numbers.js";
import { state, $, messageOf } from "./page.js";
import { EXAMPLE, setBuffer, resizeTo } from "./buffer.js";
import { wireGrid } from "./grid.js";
import { wireToolbar } from "./toolbar.js";
import { fillDtypeList, wireLayout } from "./layout-panel.js";
import { updatePlan, wirePlan } from "./plan-panel.js";
import { loadError, wireLoad } from "./load-panel.js";
import { FileView } from "./file-view.js";
import { urlSource } from "./sources.js";
import { Inspector } from "./inspector.js";
import { Pictures } from "./pictures.js";

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
    wirePlan(resizeTo);
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
