// The JavaScript half of readHeader (src/files.rs): its JSON text comes in
// pieces, so that wasm memory never holds all of it at once.

/**
 * The value of the JSON text `parts` (strings) make when joined, with the
 * shape of each array numbered in `big` (indices into `arrays`) made
 * BigInts: src/files.rs writes the lengths of such a shape, one of them
 * past 2^53, as decimal strings.
 */
export function parseHeader(parts, big) {
  const value = JSON.parse(parts.length === 1 ? parts[0] : parts.join(""));
  for (const i of big) {
    const array = value.arrays[i];
    array.shape = array.shape.map((n) => BigInt(n));
  }
  return value;
}
