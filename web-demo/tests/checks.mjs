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

/**
 * Runs each `[name, check(page)]` in order, printing ok or not ok; the
 * names of those that failed. A check still running after `timeoutMs`
 * fails (a page whose thread hangs would otherwise hold the run for good).
 */
export async function runChecks(page, checks, { timeoutMs = 300_000 } = {}) {
  const failures = [];
  for (const [i, [name, check]] of checks.entries()) {
    let timer;
    try {
      await Promise.race([check(page), new Promise((_, reject) => {
        timer = setTimeout(() => reject(new CheckFailed(`still running after ${timeoutMs / 1000} s`)), timeoutMs);
      })]);
      console.log(`ok ${i + 1} - ${name}`);
    } catch (err) {
      failures.push(name);
      console.log(`not ok ${i + 1} - ${name}\n  ${err instanceof CheckFailed ? err.message : err?.stack ?? err}`);
    } finally {
      clearTimeout(timer);
    }
  }
  return failures;
}
