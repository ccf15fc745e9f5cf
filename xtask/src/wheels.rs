//! `cargo xtask wheels`: the Python package's wheels, one per platform, and
//! its sdist, into `target/wheels/`.
//!
//! The extension is built for CPython's stable ABI from 3.11 (pyo3's
//! `abi3-py311`, see native/python/Cargo.toml), so one wheel per platform installs
//! on CPython 3.11 and every later one. [`build_wheel`] (python_env.rs, as
//! the python and arm suites build wheels too) makes one wheel with
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

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::python_env::{
    MANYLINUX, PLATFORMS, PY_MANIFEST, Platform, WINDOWS, base_python, build_wheel, venv_cmd,
    wheels_dir,
};
use crate::util::{Result, apt_install, cmd, run, rustup_list};

/// The DLLs a Windows extension may import: Windows' own and CPython's
/// stable ABI (`python3.dll`), lower case. Anything else (mingw-w64's
/// `libgcc_s_seh-1.dll` or `libwinpthread-1.dll`, say) would be missing on
/// a user's machine.
const WINDOWS_DLLS: [&str; 17] = [
    "python3.dll",
    // wgpu's DX12 and Vulkan backends (DXGI and SetupAPI find the adapters).
    "dxgi.dll",
    "d3d12.dll",
    "setupapi.dll",
    "kernel32.dll",
    "ntdll.dll",
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "user32.dll",
    "gdi32.dll",
    "ole32.dll",
    "oleaut32.dll",
    "shell32.dll",
    "userenv.dll",
    "ws2_32.dll",
    "msvcrt.dll",
];

/// Adds the Rust targets of [`PLATFORMS`] that are missing and, unless
/// mingw-w64's gcc (the Windows wheel's linker, its objdump with it) is
/// there, installs it.
pub fn ensure_tools() -> Result {
    let installed = rustup_list(&["target", "list", "--installed"])?;
    for Platform { target, .. } in PLATFORMS {
        if !installed.iter().any(|t| t == target) {
            run(cmd("rustup", &["target", "add", target]))?;
        }
    }
    let found = Command::new("x86_64-w64-mingw32-gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Ok(());
    }
    apt_install(&["gcc-mingw-w64-x86-64"])
}

/// `cargo xtask wheels [--check-sdist]`: every wheel of [`PLATFORMS`] and
/// the sdist into [`wheels_dir`], each checked, then their list; with
/// `check_sdist`, the sdist is also built and installed by pip in a venv of
/// its own.
pub fn wheels(check_sdist: bool) -> Result {
    let start = Instant::now();
    let mut built: Vec<(PathBuf, f64)> = vec![];
    for Platform { target, .. } in &PLATFORMS {
        let at = Instant::now();
        built.push((build_wheel(target)?, at.elapsed().as_secs_f64()));
    }
    let at = Instant::now();
    built.push((sdist()?, at.elapsed().as_secs_f64()));
    let mut verdicts = vec![];
    for ((wheel, _), Platform { target, .. }) in built.iter().zip(&PLATFORMS) {
        if target.contains("-linux-") {
            verdicts.push(audit(wheel)?);
        } else if *target == WINDOWS {
            verdicts.push(windows_imports(wheel)?);
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/wheels/check.py");
    let mut check = venv_cmd("python", &[])?;
    check.arg(script).args(built.iter().map(|(p, _)| p));
    for ((wheel, _), Platform { gpu, .. }) in built.iter().zip(&PLATFORMS) {
        if !gpu {
            check.arg("--no-gpu").arg(wheel);
        }
    }
    run(check)?;
    if check_sdist {
        let sdist = &built[built.len() - 1].0;
        verdicts.push(install_sdist(sdist)?);
    }
    println!("\nin {}:", wheels_dir().display());
    for (path, secs) in &built {
        let size = fs::metadata(path).map_err(|e| e.to_string())?.len();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "  {name:<58} {:>6.2} MB  built in {secs:.0} s",
            size as f64 / 1e6
        );
    }
    for verdict in verdicts {
        println!("  {verdict}");
    }
    println!("done in {:.0} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// `maturin sdist` into [`wheels_dir`]; returns its path.
fn sdist() -> Result<PathBuf> {
    let out = wheels_dir();
    let scratch = out.join(".build-sdist");
    let _ = fs::remove_dir_all(&scratch);
    let scratch_arg = scratch.display().to_string();
    let mut maturin = venv_cmd("maturin", &["sdist", "-m", PY_MANIFEST])?;
    maturin.args(["--out", &scratch_arg]);
    run(maturin)?;
    let built = fs::read_dir(&scratch)
        .map_err(|e| format!("{}: {e}", scratch.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .ok_or("maturin sdist made no .tar.gz")?;
    let sdist = out.join(built.file_name().ok_or("an sdist without a name")?);
    fs::rename(&built, &sdist).map_err(|e| format!("{}: {e}", sdist.display()))?;
    let _ = fs::remove_dir_all(&scratch);
    Ok(sdist)
}

/// Runs `c`, showing it and what it printed, and returns its output; a
/// failing status is an error.
fn captured(mut c: Command) -> Result<String> {
    let shown = format!("{c:?}").replace('"', "");
    println!("\n$ {shown}");
    let out = c
        .output()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    println!("{}", text.trim_end());
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("`{shown}` failed ({})", out.status))
    }
}

/// `auditwheel show`'s verdict on a Linux wheel, which must be
/// [`MANYLINUX`] or older (a lower glibc).
fn audit(wheel: &Path) -> Result<String> {
    let mut show = venv_cmd("auditwheel", &["show"])?;
    show.arg(wheel);
    let text = captured(show)?;
    // "... is consistent with the following platform tag: "manylinux_2_28_x86_64"."
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let tag = words
        .split("platform tag: \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .ok_or("auditwheel show named no platform tag")?;
    let glibc = |tag: &str| -> Option<u32> {
        tag.strip_prefix("manylinux_2_")?
            .split('_')
            .next()?
            .parse()
            .ok()
    };
    let wanted = glibc(&format!("{MANYLINUX}_")).ok_or("MANYLINUX is not manylinux_2_N")?;
    match glibc(tag) {
        Some(minor) if minor <= wanted => {}
        _ => return Err(format!("auditwheel show: {tag}, not {MANYLINUX} or older")),
    }
    let name = wheel.file_name().unwrap_or_default().to_string_lossy();
    Ok(format!("auditwheel show {name}: {tag}"))
}

/// The DLLs the Windows wheel's extension imports (`objdump -p`), which must
/// all be [`WINDOWS_DLLS`].
fn windows_imports(wheel: &Path) -> Result<String> {
    let dir = wheels_dir().join(".pyd");
    let _ = fs::remove_dir_all(&dir);
    let mut unzip = venv_cmd("python", &["-m", "zipfile", "-e"])?;
    unzip.arg(wheel).arg(&dir);
    run(unzip)?;
    let pyd = dir.join("bytelens/_native.pyd");
    let mut objdump = cmd("x86_64-w64-mingw32-objdump", &["-p"]);
    objdump.arg(&pyd);
    let out = objdump
        .output()
        .map_err(|e| format!("could not start x86_64-w64-mingw32-objdump: {e}"))?;
    let _ = fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(format!("objdump -p of {} failed", pyd.display()));
    }
    let mut dlls: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("DLL Name:"))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    dlls.sort();
    dlls.dedup();
    let foreign: Vec<&String> = dlls
        .iter()
        .filter(|d| !WINDOWS_DLLS.contains(&d.as_str()) && !d.starts_with("api-ms-win-"))
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "the Windows extension imports {foreign:?}, which are not Windows' own DLLs"
        ));
    }
    if !dlls.iter().any(|d| d == "python3.dll") {
        return Err(format!(
            "the Windows extension imports {dlls:?}: no python3.dll, so not the stable ABI"
        ));
    }
    Ok(format!("_native.pyd imports {}", dlls.join(", ")))
}

/// Installs the sdist with pip (which builds it with Rust) into a new venv
/// of [`base_python`], then imports it there and takes a view; returns how
/// long the install took.
fn install_sdist(sdist: &Path) -> Result<String> {
    let venv = wheels_dir().join(".sdist-venv");
    let _ = fs::remove_dir_all(&venv);
    run(cmd(
        &base_python(),
        &["-m", "venv", &venv.display().to_string()],
    ))?;
    let python = venv.join("bin/python").display().to_string();
    let at = Instant::now();
    let mut pip = cmd(&python, &["-m", "pip", "install", "--quiet"]);
    pip.arg(sdist);
    run(pip)?;
    let secs = at.elapsed().as_secs_f64();
    let smoke = "import bytelens as bl, sys; \
                 b = bl.Buffer(8); b.view('<i4')[0] = 0x01020304; \
                 assert b.view('<u1')[0] == 4; \
                 assert bl.__file__.startswith(sys.prefix), bl.__file__; \
                 print('sdist install:', bl.__file__)";
    // From the venv, so that no source tree is on sys.path.
    let mut c = cmd(&python, &["-c", smoke]);
    c.current_dir(&venv);
    run(c)?;
    let name = sdist.file_name().unwrap_or_default().to_string_lossy();
    Ok(format!(
        "pip install {name}: built and installed in {secs:.0} s"
    ))
}
