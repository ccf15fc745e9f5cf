//! The WebAssembly side of the task runner: its tools, the release build of
//! the package (wasm-opt from npm's binaryen, size checked), and a static
//! file server for the demo bound to 127.0.0.1.

use std::fs;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::thread;

use crate::{Result, cmd, root, run, target_dir};

/// The release `.wasm` may not grow past this (the budget).
const MAX_WASM_BYTES: u64 = 100 * 1024;

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

fn installed(program: &str, args: &[&str]) -> Option<String> {
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
/// test file, with the `files` feature (the demo's build, a superset of the
/// published package).
pub fn wasm_pack_test(runtime: &[&str], test: &str) -> Command {
    // From inside wasm/: given the crate's path instead, wasm-pack passes
    // `--test` on to the test binary rather than to cargo.
    let mut c = cmd("wasm-pack", &["test", "--mode", "no-install"]);
    c.args(runtime)
        .args(["--", "--test", test, "--features", "files"])
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
    let published = build_one(&budget_pkg(), &[])?;
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
    let demo = build_one(&demo_dir().join("pkg"), &["--features", "files"])?;
    println!(
        "the demo's .wasm (with readHeader): {} bytes after wasm-opt",
        demo.1
    );
    Ok(())
}

/// One release build into `out` with cargo arguments `extra`, then
/// wasm-opt; the .wasm's size before and after.
fn build_one(out: &Path, extra: &[&str]) -> Result<(u64, u64)> {
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
    // Size over speed for the browser only (the native crate keeps -O3): the
    // package is bound by its byte budget, and its loops are not hot.
    build.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "z");
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
    let mut opt = cmd(&wasm_opt, &["-Oz", "--strip-debug", "--strip-producers"]);
    opt.args(WASM_FEATURES).args([&path, "-o", &path]);
    run(opt)?;
    Ok((before, size(&wasm)?))
}

/// `cargo xtask bench wasm`: the release package, built and size checked
/// as the wasm suite builds it, then its read and write under Node against
/// DataView loops (wasm/benches/node_read_write.mjs prints the table).
pub fn bench(install: bool) -> Result {
    if install {
        ensure_web_tools(false)?;
    }
    build_package()?;
    let pkg = budget_pkg().display().to_string();
    run(cmd("node", &["wasm/benches/node_read_write.mjs", &pkg]))
}

/// The file the demo's end-to-end test opens: a 1 GiB safetensors file
/// (sparse: only its header is written), whose second tensor is misaligned,
/// at target/demo-files/, served by the test run at `/file/NAME`.
pub fn big_test_file() -> Result<PathBuf> {
    const DATA: u64 = 1 << 30;
    let tail = 1u64 << 20;
    let weights = DATA - 64 - tail;
    let tensors = [
        ("tag", "U8", 3, 0),
        ("scale", "F32", 4, 3), // at an odd offset: misaligned
        ("pad", "U8", 57, 7),
        ("weights", "F32", weights, 64),
        ("tail", "F16", tail, 64 + weights),
    ];
    let mut header = serde_json::Map::new();
    for (name, dtype, nbytes, at) in tensors {
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
    let path = dir.join("model-1gib.safetensors");
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend(text.as_bytes());
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&path)?;
        file.write_all(&bytes)?;
        file.set_len(bytes.len() as u64 + DATA)
    };
    write().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The browser end-to-end test of the demo at `url`; the screenshot goes under target/.
pub fn e2e(url: &str) -> Command {
    let mut c = cmd("node", &["web-demo/tests/e2e.mjs"]);
    c.env("DEMO_URL", url)
        .env("DEMO_BIG_FILE", "/file/model-1gib.safetensors")
        .env("SCREENSHOT", target_dir().join("demo-screenshot.png"));
    c
}

/// Serves web-demo/ on 127.0.0.1:`port` (0: any free port) from a thread of
/// this process, which stops it by exiting, and each of `files` at
/// `/file/NAME` (its file name), in byte ranges (`Range: bytes=a-b`), so
/// that the demo reads only what it shows. Returns the URL.
pub fn serve(port: u16, files: Vec<PathBuf>) -> Result<String> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let dir = demo_dir();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (dir, files) = (dir.clone(), files.clone());
            thread::spawn(move || {
                // A client that hangs up mid-request is no concern of the server's.
                let _ = respond(stream, &dir, &files);
            });
        }
    });
    Ok(format!("http://127.0.0.1:{port}/"))
}

/// The first byte range of a `Range: bytes=...` header, for a file of
/// `len` bytes: `a-b`, `a-` or `-n`, clamped to the file; `None` if it
/// cannot be satisfied.
fn byte_range(header: &str, len: u64) -> Option<(u64, u64)> {
    let spec = header
        .trim()
        .strip_prefix("bytes=")?
        .split(',')
        .next()?
        .trim();
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
        (Some(a), Some(b)) => (a, b.min(len.checked_sub(1)?)),
        (Some(a), None) if b.is_empty() => (a, len.checked_sub(1)?),
        (None, Some(n)) if a.is_empty() => (len.saturating_sub(n), len.checked_sub(1)?),
        _ => return None,
    };
    (start <= end).then_some((start, end))
}

fn respond(mut stream: TcpStream, dir: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    let mut reader = BufReader::new(&stream);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("range") => {
                range = Some(value.trim().to_owned());
            }
            _ => {}
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    if let Some(name) = path.strip_prefix("/file/") {
        let file = files
            .iter()
            .find(|f| f.file_name().is_some_and(|n| n.to_string_lossy() == name));
        if let Some(file) = file {
            return send_range(stream, file, range.as_deref());
        }
    }
    let relative = Path::new(path.trim_start_matches('/'));
    let safe = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    let mut file = dir.join(relative);
    if file.is_dir() {
        file = file.join("index.html");
    }
    let (status, kind, body) = match fs::read(&file) {
        Ok(body) if safe => ("200 OK", content_type(&file), body),
        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)
}

/// A served file: the bytes `range` asks for (206), or all of it (200);
/// 416 for a range past its end. Reads only the bytes it sends.
fn send_range(mut stream: TcpStream, path: &Path, range: Option<&str>) -> std::io::Result<()> {
    let mut file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    let (status, start, end) = match range {
        None => ("200 OK", 0, len),
        Some(header) => match byte_range(header, len) {
            Some((start, last)) => ("206 Partial Content", start, last + 1),
            None => {
                return write!(
                    stream,
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        },
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nContent-Range: bytes {start}-{}/{len}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        end.saturating_sub(1),
        end - start
    )?;
    file.seek(SeekFrom::Start(start))?;
    std::io::copy(&mut file.take(end - start), &mut stream)?;
    Ok(())
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        _ => "text/plain; charset=utf-8",
    }
}
