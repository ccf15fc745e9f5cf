//! `cargo xtask demo [FILE]`, the web demo built and served, and the
//! `demo` suite: the demo's unit tests in Node and its end-to-end test in
//! Chromium.

use std::path::PathBuf;

use crate::util::{Result, Run, Step, cmd, installing};
use crate::web;

pub fn steps(run: &Run) -> Vec<Step> {
    let unit = cmd("node", &["--test", "web-demo/tests/numbers.test.mjs"]);
    let mut webgpu = web::browser_test(&run.demo_url, "web-demo/tests/webgpu.mjs");
    // `test all` loads the 5 GiB file into GPU buffers too.
    if run.all {
        webgpu.env("DEMO_GPU_HUGE", "1");
    }
    vec![
        ("unit tests".into(), unit),
        ("end to end in Chromium".into(), web::e2e(&run.demo_url)),
        (
            "WebGPU in Chromium (SwiftShader): uploadView, loadToGpu, every type dequantised"
                .into(),
            webgpu,
        ),
        (
            "the tensor panel on WebGPU against wasm in Chromium (SwiftShader)".into(),
            web::browser_test(&run.demo_url, "web-demo/tests/webgpu-demo.mjs"),
        ),
    ]
}

/// `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`)
/// written `%XX`, as a URL's path segment or query value.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `cargo xtask demo [FILE]`: builds the wasm package and serves the demo
/// (with FILE, opened in its file view) until Ctrl-C.
pub fn demo(file: Option<PathBuf>, install: bool) -> Result {
    if let Some(file) = &file {
        // Before the build: a device or a FIFO could not be served.
        web::served_file(file).map_err(|e| format!("demo: {e}"))?;
    }
    installing(install, || web::ensure_web_tools(false))?;
    web::build_package()?;
    let url = web::serve(8000, file.iter().cloned().collect())?;
    let url = match file.as_deref().and_then(|f| f.file_name()) {
        // Encoded twice: once for the server's path, once for the query.
        Some(name) => {
            let path = format!("/file/{}", percent_encode(&name.to_string_lossy()));
            format!("{url}?file={}", percent_encode(&path))
        }
        None => url,
    };
    println!("\nthe bytelens demo is at {url} (Ctrl-C stops it)");
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::percent_encode;

    #[test]
    fn percent_encoding_keeps_only_unreserved_bytes() {
        assert_eq!(
            percent_encode("a b#&%/é.~_-Z9"),
            "a%20b%23%26%25%2F%C3%A9.~_-Z9"
        );
    }
}
