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
//! - The Python package: the aarch64 abi3 wheel ([`wheels::build`]) under an
//!   aarch64 CPython from Debian's arm64 packages, unpacked into
//!   `~/.cache/bytelens/arm/python/` (no dpkg install, no multiarch), with numpy,
//!   pytest, hypothesis and ml_dtypes from PyPI's aarch64 wheels, running
//!   tests/python (see [`PY_LEFT_OUT`] for what is left out, and why).
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

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::cross::{Binary, count};
use crate::{
    PY_ENVS, PY_TOOLS, Result, apt_install, cache_dir, cmd, cross, root, run, target_dir,
    test::rustup_list, venv_python, wheels,
};

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

/// Debian's arm64 packages of CPython 3.11 and the libraries it loads,
/// unpacked (`dpkg -x`) into [`python_root`].
const PY_DEBS: [&str; 19] = [
    "python3.11-minimal:arm64",
    "libpython3.11-minimal:arm64",
    "libpython3.11-stdlib:arm64",
    "libc6:arm64",
    "libexpat1:arm64",
    "zlib1g:arm64",
    "libffi8:arm64",
    "libssl3:arm64",
    "libbz2-1.0:arm64",
    "liblzma5:arm64",
    "libcrypt1:arm64",
    "libuuid1:arm64",
    "libgcc-s1:arm64",
    "libstdc++6:arm64",
    "libsqlite3-0:arm64",
    "libncursesw6:arm64",
    "libtinfo6:arm64",
    "libreadline8:arm64",
    "media-types",
];

/// The test tools of [`PY_TOOLS`] the aarch64 Python gets, with the numpy
/// of the first of [`PY_ENVS`].
const PY_PACKAGES: [&str; 4] = ["pytest", "hypothesis", "ml_dtypes", "safetensors"];

/// The tests/python files run under qemu: those of what aarch64 changes
/// (the NEON kernels and conversions, views and their arithmetic, mapped
/// files and page sizes, shared memory and its futex lock, whose children
/// start through qemu). [`PY_ARCH_NEUTRAL`] runs too with `--all`; every
/// other file is in [`PY_LEFT_OUT`]; a file in none fails the step.
const PY_RUN: [&str; 8] = [
    "test_args.py",
    "test_ascontiguous.py",
    "test_dlpack_view.py",
    "test_files.py",
    "test_oracle.py",
    "test_seeds.py",
    "test_shared.py",
    "test_vectors.py",
];

/// Files about the Python C API and messages, which aarch64 does not
/// change: under qemu only in `cargo xtask test all` (`BYTELENS_TEST_ALL`);
/// the python suite runs them natively, on every CPython.
const PY_ARCH_NEUTRAL: [&str; 7] = [
    "test_error_kinds.py",
    "test_bindings_hostile.py",
    "test_edges.py",
    "test_hostile_round5_py.py",
    "test_lifetimes.py",
    "test_plan_limits.py",
    "test_protocols.py",
];

/// Why the rest is left out: the python suite runs all of them natively.
const SLOW: &str = "under qemu it takes minutes (each child Python starts in seconds there)";
const PY_LEFT_OUT: [(&str, &str); 14] = [
    ("test_gpu.py", "no Vulkan driver for arm64 here"),
    (
        "test_hostile_round5_gpu.py",
        "no Vulkan driver for arm64 here",
    ),
    (
        "test_dequant_nans.py",
        "gguf-py is not installed for aarch64 (the NEON builds' NaNs are held to the reference by \
         the native suite's two_nans_give_the_scales under qemu)",
    ),
    (
        "test_header_memory.py",
        "its children's address-space limits would bound qemu's own, and each child Python starts \
         in seconds there",
    ),
    (
        "test_scale.py",
        "Ray and Dask are not installed for aarch64",
    ),
    (
        "test_dask_hostile.py",
        "Dask is not installed for aarch64 (the deserializer is Python and numpy only)",
    ),
    (
        "test_gguf.py",
        "gguf-py is not installed for aarch64 (the NEON dequantisers are held to its answers by \
         the native suite's tests/vectors/dequant.txt under qemu)",
    ),
    (
        "test_frameworks.py",
        "torch and JAX are not installed for aarch64 (3 GB)",
    ),
    (
        "test_examples.py",
        "its examples use Ray, Dask, torch and the GPU",
    ),
    ("test_hostile.py", SLOW),
    ("test_header_limits.py", SLOW),
    ("test_inspect_cli.py", SLOW),
    ("test_files_hostile.py", SLOW),
    ("test_sharded.py", SLOW),
];

fn arm_dir() -> PathBuf {
    target_dir().join("arm")
}

/// The aarch64 CPython's root: Debian's files, and the `python3` wrapper
/// (kept across clones, in the task runner's cache).
fn python_root() -> PathBuf {
    cache_dir().join("arm/python")
}

/// The aarch64 packages from PyPI ([`PY_PACKAGES`] and numpy).
fn site() -> PathBuf {
    cache_dir().join("arm/site")
}

/// The unpacked bytelens wheel, first on the aarch64 Python's path.
fn wheel_dir() -> PathBuf {
    arm_dir().join("wheel")
}

/// The wrapper that runs the aarch64 CPython under qemu; it is also that
/// Python's `sys.executable` (qemu's `-0`), so the tests' children (and
/// multiprocessing's spawned workers) start through qemu too.
fn python() -> PathBuf {
    python_root().join("usr/bin/python3-qemu")
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
    ensure_python_root()?;
    ensure_site()
}

/// Writes `text` to `path`, naming the file in the error.
fn write(path: &Path, text: &str) -> Result {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Downloads [`PY_DEBS`] and unpacks them into [`python_root`], unless its
/// marker lists the same packages, then writes the wrapper.
fn ensure_python_root() -> Result {
    let root = python_root();
    let marker = root.join(".bytelens-packages");
    let wanted = PY_DEBS.join("\n");
    if fs::read_to_string(&marker).ok().as_deref() != Some(&wanted) {
        let foreign = cmd("dpkg", &["--print-foreign-architectures"])
            .output()
            .map_err(|e| format!("could not start dpkg: {e}"))?;
        let foreign = String::from_utf8_lossy(&foreign.stdout);
        if !foreign.lines().any(|a| a.trim() == "arm64") {
            run(cmd("dpkg", &["--add-architecture", "arm64"]))?;
            run(cmd("apt-get", &["update"]))?;
        }
        let debs = arm_dir().join("debs");
        let _ = fs::remove_dir_all(&debs);
        let _ = fs::remove_dir_all(&root);
        for dir in [&debs, &root] {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let mut download = cmd("apt-get", &["download"]);
        download.args(PY_DEBS).current_dir(&debs);
        if run(download).is_err() {
            // The package lists may predate arm64 or be stale.
            run(cmd("apt-get", &["update"]))?;
            let mut download = cmd("apt-get", &["download"]);
            download.args(PY_DEBS).current_dir(&debs);
            run(download)?;
        }
        let mut files: Vec<PathBuf> = fs::read_dir(&debs)
            .map_err(|e| format!("{}: {e}", debs.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "deb"))
            .collect();
        files.sort();
        if files.len() != PY_DEBS.len() {
            return Err(format!(
                "apt-get download gave {} packages, not {}",
                files.len(),
                PY_DEBS.len()
            ));
        }
        for deb in files {
            let mut x = Command::new("dpkg");
            x.arg("-x").arg(deb).arg(&root);
            run(x)?;
        }
        let _ = fs::remove_dir_all(&debs);
        write(&marker, &wanted)?;
    }
    let interpreter = root.join("usr/bin/python3.11");
    let wrapper = format!(
        "#!/bin/sh\n\
         # The aarch64 CPython under qemu, its sys.executable this script (-0).\n\
         exec qemu-aarch64 -L '{}' -0 \"$0\" '{}' \"$@\"\n",
        root.display(),
        interpreter.display()
    );
    write(&python(), &wrapper)?;
    run(cmd("chmod", &["+x", &python().display().to_string()]))
}

/// The requirements [`site`] gets.
fn site_requirements() -> Vec<&'static str> {
    let tools = PY_TOOLS
        .into_iter()
        .filter(|t| PY_PACKAGES.iter().any(|p| t.starts_with(p)));
    [PY_ENVS[0].1].into_iter().chain(tools).collect()
}

/// Installs the aarch64 wheels of [`site_requirements`] into [`site`]
/// with the host's pip, unless its marker lists the same requirements.
fn ensure_site() -> Result {
    let site = site();
    let wanted = site_requirements();
    let marker = site.join(".bytelens-requirements");
    if fs::read_to_string(&marker).ok().as_deref() == Some(&wanted.join("\n")) {
        return Ok(());
    }
    let _ = fs::remove_dir_all(&site);
    let target = site.display().to_string();
    let args = [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--only-binary=:all:",
        // numpy 2.3 and later are manylinux_2_28 only, safetensors
        // manylinux2014 (2_17): pip takes each tag named, not older ones.
        "--platform",
        "manylinux_2_28_aarch64",
        "--platform",
        "manylinux2014_aarch64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--target",
        &target,
    ];
    let mut pip = cmd(&venv_python(PY_ENVS[0].0), &args);
    pip.args(&wanted);
    run(pip)?;
    write(&marker, &wanted.join("\n"))
}

/// The suite's steps, each `cargo xtask arm-test PART` (see [`test`]).
pub fn steps() -> Vec<(String, Command)> {
    [
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
    .map(|(part, label)| {
        let mut c = cmd("cargo", &["xtask", "arm-test", part]);
        // The suite's needs are installed already (or not wanted).
        c.env("BYTELENS_NO_INSTALL", "1");
        (label.to_owned(), c)
    })
    .into()
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
        "native" => {
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
        "cortex-a72" => {
            let mut c = cargo_test(&["-p", "bytelens", "--lib", "--", "--show-output"]);
            c.env("QEMU_CPU", "cortex-a72")
                .env("BYTELENS_EXPECT_BF16", "0");
            let log = run_logged(c)?;
            check(&tally(&log), &["unittests src/lib.rs"], true)?
        }
        "python" => python_tests()?,
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

/// The aarch64 wheel built ([`wheels::build`]) and unpacked, then pytest
/// over tests/python under the aarch64 CPython, less [`PY_LEFT_OUT`].
fn python_tests() -> Result<String> {
    if !python().exists() {
        return Err(format!(
            "{} is missing: run `cargo xtask test arm` without --no-install once",
            python().display()
        ));
    }
    let wheel = wheels::build(TARGET)?;
    let dir = wheel_dir();
    let _ = fs::remove_dir_all(&dir);
    let mut unzip = cmd(&venv_python(PY_ENVS[0].0), &["-m", "zipfile", "-e"]);
    unzip.arg(&wheel).arg(&dir);
    run(unzip)?;
    console_script(&dir)?;
    let tests = root().join("tests/python");
    let mut files: Vec<String> = fs::read_dir(&tests)
        .map_err(|e| format!("{}: {e}", tests.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with("test_") && f.ends_with(".py"))
        .collect();
    files.sort();
    let all = env::var_os("BYTELENS_TEST_ALL").is_some();
    let mut run_here = vec![];
    for file in &files {
        if PY_RUN.contains(&file.as_str()) || (all && PY_ARCH_NEUTRAL.contains(&file.as_str())) {
            run_here.push(format!("tests/python/{file}"));
        } else if PY_ARCH_NEUTRAL.contains(&file.as_str()) {
            println!(
                "left out under qemu: tests/python/{file}: the same on every CPU (`cargo xtask test all` runs it)"
            );
        } else if let Some((_, why)) = PY_LEFT_OUT.iter().find(|(f, _)| f == file) {
            println!("left out under qemu: tests/python/{file}: {why}");
        } else {
            return Err(format!(
                "tests/python/{file} is neither run nor left out under qemu: add it to arm.rs's PY_RUN, PY_ARCH_NEUTRAL or PY_LEFT_OUT"
            ));
        }
    }
    let paths = env::join_paths([dir, site()]).map_err(|e| e.to_string())?;
    // Two emulated Pythons at once, one a core: each runs one thread (and
    // its children), and test_shared.py's children alone take as long as
    // the other files together.
    let (first, second): (Vec<String>, Vec<String>) = run_here
        .into_iter()
        .partition(|f| PY_FIRST_HALF.iter().any(|h| f.ends_with(h)));
    let pytest = |files: &[String]| {
        let mut c = Command::new(python());
        c.args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
            .args(files)
            .current_dir(root())
            .env("PYTHONPATH", &paths)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("HYPOTHESIS_PROFILE", "default");
        c
    };
    let logs = cross::run_logged_together([pytest(&first), pytest(&second)], &arm_dir())?;
    let summaries: Vec<String> = logs
        .iter()
        .map(|log| pytest_summary(log))
        .collect::<Result<_>>()?;
    Ok(summaries.join("; "))
}

/// The files of [`PY_RUN`] the first of the two emulated Pythons runs.
const PY_FIRST_HALF: [&str; 1] = ["test_shared.py"];

/// Writes the `bytelens` command beside the wrapper, as pip would have
/// from the wheel's entry point (`bytelens = MODULE:FUNCTION`).
fn console_script(wheel: &Path) -> Result {
    let info = fs::read_dir(wheel)
        .map_err(|e| format!("{}: {e}", wheel.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "dist-info"))
        .ok_or("the wheel has no .dist-info")?;
    let points = info.join("entry_points.txt");
    let text = fs::read_to_string(&points).map_err(|e| format!("{}: {e}", points.display()))?;
    let (module, function) = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(name, _)| name.trim() == "bytelens")
        .and_then(|(_, target)| target.trim().split_once(':'))
        .ok_or(format!("no bytelens command in {}", points.display()))?;
    let script = python_root().join("usr/bin/bytelens");
    let text = format!(
        "#!{}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n",
        python().display()
    );
    write(&script, &text)?;
    run(cmd("chmod", &["+x", &script.display().to_string()]))
}

/// Runs `c` with its output echoed as it comes (cross.rs's runner), and
/// returns the output; a failing status is an error.
fn run_logged(c: Command) -> Result<String> {
    cross::run_logged(c, || Ok(()))
}

/// The binaries `cargo test`'s output says ran, in order, NEON's tests
/// (those with "neon" in their path) marked.
fn tally(log: &str) -> Vec<Binary> {
    cross::tally(log, |test| test.contains("neon"))
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

/// pytest's last line ("12 passed, 3 skipped in 40.1s"), checked: some
/// passed, none failed.
fn pytest_summary(log: &str) -> Result<String> {
    let last = log
        .lines()
        .rev()
        .map(|l| l.trim().trim_matches('='))
        .map(str::trim)
        .find(|l| l.contains(" in ") && (l.contains("passed") || l.contains("failed")))
        .ok_or("pytest printed no summary")?;
    let errors = count(last, "error") + count(last, "errors");
    if count(last, "passed") == 0 || count(last, "failed") > 0 || errors > 0 {
        return Err(format!("pytest under qemu: {last}"));
    }
    Ok(format!("pytest: {last}"))
}

#[cfg(test)]
mod tests {
    use super::{check, count, pytest_summary, tally};

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

    #[test]
    fn pytest_summaries_pass_only_with_passes_and_no_failures() {
        assert_eq!(count("ok. 12 passed; 0 failed;", "passed"), 12);
        let ok = "...\n==== 40 passed, 3 skipped in 12.50s ====\n";
        assert_eq!(
            pytest_summary(ok).unwrap(),
            "pytest: 40 passed, 3 skipped in 12.50s"
        );
        for bad in [
            "== 1 failed, 40 passed in 3.00s ==",
            "== 2 passed, 1 error in 3.00s ==",
            "== 2 passed, 2 errors in 3.00s ==",
            "== 3 skipped in 1.00s ==",
            "nothing",
        ] {
            assert!(pytest_summary(bad).is_err(), "{bad}");
        }
    }
}
