//! The `arm` suite: bytelens on Linux for 64-bit Arm, built here for
//! [`TARGET`] and run under Debian's qemu-user (no binfmt_misc: every
//! aarch64 program, children included, is started through the emulator).
//!
//! - bytelens-core's tests and doctests (every feature), then the native
//!   crate's unit, integration and doctests, linked by Debian's
//!   `aarch64-linux-gnu-gcc` against `libc6-dev-arm64-cross` and run by
//!   `qemu-aarch64 -L /usr/aarch64-linux-gnu` (cargo's runner; stable cargo
//!   runs cross doctests through it too). qemu's default CPU (`max`) has
//!   FEAT_BF16 and FEAT_FP16; the native crate's unit tests run a second
//!   time on `cortex-a72`, which has neither, so that both sides of the NEON
//!   kernels' run-time choice are tested (`BYTELENS_EXPECT_BF16` says which
//!   side each run must be on).
//! - The Python package: the aarch64 abi3 wheel
//!   ([`build_wheel`](crate::python_env::build_wheel)) under an aarch64
//!   CPython from Debian's arm64 packages, unpacked into
//!   `~/.cache/bytelens/arm/python/` (no dpkg install, no multiarch), with numpy,
//!   pytest, hypothesis and ml_dtypes from PyPI's aarch64 wheels, running
//!   tests/python (see [`cpython::PY_LEFT_OUT`] for what is left out, and
//!   why).
//!
//! Under qemu, code runs about 10x slower than natively, debug code far
//! more: the Rust tests are built at `opt-level = 2` (debug assertions and
//! overflow checks stay on), which took the core's tests from 350 s to 35 s.
//! The tests' children start through `BYTELENS_TEST_EMULATOR` (see
//! native/tests/shared.rs); qemu-user has no robust futex lists, so the
//! tests that need the kernel to recover a robust mutex whose holder died
//! skip that one case, saying so (they probe `get_robust_list` for ENOSYS).
//!
//! Each step fails unless its tests ran: every test binary of its output
//! passed at least one test, the ones it must run are there, and the NEON
//! kernels' tests are among them.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::util::{Binary, Result, Run, Step, apt_install, cmd, run, rustup_list};

mod cpython;

/// The Rust target the suite builds for.
pub const TARGET: &str = "aarch64-unknown-linux-gnu";

/// Debian's packages: the emulator, the cross C compiler (the linker) and
/// the target's C library to link against.
const APT: [&str; 3] = [
    "qemu-user",
    "gcc-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
];

/// The files that say the [`APT`] packages are there.
const APT_FILES: [&str; 3] = [
    "/usr/bin/qemu-aarch64",
    "/usr/bin/aarch64-linux-gnu-gcc",
    "/usr/aarch64-linux-gnu/lib/libc.so.6",
];

/// The target's root for the emulator: where its dynamic loader and
/// shared libraries are (libc6-dev-arm64-cross's).
const SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The emulator and its arguments, for programs of the cross C library.
fn emulator() -> String {
    format!("qemu-aarch64 -L {SYSROOT}")
}

fn on_disk(path: &str) -> bool {
    Path::new(path).exists()
}

/// Installs what is missing: the target, the [`APT`] packages, the
/// aarch64 CPython and its packages. Each is skipped when there.
pub fn ensure_tools() -> Result {
    let installed = rustup_list(&["target", "list", "--installed"])?;
    if !installed.iter().any(|t| t == TARGET) {
        run(cmd("rustup", &["target", "add", TARGET]))?;
    }
    if !APT_FILES.iter().all(|f| on_disk(f)) {
        apt_install(&APT)?;
    }
    cpython::ensure_python_root()?;
    cpython::ensure_site()
}

/// The suite's steps, each `cargo xtask arm-test PART` (see [`test`]).
pub fn steps(run: &Run) -> Vec<Step> {
    let mut steps: Vec<Step> = [
        ("core", "bytelens-core's tests and doctests, under qemu"),
        (
            "native",
            "bytelens' tests and doctests, under qemu (CPU max: FEAT_BF16)",
        ),
        (
            "cortex-a72",
            "bytelens' unit tests on a cortex-a72 (no FEAT_BF16, FEAT_FP16)",
        ),
        (
            "python",
            "the aarch64 wheel's Python tests, CPython 3.11 under qemu",
        ),
    ]
    // The core is portable code without a line for aarch64 of its own:
    // its tests under qemu guard what the rust suite guards natively, so
    // only `test all` runs them there (testing.md says so).
    .into_iter()
    .filter(|&(part, _)| run.all || part != "core")
    .map(|(part, label)| {
        let mut c = cmd("cargo", &["xtask", "arm-test", part]);
        // The suite's needs are installed already (or not wanted).
        c.env("BYTELENS_NO_INSTALL", "1");
        (label.to_owned(), c)
    })
    .collect();
    if run.all {
        for (_, c) in &mut steps {
            c.env("BYTELENS_TEST_ALL", "1");
        }
    }
    steps
}

/// The parts `cargo xtask arm-test` takes.
pub const PARTS: [&str; 4] = ["core", "native", "cortex-a72", "python"];

/// `cargo xtask arm-test PART`: one of the suite's steps, checked.
pub fn test(part: &str) -> Result {
    let start = Instant::now();
    let ran = match part {
        "core" => {
            let log = run_logged(cargo_test(&["-p", "bytelens-core", "--all-features"]))?;
            check(
                &tally(&log),
                &[
                    "unittests src/lib.rs",
                    "tests/header_memory.rs",
                    "tests/model.rs",
                    "tests/no_panic.rs",
                    "tests/vectors.rs",
                    "Doc-tests bytelens_core",
                ],
                false,
            )?
        }
        "native" if all() => {
            let mut c = cargo_test(&["-p", "bytelens", "--", "--show-output"]);
            c.env("BYTELENS_EXPECT_BF16", "1");
            let log = run_logged(c)?;
            check(
                &tally(&log),
                &[
                    "unittests src/lib.rs",
                    "tests/mapped.rs",
                    "tests/shared.rs",
                    "tests/wgsl.rs",
                    "Doc-tests bytelens",
                ],
                true,
            )?
        }
        // What aarch64 changes: the unit tests (the NEON kernels, the
        // ring's protocol and its start times), and shared memory between
        // processes started through qemu; the doctests, mapped files and
        // WGSL are the same code as natively (`test all` runs them here).
        "native" => {
            let args = ["-p", "bytelens", "--lib", "--test", "shared"];
            let mut c = cargo_test(&args);
            c.args(["--", "--show-output"])
                .env("BYTELENS_EXPECT_BF16", "1");
            let log = run_logged(c)?;
            check(
                &tally(&log),
                &["unittests src/lib.rs", "tests/shared.rs"],
                true,
            )?
        }
        "cortex-a72" => {
            let mut c = cargo_test(&["-p", "bytelens", "--lib", "--", "--show-output"]);
            c.env("QEMU_CPU", "cortex-a72")
                .env("BYTELENS_EXPECT_BF16", "0");
            let log = run_logged(c)?;
            check(&tally(&log), &["unittests src/lib.rs"], true)?
        }
        "python" => cpython::python_tests(TARGET)?,
        other => {
            return Err(format!(
                "arm-test: no part named '{other}' (one of {})",
                PARTS.join(", ")
            ));
        }
    };
    println!(
        "\naarch64 under qemu, {part}: {ran}, in {:.1}s with the build",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `cargo test --target aarch64-unknown-linux-gnu ARGS`, linked and run as
/// the module's docs say.
/// Whether `cargo xtask test all` asked for every test (`BYTELENS_TEST_ALL`).
fn all() -> bool {
    std::env::var_os("BYTELENS_TEST_ALL").is_some()
}

fn cargo_test(args: &[&str]) -> Command {
    let mut c = cmd("cargo", &["test", "--target", TARGET, "--no-fail-fast"]);
    c.args(args)
        .env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
            "aarch64-linux-gnu-gcc",
        )
        .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER", emulator())
        .env("BYTELENS_TEST_EMULATOR", emulator())
        .env("CARGO_PROFILE_DEV_OPT_LEVEL", "2")
        .env("CARGO_PROFILE_TEST_OPT_LEVEL", "2");
    c
}

/// Runs `c` with its output echoed as it comes ([`crate::util::run_logged`]), and
/// returns the output; a failing status is an error.
fn run_logged(c: Command) -> Result<String> {
    crate::util::run_logged(c, || Ok(()))
}

/// The binaries `cargo test`'s output says ran, in order, NEON's tests
/// (those with "neon" in their path) marked.
fn tally(log: &str) -> Vec<Binary> {
    crate::util::tally(log, |test| test.contains("neon"))
}

/// What ran, as "N tests passed (NAME: N, ...)"; an error where a binary
/// passed nothing, one of `required` did not run, or (with `neon`) no
/// NEON kernel's test passed.
fn check(binaries: &[Binary], required: &[&str], neon: bool) -> Result<String> {
    for name in required {
        if !binaries.iter().any(|b| b.name == *name) {
            return Err(format!("{name} did not run under qemu"));
        }
    }
    if let Some(empty) = binaries.iter().find(|b| b.passed == 0) {
        return Err(format!(
            "{} passed 0 tests under qemu: are they compiled out for aarch64?",
            empty.name
        ));
    }
    let neon_passed: u64 = binaries.iter().map(|b| b.marked).sum();
    if neon && neon_passed == 0 {
        return Err("no NEON kernel's test ran: compiled out for aarch64?".to_owned());
    }
    let total: u64 = binaries.iter().map(|b| b.passed).sum();
    let parts: Vec<String> = binaries
        .iter()
        .map(|b| format!("{}: {}", b.name, b.passed))
        .collect();
    let mut text = format!("{total} tests passed ({})", parts.join(", "));
    if neon {
        text.push_str(&format!("; {neon_passed} of them NEON's"));
    }
    for binary in binaries {
        for line in &binary.skipped {
            text.push_str(&format!("\n  {}: {line}", binary.name));
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{check, tally};

    const LOG: &str = "\
    Finished `test` profile [optimized + debuginfo] target(s) in 0.31s
     Running unittests src/lib.rs (target/aarch64-unknown-linux-gnu/debug/deps/bytelens-1a2b)

running 3 tests
test copy::convert::neon::tests::a_neon_kernel_is_chosen_for_every_pair ... ok
test buffer::tests::aligned ... ok
test copy::tile::tests::neon_kernels_are_chosen ... ignored
test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.02s

     Running tests/shared.rs (target/aarch64-unknown-linux-gnu/debug/deps/shared-5e6f)

running 2 tests
test a_killed_holder_is_recovered_and_the_next_taker_told ... ok
skipped: recovery from a killed holder, for the robust-mutex lock: no lists
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s

   Doc-tests bytelens

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

    #[test]
    fn each_binary_its_neon_tests_and_skips_are_read() {
        let binaries = tally(LOG);
        let names: Vec<(&str, u64, u64, usize)> = binaries
            .iter()
            .map(|b| (b.name.as_str(), b.passed, b.marked, b.skipped.len()))
            .collect();
        assert_eq!(
            names,
            [
                ("unittests src/lib.rs", 2, 1, 0),
                ("tests/shared.rs", 2, 0, 1),
                ("Doc-tests bytelens", 0, 0, 0),
            ]
        );
    }

    #[test]
    fn a_binary_that_passed_nothing_fails_the_step() {
        let err = check(&tally(LOG), &[], true).unwrap_err();
        assert!(
            err.starts_with("Doc-tests bytelens passed 0 tests"),
            "{err}"
        );
    }

    #[test]
    fn a_required_binary_missing_or_no_neon_test_fails_the_step() {
        let log = LOG
            .replace("running 0 tests", "test x ... ok")
            .replace("ok. 0 passed", "ok. 1 passed");
        let err = check(&tally(&log), &["tests/mapped.rs"], true).unwrap_err();
        assert_eq!(err, "tests/mapped.rs did not run under qemu");
        let log = log.replace("neon::tests::a_neon", "portable::a");
        let err = check(&tally(&log), &[], true).unwrap_err();
        assert!(err.starts_with("no NEON kernel's test ran"), "{err}");
        let text = check(&tally(&log), &["tests/shared.rs"], false).unwrap();
        assert!(text.starts_with("5 tests passed (unittests src/lib.rs: 2, tests/shared.rs: 2, Doc-tests bytelens: 1)"), "{text}");
        assert!(text.ends_with("tests/shared.rs: skipped: recovery from a killed holder, for the robust-mutex lock: no lists"), "{text}");
    }
}
