// The docs suite's look at the built site, as a reader would: the guide's
// first page in Debian's Chromium (through playwright-core, from the demo's
// npm packages), its sidebar holding every chapter of SUMMARY.md, its
// picture drawn, the search finding an API name, and each API reference
// reached from the guide. Every request must succeed. Writes a screenshot
// of the first page to $SCREENSHOT.
//
//   DOCS_URL=http://127.0.0.1:PORT/ SCREENSHOT=out.png node docs/tests/screenshot.mjs

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";

const require = createRequire(new URL("../../web-demo/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const url = process.env.DOCS_URL;
const shot = process.env.SCREENSHOT;
if (!url || !shot) throw new Error("set DOCS_URL and SCREENSHOT");

const summary = await readFile(new URL("../guide/SUMMARY.md", import.meta.url), "utf8");
const chapters = [...summary.matchAll(/\[([^\]]+)\]\([^)]+\.md\)/g)].map((m) => m[1]);

const profile = await mkdtemp(path.join(tmpdir(), "bytelens-docs-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1280, height: 800 },
});
const failures = [];
const check = (ok, what) => {
  console.log(`  ${ok ? "ok" : "FAILED"}  ${what}`);
  if (!ok) failures.push(what);
};
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20000);
  const bad = [];
  page.on("response", (r) => { if (r.status() >= 400) bad.push(`${r.status()} ${r.url()}`); });
  // A load the next navigation cancels (ERR_ABORTED) did not fail.
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText ?? "";
    if (!why.includes("ERR_ABORTED")) bad.push(`${why} ${r.url()}`);
  });
  page.on("pageerror", (e) => bad.push(`page error: ${e.message}`));

  await page.goto(url, { waitUntil: "load" });
  check((await page.title()).includes("bytelens"), `the first page's title names bytelens`);
  check(await page.locator("main h1").first().textContent() === "bytelens", "its heading is bytelens");
  const sidebar = (await page.locator("#mdbook-sidebar, #sidebar, nav.sidebar").first().innerText()) ?? "";
  const missing = chapters.filter((c) => !sidebar.includes(c));
  check(chapters.length >= 15 && missing.length === 0,
    `the sidebar lists all ${chapters.length} chapters${missing.length ? ` (missing: ${missing.join(", ")})` : ""}`);
  const drawn = await page.locator("main img").first().evaluate((img) => img.complete && img.naturalWidth > 0);
  check(drawn, "the demo's picture is drawn");
  await page.screenshot({ path: shot });
  console.log(`  screenshot: ${shot}`);

  // The search index is built and answers.
  await page.keyboard.press("s");
  // mdBook searches on key presses, not on a filled value.
  await page.locator("#mdbook-searchbar, #searchbar").first().pressSequentially("SharedBuffer");
  await page.locator("#mdbook-searchresults li, #searchresults li").first().waitFor();
  const hits = await page.locator("#mdbook-searchresults li, #searchresults li").count();
  check(hits > 0, `the search finds SharedBuffer (${hits} results)`);

  // Each reference, from the guide's links.
  for (const [link, expect] of [
    ["Python", "Buffer"],
    ["Rust", "bytelens"],
    ["JavaScript", "Buffer"],
  ]) {
    await page.goto(new URL("reference.html", url).href, { waitUntil: "load" });
    await Promise.all([
      page.waitForNavigation({ waitUntil: "load" }),
      page.locator("main a", { hasText: new RegExp(`^${link}$`) }).first().click(),
    ]);
    const text = await page.locator("body").innerText();
    check(text.includes(expect), `the ${link} reference opens (${new URL(page.url()).pathname}) and shows ${expect}`);
  }
  check(bad.length === 0, `every request succeeded${bad.length ? `: ${bad.slice(0, 5).join("; ")}` : ""}`);
} finally {
  await context.close();
  await rm(profile, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`${failures.length} docs checks failed`);
  process.exit(1);
}
