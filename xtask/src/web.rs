//! The WebAssembly side of the task runner: its tools, the release build of
//! the package (wasm-opt from npm's binaryen, size checked), and a static
//! file server for the demo bound to 127.0.0.1 (in [`serve`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::python_env::{PY_ENVS, venv_python};
use crate::util::{Result, cmd, root, run, target_dir};

mod serve;

pub use serve::served_file;

/// The release `.wasm` may not grow past this: the first budget, 100 KiB,
/// raised by 4 KiB for `uploadView` (WebGPU in the published package: its
/// bindings and imports cost 1.5 KB, packing a view in 8 MiB pieces 0.6 KB).
const MAX_WASM_BYTES: u64 = 104 * 1024;

/// What wasm-opt may assume the browser supports (what rustc emits by default).
const WASM_FEATURES: [&str; 4] = [
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-mutable-globals",
];

pub fn demo_dir() -> PathBuf {
    root().join("web-demo")
}

/// The wasm-bindgen version in Cargo.lock, which the CLI must equal.
fn locked_wasm_bindgen() -> Result<String> {
    let lock = fs::read_to_string(root().join("Cargo.lock")).map_err(|e| e.to_string())?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\"" {
            let version = lines.next().unwrap_or_default();
            return Ok(version
                .trim_start_matches("version = ")
                .trim_matches('"')
                .to_owned());
        }
    }
    Err("Cargo.lock has no wasm-bindgen".to_owned())
}

pub(crate) fn installed(program: &str, args: &[&str]) -> Option<String> {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Installs wasm-pack, the matching wasm-bindgen CLI, the demo's npm
/// packages and, for the browser tests, Debian's Chromium and chromedriver,
/// skipping whatever is there.
pub fn ensure_web_tools(browser: bool) -> Result {
    if installed("wasm-pack", &["--version"]).is_none() {
        run(cmd("cargo", &["install", "wasm-pack", "--locked"]))?;
    }
    let version = locked_wasm_bindgen()?;
    let have = installed("wasm-bindgen", &["--version"]).unwrap_or_default();
    if have.split_whitespace().nth(1) != Some(version.as_str()) {
        // No --locked: one of its locked dependencies is missing from the registry.
        run(cmd(
            "cargo",
            &["install", "wasm-bindgen-cli", "--version", &version],
        ))?;
    }
    let missing = |path: &str| !Path::new(path).exists();
    if browser && (missing("/usr/bin/chromium") || missing("/usr/bin/chromedriver")) {
        run(cmd("apt-get", &["update"]))?;
        let mut apt = cmd("apt-get", &["install", "-y", "chromium", "chromium-driver"]);
        apt.env("DEBIAN_FRONTEND", "noninteractive");
        run(apt)?;
    }
    let dir = demo_dir();
    let stamp = dir.join("node_modules/.package-lock.json");
    let fresh = match (
        fs::metadata(&stamp),
        fs::metadata(dir.join("package-lock.json")),
    ) {
        (Ok(stamp), Ok(lock)) => stamp.modified().ok() >= lock.modified().ok(),
        _ => false,
    };
    if !fresh {
        let mut npm = cmd("npm", &["ci", "--no-audit", "--no-fund"]);
        npm.current_dir(&dir);
        run(npm)?;
    }
    Ok(())
}

/// `wasm-pack test` for one runtime (`--node` or `--headless --chrome`) and
/// its test files, with the `files` feature (the demo's build, a superset
/// of the published package).
pub fn wasm_pack_test(runtime: &[&str], tests: &[&str]) -> Command {
    // From inside wasm/: given the crate's path instead, wasm-pack passes
    // `--test` on to the test binary rather than to cargo.
    let mut c = cmd("wasm-pack", &["test", "--mode", "no-install"]);
    c.args(runtime).arg("--");
    for test in tests {
        c.args(["--test", test]);
    }
    c.args(["--features", "files"])
        .current_dir(root().join("wasm"));
    c
}

/// Where the package as published is built (and its size checked).
pub fn budget_pkg() -> PathBuf {
    target_dir().join("wasm-budget/pkg")
}

/// Builds the release package twice, each through wasm-opt: as published,
/// into [`budget_pkg`], printing its size and failing past
/// [`MAX_WASM_BYTES`]; and for the web demo, into web-demo/pkg, with the
/// `files` feature (`readHeader`, whose JSON reader the budget has no room
/// for).
pub fn build_package() -> Result {
    let published = build_one(&budget_pkg(), &[], "z")?;
    println!(
        "\nbytelens_wasm_bg.wasm: {} bytes ({:.1} KiB) after wasm-opt, {} before; budget {} KiB",
        published.1,
        published.1 as f64 / 1024.0,
        published.0,
        MAX_WASM_BYTES / 1024
    );
    if published.1 > MAX_WASM_BYTES {
        return Err(format!(
            "the .wasm is {} bytes, over the {MAX_WASM_BYTES}-byte budget",
            published.1
        ));
    }
    // The demo's build is bound by no budget, and its worker's statistics,
    // histograms and heatmaps walk every element of a tensor: for speed.
    let demo = build_one(&demo_dir().join("pkg"), &["--features", "files"], "3")?;
    println!(
        "the demo's .wasm (with readHeader): {} bytes after wasm-opt",
        demo.1
    );
    Ok(())
}

/// One release build into `out` with cargo arguments `extra` at rustc's
/// `opt_level`, then wasm-opt (`-Oz` after `z`, else `-O3`); the .wasm's
/// size before and after.
fn build_one(out: &Path, extra: &[&str], opt_level: &str) -> Result<(u64, u64)> {
    let out = out.display().to_string();
    let mut build = cmd(
        "wasm-pack",
        &[
            "build",
            "--mode",
            "no-install",
            "--target",
            "web",
            "--release",
        ],
    );
    build.args(["--out-dir", &out, "wasm"]);
    if !extra.is_empty() {
        build.arg("--").args(extra);
    }
    // `z` for the published package, bound by its byte budget (its loops
    // are not hot); `3` for the demo's, whose loops are.
    build.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", opt_level);
    run(build)?;
    let wasm = Path::new(&out).join("bytelens_wasm_bg.wasm");
    let size = |path: &Path| {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| e.to_string())
    };
    let before = size(&wasm)?;
    let wasm_opt = demo_dir()
        .join("node_modules/.bin/wasm-opt")
        .display()
        .to_string();
    let path = wasm.display().to_string();
    let level = if opt_level == "z" { "-Oz" } else { "-O3" };
    let mut opt = cmd(&wasm_opt, &[level, "--strip-debug", "--strip-producers"]);
    opt.args(WASM_FEATURES).args([&path, "-o", &path]);
    run(opt)?;
    Ok((before, size(&wasm)?))
}

/// The files the demo's end-to-end test opens, at target/demo-files/,
/// served by the test run at `/file/NAME`: safetensors files of 1 GiB
/// (whose second tensor is misaligned; every byte written, values of a
/// bell-shaped spread, for the statistics benchmark) and of 5 GiB (tensors
/// past 4 GiB; sparse: only its header is written); and the small files
/// numpy writes ([`numpy_test_files`]).
pub fn demo_test_files() -> Result<Vec<PathBuf>> {
    const GIB: u64 = 1 << 30;
    let tail = 1u64 << 20;
    let weights = GIB - 64 - tail;
    let one = safetensors_file(
        "model-1gib.safetensors",
        GIB,
        Fill::Values,
        &[
            ("tag", "U8", 3, 0),
            ("scale", "F32", 4, 3), // at an odd offset: misaligned
            ("pad", "U8", 57, 7),
            ("weights", "F32", weights, 64),
            ("tail", "F16", tail, 64 + weights),
        ],
    )?;
    let big = 4 * GIB + 64;
    let five = safetensors_file(
        "model-5gib.safetensors",
        5 * GIB,
        Fill::Sparse,
        &[
            ("tag", "U8", 64, 0),
            ("weights", "F32", big, 64),
            ("past_4gib", "F16", 4096, 64 + big),
            ("tail", "U8", 5 * GIB - 64 - big - 4096, 64 + big + 4096),
        ],
    )?;
    let mut files = vec![one, five, sparse_npy_8k()?];
    files.extend(numpy_test_files()?);
    Ok(files)
}

/// `heatmap-8k.npy` in target/demo-files/: a float32 (8192, 8192) .npy of
/// 256 MiB, sparse (its data reads as zeros), for the heatmap benchmark of
/// the demo's end-to-end run; written once, kept while it has its size.
fn sparse_npy_8k() -> Result<PathBuf> {
    const SIDE: u64 = 8192;
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({SIDE}, {SIDE}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    let size = bytes.len() as u64 + SIDE * SIDE * 4;
    let dir = target_dir().join("demo-files");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("heatmap-8k.npy");
    if fs::metadata(&path).is_ok_and(|m| m.len() == size) {
        return Ok(path);
    }
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&path)?;
        file.write_all(&bytes)?;
        file.set_len(size)
    };
    write().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// What web-demo/tests/fixtures.py writes into target/demo-files/: small
/// .npy and safetensors files, and numpy.json, numpy's answers about them.
const NUMPY_FILES: [&str; 8] = [
    "c_order.npy",
    "fortran.npy",
    "int16_be.npy",
    "tensors.safetensors",
    "heatmap.npy",
    "cube.npy",
    "image.npy",
    "numpy.json",
];

/// Runs web-demo/tests/fixtures.py with the numpy 2 venv's python, unless
/// each of its files is newer than the script (numpy.json, written last,
/// is older after a run that stopped part way); returns the files, served
/// with the others.
fn numpy_test_files() -> Result<Vec<PathBuf>> {
    let dir = target_dir().join("demo-files");
    let script = demo_dir().join("tests/fixtures.py");
    let files: Vec<PathBuf> = NUMPY_FILES.iter().map(|name| dir.join(name)).collect();
    let modified = |path: &Path| fs::metadata(path).and_then(|m| m.modified()).ok();
    let written = modified(&script);
    let fresh = written.is_some() && files.iter().all(|f| modified(f) > written);
    if !fresh {
        let python = venv_python(PY_ENVS[0].0);
        let (script, out) = (script.display().to_string(), dir.display().to_string());
        run(cmd(&python, &[&script, &out]))?;
    }
    // numpy.json is for the test, which reads it from disk ($DEMO_FILES).
    Ok(files
        .into_iter()
        .filter(|f| !f.ends_with("numpy.json"))
        .collect())
}

/// What follows a test file's header.
#[derive(Clone, Copy, PartialEq)]
enum Fill {
    /// Nothing: the file's length set, its data reading as zeros.
    Sparse,
    /// float32 values (each the sum of four uniform ones, less 2), one
    /// 8 MiB block of them over and over: every byte on disk, as a model
    /// file's are.
    Values,
}

/// A safetensors file `name` in target/demo-files/ of `data` bytes after
/// its header, of `tensors` (name, dtype, bytes, offset), whose header is
/// padded to a multiple of 64 bytes. A [`Fill::Values`] file already there
/// with its length and every block allocated is kept.
fn safetensors_file(
    name: &str,
    data: u64,
    fill: Fill,
    tensors: &[(&str, &str, u64, u64)],
) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut header = serde_json::Map::new();
    for &(name, dtype, nbytes, at) in tensors {
        let itemsize = match dtype {
            "F32" => 4,
            "F16" => 2,
            _ => 1,
        };
        header.insert(
            name.to_owned(),
            serde_json::json!({"dtype": dtype, "shape": [nbytes / itemsize], "data_offsets": [at, at + nbytes]}),
        );
    }
    let mut text = serde_json::to_string(&header).map_err(|e| e.to_string())?;
    while (8 + text.len()) % 64 != 0 {
        text.push(' ');
    }
    let dir = target_dir().join("demo-files");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(name);
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend(text.as_bytes());
    let len = bytes.len() as u64 + data;
    if fill == Fill::Values
        && fs::metadata(&path).is_ok_and(|m| m.len() == len && m.blocks() * 512 >= len)
    {
        return Ok(path);
    }
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&path)?;
        file.write_all(&bytes)?;
        if fill == Fill::Sparse {
            return file.set_len(len);
        }
        let block = value_block(8 << 20);
        let mut left = data;
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            file.write_all(&block[..n])?;
            left -= n as u64;
        }
        Ok(())
    };
    write().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// `nbytes` of little-endian float32 values, each the sum of four uniform
/// ones in [0, 1) less 2 (xorshift64), a multiple of 4 bytes.
fn value_block(nbytes: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u32 << 24) as f32
    };
    let mut out = Vec::with_capacity(nbytes);
    for _ in 0..nbytes / 4 {
        let v = uniform() + uniform() + uniform() + uniform() - 2.0;
        out.extend(v.to_le_bytes());
    }
    out
}

/// The browser end-to-end test of the demo at `url`; the screenshot goes under target/.
pub fn e2e(url: &str) -> Command {
    browser_test(url, "web-demo/tests/e2e.mjs")
}

/// A browser test `script` (Node, playwright-core) against the demo at
/// `url`, with the served files' paths in its environment.
pub fn browser_test(url: &str, script: &str) -> Command {
    let mut c = cmd("node", &[script]);
    c.env("DEMO_URL", url)
        .env("DEMO_BIG_FILE", "/file/model-1gib.safetensors")
        .env("DEMO_HUGE_FILE", "/file/model-5gib.safetensors")
        .env("DEMO_HEAT_FILE", "/file/heatmap-8k.npy")
        .env("DEMO_FILES", target_dir().join("demo-files"))
        .env("SCREENSHOT", target_dir().join("demo-screenshot.png"));
    c
}

/// Serves web-demo/ on 127.0.0.1:`port` (0: any free port) from threads
/// of this process, which stops it by exiting, and each of `files` at
/// `/file/NAME` (its file name), in byte ranges (`Range: bytes=a-b`), so
/// that the demo reads only what it shows; what a client can make it hold
/// or wait for is bounded (see [`serve`]). Returns the URL.
pub fn serve(port: u16, files: Vec<PathBuf>) -> Result<String> {
    serve_dir(&demo_dir(), port, files)
}

/// [`serve`] for any folder `dir` (the docs' site, target/docs/).
pub fn serve_dir(dir: &Path, port: u16, files: Vec<PathBuf>) -> Result<String> {
    let site = serve::Site::new(dir, files)?;
    let server = serve::Server::start(port, site, serve::Limits::default())
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    Ok(format!("http://{}/", server.addr()))
}
