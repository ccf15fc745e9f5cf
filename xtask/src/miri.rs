//! The `miri` suite: bytelens-core's tests and bytelens' unit tests (its
//! `Buffer`) under Miri, on nightly.

use std::time::Instant;

use crate::util::{
    Result, Run, Step, cmd, run, run_logged_together, rustup_list, tally, target_dir, xtask_step,
};

const NIGHTLY: &str = "nightly";

pub fn steps(run: &Run) -> Vec<Step> {
    vec![(
        "bytelens-core and bytelens' Buffer, side by side".into(),
        xtask_step("miri-test", run),
    )]
}

/// `cargo xtask miri-test`: the two Miri runs at once (Miri interprets one
/// thread: two runs keep both cores busy, and take about as long each),
/// each in a target folder of its own so that neither waits on the other's
/// cargo lock. Nothing is sampled beyond what the tests sample under Miri
/// themselves (`cfg(miri)`: fewer property cases, the convert tests' pairs).
pub fn miri_test() -> Result {
    // Each run: its name, cargo's arguments and its target folder.
    let runs = [
        (
            "bytelens-core",
            ["-p", "bytelens-core"].as_slice(),
            "miri-core",
        ),
        (
            "bytelens' Buffer",
            ["-p", "bytelens", "--lib"].as_slice(),
            "miri-native",
        ),
    ];
    let start = Instant::now();
    let commands = runs.iter().map(|&(_, args, target)| {
        let mut c = cmd("rustup", &["run", NIGHTLY, "cargo", "miri", "test"]);
        // The vectors test reads tests/vectors from disk, which Miri's isolation forbids.
        c.args(args)
            .env("MIRIFLAGS", "-Zmiri-disable-isolation")
            .env("CARGO_TARGET_DIR", target_dir().join(target));
        c
    });
    let logs = run_logged_together(commands, &target_dir().join("miri-logs"))?;
    let tally: Vec<String> = runs
        .iter()
        .zip(&logs)
        .map(|(&(name, _, _), log)| {
            let binaries = tally(log, |_| false);
            let passed: u64 = binaries.iter().map(|b| b.passed).sum();
            format!(
                "{name}: {passed} tests passed in {} binaries",
                binaries.len()
            )
        })
        .collect();
    println!(
        "\nMiri: {}, in {:.1}s",
        tally.join("; "),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Installs nightly with Miri and rust-src, each unless there, and
/// Miri's sysroot.
pub fn ensure_miri() -> Result {
    let toolchains = rustup_list(&["toolchain", "list"])?;
    if !toolchains.iter().any(|t| t.starts_with(NIGHTLY)) {
        run(cmd(
            "rustup",
            &[
                "toolchain",
                "install",
                NIGHTLY,
                "--profile",
                "minimal",
                "--component",
                "miri,rust-src",
                "--allow-downgrade",
            ],
        ))?;
    }
    let nightly = rustup_list(&["component", "list", "--installed", "--toolchain", NIGHTLY])?;
    for component in ["miri", "rust-src"] {
        if !nightly.iter().any(|c| c.starts_with(component)) {
            run(cmd(
                "rustup",
                &["component", "add", component, "--toolchain", NIGHTLY],
            ))?;
        }
    }
    // Builds Miri's sysroot once; afterwards it only checks it.
    run(cmd("rustup", &["run", NIGHTLY, "cargo", "miri", "setup"]))
}
