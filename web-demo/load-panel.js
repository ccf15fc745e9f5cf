// The load panel: bytes from a picked or dropped file (which the file
// view opens too) or pasted hex, into the buffer (its first MAX_BYTES).

import { state, $, MAX_BYTES, announce, messageOf } from "./page.js";
import { parseHexBytes, formatHexBytes } from "./numbers.js";
import { setBuffer } from "./buffer.js";
import { fileSource } from "./sources.js";

function loadBytes(bytes, from, total = bytes.length) {
  setBuffer(bytes);
  const kept = bytes.length;
  const note = total > kept ? ` (the first ${kept} of its ${total}: ${MAX_BYTES} at most)` : "";
  loadError("");
  $("load-status").textContent = `Loaded ${kept} byte${kept === 1 ? "" : "s"} from ${from}${note}.`;
  announce($("load-status").textContent);
}

export function loadError(message) {
  $("load-error").textContent = message;
  if (message) $("load-status").textContent = "";
}

/** A file picked or dropped: its first MAX_BYTES into the buffer, and the whole of it in the file view. */
async function openFile(file) {
  try {
    const blob = file.size > MAX_BYTES ? file.slice(0, MAX_BYTES) : file;
    loadBytes(new Uint8Array(await blob.arrayBuffer()), file.name, file.size);
    // The grid drawn first, then the file view shown: each a frame of its
    // own (a hidden tab draws none: a tenth of a second at most).
    await new Promise((resolve) => {
      requestAnimationFrame(() => setTimeout(resolve, 0));
      setTimeout(resolve, 100);
    });
    await state.fileView.open(fileSource(file));
  } catch (err) {
    loadError(`Could not read ${file.name}: ${messageOf(err)}`);
  }
}

export function wireLoad() {
  $("load-file").addEventListener("change", (e) => {
    const file = e.target.files?.[0];
    if (file) openFile(file);
  });
  // A file dropped anywhere on the page opens as a picked one does.
  document.addEventListener("dragover", (e) => {
    if (!e.dataTransfer?.types.includes("Files")) return;
    e.preventDefault(); // a drop target
    e.dataTransfer.dropEffect = "copy";
  });
  document.addEventListener("drop", (e) => {
    const file = e.dataTransfer?.files?.[0];
    if (!file) return;
    e.preventDefault(); // not opened by the browser in place of the page
    openFile(file);
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
