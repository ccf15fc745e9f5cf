//! bytelens's task runner, the one entry point for people and CI:
//!
//! - `cargo xtask test [SUITE...]`  installs what the suites need
//!   (idempotently), then runs them in order; with no suite, every suite of
//!   the full run: fmt and clippy, every crate's tests and doctests, the GPU
//!   tests on lavapipe, the no_std builds, clippy for macOS, Windows and
//!   Arm Linux with the Windows tests under Wine, Miri, the Python
//!   package's tests with numpy 2.x and 1.26 in venvs of its own, the wasm
//!   package's tests in Node and Chromium, and the web demo end to end.
//!   `core` is the quick loop (bytelens-core's tests and its no_std
//!   builds); `--list` says what each suite runs (see [`test::SUITES`]);
//! - `cargo xtask demo`  builds the wasm package and serves the web demo on
//!   http://127.0.0.1:8000;
//! - `cargo xtask bench [python | gpu | wasm]` runs the benchmarks and prints
//!   ratios to baselines measured in the same run (`bench gpu
//!   --prepare-device` readies `target/device/` for a machine with a real GPU);
//! - `cargo xtask fuzz [TARGET...] [--time S] [--runs N]` runs the
//!   libFuzzer targets of `fuzz/` (cargo-fuzz, nightly), one after another;
//! - `cargo xtask build-python | build-wasm` builds one package;
//! - `cargo xtask wheels [--check-sdist]` builds the Python package's
//!   wheels and sdist into `target/wheels/` and checks them (see
//!   [`wheels`]).
//!
//! `--no-install` (or `BYTELENS_NO_INSTALL=1`) skips every install step, for
//! a machine that has the tools already.
#![forbid(unsafe_code)]

use std::env;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use pico_args::Arguments;

use crate::python_env::{build_python_package, ensure_python_envs};
use crate::util::{Result, installing};

mod arm;
mod bench;
mod cross;
mod demo;
mod docs;
mod fuzz;
mod gpu;
#[cfg(test)]
mod imports;
mod lint;
mod miri;
mod no_std;
mod python;
mod python_env;
mod rust;
mod test;
mod util;
mod wasm;
mod web;
mod wheels;

const USAGE: &str = "\
usage: cargo xtask [--no-install] <task>

  test [SUITE...]         the named suites, in order; none: the full run (what CI runs, some suites sampled)
  test all                the full run with nothing sampled (before a release; after touching kernels or unsafe)
  test --all SUITE...     the named suites with nothing sampled
  test --list [SUITE...]  what each suite runs and needs
                          (BYTELENS_STEPS=WORD,...: only the steps whose label holds a word;
                          BYTELENS_INSTALL_ONLY=1: the installs alone)
  demo [FILE]             builds the wasm package and serves the web demo on http://127.0.0.1:8000
                          (with FILE: opened in the demo's file view, read in ranges)
  docs [--serve]          the guide (mdBook) and the Python, Rust and JS API references into target/docs/,
                          links checked; --serve: then served on http://127.0.0.1:8001
  docs --test             what the docs suite runs: the site from the packages a test run built, its
                          links checked, a screenshot of the guide's first page in Chromium
  bench [FILTER...]       the layout, copy, convert and dequantise benchmarks against memcpy, FILTER passed on to criterion
  bench python [views ARG... | copy ARG... | scale ARG... | files ARG... | ring ARG... | dataloader ARG... | gpu ARG...]
                          the Python package's views, copies and Ray/Dask round trips against numpy,
                          rings against DataLoader, Pipe and iceoryx2, bl.DataLoader against torch's
  bench gpu [--prepare-device]
                          256 MiB GPU uploads, a texture, then gpu.load of a 1 GiB safetensors file;
                          --prepare-device readies target/device/
  bench wasm              the wasm package's read and write under Node against DataView loops
  bench webgpu            loadToGpu of the 1 GiB and 5 GiB safetensors files in Chromium (SwiftShader) against
                          fetching their bytes alone, wasm memory at its peak; every type dequantised on the GPU
  fuzz [TARGET...] [--time S] [--runs N] [--jobs J] [-- FLAG...]
                          fuzz targets layout, plan, header, args, files (none named: all), J at a time (1), each
                          for S seconds and/or N inputs (20 s if neither), FLAGs passed on to libFuzzer
  build-python            the wheel, installed into the venvs under ~/.cache/bytelens/py/
  build-wasm              the release wasm package in web-demo/pkg/, size checked
  cross-wine              bytelens' unit, shared and mapped tests for Windows, run under Wine
  arm-test PART           one step of the arm suite: core, native, cortex-a72 or python, aarch64 under qemu
  miri-test               the miri suite's runs (bytelens-core, bytelens' Buffer) side by side
  wheels [--check-sdist]  the abi3 wheels (manylinux_2_28 x86-64 and aarch64, Windows x64) and the sdist
                          in target/wheels/, checked; --check-sdist: pip installs the sdist in a new venv

  --no-install            skip every install step (also BYTELENS_NO_INSTALL=1)";

/// A task and its arguments, as read from the command line.
enum Task {
    Help,
    Test {
        list: bool,
        suites: Vec<&'static test::Suite>,
        /// Nothing sampled: `cargo xtask test all`, or `--all`.
        all: bool,
    },
    Demo(Option<PathBuf>),
    Docs(docs::Options),
    Bench(Vec<String>),
    BenchPython(Vec<String>),
    BenchGpu {
        prepare_device: bool,
    },
    BenchWasm,
    BenchWebGpu,
    Fuzz {
        targets: Vec<String>,
        budget: fuzz::Budget,
        extra: Vec<String>,
    },
    BuildPython,
    BuildWasm,
    CrossWine,
    ArmTest(String),
    /// `miri-test`: the miri suite's two runs, side by side.
    MiriTest,
    Wheels {
        check_sdist: bool,
    },
}

fn main() -> ExitCode {
    let (task, install) = match parse(Arguments::from_env()) {
        Ok(parsed) => parsed,
        Err(err) => {
            eprintln!("xtask: {err}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    let result = match task {
        Task::Help => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Task::Test {
            list: true,
            suites,
            all,
        } => {
            test::list(&suites, all);
            return ExitCode::SUCCESS;
        }
        Task::Test {
            list: false,
            suites,
            all,
        } => test::test(&suites, install, all),
        Task::Demo(file) => demo::demo(file, install),
        Task::Docs(options) => installing(install, || {
            ensure_python_envs()?;
            web::ensure_web_tools(options.screenshot)?;
            docs::ensure_mdbook()
        })
        .and_then(|()| docs::docs(&options)),
        Task::Bench(filter) => bench::bench(&filter),
        Task::BenchPython(args) => bench::bench_python(&args, install),
        Task::BenchGpu { prepare_device } => bench::bench_gpu(prepare_device, install),
        Task::BenchWasm => bench::bench_wasm(install),
        Task::BenchWebGpu => bench::bench_webgpu(install),
        Task::Fuzz {
            targets,
            budget,
            extra,
        } => installing(install, fuzz::ensure_cargo_fuzz)
            .and_then(|()| fuzz::fuzz(&targets, &budget, &extra)),
        Task::BuildPython => {
            installing(install, ensure_python_envs).and_then(|()| build_python_package())
        }
        Task::BuildWasm => {
            installing(install, || web::ensure_web_tools(false)).and_then(|()| web::build_package())
        }
        Task::CrossWine => {
            installing(install, cross::ensure_tools).and_then(|()| cross::wine_tests())
        }
        Task::MiriTest => miri::miri_test(),
        Task::ArmTest(part) => installing(install, || {
            ensure_python_envs()?;
            arm::ensure_tools()
        })
        .and_then(|()| arm::test(&part)),
        Task::Wheels { check_sdist } => installing(install, || {
            ensure_python_envs()?;
            wheels::ensure_tools()
        })
        .and_then(|()| wheels::wheels(check_sdist)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> String {
    let names: Vec<&str> = test::SUITES.iter().map(|s| s.name).collect();
    format!("{USAGE}\n\nsuites: {}", names.join(" "))
}

/// Reads the task and whether to install what it needs (no `--no-install`
/// and no `BYTELENS_NO_INSTALL`); the error is a usage error.
fn parse(mut args: Arguments) -> Result<(Task, bool)> {
    let help = args.contains(["-h", "--help"]);
    let no_install = args.contains("--no-install")
        || env::var_os("BYTELENS_NO_INSTALL").is_some_and(|v| !v.is_empty() && v != "0");
    let task = args.subcommand().map_err(|e| e.to_string())?;
    if help {
        return Ok((Task::Help, !no_install));
    }
    let task = match task.as_deref() {
        None | Some("help") => {
            no_more(args, "")?;
            Task::Help
        }
        Some("test") => {
            let list = args.contains("--list");
            let mut all = args.contains("--all");
            let mut suites: Vec<&test::Suite> = vec![];
            for arg in rest(args)? {
                if arg.starts_with('-') {
                    return Err(format!("test: unknown flag '{arg}'"));
                }
                if arg == "all" {
                    all = true; // the full run, nothing sampled
                    continue;
                }
                let suite = test::suite(&arg).ok_or(format!("test: no suite named '{arg}'"))?;
                if !suites.iter().any(|s| s.name == suite.name) {
                    suites.push(suite);
                }
            }
            Task::Test { list, suites, all }
        }
        Some("bench") => match args.subcommand().map_err(|e| e.to_string())?.as_deref() {
            Some("python") => Task::BenchPython(rest(args)?),
            Some("gpu") => {
                let prepare_device = args.contains("--prepare-device");
                no_more(args, "bench gpu")?;
                Task::BenchGpu { prepare_device }
            }
            Some("wasm") => {
                no_more(args, "bench wasm")?;
                Task::BenchWasm
            }
            Some("webgpu") => {
                no_more(args, "bench webgpu")?;
                Task::BenchWebGpu
            }
            first => {
                let filter = first.map(str::to_owned).into_iter();
                Task::Bench(filter.chain(rest(args)?).collect())
            }
        },
        Some("fuzz") => {
            let mut number = |flag: &'static str| {
                args.opt_value_from_str::<_, u64>(flag)
                    .map_err(|e| format!("fuzz: {flag}: {e}"))
            };
            let budget = fuzz::Budget {
                seconds: number("--time")?,
                runs: number("--runs")?,
                jobs: number("--jobs")?.unwrap_or(1).max(1),
            };
            let mut targets = rest(args)?;
            let extra = match targets.iter().position(|a| a == "--") {
                Some(at) => targets.split_off(at).split_off(1),
                None => vec![],
            };
            if let Some(flag) = targets.iter().find(|a| a.starts_with('-')) {
                return Err(format!("fuzz: unknown flag '{flag}'"));
            }
            Task::Fuzz {
                targets,
                budget,
                extra,
            }
        }
        Some("demo") => {
            let mut files = rest(args)?;
            if files.len() > 1 {
                return Err("demo: at most one FILE".to_owned());
            }
            Task::Demo(files.pop().map(PathBuf::from))
        }
        Some("docs") => {
            let serve = args.contains("--serve");
            let test = args.contains("--test");
            no_more(args, "docs")?;
            Task::Docs(docs::Options {
                packages: !test,
                screenshot: test,
                serve,
            })
        }
        Some("arm-test") => {
            let part: String = args
                .free_from_str()
                .map_err(|_| format!("arm-test: name a part: {}", arm::PARTS.join(", ")))?;
            no_more(args, "arm-test")?;
            Task::ArmTest(part)
        }
        Some("miri-test") => {
            no_more(args, "miri-test")?;
            Task::MiriTest
        }
        Some("wheels") => {
            let check_sdist = args.contains("--check-sdist");
            no_more(args, "wheels")?;
            Task::Wheels { check_sdist }
        }
        Some(name @ ("build-python" | "build-wasm" | "cross-wine")) => {
            no_more(args, name)?;
            match name {
                "build-python" => Task::BuildPython,
                "build-wasm" => Task::BuildWasm,
                _ => Task::CrossWine,
            }
        }
        Some(other) => return Err(format!("no task named '{other}'")),
    };
    Ok((task, !no_install))
}

/// The arguments left, as UTF-8.
fn rest(args: Arguments) -> Result<Vec<String>> {
    args.finish()
        .into_iter()
        .map(|a: OsString| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect()
}

/// Fails on any argument left over by `task`.
fn no_more(args: Arguments, task: &str) -> Result {
    match rest(args)?.first() {
        None => Ok(()),
        Some(arg) if task.is_empty() => Err(format!("unexpected '{arg}' before the task")),
        Some(arg) => Err(format!("{task}: unexpected '{arg}'")),
    }
}
