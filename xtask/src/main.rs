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
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use pico_args::Arguments;
use serde_json::Value;

mod arm;
mod cross;
mod docs;
mod fuzz;
mod gpu;
mod test;
mod web;
mod wheels;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// The Python environments the package is tested in (under
/// `~/.cache/bytelens/py/`, see [`cache_dir`]): one per numpy line it
/// supports, each with the test tools.
const PY_ENVS: [(&str, &str); 2] = [("venv-np2", "numpy>=2,<3"), ("venv-np1", "numpy>=1.26,<2")];
const PY_TOOLS: [&str; 9] = [
    "maturin>=1.16,<2",
    "pytest>=8",
    "hypothesis>=6.100",
    // bfloat16's oracle: 0.7 rounds float64 and wide integers once, as
    // bytelens does (the tests correct older versions, the only ones numpy
    // 1.x has); bounded so that a new release cannot change the oracle
    // under a hand-in.
    "ml_dtypes>=0.4,<0.8",
    "mypy>=1.10",
    // The engines tests/python/test_scale.py runs bytelens on (pinned: their
    // serialization hooks are what the tests check).
    "ray==2.60.0",
    "distributed==2026.8.0",
    "dask==2026.8.0",
    // The safetensors files tests/python/test_files.py reads are written
    // (and what bytelens writes is read back) by the format's own package.
    "safetensors==0.8.0",
];
/// The frameworks tests/python/test_frameworks.py imports bytelens' tensors
/// into, in the numpy 2 venv only ([`FRAMEWORKS_ENV`]; the tests fail there
/// without them, and skip elsewhere). PyPI's torch is the CUDA build (about
/// 3 GB with its nvidia packages), which runs on the CPU too. Pinned: what
/// arrives zero-copy, and when XLA copies, is what the tests check.
///
/// With them, llama.cpp's gguf-py (pure Python), whose `GGUFWriter` writes
/// the GGUF files tests/python/test_gguf.py reads and whose
/// `gguf.quants.dequantize` is the dequantisers' oracle; pinned, as the
/// oracle must not change under a hand-in.
const PY_FRAMEWORKS: [&str; 4] = [
    "torch==2.15.0",
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "gguf==0.19.0",
];
/// The venv of [`PY_ENVS`] that [`PY_FRAMEWORKS`] go into.
const FRAMEWORKS_ENV: &str = PY_ENVS[0].0;
/// What builds and checks the wheels (wheels.rs), in the venv of
/// [`PY_ENVS`] whose maturin builds them ([`BUILD_ENV`]) only.
const WHEEL_TOOLS: [&str; 2] = [
    // The linker of the manylinux and macOS wheels (`maturin --zig`),
    // pinned: which glibc symbols it links against is what makes a wheel
    // manylinux_2_28.
    "ziglang==0.17.1",
    // Says which manylinux policy a Linux wheel meets.
    "auditwheel==6.8.2",
];
/// The venv of [`PY_ENVS`] that builds the wheels.
const BUILD_ENV: &str = PY_ENVS[0].0;
/// What renders the Python API reference (xtask/src/docs.rs), in [`BUILD_ENV`] only;
/// pinned, as the link check reads its HTML.
const DOCS_TOOLS: [&str; 1] = ["pdoc==16.0.0"];
/// The other CPython versions the installed wheel is tested on (the abi3
/// wheel serves every CPython from 3.11; [`base_python`] makes the 3.11
/// venvs of [`PY_ENVS`]), each in a venv with numpy 2.x and [`PY_TOOLS`],
/// made from pyenv's build of that version ([`pyenv_python`]).
const PY_VERSION_ENVS: [(&str, &str); 2] = [("venv-py312", "3.12"), ("venv-py313", "3.13")];

const USAGE: &str = "\
usage: cargo xtask [--no-install] <task>

  test [SUITE...]         the named suites, in order; none: the full run (what CI runs, some suites sampled)
  test all                the full run with nothing sampled (before a release; after touching kernels or unsafe)
  test --all SUITE...     the named suites with nothing sampled
  test --list [SUITE...]  what each suite runs and needs
  demo [FILE]             builds the wasm package and serves the web demo on http://127.0.0.1:8000
                          (with FILE: opened in the demo's file view, read in ranges)
  docs [--serve]          the guide (mdBook) and the Python, Rust and JS API references into target/docs/,
                          links checked; --serve: then served on http://127.0.0.1:8001
  docs --test             what the docs suite runs: the site from the packages a test run built, its
                          links checked, a screenshot of the guide's first page in Chromium
  bench [FILTER...]       the layout, copy, convert and dequantise benchmarks against memcpy, FILTER passed on to criterion
  bench python [views ARG... | copy ARG... | scale ARG... | files ARG... | gpu ARG...]
                          the Python package's views, copies and Ray/Dask round trips against numpy
  bench gpu [--prepare-device]
                          256 MiB GPU uploads, a texture, then gpu.load of a 1 GiB safetensors file;
                          --prepare-device readies target/device/
  bench wasm              the wasm package's read and write under Node against DataView loops
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
        Task::Demo(file) => demo(file, install),
        Task::Docs(options) => installing(install, || {
            ensure_python_envs()?;
            web::ensure_web_tools(options.screenshot)?;
            docs::ensure_mdbook()
        })
        .and_then(|()| docs::docs(&options)),
        Task::Bench(filter) => bench(&filter),
        Task::BenchPython(args) => bench_python(&args, install),
        Task::BenchGpu { prepare_device } => gpu::bench(prepare_device, install),
        Task::BenchWasm => web::bench(install),
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
        Task::MiriTest => test::miri_test(),
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

/// Runs an install step unless `--no-install` said not to.
fn installing(install: bool, step: impl FnOnce() -> Result) -> Result {
    if install { step() } else { Ok(()) }
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

/// Where the tools the task runner installs beside the system's live (the
/// venvs, the aarch64 CPython and its packages): `$BYTELENS_CACHE`, else
/// `$XDG_CACHE_HOME/bytelens`, else `~/.cache/bytelens`. Outside `target/`,
/// so that a fresh clone on a machine that has run the tests before finds
/// them made (each is checked against what it should hold, and made again
/// when it differs), as it finds cargo's registry and Debian's packages.
fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("BYTELENS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(|| target_dir().join("cache"));
    base.join("bytelens")
}

/// A command run from the workspace root.
fn cmd(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args).current_dir(root());
    c
}

/// Installs Debian's `packages` (without the ones they only recommend),
/// after refreshing the package lists.
fn apt_install(packages: &[&str]) -> Result {
    run(cmd("apt-get", &["update"]))?;
    let mut apt = cmd("apt-get", &["install", "-y", "--no-install-recommends"]);
    apt.args(packages).env("DEBIAN_FRONTEND", "noninteractive");
    run(apt)
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
    cache_dir().join("py")
}

/// The interpreter of one of [`PY_ENVS`] or [`PY_VERSION_ENVS`].
fn venv_python(name: &str) -> String {
    py_dir().join(name).join("bin/python").display().to_string()
}

/// pyenv's CPython `version` ("3.12"): the newest `versions/3.12.N/bin/python3.12`
/// under pyenv's root (`$PYENV_ROOT`, else `pyenv root`).
fn pyenv_python(version: &str) -> Result<PathBuf> {
    let pyenv_root = match env::var_os("PYENV_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let out = Command::new("pyenv").arg("root").output().map_err(|e| {
                format!("no PYENV_ROOT and no pyenv ({e}): CPython {version} is found in pyenv")
            })?;
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    let versions = pyenv_root.join("versions");
    let prefix = format!("{version}.");
    let newest = fs::read_dir(&versions)
        .map_err(|e| format!("{}: {e}", versions.display()))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let patch: u32 = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((patch, e.path()))
        })
        .max();
    let python = newest.map(|(_, dir)| dir.join(format!("bin/python{version}")));
    match python {
        Some(python) if python.is_file() => Ok(python),
        _ => Err(format!(
            "no CPython {version} in {}: the python suite tests the wheel on it \
             (`pyenv install {version}`)",
            versions.display()
        )),
    }
}

/// Creates the venvs of [`PY_ENVS`] and [`PY_VERSION_ENVS`] and installs
/// their packages, skipping whatever a marker file says is already there.
fn ensure_python_envs() -> Result {
    let mut envs: Vec<(&str, String, &str)> = PY_ENVS
        .iter()
        .map(|&(name, numpy)| (name, base_python(), numpy))
        .collect();
    for (name, version) in PY_VERSION_ENVS {
        let python = pyenv_python(version)?.display().to_string();
        envs.push((name, python, PY_ENVS[0].1));
    }
    for (name, python, numpy) in envs {
        let dir = py_dir().join(name);
        if !dir.join("bin/python").exists() {
            let dir = dir.display().to_string();
            run(cmd(&python, &["-m", "venv", &dir]))?;
        }
        let frameworks: &[&str] = if name == FRAMEWORKS_ENV {
            &PY_FRAMEWORKS
        } else {
            &[]
        };
        let build: &[&str] = if name == BUILD_ENV { &WHEEL_TOOLS } else { &[] };
        let docs: &[&str] = if name == BUILD_ENV { &DOCS_TOOLS } else { &[] };
        let wanted: Vec<&str> = [numpy]
            .into_iter()
            .chain(PY_TOOLS)
            .chain(build.iter().copied())
            .chain(docs.iter().copied())
            .chain(frameworks.iter().copied())
            .collect();
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

/// Every venv the installed wheel is tested in: [`PY_ENVS`], then
/// [`PY_VERSION_ENVS`].
fn wheel_envs() -> impl Iterator<Item = &'static str> {
    PY_ENVS
        .iter()
        .chain(&PY_VERSION_ENVS)
        .map(|&(name, _)| name)
}

/// Takes Rust out of `c`'s environment: every `PATH` entry that holds
/// `cargo` or `rustc` (`~/.cargo/bin`, the toolchain rustup put first), and
/// the variables cargo and rustup set. What runs so cannot build the
/// extension: a test that passes used the installed wheel.
fn without_rust(c: &mut Command) {
    let path = env::var_os("PATH").unwrap_or_default();
    let kept = env::split_paths(&path)
        .filter(|dir| !dir.join("cargo").exists() && !dir.join("rustc").exists());
    let kept = env::join_paths(kept).expect("entries split from PATH join again");
    c.env("PATH", kept);
    for var in ["CARGO", "CARGO_HOME", "RUSTC", "RUSTUP_HOME"] {
        c.env_remove(var);
    }
    c.env_remove("RUSTUP_TOOLCHAIN");
}

/// Builds the x86-64 manylinux abi3 wheel ([`wheels::build`]) and installs
/// it, with no Rust on `PATH`, into every venv of [`wheel_envs`] there is.
fn build_python_package() -> Result {
    let wheel = wheels::build(wheels::HOST)?.display().to_string();
    for name in wheel_envs() {
        if !py_dir().join(name).join("bin/python").exists() {
            continue;
        }
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
        without_rust(&mut pip);
        run(pip)?;
    }
    Ok(())
}

/// `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`)
/// written `%XX`, as a URL's path segment or query value.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn demo(file: Option<PathBuf>, install: bool) -> Result {
    if let Some(file) = &file {
        // Before the build: a device or a FIFO could not be served.
        web::served_file(file).map_err(|e| format!("demo: {e}"))?;
    }
    installing(install, || web::ensure_web_tools(false))?;
    web::build_package()?;
    let url = web::serve(8000, file.iter().cloned().collect())?;
    let url = match file.as_deref().and_then(|f| f.file_name()) {
        // Encoded twice: once for the server's path, once for the query.
        Some(name) => {
            let path = format!("/file/{}", percent_encode(&name.to_string_lossy()));
            format!("{url}?file={}", percent_encode(&path))
        }
        None => url,
    };
    println!("\nthe bytelens demo is at {url} (Ctrl-C stops it)");
    loop {
        std::thread::park();
    }
}

/// The Python package's benchmarks against numpy: the views
/// (native/benches/python_views.py), the copies
/// (native/benches/python_copy.py), then round trips through Ray and Dask
/// (native/benches/python_scale.py), and loading files
/// (native/benches/python_files.py). `views ARG...`, `copy ARG...`,
/// `scale ARG...`, `files ARG...` or `gpu ARG...` (model files to the GPU,
/// native/benches/python_gpu.py, which `bench gpu` runs too) runs one of
/// them with its own arguments.
pub(crate) fn bench_python(args: &[String], install: bool) -> Result {
    const SCRIPTS: [&str; 5] = ["views", "copy", "scale", "files", "gpu"];
    let scripts: Vec<(&str, &[String])> = match args.split_first() {
        // `gpu` (native/benches/python_gpu.py) runs with `bench gpu`.
        None => SCRIPTS[..4].iter().map(|name| (*name, &[][..])).collect(),
        Some((name, rest)) if SCRIPTS.contains(&name.as_str()) => {
            vec![(name.as_str(), rest)]
        }
        Some((first, _)) => {
            return Err(format!(
                "bench python: {first:?} is not one of {}; arguments go to one script: \
                 `bench python files ARG...`",
                SCRIPTS.join(", ")
            ));
        }
    };
    installing(install, ensure_python_envs)?;
    build_python_package()?;
    for (name, rest) in scripts {
        let script = format!("native/benches/python_{name}.py");
        let mut c = cmd(&venv_python(PY_ENVS[0].0), &[script.as_str()]);
        c.args(rest);
        run(c)?;
    }
    Ok(())
}

/// Runs the criterion benchmarks, then prints each median next to its
/// group's baseline (the benchmark whose name starts with "baseline").
fn bench(filter: &[String]) -> Result {
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

#[cfg(test)]
mod tests {
    use super::percent_encode;

    #[test]
    fn percent_encoding_keeps_only_unreserved_bytes() {
        assert_eq!(
            percent_encode("a b#&%/é.~_-Z9"),
            "a%20b%23%26%25%2F%C3%A9.~_-Z9"
        );
    }
}
