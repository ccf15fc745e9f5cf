//! What the GPU test files share: the one context, or a skip with the
//! reason where there is no adapter and none is required.

use std::sync::OnceLock;

use bytelens::gpu::{GpuContext, GpuError};

/// The shared default context, or `None` (with a message) on a developer
/// machine without Vulkan.
pub fn gpu() -> Option<&'static GpuContext> {
    static GPU: OnceLock<Result<GpuContext, GpuError>> = OnceLock::new();
    match GPU.get_or_init(GpuContext::new) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            let required = ["BYTELENS_REQUIRE_GPU", "CI"]
                .iter()
                .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
            assert!(!required, "a GPU adapter is required here: {err}");
            eprintln!("skipping: {err}");
            None
        }
    }
}
