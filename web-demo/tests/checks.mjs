// What the browser tests of WebGPU share (webgpu.mjs, webgpu-demo.mjs):
// failed expectations, and running a list of named checks against a page,
// one line of TAP each.

/** A check's expectation that did not hold: its message is the report. */
export class CheckFailed extends Error {}

export function expect(cond, message) {
  if (!cond) throw new CheckFailed(message);
}

export function expectEqual(actual, expected, what) {
  expect(actual === expected, `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Runs each `[name, check(page)]` in order, printing ok or not ok; the names of those that failed. */
export async function runChecks(page, checks) {
  const failures = [];
  for (const [i, [name, check]] of checks.entries()) {
    try {
      await check(page);
      console.log(`ok ${i + 1} - ${name}`);
    } catch (err) {
      failures.push(name);
      console.log(`not ok ${i + 1} - ${name}\n  ${err instanceof CheckFailed ? err.message : err?.stack ?? err}`);
    }
  }
  return failures;
}
