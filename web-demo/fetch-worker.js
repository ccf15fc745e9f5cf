// The tensor panel's fetching thread: reads a tensor's byte ranges for
// tensor-worker.js, which asks through the MessagePort the page gives both
// (the first message here). On a thread of its own so that the other
// worker's arithmetic and its synchronous writes to the browser's storage
// never stall a download. The bytes are transferred back, not copied.
//
// Port messages in:  { type: "read", key, source, start, end }
//                    { type: "abort", key }
// Port messages out: { key, bytes } or { key, error, abort }
//
// `source` is { url } (read in HTTP byte ranges) or { file } (a File, read
// by slice).

const controllers = new Map();

/** Bytes start..end of the source, checked to be exactly those. */
async function readRange(source, start, end, signal) {
  if (source.file) return new Uint8Array(await source.file.slice(start, end).arrayBuffer());
  const response = await fetch(source.url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: "no-store", signal });
  if (response.status !== 206 && response.status !== 200) {
    // The server's reason, where it gives one as text (its first line).
    const type = response.headers.get("Content-Type") ?? "";
    const reason = type.startsWith("text/plain") ? (await response.text()).split("\n")[0].slice(0, 300) : "";
    throw new Error(`${source.url} answered HTTP ${response.status} to a request for bytes ${start}..${end}${reason ? `: ${reason}` : ""}`);
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length !== end - start) throw new Error(`asked for bytes ${start}..${end}, got ${bytes.length}: did the file change?`);
  return bytes;
}

self.onmessage = (e) => {
  const port = e.data.port;
  port.onmessage = async ({ data: m }) => {
    if (m.type === "abort") {
      controllers.get(m.key)?.abort();
      return;
    }
    const controller = new AbortController();
    controllers.set(m.key, controller);
    try {
      const bytes = await readRange(m.source, m.start, m.end, controller.signal);
      port.postMessage({ key: m.key, bytes }, [bytes.buffer]);
    } catch (err) {
      port.postMessage({ key: m.key, error: String(err?.message ?? err), abort: err?.name === "AbortError" });
    } finally {
      controllers.delete(m.key);
    }
  };
};
