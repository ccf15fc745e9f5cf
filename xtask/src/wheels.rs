//! `cargo xtask wheels`: the Python package's wheels, one per platform, and
//! its sdist, into `target/wheels/`.
//!
//! The extension is built for CPython's stable ABI from 3.11 (pyo3's
//! `abi3-py311`, see native/Cargo.toml), so one wheel per platform installs
//! on CPython 3.11 and every later one. [`build`] makes one wheel with
//! maturin for a Rust target triple:
//!
//! - Linux (x86-64, aarch64): `--zig --compatibility manylinux_2_28`, linked
//!   by zig (PyPI's `ziglang`, in the build venv) against glibc 2.28's
//!   symbols, so the wheel installs on RHEL 8, Debian 10, Ubuntu 18.10 and
//!   later, not only on this machine's glibc 2.36;
//! - Windows x64 (`x86_64-pc-windows-gnu`): linked by mingw-w64's gcc; pyo3
//!   names `python3.dll`'s functions with `raw-dylib`, so no Windows Python
//!   or import library is needed;
//! - macOS (arm64, x86-64): linked by zig, where it links here.
//!
//! Each build goes to a scratch folder of its own first, so the wheel it
//! made is known without parsing file names, and then replaces the wheel of
//! the same name in `target/wheels/`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{BUILD_ENV, Result, cmd, py_dir, run, target_dir};

/// The Linux targets' wheels: manylinux_2_28 (glibc 2.28, RHEL 8's).
const MANYLINUX: &str = "manylinux_2_28";

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
fn venv_cmd(program: &str, args: &[&str]) -> Result<std::process::Command> {
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
pub fn build(target: &str) -> Result<PathBuf> {
    let out = wheels_dir();
    let scratch = out.join(format!(".build-{target}"));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let scratch_arg = scratch.display().to_string();
    let mut maturin = venv_cmd(
        "maturin",
        &[
            "build",
            "--release",
            "-m",
            "native/Cargo.toml",
            "--target",
            target,
        ],
    )?;
    maturin.args(["--out", &scratch_arg]);
    if target.contains("-linux-") {
        maturin.args(["--zig", "--compatibility", MANYLINUX]);
    } else if target.contains("-apple-") {
        maturin.arg("--zig");
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
