// Where the file view reads a file from: a picked file (File.slice) or one
// `cargo xtask demo FILE` serves (HTTP range requests), each as
// `{ name, size, spec, read(start, end) }`; a refusal's text, the server's
// reason, goes in the message.

/** A picked file, read through File.slice. */
export function fileSource(file) {
  return {
    name: file.name,
    size: file.size,
    spec: { file }, // what the tensor panel's worker reads it by
    read: async (start, end) => new Uint8Array(await file.slice(start, end).arrayBuffer()),
  };
}

/** The most of a refusal's text shown. */
const REASON_BYTES = 300;

/**
 * What a server said with a refusal (HTTP 400 and up): ": " and the first
 * REASON_BYTES of its text body (the demo's server says why: "not a regular
 * file"), or "". Any other answer's body (a whole file, perhaps) is not read.
 */
export async function reasonOf(response) {
  const type = response.headers.get("Content-Type") ?? "";
  if (response.status < 400 || !type.startsWith("text/plain") || !response.body) {
    await response.body?.cancel();
    return "";
  }
  const reader = response.body.getReader();
  const parts = [];
  let have = 0;
  while (have < REASON_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    have += value.length;
  }
  await reader.cancel();
  const bytes = new Uint8Array(have);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  const text = new TextDecoder().decode(bytes.subarray(0, REASON_BYTES)).trim();
  return text ? `: ${text}${have > REASON_BYTES ? "…" : ""}` : "";
}

/** A served file, read in HTTP byte ranges; its size is what the first answer's Content-Range says. */
export async function urlSource(url) {
  const ranged = async (start, end) => {
    const response = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, cache: "no-store" });
    if (response.status !== 206 && response.status !== 200) {
      throw new Error(`${url} answered HTTP ${response.status} to a request for bytes ${start}..${end}${await reasonOf(response)}`);
    }
    return response;
  };
  // Its size: 206 with "bytes 0-0/N", or 416 with "bytes */0" for an empty file.
  const first = await fetch(url, { headers: { Range: "bytes=0-0" }, cache: "no-store" });
  if (first.status !== 206 && first.status !== 416) {
    const reason = await reasonOf(first); // a whole file's body (200), perhaps: not read
    throw new Error(`${url} answered HTTP ${first.status} to a request for its first byte${reason || ", not a byte range"}`);
  }
  await first.arrayBuffer();
  const total = Number((first.headers.get("Content-Range") ?? "").split("/")[1]);
  if (!Number.isSafeInteger(total)) throw new Error(`${url} did not say its size (no Content-Range)`);
  return {
    name: decodeURIComponent(new URL(url, location.href).pathname.split("/").pop()),
    size: total,
    spec: { url: new URL(url, location.href).href },
    read: async (start, end) => (end <= start ? new Uint8Array(0) : new Uint8Array(await (await ranged(start, end)).arrayBuffer())),
  };
}
