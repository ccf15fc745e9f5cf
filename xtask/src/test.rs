//! `cargo xtask test`: the suites, what each needs installed, and the run.
//!
//! A suite is a list of steps (commands) and the installs they need. The
//! full run, `cargo xtask test` with no suite, is every suite but `core`, in
//! [`SUITES`]' order: `core` is the quick loop over bytelens-core, whose
//! commands the full run already covers with `rust` and `no-std`.
//!
//! This file is the table of suites and the run; each suite's steps are in
//! the file named for it (lint.rs, rust.rs, gpu.rs, no_std.rs with `core`,
//! cross.rs, miri.rs, fuzz.rs, python.rs, arm.rs, wasm.rs, demo.rs,
//! docs.rs), which uses only the leaves util.rs and python_env.rs and the
//! wasm package's tools in web.rs.

use std::process::Command;
use std::time::Instant;

use crate::python_env::ensure_python_envs;
use crate::util::{Result, Run, Step, ensure_lavapipe, root, run, target_dir, xtask_step};
use crate::{arm, cross, demo, docs, fuzz, gpu, lint, miri, no_std, python, rust, wasm, web};

/// What a suite needs before its steps run.
#[derive(Clone, Copy, PartialEq)]
enum Need {
    /// rustfmt and clippy.
    Lints,
    /// The [`no_std::NO_STD_TARGETS`].
    NoStdTargets,
    /// Nightly with Miri, rust-src and Miri's sysroot.
    Miri,
    /// Nightly and cargo-fuzz.
    CargoFuzz,
    /// The [`crate::python_env::PY_ENVS`] venvs with their packages.
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
            Need::Lints => lint::ensure_lint_tools(),
            Need::NoStdTargets => no_std::ensure_no_std_targets(),
            Need::Miri => miri::ensure_miri(),
            Need::CargoFuzz => fuzz::ensure_cargo_fuzz(),
            Need::PythonEnvs => ensure_python_envs(),
            Need::WebTools => web::ensure_web_tools(true),
            Need::Lavapipe => ensure_lavapipe(),
            Need::CrossTools => cross::ensure_tools(),
            Need::ArmTools => arm::ensure_tools(),
            Need::DocsTools => docs::ensure_mdbook(),
            Need::WasmPackage | Need::PythonPackage | Need::DemoServer => Ok(()),
        }
    }
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
        steps: lint::steps,
    },
    Suite {
        name: "core",
        about: "the quick loop: bytelens-core's tests and doctests (all features), no_std builds",
        full_run: false,
        needs: &[Need::NoStdTargets],
        steps: no_std::core_steps,
    },
    Suite {
        name: "rust",
        about: "every crate's unit, integration and doctests, README's Rust examples included",
        full_run: true,
        needs: &[],
        steps: rust::steps,
    },
    Suite {
        name: "gpu",
        about: "the GPU tests of bytelens (feature gpu) on Vulkan; a missing adapter fails",
        full_run: true,
        needs: &[Need::Lavapipe],
        steps: gpu::steps,
    },
    Suite {
        name: "no-std",
        about: "bytelens-core built for a microcontroller and the browser without std",
        full_run: true,
        needs: &[Need::NoStdTargets],
        steps: no_std::steps,
    },
    Suite {
        name: "cross",
        about: "clippy for macOS (Arm, Intel), Windows and Arm Linux; the Windows tests under Wine",
        full_run: true,
        needs: &[Need::CrossTools],
        steps: cross::steps,
    },
    Suite {
        name: "miri",
        about: "bytelens-core's tests and bytelens' unit tests under Miri (nightly)",
        full_run: true,
        needs: &[Need::Miri],
        steps: miri::steps,
    },
    Suite {
        name: "fuzz",
        about: "each fuzz target for 20 s (cargo fuzz, nightly, ASan), the fuzz crate's tests, its lints",
        full_run: true,
        needs: &[Need::CargoFuzz],
        steps: fuzz::steps,
    },
    Suite {
        name: "python",
        about: "the manylinux abi3 wheel installed without Rust: every test on CPython 3.11 with numpy 2.x (GPU tests on lavapipe), -m compat on numpy 1.26, 3.12, 3.13; mypy.stubtest, mypy",
        full_run: true,
        needs: &[Need::PythonEnvs, Need::Lavapipe],
        steps: python::steps,
    },
    Suite {
        name: "arm",
        about: "core's and bytelens' tests for aarch64 under qemu (two CPUs), the aarch64 wheel's Python tests of what aarch64 changes",
        full_run: true,
        needs: &[Need::PythonEnvs, Need::ArmTools],
        steps: arm::steps,
    },
    Suite {
        name: "wasm",
        about: "wasm-pack tests in Node and Chromium, then the release build, wasm-opt'd and size checked",
        full_run: true,
        needs: &[Need::WebTools],
        steps: wasm::steps,
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
        steps: demo::steps,
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
        steps: docs::steps,
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
        // `BYTELENS_INSTALL_ONLY=1`: a machine made ready, nothing run.
        if std::env::var_os("BYTELENS_INSTALL_ONLY").is_some_and(|v| !v.is_empty() && v != "0") {
            return Ok(());
        }
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
    // `BYTELENS_STEPS=a,b`: only the steps whose label holds one of the
    // words (the daily loop over one browser script or one Python file).
    if let Ok(words) = std::env::var("BYTELENS_STEPS") {
        let words: Vec<&str> = words.split(',').filter(|w| !w.is_empty()).collect();
        list.retain(|(_, label, _)| words.iter().any(|w| label.contains(w)));
        if list.is_empty() {
            return Err(format!(
                "BYTELENS_STEPS={words:?} matches no step of these suites"
            ));
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
    let target = target_dir();
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
