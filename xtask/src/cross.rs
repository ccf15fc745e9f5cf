//! The `cross` suite: bytelens checked for the systems it is built for but
//! not tested on by the other suites (macOS on Arm and Intel, Windows, Linux
//! on Arm), and its Windows build's tests run under Wine.
//!
//! - clippy (`-D warnings`) of the three library crates, every target
//!   (tests, benches, examples) and every feature, for each of [`TARGETS`].
//!   Clippy only checks, so nothing is linked and no Apple SDK or Arm sysroot
//!   is needed. Two things still compile for the target in build scripts:
//!   pyo3's configuration, which without a Python of the target takes the
//!   version from `PYO3_CROSS_PYTHON_VERSION`; and `alloca` (criterion's,
//!   so the benches' and tests'), one C file that includes only `stddef.h`
//!   and `stdint.h`. For Windows the `cc` crate compiles it with mingw-w64's
//!   gcc; for the others with clang and `-ffreestanding`, so that those two
//!   headers are clang's own and no libc of the target is looked for.
//! - `cargo xtask cross-wine` ([`wine_tests`]): the native crate's unit
//!   tests and its `shared` and `mapped` integration tests, built for
//!   `x86_64-pc-windows-gnu` (linked by mingw-w64's gcc, Rust's default
//!   linker for it) and run by `wine`, in a Wine prefix of their own under
//!   `target/cross/wine` (700 MB, most of it Wine's DLLs), with a
//!   stand-in `bcryptprimitives.dll` where Wine is older than 9 (see
//!   [`shim`]). It fails unless each of the three binaries passed at least
//!   one test and a `shared::` unit test was among them: a `cfg` that
//!   compiles the Windows code out fails the suite rather than passing it
//!   with nothing run.
//!
//! Everything builds in the workspace's target dir: the host's build scripts
//! and proc macros (`target/debug/build`) are shared with the other suites'
//! builds, each target's own artifacts go to `target/<triple>/`, and
//! neither kind of build invalidates the other (a host clippy of the
//! workspace right after a cross one rebuilt nothing). A target dir of its
//! own cost 22 s more on a fresh Windows clippy (66 s against 44 s) and
//! 460 MB.
//!
//! Measured on 2 cores: the suite took 212 s with no `target/<triple>/`
//! and no prefix (each clippy 35 to 51 s, the Windows tests 39 s with
//! their build and the prefix's 8 s), and 4.6 s again with nothing changed.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::{
    Binary, Result, Run, Step, apt_install, cmd, run, run_logged, rustup_list, tally, target_dir,
};

/// What the suite checks: macOS on Apple silicon and on Intel, Windows
/// (mingw-w64's ABI, which Wine runs here) and Linux on Arm.
pub const TARGETS: [&str; 4] = [
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    WINDOWS,
    "aarch64-unknown-linux-gnu",
];

const WINDOWS: &str = "x86_64-pc-windows-gnu";

/// The crates linted for each target; xtask is a host tool.
const CRATES: [&str; 4] = [
    "bytelens-core",
    "bytelens",
    "bytelens-python",
    "bytelens-wasm",
];

/// Debian's packages: Wine (its 64-bit loader too), mingw-w64's C compiler
/// for Windows (the linker, `alloca`, the shim) and clang for the other
/// targets' `alloca`.
const APT: [&str; 4] = ["wine", "wine64", "gcc-mingw-w64-x86-64", "clang"];

/// The programs that say the [`APT`] packages are there.
const APT_PROGRAMS: [&str; 3] = ["wine", "x86_64-w64-mingw32-gcc", "clang"];

/// The Python version pyo3 is configured for when no Python of the target
/// is at hand (the Python suite's CPython).
const PYO3_PYTHON: &str = "3.11";

/// The test binaries run under Wine, as `cargo test` names them on its
/// "Running" lines: each must pass at least one test.
const WINE_BINARIES: [&str; 3] = ["unittests src/lib.rs", "tests/shared.rs", "tests/mapped.rs"];

/// The module of the library whose unit tests must be among those that ran.
const SHARED_UNIT_TESTS: &str = "shared::";

/// Adds the missing [`TARGETS`] and, unless [`APT_PROGRAMS`] are all on the
/// `PATH`, installs the [`APT`] packages.
pub fn ensure_tools() -> Result {
    let installed = rustup_list(&["target", "list", "--installed"])?;
    for target in TARGETS {
        if !installed.iter().any(|t| t == target) {
            run(cmd("rustup", &["target", "add", target]))?;
        }
    }
    if APT_PROGRAMS.iter().all(|p| on_path(p)) {
        return Ok(());
    }
    apt_install(&APT)
}

fn on_path(program: &str) -> bool {
    env::var_os("PATH")
        .is_some_and(|paths| env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The suite's steps: clippy for each of [`TARGETS`], then the Windows
/// tests under Wine.
pub fn steps(_: &Run) -> Vec<Step> {
    let mut list: Vec<Step> = TARGETS
        .map(|target| (format!("clippy, {target}"), clippy(target)))
        .into();
    let mut wine = cmd("cargo", &["xtask", "cross-wine"]);
    // The suite's needs are installed already (or not wanted).
    wine.env("BYTELENS_NO_INSTALL", "1");
    list.push((format!("tests for {WINDOWS} under Wine"), wine));
    list
}

fn clippy(target: &str) -> Command {
    let mut c = cmd("cargo", &["clippy", "--target", target]);
    c.args(CRATES.iter().flat_map(|name| ["-p", name]))
        .args(["--all-targets", "--all-features", "--", "-D", "warnings"])
        .env("PYO3_CROSS_PYTHON_VERSION", PYO3_PYTHON);
    if target != WINDOWS {
        let target = target.replace('-', "_");
        c.env(format!("CC_{target}"), "clang")
            .env(format!("CFLAGS_{target}"), "-ffreestanding");
    }
    c
}

/// The Wine prefix the tests run in, apart from the user's `~/.wine`.
fn prefix() -> PathBuf {
    target_dir().join("cross/wine")
}

/// A Wine command in [`prefix`], its debug channels quiet.
fn wine_cmd(program: &str, args: &[&str]) -> Command {
    let mut c = cmd(program, args);
    c.env("WINEPREFIX", prefix()).env("WINEDEBUG", "-all");
    c
}

/// `cargo xtask cross-wine`: creates the Wine prefix if it is not there
/// (5 to 12 s), puts the [`shim`] in it where Wine needs one, and runs the
/// native crate's tests for Windows in it, with one wineserver kept up for
/// all of them and stopped after.
pub fn wine_tests() -> Result {
    let start = Instant::now();
    let prefix = prefix();
    fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let stop = || run(wine_cmd("wineserver", &["-k"]));
    // Up until `-k`, so that the test binaries and the processes they spawn
    // do not each start one (and Wine's services with it). `-p` refuses to
    // start a second server: one an interrupted run left is stopped first.
    let persist = || wine_cmd("wineserver", &["-p"]);
    if !persist().status().is_ok_and(|s| s.success()) {
        stop()?;
        run(persist())?;
    }
    let version = match prepare(&prefix, start) {
        Ok(version) => version,
        Err(err) => {
            stop()?;
            return Err(err);
        }
    };
    let mut test = wine_cmd("cargo", &["test", "-p", "bytelens", "--target", WINDOWS]);
    // Every binary runs even after one fails: all of Windows' failures at once.
    test.arg("--no-fail-fast")
        .args(["--lib", "--test", "shared", "--test", "mapped"])
        .env("CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER", "wine");
    let log = run_logged(test, stop)?;
    let ran = check_wine_run(&wine_tally(&log))?;
    println!(
        "\nunder Wine {version}: {ran}, in {:.1}s with the build",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Sets `prefix` up unless Wine did already, and copies the [`shim`] into
/// it where Wine is older than 9; returns Wine's major version.
fn prepare(prefix: &Path, start: Instant) -> Result<u32> {
    // Wine writes system.reg once it has set a prefix up.
    if !prefix.join("system.reg").exists() {
        run(wine_cmd("wineboot", &["-i"]))?;
        println!(
            "Wine prefix {} created in {:.1}s",
            prefix.display(),
            start.elapsed().as_secs_f64()
        );
    }
    let version = wine_version()?;
    if version < 9 {
        let system32 = prefix.join("drive_c/windows/system32");
        fs::copy(shim()?, system32.join("bcryptprimitives.dll"))
            .map_err(|e| format!("copying the shim into {}: {e}", system32.display()))?;
    }
    Ok(version)
}

/// The major version of `wine --version` ("wine-8.0 (Debian 8.0~repack-4)").
fn wine_version() -> Result<u32> {
    let out = cmd("wine", &["--version"])
        .output()
        .map_err(|e| format!("could not start wine: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .strip_prefix("wine-")
        .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|major| major.parse().ok())
        .ok_or(format!("cannot read Wine's version from {text:?}"))
}

/// Builds `target/cross/bcryptprimitives.dll` from `cross/bcryptprimitives.c`
/// and its `.def` file with mingw-w64's gcc (under a second).
///
/// Rust's standard library (since 1.78) takes its random numbers on Windows
/// (HashMap's keys, so every program) from `ProcessPrng`, exported by
/// `bcryptprimitives.dll`. Wine added that DLL in 9.0; Debian 12's Wine 8.0
/// has none, so every Rust program fails to start under it (status
/// c0000135, "Library bcryptprimitives.dll ... not found"). The shim
/// exports just `ProcessPrng`, filling the buffer from bcrypt's system RNG
/// (`BCryptGenRandom`, which Wine 8 has) in chunks of at most 1 GiB, as its
/// length is a 32-bit `ULONG`. [`wine_tests`] copies it into the prefix's
/// `system32` only where Wine is older than 9.
fn shim() -> Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cross");
    let out = target_dir().join("cross/bcryptprimitives.dll");
    let mut gcc = cmd("x86_64-w64-mingw32-gcc", &["-O2", "-Wall", "-shared", "-o"]);
    gcc.arg(&out)
        .arg(source.join("bcryptprimitives.c"))
        .arg(source.join("bcryptprimitives.def"))
        .arg("-lbcrypt");
    run(gcc)?;
    Ok(out)
}

/// The Wine run's binaries ([`tally`] of its output, the `shared::` unit
/// tests marked).
fn wine_tally(log: &str) -> Vec<Binary> {
    tally(log, |test| test.starts_with(SHARED_UNIT_TESTS))
}

/// What ran, as "N tests passed (NAME: N, ...)"; an error where one of
/// [`WINE_BINARIES`] is missing or passed nothing, or the library's
/// [`SHARED_UNIT_TESTS`] did not run.
fn check_wine_run(binaries: &[Binary]) -> Result<String> {
    let mut parts = vec![];
    for name in WINE_BINARIES {
        let binary = binaries
            .iter()
            .find(|b| b.name == name)
            .ok_or(format!("{name} did not run under Wine"))?;
        if binary.passed == 0 {
            return Err(format!(
                "{name} passed 0 tests under Wine: are they compiled out for Windows?"
            ));
        }
        parts.push(format!("{name}: {}", binary.passed));
    }
    let shared: u64 = binaries.iter().map(|b| b.marked).sum();
    if shared == 0 {
        return Err(format!(
            "no {SHARED_UNIT_TESTS} unit test ran under Wine: compiled out for Windows?"
        ));
    }
    let total: u64 = binaries.iter().map(|b| b.passed).sum();
    Ok(format!(
        "{total} tests passed ({}; {shared} of them {SHARED_UNIT_TESTS})",
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::{Binary, check_wine_run, wine_tally};

    const LOG: &str = "\
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.31s
     Running unittests src/lib.rs (target/x86_64-pc-windows-gnu/debug/deps/bytelens-1a2b.exe)

running 3 tests
test buffer::tests::aligned ... ok
test shared::tests::lock_times_out ... ok
test shared::tests::names ... ignored
test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.02s

     Running tests/mapped.rs (target/x86_64-pc-windows-gnu/debug/deps/mapped-3c4d.exe)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/shared.rs (target/x86_64-pc-windows-gnu/debug/deps/shared-5e6f.exe)

running 11 tests
test create_attach_share_bytes_and_unlink ... ok
test result: ok. 11 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s
";

    fn binary(name: &str, passed: u64, shared_passed: u64) -> Binary {
        Binary {
            name: name.to_owned(),
            passed,
            marked: shared_passed,
            skipped: vec![],
        }
    }

    #[test]
    fn tally_reads_each_binary_and_its_shared_unit_tests() {
        assert_eq!(
            wine_tally(LOG),
            [
                binary("unittests src/lib.rs", 2, 1),
                binary("tests/mapped.rs", 0, 0),
                binary("tests/shared.rs", 11, 0),
            ]
        );
    }

    #[test]
    fn a_binary_with_no_tests_fails_the_run() {
        let err = check_wine_run(&wine_tally(LOG)).unwrap_err();
        assert!(err.contains("tests/mapped.rs passed 0 tests"), "{err}");
    }

    #[test]
    fn a_binary_that_did_not_run_fails_the_run() {
        let log = LOG.replace("tests/mapped.rs", "tests/other.rs");
        let err = check_wine_run(&wine_tally(&log)).unwrap_err();
        assert_eq!(err, "tests/mapped.rs did not run under Wine");
    }

    #[test]
    fn no_shared_unit_test_fails_the_run() {
        let log = LOG
            .replace("running 0 tests", "test a ... ok")
            .replace("ok. 0 passed", "ok. 1 passed")
            .replace("test shared::tests::lock_times_out", "test copy::x");
        let err = check_wine_run(&wine_tally(&log)).unwrap_err();
        assert!(err.starts_with("no shared:: unit test ran"), "{err}");
    }

    #[test]
    fn a_full_run_is_summed() {
        let log = LOG.replace("ok. 0 passed", "ok. 4 passed");
        assert_eq!(
            check_wine_run(&wine_tally(&log)).unwrap(),
            "17 tests passed (unittests src/lib.rs: 2, tests/shared.rs: 11, \
             tests/mapped.rs: 4; 1 of them shared::)"
        );
    }
}
