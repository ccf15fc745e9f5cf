//! The Python environments the package is built and tested in: the venvs
//! under `~/.cache/bytelens/py/` and what each holds, the abi3 wheel built
//! with maturin for a Rust target, and that wheel installed into the venvs.
//!
//! The paths of the Python package's sources are here, once each:
//! [`PY_MANIFEST`] and [`PY_PACKAGE`].

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{Result, cache_dir, cmd, run, target_dir};

/// The Cargo manifest of the Python extension, which maturin builds
/// (`maturin build -m PY_MANIFEST`); its `pyproject.toml` lies beside it.
pub const PY_MANIFEST: &str = "native/python/Cargo.toml";

/// The Python package's own sources (its `__init__.py`, the `_native.pyi`
/// stubs), which mypy checks.
pub const PY_PACKAGE: &str = "native/python/bytelens";

/// The Python environments the package is tested in (under
/// `~/.cache/bytelens/py/`, see [`cache_dir`]): one per numpy line it
/// supports, each with the test tools.
pub const PY_ENVS: [(&str, &str); 2] =
    [("venv-np2", "numpy>=2,<3"), ("venv-np1", "numpy>=1.26,<2")];
pub const PY_TOOLS: [&str; 9] = [
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
pub const BUILD_ENV: &str = PY_ENVS[0].0;
/// What renders the Python API reference (xtask/src/docs.rs), in [`BUILD_ENV`] only;
/// pinned, as the link check reads its HTML.
const DOCS_TOOLS: [&str; 1] = ["pdoc==16.0.0"];

/// The other CPython versions the installed wheel is tested on (the abi3
/// wheel serves every CPython from 3.11; [`base_python`] makes the 3.11
/// venvs of [`PY_ENVS`]), each in a venv with numpy 2.x and [`PY_TOOLS`],
/// made from pyenv's build of that version ([`pyenv_python`]).
const PY_VERSION_ENVS: [(&str, &str); 2] = [("venv-py312", "3.12"), ("venv-py313", "3.13")];

/// The Python that creates the venvs: `$BYTELENS_PYTHON`, else `python3`.
pub fn base_python() -> String {
    env::var("BYTELENS_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

pub fn py_dir() -> PathBuf {
    cache_dir().join("py")
}

/// The interpreter of one of [`PY_ENVS`] or [`PY_VERSION_ENVS`].
pub fn venv_python(name: &str) -> String {
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
pub fn ensure_python_envs() -> Result {
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
pub fn wheel_envs() -> impl Iterator<Item = &'static str> {
    PY_ENVS
        .iter()
        .chain(&PY_VERSION_ENVS)
        .map(|&(name, _)| name)
}

/// Takes Rust out of `c`'s environment: every `PATH` entry that holds
/// `cargo` or `rustc` (`~/.cargo/bin`, the toolchain rustup put first), and
/// the variables cargo and rustup set. What runs so cannot build the
/// extension: a test that passes used the installed wheel.
pub fn without_rust(c: &mut Command) {
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

/// Builds the x86-64 manylinux abi3 wheel ([`build_wheel`]) and installs
/// it, with no Rust on `PATH`, into every venv of [`wheel_envs`] there is.
pub fn build_python_package() -> Result {
    let wheel = build_wheel(HOST)?.display().to_string();
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

/// The Linux targets' wheels: manylinux_2_28 (glibc 2.28, RHEL 8's).
pub const MANYLINUX: &str = "manylinux_2_28";

/// The target whose wheel the tests install: this machine's.
pub const HOST: &str = "x86_64-unknown-linux-gnu";

/// Where the wheels and the sdist go.
pub fn wheels_dir() -> PathBuf {
    target_dir().join("wheels")
}

/// The venv whose maturin, zig and auditwheel build and check the wheels.
fn build_venv() -> PathBuf {
    py_dir().join(BUILD_ENV)
}

/// A command of the build venv's `bin/`, with that `bin/` first on `PATH`:
/// maturin runs zig as `python -m ziglang`, with the `python` it finds there.
pub fn venv_cmd(program: &str, args: &[&str]) -> Result<Command> {
    let bin = build_venv().join("bin");
    let mut paths = vec![bin.clone()];
    paths.extend(env::split_paths(&env::var_os("PATH").unwrap_or_default()));
    let path = env::join_paths(paths).map_err(|e| e.to_string())?;
    let mut c = cmd(&bin.join(program).display().to_string(), args);
    c.env("PATH", path);
    Ok(c)
}

/// Builds the abi3 wheel for the Rust target triple `target` with maturin
/// (release, every feature the package has where the platform links it)
/// into [`wheels_dir`], and returns its path.
pub fn build_wheel(target: &str) -> Result<PathBuf> {
    let out = wheels_dir();
    let scratch = out.join(format!(".build-{target}"));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let scratch_arg = scratch.display().to_string();
    let mut maturin = venv_cmd(
        "maturin",
        &["build", "--release", "-m", PY_MANIFEST, "--target", target],
    )?;
    maturin.args(["--out", &scratch_arg]);
    if target.contains("-linux-") {
        maturin.args(["--zig", "--compatibility", MANYLINUX]);
    } else if target.contains("-apple-") {
        maturin.arg("--zig");
    }
    let platform = PLATFORMS
        .iter()
        .find(|p| p.target == target)
        .ok_or(format!("no wheel is made for {target}"))?;
    if !platform.gpu {
        // Without the extension crate's default feature, `gpu`.
        maturin.arg("--no-default-features");
    }
    run(maturin)?;
    let built = only_wheel(&scratch)?;
    let name = built.file_name().ok_or("a wheel without a name")?;
    let wheel = out.join(name);
    fs::rename(&built, &wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let _ = fs::remove_dir_all(&scratch);
    Ok(wheel)
}

/// The one `.whl` file in `dir`.
fn only_wheel(dir: &Path) -> Result<PathBuf> {
    let wheels: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match &wheels[..] {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "maturin left {} wheels in {}, not one",
            wheels.len(),
            dir.display()
        )),
    }
}

/// A wheel of `cargo xtask wheels`.
pub struct Platform {
    /// The Rust target triple.
    pub target: &'static str,
    /// Whether the `gpu` feature links for it here.
    pub gpu: bool,
}

/// The wheels `cargo xtask wheels` builds, in order. The macOS ones have no
/// `gpu` feature: wgpu's Metal backend links Apple's frameworks (Metal,
/// QuartzCore, CoreGraphics, Foundation) and libobjc, which only Apple's
/// SDK has; zig links the rest against its own stubs of libSystem. They
/// are compiled here, not tested (no macOS to run them on).
pub const PLATFORMS: [Platform; 5] = [
    Platform {
        target: HOST,
        gpu: true,
    },
    Platform {
        target: "aarch64-unknown-linux-gnu",
        gpu: true,
    },
    Platform {
        target: WINDOWS,
        gpu: true,
    },
    Platform {
        target: "aarch64-apple-darwin",
        gpu: false,
    },
    Platform {
        target: "x86_64-apple-darwin",
        gpu: false,
    },
];

pub const WINDOWS: &str = "x86_64-pc-windows-gnu";
