// Every ```js block of the README, the guide and the wasm and demo READMEs
// runs in Node as an ES module of its own, importing the wasm package from
// $BYTELENS_PKG (default web-demo/pkg, the demo's build: the published
// package plus the `files` feature). A block imports the package as the
// reader would, from "bytelens-wasm" or "./pkg/bytelens_wasm.js"; the
// runner points that import at a module that re-exports the package and
// whose default export, `init()`, loads the .wasm from disk (Node's fetch
// reads no file: URLs). A block passes when it runs to its end.
//
//   node --test docs/tests/examples.test.mjs

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = path.resolve(process.env.BYTELENS_PKG ?? path.join(root, "web-demo/pkg"));
const guide = path.join(root, "docs/guide");
const sources = [
  "README.md",
  ...readdirSync(guide).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/guide/${f}`),
  "wasm/README.md",
  "web-demo/README.md",
];

/** The ```js blocks of a markdown file, each with the line it starts on. */
function blocks(file) {
  const lines = readFileSync(path.join(root, file), "utf8").split("\n");
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```js") continue;
    const start = i + 1;
    while (++i < lines.length && lines[i].trim() !== "```");
    found.push({ line: start, code: lines.slice(start, i).join("\n") });
  }
  return found;
}

const work = mkdtempSync(path.join(tmpdir(), "bytelens-js-examples-"));
const shim = path.join(work, "bytelens-wasm.mjs");
const module = pathToFileURL(path.join(pkg, "bytelens_wasm.js")).href;
writeFileSync(shim, `import { readFileSync } from "node:fs";
import { initSync } from ${JSON.stringify(module)};
export * from ${JSON.stringify(module)};
export default async function init() {
  initSync({ module: readFileSync(new URL("bytelens_wasm_bg.wasm", ${JSON.stringify(module)})) });
}
`);
const IMPORT = /from\s+["'](?:bytelens-wasm|\.\/pkg\/bytelens_wasm\.js)["']/g;

const all = sources.flatMap((file) => blocks(file).map((b) => ({ file, ...b })));

test("the docs have JavaScript examples", () => {
  assert.ok(all.length >= 6, `only ${all.length} js blocks found`);
  for (const b of all) {
    assert.match(b.code, new RegExp(IMPORT.source), `${b.file}:${b.line} does not import the package`);
  }
});

for (const [n, b] of all.entries()) {
  test(`${b.file}:${b.line}`, () => {
    const script = path.join(work, `example-${n}.mjs`);
    writeFileSync(script, b.code.replace(IMPORT, `from ${JSON.stringify(pathToFileURL(shim).href)}`));
    const run = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 60000 });
    assert.equal(run.status, 0, `${b.file}:${b.line} failed:\n${run.stderr}${run.stdout}`);
  });
}
