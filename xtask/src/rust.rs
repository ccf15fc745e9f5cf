//! The `rust` suite: every crate's unit, integration and doctests (the
//! README's Rust examples among them).

use crate::util::{Run, Step, cmd};

pub fn steps(_: &Run) -> Vec<Step> {
    let test = cmd("cargo", &["test", "--workspace"]);
    vec![("tests and doctests".into(), test)]
}
