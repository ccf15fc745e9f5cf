//! `cargo xtask bench`: the benchmarks, each printing ratios to a baseline
//! measured in the same run: the Rust crate's (criterion), the Python
//! package's against numpy, the GPU uploads and loads, and the wasm
//! package's under Node.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::python_env::{PY_ENVS, build_python_package, ensure_python_envs, venv_python};
use crate::util::{Result, cmd, ensure_lavapipe, has_loader, installing, root, run, target_dir};
use crate::web;

/// Runs the criterion benchmarks, then prints each median next to its
/// group's baseline (the benchmark whose name starts with "baseline").
pub fn bench(filter: &[String]) -> Result {
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

/// The Python package's benchmarks against numpy: the views
/// (native/benches/python_views.py), the copies
/// (native/benches/python_copy.py), then round trips through Ray and Dask
/// (native/benches/python_scale.py), loading files
/// (native/benches/python_files.py), rings between processes
/// (native/benches/python_ring.py, against torch's DataLoader,
/// multiprocessing.Pipe and iceoryx2, which it installs), and
/// `bl.DataLoader` against torch's DataLoader
/// (native/benches/python_dataloader.py). `views ARG...`, `copy ARG...`,
/// `scale ARG...`, `files ARG...`, `ring ARG...`, `dataloader ARG...` or
/// `gpu ARG...` (model files to the GPU, native/benches/python_gpu.py,
/// which `bench gpu` runs too) runs one of them with its own arguments.
pub fn bench_python(args: &[String], install: bool) -> Result {
    const SCRIPTS: [&str; 7] = [
        "views",
        "copy",
        "scale",
        "files",
        "ring",
        "dataloader",
        "gpu",
    ];
    let scripts: Vec<(&str, &[String])> = match args.split_first() {
        // `gpu` (native/benches/python_gpu.py) runs with `bench gpu`.
        None => SCRIPTS[..6].iter().map(|name| (*name, &[][..])).collect(),
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
    if scripts.iter().any(|(name, _)| *name == "ring") {
        installing(install, ensure_iceoryx2)?;
    }
    build_python_package()?;
    for (name, rest) in scripts {
        let script = format!("native/benches/python_{name}.py");
        let mut c = cmd(&venv_python(PY_ENVS[0].0), &[script.as_str()]);
        c.args(rest);
        run(c)?;
    }
    Ok(())
}

/// The ring benchmark's anchor iceoryx2 (its Python package, pinned), in
/// the bench's environment: only the benchmark uses it.
fn ensure_iceoryx2() -> Result {
    const ICEORYX2: &str = "iceoryx2==0.10.0";
    let python = venv_python(PY_ENVS[0].0);
    let has = cmd(&python, &["-c", "import iceoryx2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        run(cmd(&python, &["-m", "pip", "install", "--quiet", ICEORYX2]))?;
    }
    Ok(())
}

/// The loader packages a GPU machine without one gets (see
/// `scripts/gpu-bench-device.sh`): downloaded here, unpacked there.
const LOADER_DEBS: [&str; 3] = ["libvulkan1", "libegl1", "libglvnd0"];

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
pub fn bench_gpu(prepare_device: bool, install: bool) -> Result {
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
    bench_python(&["gpu".to_owned()], install)
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

/// `cargo xtask bench webgpu`, the browser's GPU: web-demo/tests/webgpu.mjs with the 5 GiB file too,
/// against a server of the demo and its test files on a free port of
/// 127.0.0.1 (stopped when this process exits). It prints `loadToGpu`'s
/// time against fetching the same bytes alone, and wasm memory's peak.
pub fn bench_webgpu(install: bool) -> Result {
    if install {
        web::ensure_web_tools(true)?;
    }
    web::build_package()?;
    let url = web::serve(0, web::demo_test_files()?)?;
    let mut test = web::browser_test(&url, "web-demo/tests/webgpu.mjs");
    test.env("DEMO_GPU_HUGE", "1");
    run(test)
}

/// `cargo xtask bench wasm`: the release package, built and size checked
/// as the wasm suite builds it, then its read and write under Node against
/// DataView loops (wasm/benches/node_read_write.mjs prints the table).
pub fn bench_wasm(install: bool) -> Result {
    if install {
        web::ensure_web_tools(false)?;
    }
    web::build_package()?;
    let pkg = web::budget_pkg().display().to_string();
    run(cmd("node", &["wasm/benches/node_read_write.mjs", &pkg]))
}
