//! bytelens's task runner, the one entry point for people and CI:
//!
//! - `cargo xtask test`  installs what is missing (idempotently), then runs
//!   fmt, clippy, every test suite, Miri, the no_std builds, the Python
//!   package's tests with numpy 2.x and 1.26 in venvs of its own, the wasm
//!   package's tests in Node and Chromium, and the web demo end to end;
//! - `cargo xtask demo`  builds the wasm package and serves the web demo on
//!   http://127.0.0.1:8000;
//! - `cargo xtask bench [python | gpu]` runs the benchmarks and prints ratios
//!   to baselines measured in the same run (`bench gpu --prepare-device`
//!   readies `target/device/` for a machine with a real GPU).
#![forbid(unsafe_code)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::Value;

mod gpu;
mod web;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// Targets the core must build for without std: a microcontroller and the browser.
const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "wasm32-unknown-unknown"];
const NIGHTLY: &str = "nightly";

/// The Python environments the package is tested in (under `target/py/`):
/// one per numpy line it supports, each with the test tools.
const PY_ENVS: [(&str, &str); 2] = [("venv-np2", "numpy>=2,<3"), ("venv-np1", "numpy>=1.26,<2")];
const PY_TOOLS: [&str; 5] = [
    "maturin>=1.16,<2",
    "pytest>=8",
    "hypothesis>=6.100",
    "ml_dtypes>=0.4",
    "mypy>=1.10",
];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "test" => test(),
        "demo" => demo(),
        "bench" => bench(&args[1..]),
        "build-python" => ensure_python_envs().and_then(|()| build_python_package()),
        "build-wasm" => web::ensure_web_tools(false).and_then(|()| web::build_package()),
        _ => {
            eprintln!(
                "usage: cargo xtask <test | demo | bench [python | gpu] | build-python | build-wasm>"
            );
            return ExitCode::from(if task == "help" { 0 } else { 2 });
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask {task}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// A command run from the workspace root.
fn cmd(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args).current_dir(root());
    c
}

fn run(mut c: Command) -> Result {
    let shown = format!("{c:?}").replace('"', "");
    println!("\n$ {shown}");
    let status = c
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// The Python that creates the venvs: `$BYTELENS_PYTHON`, else `python3`.
fn base_python() -> String {
    env::var("BYTELENS_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn py_dir() -> PathBuf {
    target_dir().join("py")
}

/// The interpreter of one of [`PY_ENVS`].
fn venv_python(name: &str) -> String {
    py_dir().join(name).join("bin/python").display().to_string()
}

/// Creates the venvs and installs their packages, skipping whatever a
/// marker file says is already there.
fn ensure_python_envs() -> Result {
    for (name, numpy) in PY_ENVS {
        let dir = py_dir().join(name);
        if !dir.join("bin/python").exists() {
            let dir = dir.display().to_string();
            run(cmd(&base_python(), &["-m", "venv", &dir]))?;
        }
        let wanted: Vec<&str> = [numpy].into_iter().chain(PY_TOOLS).collect();
        let marker = dir.join(".bytelens-requirements");
        if fs::read_to_string(&marker).ok().as_deref() == Some(&wanted.join("\n")) {
            continue;
        }
        let mut pip = cmd(&venv_python(name), &["-m", "pip", "install", "--quiet"]);
        pip.args(&wanted);
        run(pip)?;
        fs::write(&marker, wanted.join("\n")).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Builds the extension wheel with maturin and installs it into every venv.
fn build_python_package() -> Result {
    let wheels = py_dir().join("wheels");
    let _ = fs::remove_dir_all(&wheels);
    let out = wheels.display().to_string();
    let python = venv_python(PY_ENVS[0].0);
    let mut maturin = cmd(&python, &["-m", "maturin", "build", "--release", "-m"]);
    maturin.args(["native/Cargo.toml", "--out", &out, "--interpreter", &python]);
    run(maturin)?;
    let wheel = fs::read_dir(&wheels)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin built no wheel")?
        .display()
        .to_string();
    for (name, _) in PY_ENVS {
        let args = [
            "-m",
            "pip",
            "install",
            "--quiet",
            "--force-reinstall",
            "--no-deps",
        ];
        let mut pip = cmd(&venv_python(name), &args);
        pip.arg(&wheel);
        run(pip)?;
    }
    Ok(())
}

fn output(program: &str, args: &[&str]) -> Result<String> {
    let out = cmd(program, args)
        .output()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Lines of `rustup <args>` output, first word of each.
fn rustup_list(args: &[&str]) -> Result<Vec<String>> {
    Ok(output("rustup", args)?
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect())
}

/// Installs the Rust pieces the tests need, skipping what is already there.
fn ensure_rust_tools() -> Result {
    let components = rustup_list(&["component", "list", "--installed"])?;
    for component in ["rustfmt", "clippy"] {
        if !components.iter().any(|c| c.starts_with(component)) {
            run(cmd("rustup", &["component", "add", component]))?;
        }
    }
    let targets = rustup_list(&["target", "list", "--installed"])?;
    for target in NO_STD_TARGETS {
        if !targets.iter().any(|t| t == target) {
            run(cmd("rustup", &["target", "add", target]))?;
        }
    }
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

/// Runs the named steps in order, timing each, and stops at the first failure.
fn steps(list: Vec<(&str, Command)>) -> Result {
    let mut times = vec![];
    for (name, c) in list {
        let start = Instant::now();
        let result = run(c);
        times.push((name, start.elapsed().as_secs_f64(), result.is_ok()));
        if let Err(err) = result {
            summary(&times);
            return Err(format!("step '{name}' failed: {err}"));
        }
    }
    summary(&times);
    Ok(())
}

fn summary(times: &[(&str, f64, bool)]) {
    println!("\nxtask summary:");
    for (name, secs, ok) in times {
        println!(
            "  {:<6} {secs:>7.1}s  {name}",
            if *ok { "ok" } else { "FAILED" }
        );
    }
}

fn test() -> Result {
    let start = Instant::now();
    ensure_rust_tools()?;
    ensure_python_envs()?;
    web::ensure_web_tools(true)?;
    gpu::ensure_lavapipe()?;
    println!("\ntools ready in {:.1}s", start.elapsed().as_secs_f64());
    // Serves web-demo/ (on 127.0.0.1 only) until this process exits.
    let demo_url = web::serve(0)?;
    let mut list = vec![
        ("rustfmt", cmd("cargo", &["fmt", "--all", "--check"])),
        (
            "clippy",
            cmd(
                "cargo",
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--all-features",
                    "--",
                    "-D",
                    "warnings",
                ],
            ),
        ),
        ("tests and doctests", cmd("cargo", &["test", "--workspace"])),
    ];
    let mut gpu_tests = cmd("cargo", &["test", "-p", "bytelens", "--features", "gpu"]);
    gpu::require_gpu(&mut gpu_tests);
    list.push((
        "gpu: round trips and a Plan in a shader, on Vulkan",
        gpu_tests,
    ));
    for target in NO_STD_TARGETS {
        list.push((
            "no_std build",
            cmd(
                "cargo",
                &["build", "-p", "bytelens-core", "--target", target],
            ),
        ));
    }
    // The vectors test reads tests/vectors from disk, which Miri's isolation forbids.
    let mut miri = cmd(
        "rustup",
        &[
            "run",
            NIGHTLY,
            "cargo",
            "miri",
            "test",
            "-p",
            "bytelens-core",
        ],
    );
    miri.env("MIRIFLAGS", "-Zmiri-disable-isolation");
    list.push(("miri: bytelens-core", miri));
    let mut miri_native = cmd(
        "rustup",
        &[
            "run", NIGHTLY, "cargo", "miri", "test", "-p", "bytelens", "--lib",
        ],
    );
    miri_native.env("MIRIFLAGS", "-Zmiri-disable-isolation");
    list.push(("miri: bytelens Buffer", miri_native));
    list.push(("python: build the wheel", xtask_step("build-python")));
    for (name, label) in PY_ENVS
        .map(|(n, _)| n)
        .into_iter()
        .zip(["python: pytest, numpy 2.x", "python: pytest, numpy 1.26"])
    {
        let mut pytest = cmd(&venv_python(name), &["-m", "pytest", "tests/python", "-q"]);
        pytest
            .args(["-p", "no:cacheprovider"])
            .env("HYPOTHESIS_PROFILE", "ci");
        gpu::require_gpu(&mut pytest);
        list.push((label, pytest));
    }
    let mut stubtest = cmd(
        &venv_python(PY_ENVS[0].0),
        &["-m", "mypy.stubtest", "bytelens._native"],
    );
    stubtest.env("MYPY_CACHE_DIR", py_dir().join("mypy-cache"));
    list.push(("python: stubtest", stubtest));
    list.push((
        "wasm: tests in Node",
        web::wasm_pack_test(&["--node"], "node"),
    ));
    list.push((
        "wasm: tests in Chromium",
        web::wasm_pack_test(&["--headless", "--chrome"], "browser"),
    ));
    list.push((
        "wasm: release build, wasm-opt, size",
        xtask_step("build-wasm"),
    ));
    list.push((
        "web demo: unit tests",
        cmd("node", &["--test", "web-demo/tests/numbers.test.mjs"]),
    ));
    list.push(("web demo: end to end in Chromium", web::e2e(&demo_url)));
    steps(list)?;
    println!(
        "\nall checks passed in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// This task runner again, as a step of another task.
fn xtask_step(task: &str) -> Command {
    cmd("cargo", &["xtask", task])
}

fn demo() -> Result {
    web::ensure_web_tools(false)?;
    web::build_package()?;
    let url = web::serve(8000)?;
    println!("\nthe bytelens demo is at {url} (Ctrl-C stops it)");
    loop {
        std::thread::park();
    }
}

/// Runs the criterion benchmarks, then prints each median next to its
/// group's baseline (the benchmark whose name starts with "baseline").
fn bench(filter: &[String]) -> Result {
    if filter.first().map(String::as_str) == Some("gpu") {
        return gpu::bench(&filter[1..]);
    }
    if filter.first().map(String::as_str) == Some("python") {
        ensure_python_envs()?;
        build_python_package()?;
        let mut c = cmd(
            &venv_python(PY_ENVS[0].0),
            &["native/benches/python_views.py"],
        );
        c.args(&filter[1..]);
        return run(c);
    }
    let mut c = cmd("cargo", &["bench", "-p", "bytelens", "--benches", "--"]);
    c.args(filter);
    run(c)?;
    let mut rows: Vec<(String, String, f64)> = vec![];
    collect_estimates(&target_dir().join("criterion"), &mut rows)?;
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.total_cmp(&b.2)));
    println!(
        "\n{:<8} {:<30} {:>10} {:>12}",
        "group", "operation", "median", "vs baseline"
    );
    for (group, name, ns) in &rows {
        let base = rows
            .iter()
            .find(|(g, n, _)| g == group && n.starts_with("baseline"))
            .map(|r| r.2);
        let ratio = base.map_or("-".to_owned(), |b| format!("{:.2}x", ns / b));
        println!("{group:<8} {name:<30} {:>8.1}ns {ratio:>12}", ns);
    }
    Ok(())
}

/// Finds criterion's `new/benchmark.json` + `new/estimates.json` pairs.
fn collect_estimates(dir: &Path, rows: &mut Vec<(String, String, f64)>) -> Result {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.ends_with("new") && path.join("estimates.json").exists() {
            let read = |name: &str| -> Result<Value> {
                let text = fs::read_to_string(path.join(name)).map_err(|e| e.to_string())?;
                serde_json::from_str(&text).map_err(|e| e.to_string())
            };
            let (info, estimates) = (read("benchmark.json")?, read("estimates.json")?);
            let median = estimates["median"]["point_estimate"]
                .as_f64()
                .unwrap_or(f64::NAN);
            rows.push((
                info["group_id"].as_str().unwrap_or("?").to_owned(),
                info["function_id"].as_str().unwrap_or("?").to_owned(),
                median,
            ));
        } else if path.is_dir() {
            collect_estimates(&path, rows)?;
        }
    }
    Ok(())
}
