// The file view's header worker (a module worker): reads a file's header
// by the core (`readHeader`, loading pkg/ itself) off the main thread, and
// keeps it. A header of 100,000 tensors or a million metadata keys takes
// seconds to read and as long to copy to the page whole, so the page is
// sent only a summary, then the arrays in batches (each a short task to
// take in), and the metadata a screenful at a time, as its table shows it.
//
// Messages in:  { id, type: "parse", head, size, header } (`header`: a
//                 number naming this header in the requests that follow)
//               { id, type: "arrays" | "gguf", header, from, to }
// Messages out: { id, need } (read that many bytes and parse again),
//               { id, summary } (the header less its arrays and metadata:
//                 `arrayCount`, `ggufCount`, `metadataCount` instead, and
//                 the first METADATA_SENT `metadata` pairs),
//               { id, items } (arrays by offset, or metadata entries, from..to),
//               { id, error } (the core's message; `stale`: the header asked
//                 about was replaced by a newer one)

import init, { readHeader } from "./pkg/bytelens_wasm.js";

/** The .npy and safetensors metadata pairs sent with the summary (the page shows 200 characters of them). */
const METADATA_SENT = 16;

const ready = init();
/** The header parsed last: { id, arrays (sorted by offset, each with its `index` in the header), gguf }. */
let current = null;

self.onmessage = async (e) => {
  const m = e.data;
  try {
    await ready;
    if (m.type === "parse") {
      current = null; // the last one's memory goes now
      const header = readHeader(m.head, m.size);
      if (header.need !== undefined) {
        self.postMessage({ id: m.id, need: Number(header.need) });
        return;
      }
      const { arrays = [], gguf = null, metadata = [], ...rest } = header;
      arrays.forEach((a, index) => { a.index = index; });
      arrays.sort((x, y) => x.offset - y.offset || x.index - y.index);
      current = { id: m.header, arrays, gguf };
      self.postMessage({
        id: m.id,
        summary: {
          ...rest, metadata: metadata.slice(0, METADATA_SENT), metadataCount: metadata.length,
          arrayCount: arrays.length, ggufCount: gguf ? gguf.length : null,
        },
      });
    } else if (m.type === "arrays" || m.type === "gguf") {
      if (current?.id !== m.header) {
        self.postMessage({ id: m.id, error: "the file's header was replaced by another's", stale: true });
        return;
      }
      const list = m.type === "arrays" ? current.arrays : current.gguf ?? [];
      self.postMessage({ id: m.id, items: list.slice(m.from, m.to) });
    }
  } catch (err) {
    self.postMessage({ id: m.id, error: String(err?.message ?? err) });
  }
};
