//! `cargo xtask docs [--serve]`: the guide (mdBook, `docs/guide/`) and the
//! API references (pdoc for Python, `cargo doc` for Rust, TypeDoc for the
//! wasm package's TypeScript declarations) built into `target/docs/`, every
//! internal link and anchor of the site and of the README checked, and a
//! screenshot of the guide's first page taken in Chromium.

use std::fs;
use std::path::{Path, PathBuf};

use crate::python_env::{BUILD_ENV, build_python_package, venv_python, without_rust};
use crate::util::{Result, Run, Step, cmd, require_gpu, root, run, target_dir, xtask_step};
use crate::web;

mod links;

use links::check_links;

/// mdBook from crates.io, pinned: its HTML (ids, file names) is what the
/// link check and the screenshot test read.
const MDBOOK_VERSION: &str = "0.5.4";
/// Where `--serve` listens (the demo has 8000).
const PORT: u16 = 8001;

/// The built site.
pub fn site_dir() -> PathBuf {
    target_dir().join("docs")
}

/// Installs mdBook (without its own server and file watcher: `--serve`
/// uses the task runner's) when it is missing or another version. pdoc
/// comes with the build venv ([`crate::python_env::ensure_python_envs`]), TypeDoc and
/// Chromium with the demo's tools ([`web::ensure_web_tools`]).
pub fn ensure_mdbook() -> Result {
    let have = web::installed("mdbook", &["--version"]).unwrap_or_default();
    if have.trim() != format!("mdbook v{MDBOOK_VERSION}") {
        run(cmd(
            "cargo",
            &[
                "install",
                "mdbook",
                "--version",
                MDBOOK_VERSION,
                "--locked",
                "--no-default-features",
                "--features",
                "search",
            ],
        ))?;
    }
    Ok(())
}

/// What `cargo xtask docs` does besides building the site.
pub struct Options {
    /// Build the wheel and the wasm package first (a test run has built them).
    pub packages: bool,
    /// Take the screenshot of the served site (the docs suite's check).
    pub screenshot: bool,
    /// Serve the site on 127.0.0.1 until Ctrl-C.
    pub serve: bool,
}

/// `cargo xtask docs`: builds the site, checks its links, then takes the
/// screenshot and serves it as `options` say.
pub fn docs(options: &Options) -> Result {
    if options.packages {
        build_python_package()?;
        web::build_package()?;
    }
    build()?;
    let site = site_dir();
    let checked = check_links(&site)?;
    println!(
        "\nlinks: {} internal links and anchors in {} pages, and the README's, all found",
        checked.links, checked.pages
    );
    if options.screenshot {
        let url = web::serve_dir(&site, 0, vec![])?;
        let mut shot = cmd("node", &["docs/tests/screenshot.mjs"]);
        shot.env("DOCS_URL", &url)
            .env("SCREENSHOT", target_dir().join("docs-screenshot.png"));
        run(shot)?;
    }
    println!(
        "\nthe guide and the API references are in {}",
        site.display()
    );
    if options.serve {
        let url = web::serve_dir(&site, PORT, vec![])?;
        println!("the bytelens docs are at {url} (Ctrl-C stops it)");
        loop {
            std::thread::park();
        }
    }
    Ok(())
}

/// The guide, then each reference under `api/`: mdBook empties its build
/// folder first, so it goes first.
fn build() -> Result {
    let site = site_dir();
    let api = site.join("api");
    let mut book = cmd("mdbook", &["build"]);
    book.current_dir(root().join("docs"));
    run(book)?;

    // Rust: the two crates users depend on, with the gpu feature, warnings
    // (a broken intra-doc link) as errors.
    let mut rustdoc = cmd(
        "cargo",
        &[
            "doc",
            "--no-deps",
            "-p",
            "bytelens-core",
            "-p",
            "bytelens",
            "--features",
            "bytelens/gpu",
        ],
    );
    rustdoc.env("RUSTDOCFLAGS", "-D warnings");
    run(rustdoc)?;
    copy_dir(&target_dir().join("doc"), &api.join("rust"))?;
    // rustdoc's own pages (help, settings) link to an index of the crates,
    // which it writes only with an unstable flag.
    let index = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
        <title>bytelens: Rust API</title></head><body><h1>bytelens: Rust API</h1><ul>\
        <li><a href=\"bytelens/index.html\">bytelens</a>: the native crate (Buffer, \
        SharedBuffer, MappedFile, the copy kernels, gpu)</li>\
        <li><a href=\"bytelens_core/index.html\">bytelens-core</a>: the no_std core \
        (Layout, View, Plan, file headers)</li></ul></body></html>\n";
    fs::write(api.join("rust/index.html"), index).map_err(|e| e.to_string())?;

    // Python: the installed wheel (its docstrings and type stubs).
    let out = api.join("python").display().to_string();
    let mut pdoc = cmd(
        &venv_python(BUILD_ENV),
        &[
            "-m",
            "pdoc",
            "bytelens",
            "bytelens.gpu",
            "--no-show-source",
            "-o",
            &out,
        ],
    );
    without_rust(&mut pdoc);
    run(pdoc)?;

    // JavaScript: the demo's build of the package, a superset of the published one.
    let typedoc = web::demo_dir().join("node_modules/.bin/typedoc");
    let mut js = cmd(
        &typedoc.display().to_string(),
        &["--options", "docs/typedoc.json"],
    );
    js.args(["--out", &api.join("js").display().to_string()]);
    run(js)
}

/// Copies the folder `from` into `to` (made anew).
fn copy_dir(from: &Path, to: &Path) -> Result {
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            fs::copy(&path, &dest).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// The `docs` suite: the site, built and checked ([`docs`] with `--test`),
/// then the README's and the guide's examples in each language.
pub fn steps(run: &Run) -> Vec<Step> {
    let mut site = xtask_step("docs", run);
    site.arg("--test");
    let mut python = cmd(
        &venv_python(BUILD_ENV),
        &[
            "-m",
            "pytest",
            "tests/python/test_examples.py",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
    );
    require_gpu(&mut python);
    without_rust(&mut python);
    let js = cmd("node", &["--test", "docs/tests/examples.test.mjs"]);
    let mut rust = cmd(
        "cargo",
        &[
            "test",
            "-p",
            "bytelens",
            "--features",
            "gpu",
            "--doc",
            "guide",
        ],
    );
    rust.env("RUSTDOCFLAGS", "--cfg bytelens_guide");
    require_gpu(&mut rust);
    vec![
        (
            "the site: guide, API references, links, the first page in Chromium".into(),
            site,
        ),
        (
            "the README's and the guide's Python examples".into(),
            python,
        ),
        ("their JavaScript examples, in Node".into(), js),
        (
            "their Rust examples, as doctests (gpu included)".into(),
            rust,
        ),
    ]
}
