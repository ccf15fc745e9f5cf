// A small GGUF file (llama.cpp's format, version 3), written byte by byte
// for the demo's tests: numbers.test.mjs reads its header through the wasm
// package, e2e.mjs opens it in the file view (served and picked). It holds
// every kind of metadata value the view shows (strings, integers of each
// sign, a uint64 past 2^53, floats, a bool, arrays longer than the 8
// elements readHeader gives) and tensors of a plain type (F32, F16), two
// quantised ones (Q8_0, Q4_K) and one bytelens does not read (IQ2_XXS).
//
// Its layout was checked against gguf-py 0.19 (`gguf.GGUFReader`), which
// reads the same keys, types, shapes and offsets.

/** GGUF's value type codes. */
const T = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12 };

/** The data section's alignment (general.alignment). */
export const ALIGNMENT = 64;

/** A vocabulary of `n` tokens: "<unk>", "<s>", "</s>", "tok3", .... */
export function tokens(n) {
  return Array.from({ length: n }, (_, i) => ["<unk>", "<s>", "</s>"][i] ?? `tok${i}`);
}

/** The vocabulary: 20 tokens, more than readHeader gives of an array. */
export const TOKENS = tokens(20);

/** The metadata, in file order: [key, type, value] (an array: ["array", element type, values]). */
export const METADATA = metadata(TOKENS);

function metadata(TOKENS) {
  return [
  ["general.architecture", "string", "llama"],
  ["general.name", "string", "bytelens fixture"],
  ["general.alignment", "u32", ALIGNMENT],
  ["general.file_type", "u32", 15],
  ["llama.context_length", "u32", 4096],
  ["llama.attention.layer_norm_rms_epsilon", "f32", 1e-5],
  ["test.int8", "i8", -5],
  ["test.int64", "i64", -3n],
  ["test.big", "u64", 2n ** 60n + 1n],
  ["test.ratio", "f64", 2.5],
  ["test.flag", "bool", true],
  ["tokenizer.ggml.tokens", "array", "string", TOKENS],
  ["tokenizer.ggml.scores", "array", "f32", TOKENS.map((_, i) => -i / 4)],
  ["tokenizer.ggml.token_type", "array", "i32", TOKENS.map((_, i) => (i < 3 ? 3 : 1))],
  ];
}

/** The tensors: [name, ggml code, numpy shape, block elements, block bytes]. */
export const TENSORS = [
  ["token_embd.weight", 0, [4, 8], 1, 4], // F32
  ["blk.0.attn_q.weight", 8, [2, 64], 32, 34], // Q8_0: 4 blocks
  ["blk.0.ffn_down.weight", 12, [2, 256], 256, 144], // Q4_K: 2 blocks
  ["output_norm.weight", 1, [8], 1, 2], // F16
  ["blk.0.attn_k.weight", 16, [256], 256, 66], // IQ2_XXS: bytelens reads it not
];

/** Bytes, growing as they are written. */
class Writer {
  constructor() {
    this.bytes = new Uint8Array(256);
    this.length = 0;
  }

  room(n) {
    if (this.length + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
    grown.set(this.bytes);
    this.bytes = grown;
  }

  put(n, write) {
    this.room(n);
    write(new DataView(this.bytes.buffer, this.length, n));
    this.length += n;
  }

  u8(v) { this.put(1, (d) => d.setUint8(0, v)); }
  i8(v) { this.put(1, (d) => d.setInt8(0, v)); }
  u16(v) { this.put(2, (d) => d.setUint16(0, v, true)); }
  i16(v) { this.put(2, (d) => d.setInt16(0, v, true)); }
  u32(v) { this.put(4, (d) => d.setUint32(0, v, true)); }
  i32(v) { this.put(4, (d) => d.setInt32(0, v, true)); }
  f32(v) { this.put(4, (d) => d.setFloat32(0, v, true)); }
  f64(v) { this.put(8, (d) => d.setFloat64(0, v, true)); }
  u64(v) { this.put(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  i64(v) { this.put(8, (d) => d.setBigInt64(0, BigInt(v), true)); }
  bool(v) { this.u8(v ? 1 : 0); }

  string(text) {
    const utf8 = new TextEncoder().encode(text);
    this.u64(utf8.length);
    this.room(utf8.length);
    this.bytes.set(utf8, this.length);
    this.length += utf8.length;
  }

  padTo(alignment) {
    while (this.length % alignment) this.u8(0);
  }

  done() {
    return this.bytes.slice(0, this.length);
  }
}

/** The fixture's bytes (2,112), the same on every call; with `vocab`, a
 * vocabulary of that many tokens instead of 20 (128,256 makes a header of
 * about 2.6 MB, as a Llama 3 model's). */
export function ggufFixture({ vocab } = {}) {
  const meta = vocab === undefined ? METADATA : metadata(tokens(vocab));
  const w = new Writer();
  w.put(4, (d) => [0x47, 0x47, 0x55, 0x46].forEach((b, i) => d.setUint8(i, b))); // "GGUF"
  w.u32(3);
  w.u64(TENSORS.length);
  w.u64(meta.length);
  for (const [key, type, ...rest] of meta) {
    w.string(key);
    w.u32(T[type]);
    if (type === "array") {
      const [element, values] = rest;
      w.u32(T[element]);
      w.u64(values.length);
      for (const v of values) w[element](v);
    } else {
      w[type](rest[0]);
    }
  }
  // Each tensor at the next multiple of the alignment, in order.
  let at = 0;
  const offsets = [];
  for (const [name, code, shape, block, bytes] of TENSORS) {
    w.string(name);
    w.u32(shape.length);
    for (const n of [...shape].reverse()) w.u64(n); // innermost first
    w.u32(code);
    w.u64(at);
    offsets.push(at);
    const nbytes = (shape.reduce((a, b) => a * b, 1) / block) * bytes;
    at = Math.ceil((at + nbytes) / ALIGNMENT) * ALIGNMENT;
  }
  w.padTo(ALIGNMENT);
  const dataStart = w.length;
  const data = new Uint8Array(at);
  const view = new DataView(data.buffer);
  // token_embd: float32 0, 1, ..., 31.
  for (let i = 0; i < 32; i++) view.setFloat32(offsets[0] + 4 * i, i, true);
  // attn_q: 4 Q8_0 blocks, d = 0.5 (float16 0x3800), qs = -16..15.
  for (let b = 0; b < 4; b++) {
    const base = offsets[1] + 34 * b;
    view.setUint16(base, 0x3800, true);
    for (let i = 0; i < 32; i++) view.setInt8(base + 2 + i, i - 16);
  }
  // ffn_down: 2 Q4_K blocks, d = 1 (0x3c00), dmin = 0.5, scales 0x21, qs 0x10 + i.
  for (let b = 0; b < 2; b++) {
    const base = offsets[2] + 144 * b;
    view.setUint16(base, 0x3c00, true);
    view.setUint16(base + 2, 0x3800, true);
    for (let i = 0; i < 12; i++) view.setUint8(base + 4 + i, 0x21);
    for (let i = 0; i < 128; i++) view.setUint8(base + 16 + i, (0x10 + i) & 0xff);
  }
  // output_norm: float16 1.0 each.
  for (let i = 0; i < 8; i++) view.setUint16(offsets[3] + 2 * i, 0x3c00, true);
  const file = new Uint8Array(dataStart + data.length);
  file.set(w.done());
  file.set(data, dataStart);
  return file;
}

/** Where the data section starts and each tensor lies in the file: { dataStart, tensors: { name: [offset, nbytes] } }. */
export function fixtureLayout(options) {
  const file = ggufFixture(options);
  const dataLength = TENSORS.reduce((at, [, , shape, block, bytes]) =>
    Math.ceil((at + (shape.reduce((a, b) => a * b, 1) / block) * bytes) / ALIGNMENT) * ALIGNMENT, 0);
  const dataStart = file.length - dataLength;
  let at = dataStart;
  const tensors = {};
  for (const [name, , shape, block, bytes] of TENSORS) {
    const nbytes = (shape.reduce((a, b) => a * b, 1) / block) * bytes;
    tensors[name] = [at, nbytes];
    at = dataStart + Math.ceil((at - dataStart + nbytes) / ALIGNMENT) * ALIGNMENT;
  }
  return { dataStart, tensors };
}

/**
 * The header of a GGUF file of `tensors` F32 tensors of shape (1,) named
 * `blk.<i>.weight` and `keys` uint8 metadata keys `key.<i>` (value i % 256),
 * with, where given, one more tensor and one more key named `longName`
 * and (`empty`) an F32 tensor `empty` of shape (0, 2^60), no elements:
 * `{ header, size }`, the header's bytes (the data section after them reads
 * as zeros) and the whole file's size. Headers of 100,000 tensors or
 * 200,000 keys, for the file view's long lists.
 */
export function ggufMany({ tensors = 0, keys = 0, longName, empty = false } = {}) {
  const w = new Writer();
  const names = Array.from({ length: tensors }, (_, i) => `blk.${i}.weight`);
  const keyNames = Array.from({ length: keys }, (_, i) => `key.${i}`);
  if (longName !== undefined) {
    names.push(longName);
    keyNames.push(longName);
  }
  w.put(4, (d) => [0x47, 0x47, 0x55, 0x46].forEach((b, i) => d.setUint8(i, b))); // "GGUF"
  w.u32(3);
  w.u64(names.length + (empty ? 1 : 0));
  w.u64(keyNames.length + 1);
  w.string("general.alignment");
  w.u32(T.u32);
  w.u32(ALIGNMENT);
  keyNames.forEach((key, i) => {
    w.string(key);
    w.u32(T.u8);
    w.u8(i % 256);
  });
  names.forEach((name, i) => {
    w.string(name);
    w.u32(1);
    w.u64(1);
    w.u32(0); // F32
    w.u64(i * ALIGNMENT);
  });
  if (empty) {
    w.string("empty");
    w.u32(2);
    w.u64(2n ** 60n); // innermost first: numpy's shape (0, 2^60)
    w.u64(0);
    w.u32(0); // F32
    w.u64(names.length * ALIGNMENT);
  }
  w.padTo(ALIGNMENT);
  const header = w.done();
  return { header, size: header.length + names.length * ALIGNMENT };
}
