//! bytelens's task runner, the one entry point for people and CI:
//!
//! - `cargo xtask test`  installs what is missing (idempotently), then runs
//!   fmt, clippy, every test suite, Miri and the no_std builds;
//! - `cargo xtask demo`  shows one buffer read as int8/int16/int32/float32;
//! - `cargo xtask bench` runs the benchmarks and prints ratios to baselines
//!   measured in the same run.
#![forbid(unsafe_code)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::Value;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// Targets the core must build for without std: a microcontroller and the browser.
const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "wasm32-unknown-unknown"];
const NIGHTLY: &str = "nightly";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "test" => test(),
        "demo" => demo(),
        "bench" => bench(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <test | demo | bench>");
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
    println!("\ntools ready in {:.1}s", start.elapsed().as_secs_f64());
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
                    "--",
                    "-D",
                    "warnings",
                ],
            ),
        ),
        ("tests and doctests", cmd("cargo", &["test", "--workspace"])),
    ];
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
    steps(list)?;
    println!(
        "\nall checks passed in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn demo() -> Result {
    // Until the web demo lands: one buffer's bytes read four ways, in the terminal.
    run(cmd(
        "cargo",
        &["run", "--quiet", "-p", "bytelens", "--example", "readings"],
    ))
}

/// Runs the criterion benchmarks, then prints each median next to its
/// group's baseline (the benchmark whose name starts with "baseline").
fn bench(filter: &[String]) -> Result {
    let mut c = cmd(
        "cargo",
        &["bench", "-p", "bytelens", "--bench", "layout", "--"],
    );
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
