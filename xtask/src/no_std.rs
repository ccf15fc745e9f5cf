//! The `no-std` suite (bytelens-core built without std for a
//! microcontroller and the browser), and the quick `core` loop, which is
//! bytelens-core's tests and doctests followed by the same builds.

use crate::util::{Result, Run, Step, cmd, run, rustup_list};

/// Targets the core must build for without std: a microcontroller and the browser.
pub const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "wasm32-unknown-unknown"];

/// The `core` suite: bytelens-core's tests and doctests (every feature),
/// then the `no-std` suite's builds.
pub fn core_steps(run: &Run) -> Vec<Step> {
    let test = ["test", "-p", "bytelens-core", "--all-features"];
    let mut list = vec![("tests and doctests".into(), cmd("cargo", &test))];
    list.extend(steps(run));
    list
}

pub fn steps(_: &Run) -> Vec<Step> {
    NO_STD_TARGETS
        .map(|target| {
            let build = ["build", "-p", "bytelens-core", "--target", target];
            (format!("no_std build, {target}"), cmd("cargo", &build))
        })
        .into()
}

/// Adds the [`NO_STD_TARGETS`] where rustup has not.
pub fn ensure_no_std_targets() -> Result {
    let targets = rustup_list(&["target", "list", "--installed"])?;
    for target in NO_STD_TARGETS {
        if !targets.iter().any(|t| t == target) {
            run(cmd("rustup", &["target", "add", target]))?;
        }
    }
    Ok(())
}
