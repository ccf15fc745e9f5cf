//! `cargo xtask test`: the suites, what each needs installed, and the run.
//!
//! A suite is a list of steps (commands) and the installs they need. The
//! full run, `cargo xtask test` with no suite, is every suite but `core`, in
//! [`SUITES`]' order: `core` is the quick loop over bytelens-core, whose
//! commands the full run already covers with `rust` and `no-std`.

use std::process::Command;
use std::time::Instant;

use crate::{
    BUILD_ENV, PY_ENVS, Result, arm, cmd, cross, docs, ensure_python_envs, fuzz, gpu, py_dir, root,
    run, venv_python, web, wheel_envs, without_rust,
};

/// Targets the core must build for without std: a microcontroller and the browser.
const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "wasm32-unknown-unknown"];
const NIGHTLY: &str = "nightly";

/// What a suite needs before its steps run.
#[derive(Clone, Copy, PartialEq)]
enum Need {
    /// rustfmt and clippy.
    Lints,
    /// The [`NO_STD_TARGETS`].
    NoStdTargets,
    /// Nightly with Miri, rust-src and Miri's sysroot.
    Miri,
    /// Nightly and cargo-fuzz.
    CargoFuzz,
    /// The [`PY_ENVS`] venvs with their packages.
    PythonEnvs,
    /// wasm-pack, the wasm-bindgen CLI, the demo's npm packages, Chromium and chromedriver.
    WebTools,
    /// Mesa's lavapipe and the Vulkan loader.
    Lavapipe,
    /// The [`cross::TARGETS`], Wine, mingw-w64's gcc and clang.
    CrossTools,
    /// qemu-user, the aarch64 gcc and C library, the aarch64 CPython and its packages.
    ArmTools,
    /// mdBook (pdoc comes with the venvs, TypeDoc with the web tools).
    DocsTools,
    /// The release wasm package in web-demo/pkg/: built first unless the
    /// `wasm` suite (whose last step builds it) ran earlier in the same run.
    WasmPackage,
    /// The wheel installed in the venvs: built first unless the `python`
    /// suite (whose first step builds it) ran earlier in the same run.
    PythonPackage,
    /// web-demo/ served on 127.0.0.1 for as long as the run lasts.
    DemoServer,
}

/// The installs, in the order they run; `--no-install` skips them all.
const INSTALLS: [Need; 10] = [
    Need::Lints,
    Need::NoStdTargets,
    Need::Miri,
    Need::CargoFuzz,
    Need::PythonEnvs,
    Need::WebTools,
    Need::Lavapipe,
    Need::CrossTools,
    Need::ArmTools,
    Need::DocsTools,
];

impl Need {
    fn describe(self) -> &'static str {
        match self {
            Need::Lints => "rustfmt, clippy",
            Need::NoStdTargets => "the no_std targets",
            Need::Miri => "nightly with Miri",
            Need::CargoFuzz => "nightly and cargo-fuzz",
            Need::PythonEnvs => "the venvs in ~/.cache/bytelens/py/",
            Need::WebTools => "wasm-pack, wasm-bindgen, npm packages, Chromium",
            Need::Lavapipe => "lavapipe (Vulkan on the CPU)",
            Need::CrossTools => "the macOS, Windows and Arm Linux targets, Wine, mingw-w64, clang",
            Need::ArmTools => {
                "qemu-user, aarch64 gcc and libc, an aarch64 CPython in ~/.cache/bytelens/arm/"
            }
            Need::DocsTools => "mdBook",
            Need::WasmPackage => "web-demo/pkg/ (built unless `wasm` ran before)",
            Need::PythonPackage => "the wheel in the venvs (built unless `python` ran before)",
            Need::DemoServer => "the demo served on 127.0.0.1",
        }
    }

    /// Installs what is missing, skipping whatever is there.
    fn install(self) -> Result {
        match self {
            Need::Lints => ensure_lint_tools(),
            Need::NoStdTargets => ensure_no_std_targets(),
            Need::Miri => ensure_miri(),
            Need::CargoFuzz => fuzz::ensure_cargo_fuzz(),
            Need::PythonEnvs => ensure_python_envs(),
            Need::WebTools => web::ensure_web_tools(true),
            Need::Lavapipe => gpu::ensure_lavapipe(),
            Need::CrossTools => cross::ensure_tools(),
            Need::ArmTools => arm::ensure_tools(),
            Need::DocsTools => docs::ensure_mdbook(),
            Need::WasmPackage | Need::PythonPackage | Need::DemoServer => Ok(()),
        }
    }
}

/// One named command of a suite.
type Step = (String, Command);

/// What the steps of a run may depend on.
struct Run {
    /// Where web-demo/ is served.
    demo_url: String,
    install: bool,
    /// Every test everywhere (`cargo xtask test all`, or `--all` with
    /// suites): nothing sampled.
    all: bool,
}

/// A named group of steps, runnable on its own with `cargo xtask test NAME`.
pub struct Suite {
    pub name: &'static str,
    about: &'static str,
    /// Whether `cargo xtask test` with no suite runs it.
    full_run: bool,
    needs: &'static [Need],
    steps: fn(&Run) -> Vec<Step>,
}

/// Every suite, in the order the full run runs them.
pub const SUITES: [Suite; 13] = [
    Suite {
        name: "lint",
        about: "rustfmt and clippy (-D warnings) on every crate, target and feature",
        full_run: true,
        needs: &[Need::Lints],
        steps: lint,
    },
    Suite {
        name: "core",
        about: "the quick loop: bytelens-core's tests and doctests (all features), no_std builds",
        full_run: false,
        needs: &[Need::NoStdTargets],
        steps: core,
    },
    Suite {
        name: "rust",
        about: "every crate's unit, integration and doctests, README's Rust examples included",
        full_run: true,
        needs: &[],
        steps: rust,
    },
    Suite {
        name: "gpu",
        about: "the GPU tests of bytelens (feature gpu) on Vulkan; a missing adapter fails",
        full_run: true,
        needs: &[Need::Lavapipe],
        steps: gpu,
    },
    Suite {
        name: "no-std",
        about: "bytelens-core built for a microcontroller and the browser without std",
        full_run: true,
        needs: &[Need::NoStdTargets],
        steps: no_std,
    },
    Suite {
        name: "cross",
        about: "clippy for macOS (Arm, Intel), Windows and Arm Linux; the Windows tests under Wine",
        full_run: true,
        needs: &[Need::CrossTools],
        steps: cross,
    },
    Suite {
        name: "miri",
        about: "bytelens-core's tests and bytelens' unit tests under Miri (nightly)",
        full_run: true,
        needs: &[Need::Miri],
        steps: miri,
    },
    Suite {
        name: "fuzz",
        about: "each fuzz target for 20 s (cargo fuzz, nightly, ASan), the fuzz crate's tests, its lints",
        full_run: true,
        needs: &[Need::CargoFuzz],
        steps: fuzz_smoke,
    },
    Suite {
        name: "python",
        about: "the manylinux abi3 wheel installed without Rust: every test on CPython 3.11 with numpy 2.x (GPU tests on lavapipe), -m compat on numpy 1.26, 3.12, 3.13; mypy.stubtest, mypy",
        full_run: true,
        needs: &[Need::PythonEnvs, Need::Lavapipe],
        steps: python,
    },
    Suite {
        name: "arm",
        about: "core's and bytelens' tests for aarch64 under qemu (two CPUs), the aarch64 wheel's Python tests of what aarch64 changes",
        full_run: true,
        needs: &[Need::PythonEnvs, Need::ArmTools],
        steps: arm,
    },
    Suite {
        name: "wasm",
        about: "wasm-pack tests in Node and Chromium, then the release build, wasm-opt'd and size checked",
        full_run: true,
        needs: &[Need::WebTools],
        steps: wasm,
    },
    Suite {
        name: "demo",
        about: "the web demo's unit tests in Node and its end-to-end test in Chromium",
        full_run: true,
        needs: &[
            Need::PythonEnvs,
            Need::WebTools,
            Need::WasmPackage,
            Need::DemoServer,
        ],
        steps: demo,
    },
    Suite {
        name: "docs",
        about: "the guide and the API references built (links and anchors checked, the first page in Chromium); every Python, JS and Rust example of the README and the guide run",
        full_run: true,
        needs: &[
            Need::PythonEnvs,
            Need::WebTools,
            Need::Lavapipe,
            Need::DocsTools,
            Need::PythonPackage,
            Need::WasmPackage,
        ],
        steps: docs_suite,
    },
];

/// The suite called `name`.
pub fn suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

/// The suites `cargo xtask test` runs when given none.
fn full_run() -> Vec<&'static Suite> {
    SUITES.iter().filter(|s| s.full_run).collect()
}

/// `cargo xtask test --list [SUITE...]`: each suite, what it needs and its steps.
pub fn list(suites: &[&Suite], all_tests: bool) {
    let all: Vec<&Suite> = SUITES.iter().collect();
    let run = Run {
        demo_url: "http://127.0.0.1:PORT/".to_owned(),
        install: true,
        all: all_tests,
    };
    println!(
        "cargo xtask test [SUITE...] runs the named suites in order; with none, the full run\n\
         (what CI runs): those marked *. `rust` and `no-std` cover `core` there.\n"
    );
    for suite in if suites.is_empty() { &all } else { suites } {
        let mark = if suite.full_run { '*' } else { ' ' };
        println!("{mark} {:<7} {}", suite.name, suite.about);
        if !suite.needs.is_empty() {
            let needs: Vec<&str> = suite.needs.iter().map(|n| n.describe()).collect();
            println!("{:10}needs: {}", "", needs.join("; "));
        }
        for (label, _) in (suite.steps)(&run) {
            println!("{:10}- {label}", "");
        }
    }
}

/// `cargo xtask test [SUITE...]`: installs what the suites need (unless
/// `install` is false), then runs their steps in order, timing each, and
/// stops at the first failure.
pub fn test(suites: &[&'static Suite], install: bool, all: bool) -> Result {
    let start = Instant::now();
    let whole = suites.is_empty();
    let suites = if whole { full_run() } else { suites.to_vec() };
    let needs = |need: Need| suites.iter().any(|s| s.needs.contains(&need));
    if install {
        for need in INSTALLS.into_iter().filter(|&n| needs(n)) {
            need.install()?;
        }
        println!("\ntools ready in {:.1}s", start.elapsed().as_secs_f64());
    } else {
        println!("\ninstalls skipped (--no-install or BYTELENS_NO_INSTALL)");
    }
    // Serves web-demo/ (on 127.0.0.1 only) until this process exits.
    let demo_url = if needs(Need::DemoServer) {
        web::serve(0, web::demo_test_files()?)?
    } else {
        String::new()
    };
    let run = Run {
        demo_url,
        install,
        all,
    };
    let mut list: Vec<(&str, String, Command)> = vec![];
    for (i, suite) in suites.iter().enumerate() {
        let before = |name: &str| suites[..i].iter().any(|s| s.name == name);
        if suite.needs.contains(&Need::PythonPackage) && !before("python") {
            let label = "the wheel, installed into the venvs".to_owned();
            list.push((suite.name, label, xtask_step("build-python", &run)));
        }
        if suite.needs.contains(&Need::WasmPackage) && !before("wasm") {
            let label = "release wasm package for the demo".to_owned();
            list.push((suite.name, label, xtask_step("build-wasm", &run)));
        }
        for (label, c) in (suite.steps)(&run) {
            list.push((suite.name, label, c));
        }
    }
    // The full run builds each crate once per target and profile:
    // incremental state would only fill the disk, which ran out under CI.
    if whole && std::env::var_os("CARGO_INCREMENTAL").is_none() {
        for (_, _, c) in &mut list {
            c.env("CARGO_INCREMENTAL", "0");
        }
    }
    steps(list)?;
    let passed = if whole {
        "all checks".to_owned()
    } else {
        let names: Vec<&str> = suites.iter().map(|s| s.name).collect();
        names.join(", ")
    };
    println!("\n{passed} passed in {:.1}s", start.elapsed().as_secs_f64());
    Ok(())
}

/// Runs the steps in order, timing each, and stops at the first failure.
fn steps(list: Vec<(&str, String, Command)>) -> Result {
    let mut times = vec![];
    for (suite, label, c) in list {
        let start = Instant::now();
        let result = run(c);
        let secs = start.elapsed().as_secs_f64();
        times.push((suite, label, secs, free_disk_gib(), result.is_ok()));
        if let Err(err) = result {
            summary(&times);
            let label = &times[times.len() - 1].1;
            return Err(format!("{suite}: step '{label}' failed: {err}"));
        }
    }
    summary(&times);
    Ok(())
}

/// One finished step: its suite, label, seconds, the disk space free after
/// it (GiB, where `df` could tell) and whether it passed.
type Timed<'a> = (&'a str, String, f64, Option<f64>, bool);

fn summary(times: &[Timed]) {
    println!("\nxtask summary (free disk after each step):");
    for (suite, label, secs, free, ok) in times {
        let free = free.map_or("?".to_owned(), |g| format!("{g:.1}G"));
        println!(
            "  {:<6} {secs:>7.1}s {free:>7}  {suite:<7} {label}",
            if *ok { "ok" } else { "FAILED" }
        );
    }
}

/// The space left on the file system of target/, in GiB: a run builds for
/// eight targets and several Python environments, and a full disk is a
/// failure to see coming in the summary.
fn free_disk_gib() -> Option<f64> {
    let target = crate::target_dir();
    let dir = if target.exists() { target } else { root() };
    let out = Command::new("df")
        .args(["-k", "--output=avail"])
        .arg(&dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let kib: f64 = text.lines().nth(1)?.trim().parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// This task runner again, as a step of another task, with the same `--no-install`.
fn xtask_step(task: &str, run: &Run) -> Command {
    let mut c = cmd("cargo", &["xtask", task]);
    if !run.install {
        c.env("BYTELENS_NO_INSTALL", "1");
    }
    c
}

fn lint(_: &Run) -> Vec<Step> {
    let clippy = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ];
    vec![
        ("rustfmt".into(), cmd("cargo", &["fmt", "--all", "--check"])),
        ("clippy".into(), cmd("cargo", &clippy)),
    ]
}

fn core(run: &Run) -> Vec<Step> {
    let test = ["test", "-p", "bytelens-core", "--all-features"];
    let mut list = vec![("tests and doctests".into(), cmd("cargo", &test))];
    list.extend(no_std(run));
    list
}

fn rust(_: &Run) -> Vec<Step> {
    let test = cmd("cargo", &["test", "--workspace"]);
    vec![("tests and doctests".into(), test)]
}

fn gpu(_: &Run) -> Vec<Step> {
    let mut test = cmd("cargo", &["test", "-p", "bytelens", "--features", "gpu"]);
    gpu::require_gpu(&mut test);
    vec![("round trips and a Plan in a shader, on Vulkan".into(), test)]
}

fn no_std(_: &Run) -> Vec<Step> {
    NO_STD_TARGETS
        .map(|target| {
            let build = ["build", "-p", "bytelens-core", "--target", target];
            (format!("no_std build, {target}"), cmd("cargo", &build))
        })
        .into()
}

fn cross(_: &Run) -> Vec<Step> {
    cross::steps()
}

fn miri(run: &Run) -> Vec<Step> {
    vec![(
        "bytelens-core and bytelens' Buffer, side by side".into(),
        xtask_step("miri-test", run),
    )]
}

/// `cargo xtask miri-test`: the two Miri runs at once (Miri interprets one
/// thread: two runs keep both cores busy, and take about as long each),
/// each in a target folder of its own so that neither waits on the other's
/// cargo lock. Nothing is sampled beyond what the tests sample under Miri
/// themselves (`cfg(miri)`: fewer property cases, the convert tests' pairs).
pub fn miri_test() -> Result {
    // Each run: its name, cargo's arguments and its target folder.
    let runs = [
        (
            "bytelens-core",
            ["-p", "bytelens-core"].as_slice(),
            "miri-core",
        ),
        (
            "bytelens' Buffer",
            ["-p", "bytelens", "--lib"].as_slice(),
            "miri-native",
        ),
    ];
    let start = Instant::now();
    let commands = runs.iter().map(|&(_, args, target)| {
        let mut c = cmd("rustup", &["run", NIGHTLY, "cargo", "miri", "test"]);
        // The vectors test reads tests/vectors from disk, which Miri's isolation forbids.
        c.args(args)
            .env("MIRIFLAGS", "-Zmiri-disable-isolation")
            .env("CARGO_TARGET_DIR", crate::target_dir().join(target));
        c
    });
    let logs = cross::run_logged_together(commands, &crate::target_dir().join("miri-logs"))?;
    let tally: Vec<String> = runs
        .iter()
        .zip(&logs)
        .map(|(&(name, _, _), log)| {
            let binaries = cross::tally(log, |_| false);
            let passed: u64 = binaries.iter().map(|b| b.passed).sum();
            format!(
                "{name}: {passed} tests passed in {} binaries",
                binaries.len()
            )
        })
        .collect();
    println!(
        "\nMiri: {}, in {:.1}s",
        tally.join("; "),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The fuzz crate's own tests, lints and formatting (it is outside the
/// workspace, so `rust` and `lint` do not see it), then every target for
/// [`fuzz::SMOKE_SECONDS`], seeds and regressions first.
fn fuzz_smoke(_: &Run) -> Vec<Step> {
    let manifest = root().join("fuzz/Cargo.toml").display().to_string();
    let target_dir = root().join("fuzz/target").display().to_string();
    let cargo = |args: &[&str]| {
        let mut c = cmd("cargo", args);
        c.args(["--manifest-path", &manifest]);
        c
    };
    let mut clippy = cargo(&["clippy", "--all-targets", "--target-dir", &target_dir]);
    clippy.args(["--", "-D", "warnings"]);
    let mut list = vec![
        ("rustfmt".into(), cargo(&["fmt", "--check"])),
        ("clippy".into(), clippy),
        (
            "its tests: the vectors, the regressions".into(),
            cargo(&["test", "--target-dir", &target_dir]),
        ),
        ("build the targets".into(), fuzz::build()),
    ];
    let secs = fuzz::SMOKE_SECONDS.to_string();
    // Two targets at a time: each libFuzzer run is one thread.
    let mut c = cmd("cargo", &["xtask", "fuzz", "--time", &secs, "--jobs", "2"]);
    // The suite's needs are installed already (or not wanted).
    c.env("BYTELENS_NO_INSTALL", "1");
    let label = format!(
        "fuzz {} for {secs} s each, two at a time",
        fuzz::TARGETS.join(", ")
    );
    list.push((label, c));
    list
}

/// What the python suite checks before each venv's pytest: that
/// `bytelens` is the wheel installed in the venv's site-packages (the abi3
/// extension), not a source tree on `sys.path`.
const INSTALLED_CHECK: &str = "\
import sys, sysconfig, bytelens, bytelens._native as native
site = sysconfig.get_paths()['platlib']
assert bytelens.__file__.startswith(site + '/'), (bytelens.__file__, site)
assert native.__file__.endswith('_native.abi3.so'), native.__file__
print(f'CPython {sys.version.split()[0]}: bytelens from {bytelens.__file__}')
";

fn python(run: &Run) -> Vec<Step> {
    let mut list = vec![("build the wheel".into(), xtask_step("build-python", run))];
    // tests/python/test_shared.py runs native/examples/shared.rs, which it
    // would build with cargo if it were not there: built here, as the
    // tests run without Rust.
    let example = cmd("cargo", &["build", "-p", "bytelens", "--example", "shared"]);
    list.push(("the Rust side of test_shared.py".into(), example));
    let labels = [
        "numpy 2.x, CPython 3.11",
        "numpy 1.26, CPython 3.11",
        "CPython 3.12",
        "CPython 3.13",
    ];
    for (i, (name, label)) in wheel_envs().zip(labels).enumerate() {
        let label = if i > 0 && !run.all {
            format!("{label}, -m compat")
        } else {
            label.to_owned()
        };
        let mut check = cmd(&venv_python(name), &["-c", INSTALLED_CHECK]);
        let mut pytest = cmd(&venv_python(name), &["-m", "pytest", "tests/python", "-q"]);
        // The README's and the guide's examples are the docs suite's.
        pytest.arg("--ignore=tests/python/test_examples.py");
        // The one abi3 binary is searched hardest (300 examples a property)
        // under 3.11 with both numpys; the newer interpreters run with
        // hypothesis' default 100, which is about their own C API and
        // packaging, not the kernels again.
        let profile = if i < PY_ENVS.len() { "ci" } else { "default" };
        pytest
            .args(["-p", "no:cacheprovider"])
            .env("HYPOTHESIS_PROFILE", profile);
        // The same wheel under another numpy or CPython: the tests of what
        // differs between them (tests/python/conftest.py's COMPAT_FILES),
        // unless every test is asked for.
        if i > 0 && !run.all {
            pytest.args(["-m", "compat"]);
        }
        gpu::require_gpu(&mut pytest);
        without_rust(&mut check);
        without_rust(&mut pytest);
        list.push((format!("the installed wheel, {label}"), check));
        list.push((format!("pytest, {label}"), pytest));
    }
    let mut stubtest = cmd(
        &venv_python(PY_ENVS[0].0),
        &["-m", "mypy.stubtest", "bytelens._native"],
    );
    stubtest.env("MYPY_CACHE_DIR", py_dir().join("mypy-cache"));
    list.push(("stubtest".into(), stubtest));
    let mut mypy = cmd(
        &venv_python(PY_ENVS[0].0),
        &["-m", "mypy", "native/python/bytelens"],
    );
    mypy.env("MYPY_CACHE_DIR", py_dir().join("mypy-cache"));
    list.push(("mypy of the package's Python".into(), mypy));
    list
}

fn arm(run: &Run) -> Vec<Step> {
    let mut steps = arm::steps();
    if run.all {
        for (_, c) in &mut steps {
            c.env("BYTELENS_TEST_ALL", "1");
        }
    }
    steps
}

fn wasm(run: &Run) -> Vec<Step> {
    vec![
        (
            "tests in Node".into(),
            web::wasm_pack_test(&["--node"], &["node", "headers", "memory"]),
        ),
        (
            "tests in Chromium".into(),
            web::wasm_pack_test(&["--headless", "--chrome"], &["browser"]),
        ),
        (
            "release build, wasm-opt, size".into(),
            xtask_step("build-wasm", run),
        ),
    ]
}

fn demo(run: &Run) -> Vec<Step> {
    let unit = cmd("node", &["--test", "web-demo/tests/numbers.test.mjs"]);
    vec![
        ("unit tests".into(), unit),
        ("end to end in Chromium".into(), web::e2e(&run.demo_url)),
    ]
}

fn docs_suite(run: &Run) -> Vec<Step> {
    let mut site = xtask_step("docs", run);
    site.arg("--test");
    let mut python = cmd(
        &venv_python(BUILD_ENV),
        &[
            "-m",
            "pytest",
            "tests/python/test_examples.py",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
    );
    gpu::require_gpu(&mut python);
    without_rust(&mut python);
    let js = cmd("node", &["--test", "docs/tests/examples.test.mjs"]);
    let mut rust = cmd(
        "cargo",
        &[
            "test",
            "-p",
            "bytelens",
            "--features",
            "gpu",
            "--doc",
            "guide",
        ],
    );
    rust.env("RUSTDOCFLAGS", "--cfg bytelens_guide");
    gpu::require_gpu(&mut rust);
    vec![
        (
            "the site: guide, API references, links, the first page in Chromium".into(),
            site,
        ),
        (
            "the README's and the guide's Python examples".into(),
            python,
        ),
        ("their JavaScript examples, in Node".into(), js),
        (
            "their Rust examples, as doctests (gpu included)".into(),
            rust,
        ),
    ]
}

fn output(program: &str, args: &[&str]) -> Result<String> {
    let out = cmd(program, args)
        .output()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Lines of `rustup <args>` output, first word of each.
pub(crate) fn rustup_list(args: &[&str]) -> Result<Vec<String>> {
    Ok(output("rustup", args)?
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect())
}

fn ensure_lint_tools() -> Result {
    let components = rustup_list(&["component", "list", "--installed"])?;
    for component in ["rustfmt", "clippy"] {
        if !components.iter().any(|c| c.starts_with(component)) {
            run(cmd("rustup", &["component", "add", component]))?;
        }
    }
    Ok(())
}

fn ensure_no_std_targets() -> Result {
    let targets = rustup_list(&["target", "list", "--installed"])?;
    for target in NO_STD_TARGETS {
        if !targets.iter().any(|t| t == target) {
            run(cmd("rustup", &["target", "add", target]))?;
        }
    }
    Ok(())
}

fn ensure_miri() -> Result {
    let toolchains = rustup_list(&["toolchain", "list"])?;
    if !toolchains.iter().any(|t| t.starts_with(NIGHTLY)) {
        run(cmd(
            "rustup",
            &[
                "toolchain",
                "install",
                NIGHTLY,
                "--profile",
                "minimal",
                "--component",
                "miri,rust-src",
                "--allow-downgrade",
            ],
        ))?;
    }
    let nightly = rustup_list(&["component", "list", "--installed", "--toolchain", NIGHTLY])?;
    for component in ["miri", "rust-src"] {
        if !nightly.iter().any(|c| c.starts_with(component)) {
            run(cmd(
                "rustup",
                &["component", "add", component, "--toolchain", NIGHTLY],
            ))?;
        }
    }
    // Builds Miri's sysroot once; afterwards it only checks it.
    run(cmd("rustup", &["run", NIGHTLY, "cargo", "miri", "setup"]))
}
