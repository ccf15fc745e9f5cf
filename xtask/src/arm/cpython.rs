//! The arm suite's Python part: an aarch64 CPython from Debian's arm64
//! packages, unpacked into `~/.cache/bytelens/arm/python/` and run under
//! qemu, with its packages from PyPI's aarch64 wheels, and the aarch64
//! wheel's tests on it (those of tests/python that aarch64 changes).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::python_env::{PY_ENVS, PY_TOOLS, build_wheel, venv_python};
use crate::util::{Result, cache_dir, cmd, count, root, run, run_logged_together, target_dir};

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
const PY_RUN: [&str; 7] = [
    "test_args.py",
    "test_ascontiguous.py",
    "test_dlpack_view.py",
    "test_files.py",
    "test_oracle.py",
    "test_seeds.py",
    "test_vectors.py",
];

/// Files of what aarch64 changes that another step guards too: under qemu
/// only in `cargo xtask test all`. test_shared.py's children start through
/// qemu in seconds each (half the step's time), and the shared memory and
/// futex lock they test under qemu are the arm suite's Rust tests'
/// (tests/shared.rs, run under qemu in every run).
const PY_RUN_ALL: [&str; 1] = ["test_shared.py"];

/// Files about the Python C API and messages, which aarch64 does not
/// change: under qemu only in `cargo xtask test all` (`BYTELENS_TEST_ALL`);
/// the python suite runs them natively, on every CPython.
const PY_ARCH_NEUTRAL: [&str; 11] = [
    "test_bindings_hostile.py",
    "test_edges.py",
    "test_error_kinds.py",
    "test_files_rust.py",
    "test_hostile_round5_py.py",
    "test_lifetimes.py",
    "test_plan_limits.py",
    "test_protocols.py",
    "test_quoting.py",
    "test_report_text.py",
    "test_save_args.py",
];

/// Why the rest is left out: the python suite runs all of them natively.
const SLOW: &str = "under qemu it takes minutes (each child Python starts in seconds there)";
const PY_LEFT_OUT: [(&str, &str); 17] = [
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
    (
        "test_loader.py",
        "its workers are spawned Pythons, each starting in seconds under qemu (the ring under \
         it is held by bytelens' own tests under qemu)",
    ),
    (
        "test_dataloader.py",
        "its workers are spawned Pythons that import torch, each starting in seconds under qemu, \
         and torch is not installed for aarch64 (the ring under it is held by bytelens' own tests \
         under qemu)",
    ),
    (
        "test_ring.py",
        "its spawned children start in seconds each under qemu (the ring and its futex waits \
         are held by bytelens' own tests under qemu)",
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

/// Writes `text` to `path`, naming the file in the error.
fn write(path: &Path, text: &str) -> Result {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Downloads [`PY_DEBS`] and unpacks them into [`python_root`], unless its
/// marker lists the same packages, then writes the wrapper.
pub fn ensure_python_root() -> Result {
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
pub fn ensure_site() -> Result {
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

/// The aarch64 wheel for `target` built ([`build_wheel`]) and unpacked, then pytest
/// over tests/python under the aarch64 CPython, less [`PY_LEFT_OUT`].
pub fn python_tests(target: &str) -> Result<String> {
    if !python().exists() {
        return Err(format!(
            "{} is missing: run `cargo xtask test arm` without --no-install once",
            python().display()
        ));
    }
    let wheel = build_wheel(target)?;
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
        let always = PY_RUN.contains(&file.as_str());
        let with_all =
            PY_ARCH_NEUTRAL.contains(&file.as_str()) || PY_RUN_ALL.contains(&file.as_str());
        if always || (all && with_all) {
            run_here.push(format!("tests/python/{file}"));
        } else if PY_RUN_ALL.contains(&file.as_str()) {
            println!(
                "left out under qemu: tests/python/{file}: the arm suite's Rust tests (tests/shared.rs) guard it under qemu (`cargo xtask test all` runs it)"
            );
        } else if PY_ARCH_NEUTRAL.contains(&file.as_str()) {
            println!(
                "left out under qemu: tests/python/{file}: the same on every CPU (`cargo xtask test all` runs it)"
            );
        } else if let Some((_, why)) = PY_LEFT_OUT.iter().find(|(f, _)| f == file) {
            println!("left out under qemu: tests/python/{file}: {why}");
        } else {
            return Err(format!(
                "tests/python/{file} is neither run nor left out under qemu: add it to arm/cpython.rs's PY_RUN, PY_RUN_ALL, PY_ARCH_NEUTRAL or PY_LEFT_OUT"
            ));
        }
    }
    let paths = env::join_paths([dir, site()]).map_err(|e| e.to_string())?;
    // Two emulated Pythons at once, one a core: each runs one thread (and
    // its children), and test_shared.py's children alone take as long as
    // the other files together.
    let first_half = |f: &String| PY_FIRST_HALF.iter().any(|h| f.ends_with(h));
    let (first, second): (Vec<String>, Vec<String>) = if run_here.iter().any(first_half) {
        run_here.into_iter().partition(first_half)
    } else {
        // Without test_shared.py: every other file each.
        let (a, b): (Vec<_>, Vec<_>) = run_here
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        (
            a.into_iter().map(|(_, f)| f).collect(),
            b.into_iter().map(|(_, f)| f).collect(),
        )
    };
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
    let logs = run_logged_together([pytest(&first), pytest(&second)], &arm_dir())?;
    let summaries: Vec<String> = logs
        .iter()
        .map(|log| pytest_summary(log))
        .collect::<Result<_>>()?;
    Ok(summaries.join("; "))
}

/// The files the first of the two emulated Pythons runs, where they run
/// (`test all`); else each runs every other file.
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
    use super::{
        PY_ARCH_NEUTRAL, PY_LEFT_OUT, PY_RUN, PY_RUN_ALL, count, fs, pytest_summary, root,
    };

    /// The arm suite refuses a test file in none of the lists; this says so
    /// in the rust suite already, without qemu.
    #[test]
    fn every_python_test_file_is_run_or_left_out_under_qemu() {
        let tests = root().join("tests/python");
        for entry in fs::read_dir(&tests).unwrap().flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if !(file.starts_with("test_") && file.ends_with(".py")) {
                continue;
            }
            let listed = PY_RUN.contains(&file.as_str())
                || PY_RUN_ALL.contains(&file.as_str())
                || PY_ARCH_NEUTRAL.contains(&file.as_str())
                || PY_LEFT_OUT.iter().any(|(f, _)| *f == file);
            assert!(
                listed,
                "tests/python/{file}: add it to arm/cpython.rs's PY_RUN, PY_ARCH_NEUTRAL or PY_LEFT_OUT"
            );
        }
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
