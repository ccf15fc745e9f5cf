// A file's header, by the core's readHeader (the wasm package's, or the
// header worker's, off the page's thread): the file's first bytes, then as
// many as the header asks for.

const HEAD = 65536; // bytes read first for the header

/** Reading a file's header failed (not a header the core refused: the file
 * changed, or a read came back short). */
export class HeaderReadError extends Error {}

/** Reads a header of more bytes than this never ends in a header. */
const MAX_HEADER_READS = 16;

/**
 * The header by the core (`wasm.readHeader`, the package's or a
 * `HeaderWorker`'s): the file's first bytes, then
 * as many as it asks for, until it has them all. Each read must bring every
 * byte asked for, and each request must ask for more than the last: a file
 * that shrank since its size was taken (a read comes back short) or a
 * header that never ends throws a `HeaderReadError` after a read or two,
 * rather than asking again forever. A header the core refuses throws its
 * `RangeError`.
 *
 *     const header = await readHeader(wasm, fileSource(picked));
 *     header.arrays.map((a) => [a.name, a.offset, a.nbytes]);
 */
export async function readHeader(wasm, source) {
  let want = Math.min(HEAD, source.size);
  for (let reads = 1; ; reads++) {
    const head = await source.read(0, want);
    if (head.length < want) {
      throw new HeaderReadError(`${source.name}: asked for bytes 0..${want}, got ${head.length}; `
        + `the file is shorter than the ${source.size} bytes it had when opened (did it change?)`);
    }
    // The package's readHeader, or the header worker's (a promise).
    const header = await wasm.readHeader(head, source.size);
    if (header.need === undefined) return header;
    const need = Number(header.need);
    if (!(need > want) || need > source.size) {
      throw new HeaderReadError(`${source.name}: the header asks for ${need} bytes after ${want}, `
        + `of a file of ${source.size}`);
    }
    if (reads === MAX_HEADER_READS) {
      throw new HeaderReadError(`${source.name}: the header is not whole after ${reads} reads (${want} bytes)`);
    }
    want = need;
  }
}

/**
 * The header worker (header-worker.js), as `readHeader` calls the wasm
 * package: `readHeader(head, size)` resolves with `{ need }` or the
 * header's summary (`arrayCount`, `ggufCount` instead of its lists), and
 * `items(type, from, to)` with the arrays (by offset) or metadata entries
 * from..to of the header parsed last.
 */
export class HeaderWorker {
  constructor() {
    this.worker = null;
    this.calls = new Map();
    this.seq = 0;
    this.header = 0; // the header parsed last, by number
  }

  call(message, transfer = []) {
    if (!this.worker) {
      this.worker = new Worker(new URL("./header-worker.js", import.meta.url), { type: "module" });
      this.worker.onmessage = ({ data }) => {
        const call = this.calls.get(data.id);
        this.calls.delete(data.id);
        if (!call) return;
        if (data.error !== undefined) call.reject(Object.assign(new Error(data.error), { stale: data.stale === true }));
        else call.resolve(data);
      };
      this.worker.onerror = (e) => {
        for (const call of this.calls.values()) call.reject(new Error(`the header worker failed: ${e.message ?? "could not start"}`));
        this.calls.clear();
      };
    }
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage({ id, header: this.header, ...message }, transfer);
    });
  }

  async readHeader(head, size) {
    // Moved, not copied, where the bytes are a buffer of their own.
    const own = head.byteOffset === 0 && head.byteLength === head.buffer.byteLength;
    const bytes = own ? head : head.slice();
    this.header++;
    const r = await this.call({ type: "parse", head: bytes, size }, [bytes.buffer]);
    return r.need !== undefined ? { need: r.need } : r.summary;
  }

  async items(type, from, to) {
    return (await this.call({ type, from, to })).items;
  }
}
