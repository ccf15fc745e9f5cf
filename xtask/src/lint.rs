//! The `lint` suite: rustfmt and clippy (`-D warnings`) over the
//! workspace, every target and feature.

use crate::util::{Result, Run, Step, cmd, run, rustup_list};

pub fn steps(_: &Run) -> Vec<Step> {
    let clippy = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ];
    vec![
        ("rustfmt".into(), cmd("cargo", &["fmt", "--all", "--check"])),
        ("clippy".into(), cmd("cargo", &clippy)),
    ]
}

/// Adds rustfmt and clippy where rustup has not.
pub fn ensure_lint_tools() -> Result {
    let components = rustup_list(&["component", "list", "--installed"])?;
    for component in ["rustfmt", "clippy"] {
        if !components.iter().any(|c| c.starts_with(component)) {
            run(cmd("rustup", &["component", "add", component]))?;
        }
    }
    Ok(())
}
