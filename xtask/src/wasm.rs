//! The `wasm` suite: the wasm package's tests (wasm-pack) in Node and in
//! Chromium, then its release build, wasm-opt'd and size checked.

use crate::util::{Run, Step, xtask_step};
use crate::web;

pub fn steps(run: &Run) -> Vec<Step> {
    vec![
        (
            "tests in Node".into(),
            web::wasm_pack_test(&["--node"], &["node", "headers", "memory"]),
        ),
        (
            "tests in Chromium".into(),
            web::wasm_pack_test(&["--headless", "--chrome"], &["browser"]),
        ),
        (
            "release build, wasm-opt, size".into(),
            xtask_step("build-wasm", run),
        ),
    ]
}
