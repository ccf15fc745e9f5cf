//! The GPU side of the task runner: Mesa's lavapipe (software Vulkan) for
//! the tests, the GPU benchmark, and what a machine with a real GPU needs
//! to run that benchmark.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::{Result, apt_install, cmd, root, run, target_dir};

/// Debian's packages for a Vulkan driver-less CPU machine: the loader,
/// lavapipe, and vulkaninfo for looking around.
const LAVAPIPE: [&str; 3] = ["mesa-vulkan-drivers", "libvulkan1", "vulkan-tools"];

/// The loader packages a GPU machine without one gets (see
/// `scripts/gpu-bench-device.sh`): downloaded here, unpacked there.
const LOADER_DEBS: [&str; 3] = ["libvulkan1", "libegl1", "libglvnd0"];

/// Installs lavapipe and the Vulkan loader unless both are there.
pub fn ensure_lavapipe() -> Result {
    let icd_dir = Path::new("/usr/share/vulkan/icd.d");
    let has_lavapipe = fs::read_dir(icd_dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("lvp_icd"))
    });
    if has_lavapipe && has_loader() {
        return Ok(());
    }
    apt_install(&LAVAPIPE)
}

fn has_loader() -> bool {
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("libvulkan.so.1"))
}

/// Makes a test command require an adapter (a missing one fails, never
/// skips) and quiets Mesa's device-select layer on headless machines.
pub fn require_gpu(c: &mut Command) -> &mut Command {
    c.env("BYTELENS_REQUIRE_GPU", "1")
        .env("NODEVICE_SELECT", "1")
}

/// The GPU benchmark's command, writing its CSV and SVG to `target/bench/`.
fn bench_command() -> Command {
    let mut c = cmd(
        "cargo",
        &[
            "bench",
            "-p",
            "bytelens",
            "--features",
            "gpu",
            "--bench",
            "gpu",
        ],
    );
    c.env("BYTELENS_BENCH_DIR", target_dir().join("bench"))
        .env("NODEVICE_SELECT", "1");
    c
}

/// `cargo xtask bench gpu [--prepare-device]`: the Rust GPU benchmark, then
/// native/benches/python_gpu.py; `install` false skips lavapipe and the venvs.
pub fn bench(prepare_device: bool, install: bool) -> Result {
    if prepare_device {
        return prepare_device_dir();
    }
    // A machine with a real GPU but no apt (the device machine) has its
    // loader set up by scripts/gpu-bench-device.sh; only install lavapipe
    // where there is no loader at all.
    if install && !has_loader() {
        ensure_lavapipe()?;
    }
    run(bench_command())?;
    // Model files to the GPU through the Python package (gpu.load's goal).
    crate::bench_python(&["gpu".to_owned()], install)
}

/// Builds the benchmark binary and downloads the Vulkan loader packages
/// into `target/device/`, for a machine with a GPU but no compiler or
/// registry access: carry that folder there and run
/// `scripts/gpu-bench-device.sh`.
fn prepare_device_dir() -> Result {
    let dir = target_dir().join("device");
    let debs = dir.join("debs");
    fs::create_dir_all(&debs).map_err(|e| e.to_string())?;
    let mut build = bench_command();
    build.args(["--no-run", "--message-format=json"]);
    println!("\n$ {build:?}");
    let out = build.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "building the benchmark failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // The compiler artifact named `gpu` with an executable is the bench binary.
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| msg["target"]["name"] == "gpu")
        .find_map(|msg| msg["executable"].as_str().map(str::to_owned))
        .ok_or("cargo reported no benchmark executable")?;
    fs::copy(&exe, dir.join("gpu-bench")).map_err(|e| e.to_string())?;
    let mut download = cmd("apt-get", &["download"]);
    download.args(LOADER_DEBS).current_dir(&debs);
    run(download)?;
    println!(
        "\nready: carry {} to the GPU machine and run scripts/gpu-bench-device.sh there",
        dir.strip_prefix(root()).unwrap_or(&dir).display()
    );
    Ok(())
}
