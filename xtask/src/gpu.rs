//! The `gpu` suite: bytelens' GPU tests (feature `gpu`) on Vulkan, on
//! Mesa's lavapipe where there is no GPU; a missing adapter fails them.

use crate::util::{Run, Step, cmd, require_gpu};

pub fn steps(_: &Run) -> Vec<Step> {
    let mut test = cmd("cargo", &["test", "-p", "bytelens", "--features", "gpu"]);
    require_gpu(&mut test);
    vec![("round trips and a Plan in a shader, on Vulkan".into(), test)]
}
