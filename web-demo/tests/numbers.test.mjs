// Unit tests of the demo's parsing and formatting, and of what it takes
// from the wasm package (its dtype table, its plan text, the file view's
// header read through readHeader, a GGUF file's among them), and that the
// page's modules import one another without a circle:
//   node --test web-demo/tests/numbers.test.mjs
// after `cargo xtask build-wasm` has built the package into web-demo/pkg.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import test from "node:test";

import {
  roundToFormat, formatFloat, formatValue, hexOf, parseInteger, parseFloatText, parseByte,
  parseHexBytes, formatHexBytes, parseIntList, nestedRepr, readingsOf, indexAt,
  stridesFor, flatOf, unravel, cutText,
} from "../numbers.js";
import { HeaderReadError, readHeader } from "../header-reader.js";
import { metaText } from "../file-header-view.js";
import { reasonOf } from "../sources.js";
import { ALIGNMENT, TOKENS, fixtureLayout, ggufFixture } from "./gguf-fixture.mjs";

/** The wasm package the demo loads, built for the web and started here from its bytes. */
async function loadPackage() {
  const pkg = new URL("../pkg/", import.meta.url);
  let wasm;
  try {
    wasm = await import(new URL("bytelens_wasm.js", pkg));
  } catch (err) {
    throw new Error(`no wasm package in web-demo/pkg; build it with cargo xtask build-wasm (${err.message})`);
  }
  wasm.initSync({ module: readFileSync(new URL("bytelens_wasm_bg.wasm", pkg)) });
  return wasm;
}

const wasm = await loadPackage();
const table = wasm.dtypes();
/** A dtype's row of the package's table, by name. */
const row = (name) => table.find((d) => d.name === name);
/** A float dtype's format, from the table. */
const fmt = (name) => row(name).format;

test("integers: decimal, signed hex, separators; errors name the text", () => {
  assert.equal(parseInteger("0x11223344"), 0x11223344n);
  assert.equal(parseInteger(" -0X10 "), -16n);
  assert.equal(parseInteger("+1_000"), 1000n);
  assert.equal(parseInteger("0b101"), 5n);
  assert.equal(parseInteger("18446744073709551615"), 18446744073709551615n);
  assert.throws(() => parseInteger("1.5"), /"1.5" is not a whole number/);
  assert.throws(() => parseInteger(""), /enter a whole number/);
  assert.throws(() => parseInteger("0x"), /not a whole number/);
});

test("floats: Number's syntax plus inf and nan", () => {
  assert.equal(parseFloatText("1.5"), 1.5);
  assert.equal(parseFloatText("-inf"), -Infinity);
  assert.ok(Number.isNaN(parseFloatText("NaN")));
  assert.ok(Object.is(parseFloatText("-0"), -0));
  assert.throws(() => parseFloatText("abc"), /"abc" is not a number/);
  assert.throws(() => parseFloatText(" "), /enter a number/);
});

test("rounding to narrow formats matches IEEE round-to-nearest-even", () => {
  assert.equal(roundToFormat(1.1, fmt("float32")), Math.fround(1.1));
  assert.equal(roundToFormat(65504, fmt("float16")), 65504);
  assert.equal(roundToFormat(65519, fmt("float16")), 65504);
  assert.equal(roundToFormat(65520, fmt("float16")), Infinity);
  assert.equal(roundToFormat(2049, fmt("float16")), 2048); // tie, to even
  assert.equal(roundToFormat(2051, fmt("float16")), 2052); // tie, to even
  assert.equal(roundToFormat(2 ** -24, fmt("float16")), 2 ** -24); // smallest subnormal
  assert.equal(roundToFormat(1.1, fmt("bfloat16")), 1.1015625);
  for (const x of [Math.PI, 1e-40, 3.4e38, -7.25e-3, 123456789]) {
    assert.equal(roundToFormat(x, fmt("float32")), Math.fround(x), String(x));
  }
});

test("floats print as the shortest text that reads back the same", () => {
  assert.equal(formatFloat(Math.fround(1.1), fmt("float32")), "1.1");
  assert.equal(formatFloat(Math.fround(Math.PI), fmt("float32")), "3.1415927");
  assert.equal(formatFloat(1.1015625, fmt("bfloat16")), "1.1"); // what bfloat16(1.1) stores
  assert.equal(formatFloat(1.109375, fmt("bfloat16")), "1.11");
  assert.equal(formatFloat(2048, fmt("float16")), "2048");
  assert.equal(formatFloat(-0, fmt("float16")), "-0");
  assert.equal(formatFloat(Math.PI, fmt("float64")), String(Math.PI));
  assert.equal(formatValue(-1n, row("int64")), "-1");
  assert.equal(formatValue(true, row("bool")), "true");
  assert.equal(formatValue(0, row("bool")), "false");
  assert.equal(formatValue(NaN, row("float32")), "NaN");
});

test("hex of an element follows the byte order", () => {
  const bytes = Uint8Array.of(0x44, 0x33, 0x22, 0x11);
  assert.equal(hexOf(bytes, 0, 4, "little"), "0x11223344");
  assert.equal(hexOf(bytes, 0, 4, "big"), "0x44332211");
  assert.equal(hexOf(bytes, 2, 2, "little"), "0x1122");
});

test("bytes typed and pasted", () => {
  assert.equal(parseByte("ff"), 255);
  assert.equal(parseByte("0x7"), 7);
  assert.throws(() => parseByte("100"), /not a byte/);
  assert.deepEqual([...parseHexBytes("de ad\nbe,ef 0x01 7")], [0xde, 0xad, 0xbe, 0xef, 1, 7]);
  assert.deepEqual([...parseHexBytes("deadbeef")], [0xde, 0xad, 0xbe, 0xef]);
  assert.throws(() => parseHexBytes("abc"), /odd number/);
  assert.throws(() => parseHexBytes("de zz"), /"zz" is not hex/);
  assert.equal(formatHexBytes(Uint8Array.of(1, 2, 255)), "01 02 ff");
});

test("shape and strides lists", () => {
  assert.equal(parseIntList("  ", "shape"), undefined);
  assert.deepEqual(parseIntList("()", "shape"), []);
  assert.deepEqual(parseIntList("(3, 4)", "shape"), [3, 4]);
  assert.deepEqual(parseIntList("3x4", "shape"), [3, 4]);
  assert.deepEqual(parseIntList("2 -6", "strides"), [2, -6]);
  assert.deepEqual(parseIntList("(5,)", "shape"), [5]);
  assert.deepEqual(parseIntList("2, -1", "shape"), [2, -1]); // the core refuses -1, not the demo
  assert.throws(() => parseIntList("a", "strides"), /strides: "a" is not a whole number/);
});

test("nested repr", () => {
  assert.equal(nestedRepr(["1", "2", "3", "4", "5", "6"], [2, 3]), "[[1, 2, 3],\n [4, 5, 6]]");
  assert.equal(nestedRepr(["7"], []), "7");
  assert.equal(nestedRepr(["1", "2"], [2, 1, 1]), "[[[1]],\n\n [[2]]]");
});

test("the inspector's multi-index of a byte offset inverts the core's layouts, C and Fortran order", () => {
  for (const [dtype, size] of [["<f4", 4], [">i2", 2], ["|u1", 1], ["<f8", 8]]) {
    for (const shape of [[7], [3, 5], [2, 3, 4], [4, 1, 3], [1, 6], [2, 2, 2, 3]]) {
      for (const fortran of [false, true]) {
        // The strides the file view takes from the core: C order, or a
        // Fortran-order array as the transpose of its reversed shape.
        const layout = fortran
          ? new wasm.Layout(dtype, { shape: [...shape].reverse() }).transpose()
          : new wasm.Layout(dtype, { shape });
        const count = shape.reduce((n, k) => n * k, 1);
        const buf = new wasm.Buffer(count * size);
        // Element k in C order lies at offsets[k] (the core's walk): its index is k's C-order digits.
        const offsets = buf.offsets(dtype, layout.options()).map(Number);
        const seen = new Set();
        offsets.forEach((at, k) => {
          const want = [];
          let rest = k;
          for (let d = shape.length - 1; d >= 0; d--) {
            want.unshift(rest % shape[d]);
            rest = Math.floor(rest / shape[d]);
          }
          assert.deepEqual(indexAt(at, shape, layout.strides), want, `${dtype} ${shape} ${fortran ? "F" : "C"} at byte ${at}`);
          seen.add(at);
        });
        assert.equal(seen.size, count, "every element has its own bytes");
        buf.free();
        layout.free();
      }
    }
  }
  assert.deepEqual(indexAt(0, [], []), [], "a 0-d array");
});

test("the file view's strides are the core's Layout's, C and Fortran order, worked out without one", () => {
  for (const [dtype, size] of [["<f4", 4], [">i2", 2], ["|u1", 1], ["<f8", 8]]) {
    for (const shape of [[7], [3, 5], [2, 3, 4], [4, 1, 3], [1, 6], [2, 2, 2, 3], [5, 0, 2]]) {
      const c = new wasm.Layout(dtype, { shape });
      const f = new wasm.Layout(dtype, { shape: [...shape].reverse() });
      const ft = f.transpose();
      // Axes of length 0 or 1 take any stride; the others must agree.
      const long = (strides) => strides.map(Number).filter((_, d) => shape[d] > 1);
      assert.deepEqual(long(stridesFor(shape, size)), long(c.strides), `${dtype} ${shape} C`);
      assert.deepEqual(long(stridesFor(shape, size, true)), long(ft.strides), `${dtype} ${shape} F`);
      for (const l of [c, f, ft]) l.free();
    }
  }
});

test("positions in arrays past 2 GiB and 2^32 elements are exact: no Layout of the whole array (none fits wasm32)", () => {
  // Gemma 2 27B's bf16 embeddings, 2.36 GB: a Layout of it cannot exist in wasm32.
  assert.throws(() => new wasm.Layout("<u2", { shape: [256000, 4608] }));
  for (const [shape, size] of [[[256000, 4608], 2], [[65536, 65536], 1], [[2, 2 ** 31], 4], [[3, 2 ** 20, 2 ** 20], 2], [[2 ** 26, 2 ** 24], 1]]) {
    for (const fortran of [false, true]) {
      const strides = stridesFor(shape, size, fortran);
      const count = shape.reduce((n, k) => n * BigInt(k), 1n);
      for (const k of [0n, 1n, count / 3n, count / 2n + 12345n, count - 2n, count - 1n]) {
        // The stored element k's multi-index, by BigInt: its digits in the stored order's axes.
        const want = shape.map(() => 0);
        let rest = k;
        for (const d of fortran ? shape.map((_, i) => i) : shape.map((_, i) => shape.length - 1 - i)) {
          want[d] = Number(rest % BigInt(shape[d]));
          rest /= BigInt(shape[d]);
        }
        const got = indexAt(Number(k) * size, shape, strides);
        assert.deepEqual(got, want, `${shape} ${fortran ? "F" : "C"} element ${k}`);
        const flat = flatOf(got, shape);
        assert.deepEqual(unravel(flat, shape), got, `${shape}: unravel(flatOf(${got}))`);
      }
    }
  }
  // Where a float64 quotient rounds up: (2^53 - 1) / 2 elements of 2 bytes.
  assert.deepEqual(unravel(2 ** 53 - 1, [2 ** 27, 2 ** 26]), [2 ** 27 - 1, 2 ** 26 - 1]);
  assert.deepEqual(indexAt(2 ** 53 - 2, [2 ** 26, 2 ** 26], stridesFor([2 ** 26, 2 ** 26], 2)), [2 ** 26 - 1, 2 ** 26 - 1]);
});

test("long names are cut for the page, their start and end kept", () => {
  assert.equal(cutText("blk.0.attn_q.weight"), "blk.0.attn_q.weight");
  const long = `blk.${"x".repeat(70_000)}.weight`;
  const cut = cutText(long);
  assert.equal([...cut].length, 64);
  assert.ok(cut.startsWith("blk.xxx") && cut.endsWith("xx.weight") && cut.includes("…"), cut);
  assert.equal([...cutText("😀".repeat(100), 10)].length, 10, "code points, not UTF-16 units");
});

test("nested repr summarises as numpy does past 1000 elements, asking only for the elements shown", () => {
  const asked = new Set();
  const text = (k) => { asked.add(k); return String(k); };
  assert.equal(nestedRepr(text, [65536], 3), "[    0,     1,     2, ..., 65533, 65534, 65535]");
  assert.equal(asked.size, 6);
  assert.equal(nestedRepr((k) => String(k), [4, 3], 1), "[[ 0, ...,  2],\n ...,\n [ 9, ..., 11]]");
  assert.equal(nestedRepr(["1", "2", "3", "4", "5", "6"], [2, 3], 3), "[[1, 2, 3],\n [4, 5, 6]]", "short axes in full");
});

test("the grid's readings come from the package's dtype table, signed above unsigned", () => {
  const readings = readingsOf(wasm.dtypes());
  assert.deepEqual(readings.map((r) => r.name), [
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float16", "bfloat16", "float32", "float64",
  ]);
  const byName = Object.fromEntries(readings.map((r) => [r.name, r]));
  assert.equal(byName.int8.typeStrings.big, "|i1");
  assert.equal(byName.float8_e5m2.typeStrings.big, "|float8_e5m2");
  assert.equal(byName.float8_e4m3fn.family, "float");
  assert.equal(byName.bfloat16.typeStrings.big, ">bfloat16");
  assert.equal(byName.float64.typeStrings.little, "<f8");
  assert.deepEqual([byName.int32.size, byName.int32.family, byName.float16.family], [4, "int", "float"]);
});

test("type strings are read by the package, which knows every spelling", () => {
  const described = wasm.describeDType(">i2");
  assert.deepEqual([described.name, described.size, described.order, described.typeString], ["int16", 2, "big", ">i2"]);
  assert.equal(wasm.describeDType("|u1").name, "uint8");
  assert.equal(wasm.describeDType("bf16").typeString, "<bfloat16");
  assert.throws(() => wasm.describeDType("<x9"), (err) => err instanceof RangeError && err.kind === "BadDType");
});

test("the plan panel's text is the core's plan text", () => {
  const html = readFileSync(new URL("../index.html", import.meta.url), "utf8");
  const shown = html.match(/<textarea id="plan-text"[^>]*>([^<]*)<\/textarea>/)[1].replaceAll("&lt;", "<");
  const plan = wasm.Plan.fromText(shown);
  assert.deepEqual(plan.fields().map((f) => f.name), ["A", "B", "C", "D", "E"]);
  assert.equal(plan.toText(), shown);
  assert.throws(() => wasm.Plan.fromText("Work\nA <f4 [4]"), (err) => err.kind === "BadPlanLine");
});

test("the package reads into the typed array the demo formats: one class per dtype", () => {
  const buf = new wasm.Buffer(8);
  buf.write("<f2", {}, [1.5, -2, 65504, 2 ** -24]);
  const halves = buf.read("<f2");
  assert.ok(halves instanceof Float32Array);
  assert.deepEqual(Array.from(halves), [1.5, -2, 65504, 2 ** -24], "float16 values, exactly");
  assert.deepEqual(Array.from(halves, (v) => formatValue(v, row("float16"))), ["1.5", "-2", "65500", "6e-8"]);
  buf.write(">f4", { shape: [2] }, new Float32Array([1.1, -0]));
  assert.deepEqual(Array.from(buf.read(">f4"), (v) => formatValue(v, row("float32"))), ["1.1", "-0"]);
  buf.write("<i8", {}, [-1n]);
  const wide = buf.read("<i8");
  assert.ok(wide instanceof BigInt64Array);
  assert.equal(formatValue(wide[0], row("int64")), "-1");
  buf.write("|float8_e4m3fn", { shape: [3] }, [0.3, 448, 1e6]);
  const e4m3 = buf.read("|float8_e4m3fn", { shape: [3] });
  assert.ok(e4m3 instanceof Float32Array);
  assert.deepEqual(Array.from(e4m3), [0.3125, 448, NaN]);
  assert.deepEqual(Array.from(e4m3, (v) => formatValue(v, row("float8_e4m3fn"))), ["0.3", "450", "NaN"]); // shortest, as float16 65504 is "65500"
  buf.setBytes(0, [0, 7]);
  const flags = buf.read("|b1", { shape: [2] });
  assert.ok(flags instanceof Uint8Array);
  assert.deepEqual(Array.from(flags, (v) => formatValue(v, row("bool"))), ["false", "true"]);
  buf.free();
});

test("float8 rounding, from the table's formats, is ml_dtypes' (tests/vectors/dtypes.json)", () => {
  const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/dtypes.json", import.meta.url), "utf8"));
  const number = (v) => ({ nan: NaN, inf: Infinity, "-inf": -Infinity })[v] ?? v;
  let checked = 0;
  for (const c of vectors.cases.filter((c) => c.write && c.layout.dtype.includes("float8_"))) {
    const format = fmt(c.layout.dtype.slice(1));
    c.write.forEach((x, i) => {
      const want = number(c.expect.values[i]);
      assert.ok(Object.is(roundToFormat(number(x), format), want), `${c.name}[${i}]: ${x} → ${want}`);
      checked++;
    });
  }
  assert.equal(checked, 13 + 12 + 12);
  assert.equal(roundToFormat(1.5, fmt("float8_e8m0fnu")), 2); // ties away
  assert.equal(roundToFormat(1e-300, fmt("float8_e8m0fnu")), 2 ** -127); // no zero: the smallest
  assert.equal(roundToFormat(57344, fmt("float8_e5m2")), 57344);
  assert.equal(roundToFormat(61440, fmt("float8_e5m2")), Infinity);
  assert.equal(formatFloat(2 ** -127, fmt("float8_e8m0fnu")), "6e-39");
  assert.equal(formatFloat(0.3125, fmt("float8_e4m3fn")), "0.3");
});

test("every float format of the table: its values are fixed points, their text reads back, and rounding is the package's", () => {
  // Every pattern of the 1- and 2-byte floats, read by the package (the
  // core's decoding), and random float32 and float64 patterns.
  let state = 0x2545f491;
  const random = () => {
    state ^= state << 13; state ^= state >>> 17; state ^= state << 5;
    return state >>> 0;
  };
  let checked = 0;
  for (const d of table.filter((d) => d.float)) {
    const n = d.size <= 2 ? 2 ** (8 * d.size) : 4096;
    const bytes = new Uint8Array(n * d.size);
    for (let i = 0; i < n; i++) {
      for (let b = 0; b < d.size; b++) bytes[i * d.size + b] = d.size <= 2 ? (i >> (8 * b)) & 0xff : random() & 0xff;
    }
    const buf = new wasm.Buffer(bytes.length);
    buf.setBytes(0, bytes);
    const values = Array.from(buf.read(d.typeStrings.little));
    for (const v of values) {
      if (Number.isNaN(v)) continue;
      assert.ok(Object.is(roundToFormat(v, d.format), v), `${d.name}: ${v} is not its own rounding`);
      const text = formatValue(v, d);
      assert.ok(Object.is(roundToFormat(Number(text), d.format), v), `${d.name}: ${v} shows as ${text}`);
      checked++;
    }
    // Numbers between the values, ties among them: the JS rounding and the
    // package's write agree.
    const finite = values.filter(Number.isFinite);
    const probes = [];
    for (let i = 0; i < 2000; i++) {
      const [a, b] = [finite[random() % finite.length], finite[random() % finite.length]];
      probes.push((a + b) / 2, a + (b - a) * (random() / 2 ** 32), a * 1.0000001);
    }
    const out = new wasm.Buffer(probes.length * d.size);
    out.write(d.typeStrings.little, {}, probes);
    const rounded = out.read(d.typeStrings.little);
    probes.forEach((x, i) => {
      const [js, core] = [roundToFormat(x, d.format), rounded[i]];
      assert.ok(Object.is(js, core) || (Number.isNaN(js) && Number.isNaN(core)), `${d.name}: ${x} rounds to ${js} here, ${core} in the package`);
    });
    buf.free();
    out.free();
  }
  assert.ok(checked > 3 * 250 + 2 * 63000, `${checked} values`);
});

// The file view's header read (header-reader.js's readHeader), against sources
// that are not what they said.

/** A safetensors file's first bytes: one float32 array of `n` elements at
 * `at`, and metadata padding the header to at least `pad` bytes. */
function safetensorsHead(n, at, pad = 0) {
  const json = JSON.stringify({
    __metadata__: { pad: "x".repeat(pad) },
    weights: { dtype: "F32", shape: [n], data_offsets: [at, at + 4 * n] },
  });
  const bytes = new Uint8Array(8 + json.length);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
  bytes.set(new TextEncoder().encode(json), 8);
  return bytes;
}

/** A source of `size` bytes whose reads give `head` and zeros after it, and
 * at most `have` bytes in all (a file that shrank to `have`); it counts
 * reads, and fails past 50 rather than letting a loop that never ends
 * hang the test. */
function fakeSource(head, size, have = size) {
  const source = {
    name: "model.safetensors",
    size,
    reads: 0,
    read: async (start, end) => {
      if (++source.reads > 50) throw new Error("50 reads of one header: the loop does not end");
      const out = new Uint8Array(Math.max(0, Math.min(end, have) - start));
      out.set(head.subarray(start, start + out.length));
      return out;
    },
  };
  return source;
}

test("the file view reads a header longer than its first read in two reads", async () => {
  const head = safetensorsHead(1000, 0, 100_000); // past the first 64 KiB read
  const source = fakeSource(head, head.length + 4000);
  const header = await readHeader(wasm, source);
  assert.equal(source.reads, 2);
  assert.deepEqual(header.arrays.map((a) => [a.name, a.offset, a.nbytes]), [["weights", head.length, 4000]]);
});

test("a file that shrank after its size was taken stops the header read with an error", async () => {
  const head = safetensorsHead(1000, 0, 100_000);
  // Shrank to 70,000 bytes: the second read, of the whole header, comes back short.
  const source = fakeSource(head, head.length + 4000, 70_000);
  await assert.rejects(readHeader(wasm, source), (err) => {
    assert.ok(err instanceof HeaderReadError, String(err));
    assert.match(err.message, /^model\.safetensors: asked for bytes 0\.\.100\d+, got 70000; the file is shorter than the 10\d+ bytes it had/);
    return true;
  });
  assert.ok(source.reads <= 3, `${source.reads} reads`);
  // Shrank to 100 bytes: the first read is short.
  const tiny = fakeSource(head, head.length + 4000, 100);
  await assert.rejects(readHeader(wasm, tiny), /asked for bytes 0\.\.65536, got 100/);
  assert.equal(tiny.reads, 1);
});

test("a header that asks for no more than it had, or ever more, ends the read", async () => {
  const source = fakeSource(new Uint8Array(10), 1 << 20);
  const stuck = { readHeader: (head) => ({ need: head.length }) };
  await assert.rejects(readHeader(stuck, source), /asks for 65536 bytes after 65536, of a file of 1048576/);
  assert.equal(source.reads, 1);
  const growing = fakeSource(new Uint8Array(10), 1 << 20);
  const creeping = { readHeader: (head) => ({ need: head.length + 1 }) };
  await assert.rejects(readHeader(creeping, growing), /not whole after 16 reads/);
  assert.equal(growing.reads, 16);
  const past = fakeSource(new Uint8Array(10), 1000);
  await assert.rejects(readHeader({ readHeader: () => ({ need: 2000 }) }, past), /asks for 2000 bytes after 1000/);
});

test("the file view reads the header of a file past 4 GiB, its offsets exact", async () => {
  const json = JSON.stringify({
    small: { dtype: "U8", shape: [16], data_offsets: [0, 16] },
    big: { dtype: "F32", shape: [2 ** 30], data_offsets: [16, 16 + 2 ** 32] },
    after: { dtype: "F16", shape: [8], data_offsets: [2 ** 32 + 16, 2 ** 32 + 32] },
  }).padEnd(248, " ");
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  const size = head.length + 2 ** 32 + 32; // 4 GiB and 288 bytes
  const source = fakeSource(head, size);
  const header = await readHeader(wasm, source);
  assert.equal(header.dataStart, 256);
  const arrays = Object.fromEntries(header.arrays.map((a) => [a.name, [a.offset, a.nbytes, a.aligned]]));
  assert.deepEqual(arrays, {
    small: [256, 16, true],
    big: [272, 2 ** 32, true],
    after: [2 ** 32 + 272, 16, true],
  });
  assert.ok(arrays.after[0] + arrays.after[1] === size, "the last array ends at the file's end");
});

// A GGUF file (tests/gguf-fixture.mjs, written byte by byte): its header
// through the file view's read, as the view draws it.

test("the file view reads a GGUF header: tensors with their ggml types and blocks, typed metadata", async () => {
  const file = ggufFixture();
  const source = fakeSource(file, file.length);
  const header = await readHeader(wasm, source);
  assert.equal(source.reads, 1);
  const layout = fixtureLayout();
  assert.equal(header.format, "gguf");
  assert.deepEqual(header.version, [3, 0]);
  assert.equal(header.dataStart, layout.dataStart);
  assert.equal(header.dataStart % ALIGNMENT, 0);
  const arrays = Object.fromEntries(header.arrays.map((a) => [a.name, a]));
  const plain = (a) => [a.dtype, a.ggml, a.descr, a.shape, a.offset, a.nbytes, a.blocks];
  assert.deepEqual(plain(arrays["token_embd.weight"]), ["F32", "F32", "<f4", [4, 8], ...layout.tensors["token_embd.weight"], undefined]);
  assert.deepEqual(plain(arrays["output_norm.weight"]), ["F16", "F16", "<f2", [8], ...layout.tensors["output_norm.weight"], undefined]);
  // IQ2_XXS: sized and placed, but bytelens has no reader for it.
  assert.deepEqual(plain(arrays["blk.0.attn_k.weight"]), ["IQ2_XXS", null, null, [256], ...layout.tensors["blk.0.attn_k.weight"], undefined]);
  const q8 = arrays["blk.0.attn_q.weight"];
  assert.deepEqual(plain(q8), ["Q8_0", "Q8_0", null, [2, 64], ...layout.tensors["blk.0.attn_q.weight"], 4]);
  assert.deepEqual([q8.block, q8.blockBytes, q8.aligned], [32, 34, true]);
  assert.deepEqual(q8.fields, [{ name: "d", dtype: "<f2", count: 1, offset: 0 }, { name: "qs", dtype: "|i1", count: 32, offset: 2 }]);
  const q4k = arrays["blk.0.ffn_down.weight"];
  assert.deepEqual(plain(q4k), ["Q4_K", "Q4_K", null, [2, 256], ...layout.tensors["blk.0.ffn_down.weight"], 2]);
  assert.deepEqual(q4k.fields.map((f) => [f.name, f.dtype, f.count, f.offset]),
    [["d", "<f2", 1, 0], ["dmin", "<f2", 1, 2], ["scales", "|u1", 12, 4], ["qs", "|u1", 128, 16]]);
  // The block's first bytes are where the fixture wrote d = 1.0 and dmin = 0.5.
  const at = q4k.offset + q4k.fields[1].offset;
  assert.equal(new DataView(file.buffer).getUint16(at, true), 0x3800);

  const meta = Object.fromEntries(header.gguf.map((m) => [m.key, m]));
  assert.deepEqual(header.gguf.map((m) => m.key).slice(0, 3), ["general.architecture", "general.name", "general.alignment"]);
  const typed = (key) => [meta[key].type, meta[key].value];
  assert.deepEqual(typed("general.architecture"), ["string", "llama"]);
  assert.deepEqual(typed("general.alignment"), ["uint32", 64]);
  assert.deepEqual(typed("test.int8"), ["int8", -5]);
  assert.deepEqual(typed("test.int64"), ["int64", -3]);
  assert.deepEqual(typed("test.big"), ["uint64", "1152921504606846977"], "past 2^53: exact, as text");
  assert.deepEqual(typed("test.ratio"), ["float64", 2.5]);
  assert.deepEqual(typed("test.flag"), ["bool", true]);
  assert.deepEqual(typed("llama.attention.layer_norm_rms_epsilon"), ["float32", Math.fround(1e-5)]);
  // The metadata value's bytes: the string "llama" lies where the entry says.
  const arch = meta["general.architecture"];
  assert.equal(new TextDecoder().decode(file.subarray(arch.offset, arch.offset + arch.nbytes)), "llama");
  // Long arrays: the first 8 elements and the count.
  const tokens = meta["tokenizer.ggml.tokens"];
  assert.deepEqual([tokens.type, tokens.elementType, tokens.count], ["array", "string", 20]);
  assert.deepEqual(tokens.value, TOKENS.slice(0, 8));
  assert.deepEqual(meta["tokenizer.ggml.scores"].value, [-0, -0.25, -0.5, -0.75, -1, -1.25, -1.5, -1.75]);
  assert.deepEqual([meta["tokenizer.ggml.token_type"].elementType, meta["tokenizer.ggml.token_type"].value], ["int32", [3, 3, 3, 1, 1, 1, 1, 1]]);

  // As the view's metadata table shows them: float32 as numpy prints it,
  // arrays by their first values and how many more.
  const f32 = row("float32").format;
  assert.equal(metaText(meta["llama.attention.layer_norm_rms_epsilon"], f32), "0.00001");
  assert.equal(metaText(tokens, f32), '["<unk>", "<s>", "</s>", "tok3", … 16 more]');
  assert.equal(metaText(meta["tokenizer.ggml.scores"], f32), "[-0, -0.25, -0.5, -0.75, … 16 more]");
  assert.equal(metaText(meta["test.big"], f32), "1152921504606846977");
  assert.equal(metaText({ type: "string", value: "x".repeat(500) }, f32), `"${"x".repeat(119)}…" (500 characters)`);
});

test("a GGUF header with a 128,256-token vocabulary: read in a few doubling reads, its array shortened", async () => {
  const file = ggufFixture({ vocab: 128_256 });
  const source = fakeSource(file, file.length);
  const header = await readHeader(wasm, source);
  // 64 KiB, then at least twice as much each time: 2.6 MB of header in a handful of reads.
  assert.ok(source.reads <= 7, `${source.reads} reads`);
  assert.equal(header.dataStart, fixtureLayout({ vocab: 128_256 }).dataStart);
  const tokens = header.gguf.find((m) => m.key === "tokenizer.ggml.tokens");
  assert.equal(tokens.count, 128_256);
  assert.deepEqual(tokens.value, ["<unk>", "<s>", "</s>", "tok3", "tok4", "tok5", "tok6", "tok7"]);
  assert.ok(JSON.stringify(header).length < 5000, `the header's JSON is ${JSON.stringify(header).length} characters`);
  assert.equal(header.arrays.length, 5);
});

test("a GGUF header the core refuses throws its RangeError", async () => {
  const file = ggufFixture();
  const broken = file.slice();
  new DataView(broken.buffer).setUint32(4, 0x03000000, true); // big-endian's version
  await assert.rejects(readHeader(wasm, fakeSource(broken, broken.length)), (err) => {
    assert.ok(err instanceof RangeError, String(err));
    assert.match(err.message, /big-endian GGUF/);
    return true;
  });
});

test("a refusal's reason is the server's text, cut; any other answer's body is not read", async () => {
  const text = (status, body, type = "text/plain; charset=utf-8") => new Response(body, { status, headers: { "Content-Type": type } });
  assert.equal(await reasonOf(text(403, "/dev/zero: not a regular file (a character device), so it cannot be served in byte ranges\n")),
    ": /dev/zero: not a regular file (a character device), so it cannot be served in byte ranges");
  assert.equal(await reasonOf(text(404, "")), "");
  const long = await reasonOf(text(400, "x".repeat(5000)));
  assert.equal(long, `: ${"x".repeat(300)}…`);
  assert.equal(await reasonOf(text(500, "<html>…</html>", "text/html")), "", "only plain text is shown");
  const whole = text(200, "the whole file");
  assert.equal(await reasonOf(whole), "");
  assert.ok(whole.bodyUsed || whole.body.locked, "a whole file's body is cancelled, not read");
});

// The page's modules import one another without a circle: in a circle, one
// module runs before another it uses has set up what it exports.

/** The page's modules and the ones each imports: { "demo.js": ["numbers.js", "page.js", ...] }
 * (the wasm package's, under pkg/, left out). */
function demoImports() {
  const dir = new URL("../", import.meta.url);
  const graph = {};
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".js"))) {
    const text = readFileSync(new URL(name, dir), "utf8");
    const from = /^(?:import|export)\b[^;]*?\bfrom\s+"\.\/([^"]+)"|^import\s+"\.\/([^"]+)"/gm;
    graph[name] = Array.from(text.matchAll(from), (m) => m[1] ?? m[2]).filter((to) => !to.startsWith("pkg/"));
  }
  return graph;
}

/** A circle of imports in `graph`, as the names around it (the first again at the end), or null. */
function circleIn(graph) {
  const done = new Set();
  const path = [];
  const visit = (name) => {
    const at = path.indexOf(name);
    if (at !== -1) return [...path.slice(at), name];
    if (done.has(name)) return null;
    path.push(name);
    for (const to of graph[name] ?? []) {
      const circle = visit(to);
      if (circle) return circle;
    }
    path.pop();
    done.add(name);
    return null;
  };
  for (const name of Object.keys(graph)) {
    const circle = visit(name);
    if (circle) return circle;
  }
  return null;
}

test("a circle of imports is found, however long", () => {
  assert.equal(circleIn({ "a.js": ["b.js", "c.js"], "b.js": ["c.js"], "c.js": [] }), null);
  assert.deepEqual(circleIn({ "a.js": ["b.js"], "b.js": ["a.js"] }), ["a.js", "b.js", "a.js"]);
  assert.deepEqual(circleIn({ "a.js": ["b.js"], "b.js": ["c.js"], "c.js": ["d.js"], "d.js": ["b.js"] }),
    ["b.js", "c.js", "d.js", "b.js"]);
});

test("the page's modules import one another without a circle, and only modules that are there", () => {
  const graph = demoImports();
  // What the reading of imports finds, multi-line imports among them.
  assert.deepEqual(graph["toolbar.js"], ["page.js", "grid.js", "buffer.js"]);
  assert.ok(graph["file-view.js"].includes("file-header-view.js"), graph["file-view.js"].join(", "));
  assert.ok(graph["demo.js"].length >= 10, graph["demo.js"].join(", "));
  assert.deepEqual(graph["page.js"], [], "page.js, the shared state, imports nothing");
  for (const [name, imports] of Object.entries(graph)) {
    for (const to of imports) assert.ok(to in graph, `${name} imports ${to}, which is not there`);
  }
  assert.equal(circleIn(graph), null);
});
