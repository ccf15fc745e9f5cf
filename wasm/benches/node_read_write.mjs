// Buffer.read and Buffer.write of 1M float32 under Node, against DataView
// loops over the same bytes, measured in the same run:
//   cargo xtask bench wasm            (builds the package first)
//   node wasm/benches/node_read_write.mjs [PKG_DIR]   (default web-demo/pkg)
// Prints each operation's median and its ratio to its baseline, with the goal.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const dir = pathToFileURL(`${process.argv[2] ?? "web-demo/pkg"}/`);
const wasm = await import(new URL("bytelens_wasm.js", dir));
wasm.initSync({ module: readFileSync(new URL("bytelens_wasm_bg.wasm", dir)) });

const N = 1 << 20;
const REPS = Number(process.env.BENCH_REPS ?? 41);

/** The median time of `f` in ms over REPS runs, after a few to warm up. */
function median(f) {
  for (let i = 0; i < 5; i++) f();
  const times = [];
  for (let i = 0; i < REPS; i++) {
    const start = performance.now();
    f();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[REPS >> 1];
}

// 2M float32 in a bytelens buffer, and the same bytes in a JS ArrayBuffer for the loops.
const source = new Float32Array(2 * N);
for (let i = 0; i < source.length; i++) source[i] = Math.fround(Math.sin(i) * 1000);
const buf = new wasm.Buffer(source.byteLength);
buf.write("<f4", {}, source);
const bytes = buf.bytes();
const view = new DataView(bytes.buffer);
const values = Array.from(source.subarray(0, N));
const floats = source.slice(0, N);

/** DataView reads of `n` float32 `step` bytes apart into an Array. */
function dataViewRead(n, step) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * step, true);
  return out;
}

/** DataView writes of every element of an Array. */
function dataViewWrite(from) {
  for (let i = 0; i < from.length; i++) view.setFloat32(i * 4, from[i], true);
}

/** The same loop over a Float32Array (its own function, so each stays monomorphic). */
function dataViewWriteTyped(from) {
  for (let i = 0; i < from.length; i++) view.setFloat32(i * 4, from[i], true);
}

// Both sides must agree before they are timed.
const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
if (!same(buf.read("<f4", { shape: [N] }), dataViewRead(N, 4))) throw new Error("read differs");
const strided = { shape: [N], strides: [8] };
if (!same(buf.read("<f4", strided), dataViewRead(N, 8))) throw new Error("strided read differs");
buf.write("<f4", { shape: [N] }, values);
if (!same(buf.read("<f4", { shape: [N] }), floats)) throw new Error("write differs");

const rows = [];
function row(name, baseline, time, goal) {
  rows.push({ name, time, baseline, goal });
}

const ceiling = median(() => bytes.slice(0, 4 * N));
const readLoop = median(() => dataViewRead(N, 4));
row("read 1M <f4", readLoop, median(() => buf.read("<f4", { shape: [N] })), 0.5);
const stridedLoop = median(() => dataViewRead(N, 8));
row("read every other of 2M <f4", stridedLoop, median(() => buf.read("<f4", strided)), 1.0);
const writeLoop = median(() => dataViewWrite(values));
row("write 1M <f4 from an Array", writeLoop, median(() => buf.write("<f4", { shape: [N] }, values)), 1.0);
const typedLoop = median(() => dataViewWriteTyped(floats));
row("write 1M <f4 from a Float32Array", typedLoop, median(() => buf.write("<f4", { shape: [N] }, floats)), 0.25);
row("write every other of 2M <f4 (Float32Array)", typedLoop, median(() => buf.write("<f4", strided, floats)), null);

const ms = (t) => `${t.toFixed(3)} ms`.padStart(10);
console.log(`\nNode ${process.version}, ${N} float32 (4 MiB), median of ${REPS}`);
console.log(`${"operation".padEnd(44)}${"bytelens".padStart(10)}${"DataView".padStart(11)}  ratio  goal`);
for (const { name, time, baseline, goal } of rows) {
  const ratio = time / baseline;
  const verdict = goal === null ? "" : `<= ${goal.toFixed(2)}x ${ratio <= goal ? "met" : "MISSED"}`;
  console.log(`${name.padEnd(44)}${ms(time)} ${ms(baseline)}  ${ratio.toFixed(2)}x  ${verdict}`);
}
console.log(`${"ceiling: Uint8Array.prototype.slice of 4 MiB".padEnd(44)}${ms(ceiling)}`);
