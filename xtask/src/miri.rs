//! The `miri` suite: bytelens-core's tests and bytelens' unit tests under
//! Miri, on nightly: in the default run those of the modules with `unsafe`
//! ([`CORE_UNSAFE`], [`NATIVE_UNSAFE`]), with `test all` every one.

use std::time::Instant;

use crate::util::{
    Result, Run, Step, cmd, run, run_logged_together, rustup_list, tally, target_dir, xtask_step,
};

const NIGHTLY: &str = "nightly";

pub fn steps(run: &Run) -> Vec<Step> {
    let mut c = xtask_step("miri-test", run);
    let label = if run.all {
        c.env("BYTELENS_TEST_ALL", "1");
        "bytelens-core and bytelens' unit tests, side by side"
    } else {
        "the tests of bytelens-core's and bytelens' unsafe code, side by side"
    };
    vec![(label.into(), c)]
}

/// The core's tests Miri runs in the default run: those of the one module
/// with `unsafe` (view.rs: views over bytes, checked once and then read
/// unchecked) and every vector read through a view. The rest of the
/// core's tests (layout arithmetic against its model, headers, plans,
/// statistics, quoting) are safe code that the rust suite runs natively;
/// `test all` runs them under Miri too (testing.md).
const CORE_UNSAFE: [&str; 2] = ["view::", "every_vector_passes"];

/// The native crate's unit tests Miri runs in the default run: the modules
/// with `unsafe` that Miri can run (aligned buffers, shared memory and its
/// locks, the ring, the copy kernels' tiles) and the walk that drives the
/// tiles. The conversions' and the dequantisers' `unsafe` is their x86 and
/// NEON kernels, which are not built under Miri (their tests run the
/// portable code there), the files layer's one `unsafe` is the mapping,
/// which Miri cannot run, and the planners are safe code: `test all` runs
/// their tests under Miri too.
const NATIVE_UNSAFE: [&str; 5] = ["buffer::", "shared::", "ring::", "copy::tile", "copy::walk"];

/// `cargo xtask miri-test`: the two Miri runs at once (Miri interprets one
/// thread: two runs keep both cores busy, and take about as long each),
/// each in a target folder of its own so that neither waits on the other's
/// cargo lock. Nothing is sampled beyond what the tests sample under Miri
/// themselves (`cfg(miri)`: fewer property cases, the convert tests' pairs).
pub fn miri_test() -> Result {
    let all = std::env::var_os("BYTELENS_TEST_ALL").is_some();
    // Each run: its name, cargo's arguments and its target folder.
    let mut core = vec!["-p", "bytelens-core"];
    let mut native = vec!["-p", "bytelens", "--lib"];
    if !all {
        core.extend(["--lib", "--test", "vectors", "--"]);
        core.extend(CORE_UNSAFE);
        native.push("--");
        native.extend(NATIVE_UNSAFE);
    }
    let runs = [
        ("bytelens-core", core.as_slice(), "miri-core"),
        ("bytelens", native.as_slice(), "miri-native"),
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
