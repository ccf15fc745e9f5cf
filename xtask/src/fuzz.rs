//! `cargo xtask fuzz`: the libFuzzer targets of `fuzz/` (a crate of its
//! own, outside the workspace), built by cargo-fuzz on nightly with
//! AddressSanitizer and overflow checks into `fuzz/target/`.
//!
//! Each run starts from three corpus folders: `fuzz/corpus/TARGET` (what
//! earlier runs found, where libFuzzer adds new inputs; not committed),
//! `fuzz/seeds/TARGET` (written here from `tests/vectors` before every run)
//! and `fuzz/regressions/TARGET` (committed inputs that once failed, each
//! replayed first). A failure leaves its input in `fuzz/artifacts/TARGET/`.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::util::{Result, Run, Step, cmd, root, run, run_logged_together, rustup_list};

/// The targets, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: [&str; 5] = ["layout", "plan", "header", "args", "files"];

/// How long each target runs when no `--time` or `--runs` is given, and in
/// the full test run: a smoke test that the targets build, replay their
/// seeds and regressions, and survive a short while.
pub const SMOKE_SECONDS: u64 = 20;

const NIGHTLY: &str = "nightly";

/// The vector files whose cases seed the `layout` target, in the order
/// `fuzz/src/vectors.rs` numbers them.
const LAYOUT_VECTORS: [&str; 4] = ["dtypes.json", "errors.json", "seeds.json", "strided.json"];

/// Plans as `PlanSpec::to_text` writes them, for the `plan` target: the
/// README's and the tests' plans, every dtype, both byte orders, unions.
const PLAN_SEEDS: [&str; 4] = [
    "Work\nA <f4 4\nB <f4 3\nunion\nD <i4 7",
    "Seed\nhalves <i2 8\nunion\nwords <i4 4",
    "Frame\ntag |u1\nflag |b1\nxy >f8 2 3\nt <f2 4\nb <bfloat16 2\nunion\nraw |u1 64",
    "Counts\nn <u8\nm >i8 1 1 1 1\nunion\nh <u2 0\nunion\ns >u4 3",
];

/// Where `cargo xtask fuzz` keeps `what` for `target`.
fn dir(what: &str, target: &str) -> PathBuf {
    root().join("fuzz").join(what).join(target)
}

/// Installs nightly (the minimal profile) and cargo-fuzz, each unless present.
pub fn ensure_cargo_fuzz() -> Result {
    let toolchains = rustup_list(&["toolchain", "list"])?;
    if !toolchains.iter().any(|t| t.starts_with(NIGHTLY)) {
        let install = ["toolchain", "install", NIGHTLY, "--profile", "minimal"];
        run(cmd("rustup", &install))?;
    }
    let present = cmd("cargo", &["fuzz", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !present {
        run(cmd("cargo", &["install", "cargo-fuzz", "--locked"]))?;
    }
    Ok(())
}

/// The `fuzz` suite: the fuzz crate's own tests, lints and formatting (it
/// is outside the workspace, so `rust` and `lint` do not see it), then
/// every target for [`SMOKE_SECONDS`], seeds and regressions first.
pub fn steps(_: &Run) -> Vec<Step> {
    let manifest = root().join("fuzz/Cargo.toml").display().to_string();
    let target_dir = root().join("fuzz/target").display().to_string();
    let cargo = |args: &[&str]| {
        let mut c = cmd("cargo", args);
        c.args(["--manifest-path", &manifest]);
        c
    };
    let mut clippy = cargo(&["clippy", "--all-targets", "--target-dir", &target_dir]);
    clippy.args(["--", "-D", "warnings"]);
    let mut list = vec![
        ("rustfmt".into(), cargo(&["fmt", "--check"])),
        ("clippy".into(), clippy),
        (
            "its tests: the vectors, the regressions".into(),
            cargo(&["test", "--target-dir", &target_dir]),
        ),
        ("build the targets".into(), build()),
    ];
    let secs = SMOKE_SECONDS.to_string();
    // Two targets at a time: each libFuzzer run is one thread.
    let mut c = cmd("cargo", &["xtask", "fuzz", "--time", &secs, "--jobs", "2"]);
    // The suite's needs are installed already (or not wanted).
    c.env("BYTELENS_NO_INSTALL", "1");
    let label = format!(
        "fuzz {} for {secs} s each, two at a time",
        TARGETS.join(", ")
    );
    list.push((label, c));
    list
}

/// Writes the seeds: each vector case as the input that starts from it
/// (four zero bytes, the first variant, then the case's number), and each
/// plan of [`PLAN_SEEDS`] as text (four zero bytes, then the text).
pub fn write_seeds() -> Result {
    let vectors = root().join("tests/vectors");
    let cases = |file: &str| -> Result<usize> {
        let text = fs::read_to_string(vectors.join(file)).map_err(|e| format!("{file}: {e}"))?;
        let json: Value = serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
        Ok(json["cases"].as_array().map_or(0, Vec::len))
    };
    let mut layout = vec![];
    for file in LAYOUT_VECTORS {
        let stem = file.trim_end_matches(".json");
        for i in 0..cases(file)? {
            let n = layout.len() as u8;
            layout.push((format!("{stem}-{i}"), vec![0, 0, 0, 0, n]));
        }
    }
    write_all("layout", layout.into_iter())?;
    let args = (0..cases("args.json")?).map(|i| (format!("args-{i}"), vec![0, 0, 0, 0, i as u8]));
    write_all("args", args)?;
    let plans = PLAN_SEEDS.iter().enumerate().map(|(i, text)| {
        let mut bytes = vec![0; 4];
        bytes.extend_from_slice(text.as_bytes());
        (format!("plan-{i}"), bytes)
    });
    write_all("plan", plans)?;
    write_all("files", file_seeds().into_iter())
}

/// Small `.npy` and safetensors files for the `files` target, in the forms
/// numpy and the safetensors package write (the Python tests check bytelens
/// against those writers themselves).
fn file_seeds() -> Vec<(String, Vec<u8>)> {
    let npy = |version: u8, dict: &str, data: usize| {
        let lead = if version == 1 { 10 } else { 12 };
        let mut header = format!("{dict:<width$}", width = 63 - lead);
        header.push('\n');
        let mut file = b"\x93NUMPY".to_vec();
        file.extend([version, 0]);
        if version == 1 {
            file.extend((header.len() as u16).to_le_bytes());
        } else {
            file.extend((header.len() as u32).to_le_bytes());
        }
        file.extend(header.as_bytes());
        file.resize(file.len() + data, 7);
        file
    };
    let safetensors = |json: &str, data: usize| {
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend(json.as_bytes());
        file.resize(file.len() + data, 7);
        file
    };
    vec![
        (
            "npy-1".into(),
            npy(
                1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
                48,
            ),
        ),
        (
            "npy-2".into(),
            npy(
                2,
                "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }",
                12,
            ),
        ),
        (
            "npy-3".into(),
            npy(
                3,
                "{'descr': '|b1', 'fortran_order': False, 'shape': (), }",
                1,
            ),
        ),
        (
            "safetensors".into(),
            safetensors(
                r#"{"__metadata__":{"format":"np"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}}"#,
                22,
            ),
        ),
    ]
}

/// Replaces `fuzz/seeds/TARGET` with `seeds` (name, bytes).
fn write_all(target: &str, seeds: impl Iterator<Item = (String, Vec<u8>)>) -> Result {
    let dir = dir("seeds", target);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, bytes) in seeds {
        fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// How long each target runs.
pub struct Budget {
    pub seconds: Option<u64>,
    pub runs: Option<u64>,
    /// Targets fuzzed at once (`--jobs`, at least 1): libFuzzer runs one
    /// thread, so two keep both cores of a two-core machine busy.
    pub jobs: u64,
}

/// `cargo fuzz SUBCOMMAND` on nightly, with debug assertions and overflow
/// checks, built into `fuzz/target/`.
fn cargo_fuzz(subcommand: &str) -> Command {
    let mut c = cmd("rustup", &["run", NIGHTLY, "cargo", "fuzz", subcommand]);
    c.arg("--debug-assertions")
        .arg("--target-dir")
        .arg(root().join("fuzz/target"));
    // A CARGO_TARGET_DIR would otherwise mix nightly sanitizer builds into
    // the main target folder.
    c.env_remove("CARGO_TARGET_DIR");
    c
}

/// Builds every target.
pub fn build() -> Command {
    cargo_fuzz("build")
}

/// The command that fuzzes `target` within `budget`, with `extra`
/// libFuzzer flags.
fn command(target: &str, budget: &Budget, extra: &[String]) -> Command {
    let mut c = cargo_fuzz("run");
    c.arg(target);
    for what in ["corpus", "seeds", "regressions"] {
        c.arg(dir(what, target));
    }
    // Committed inputs (fuzz/inputs/TARGET: the GGUF files of every type),
    // after the corpus: libFuzzer writes what it finds into the first folder.
    c.args([dir("inputs", target)].into_iter().filter(|d| d.is_dir()));
    c.arg("--");
    let seconds = match budget {
        Budget {
            seconds: None,
            runs: None,
            ..
        } => Some(SMOKE_SECONDS),
        Budget { seconds, .. } => *seconds,
    };
    if let Some(s) = seconds {
        c.arg(format!("-max_total_time={s}"));
    }
    if let Some(n) = budget.runs {
        c.arg(format!("-runs={n}"));
    }
    // One input taking 10 s is a hang: reported with its input, not waited out.
    c.args(["-timeout=10", "-print_final_stats=1"]);
    if target == "files" {
        // Its `BIG!` inputs are headers of up to 100 MB (fuzz/src/files.rs):
        // read in proportion to their size, they stay below these (under
        // AddressSanitizer, which adds its own shadow and quarantine); a
        // reader that is quadratic, or that holds a header at 16 times its
        // size, does not. libFuzzer takes the last of a repeated flag, so
        // these come after the defaults and before `extra`.
        // A 100 MB header, with the building of it, takes 8 to 35 s
        // there (millions of keys, each allocated through ASan), in under
        // 1 GB; the quadratic checks took hours.
        c.args(["-timeout=120", "-rss_limit_mb=1536", "-malloc_limit_mb=512"]);
    }
    c.args(extra);
    c
}

/// Makes the corpus folders libFuzzer reads that do not exist yet.
pub fn make_dirs(target: &str) -> Result {
    for what in ["corpus", "seeds", "regressions"] {
        let dir = dir(what, target);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

/// `cargo xtask fuzz [TARGET...] [--time S] [--runs N] [-- FLAG...]`.
pub fn fuzz(targets: &[String], budget: &Budget, extra: &[String]) -> Result {
    let targets: Vec<&str> = if targets.is_empty() {
        TARGETS.to_vec()
    } else {
        targets.iter().map(String::as_str).collect()
    };
    if let Some(unknown) = targets.iter().find(|t| !TARGETS.contains(t)) {
        return Err(format!(
            "fuzz: no target named '{unknown}' (targets: {})",
            TARGETS.join(" ")
        ));
    }
    write_seeds()?;
    for target in &targets {
        make_dirs(target)?;
    }
    if budget.jobs <= 1 {
        for target in &targets {
            run(command(target, budget, extra))?;
        }
        return Ok(());
    }
    // Built once first, so that the runs started together do not each wait
    // on cargo's lock to find the build done.
    run(build())?;
    let logs = root().join("fuzz/target/logs");
    for group in targets.chunks(budget.jobs as usize) {
        let commands = group.iter().map(|t| command(t, budget, extra));
        run_logged_together(commands, &logs)?;
    }
    Ok(())
}
