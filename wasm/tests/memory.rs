//! Wasm memory run out, under Node (`wasm-pack test --node -- --test
//! memory --features files`): a binary of its own, as its test takes the
//! instance's memory to its 4 GiB, which never shrinks (the other suites
//! watch memory grow).
#![cfg(all(target_arch = "wasm32", feature = "files"))]

use bytelens_wasm::JsTally;
use js_sys::{JsString, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

fn field(err: &JsValue, key: &str) -> String {
    Reflect::get(err, &key.into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

/// A `Tally` whose 512 KiB cannot be had is a `RangeError` (8,188 of them
/// never freed aborted the instance at 4 GiB: `RuntimeError:
/// unreachable`). Wasm memory is taken in blocks no page of which is
/// touched (so the process's memory hardly grows), then given back.
#[wasm_bindgen_test]
fn a_tally_past_wasm_memory_is_a_range_error() {
    let dtype = JsString::from("<f4");
    let mut hog: Vec<Vec<u8>> = Vec::new();
    let mut block = 256usize << 20;
    while block >= 256 << 10 {
        let mut v = Vec::new();
        if v.try_reserve_exact(block).is_ok() {
            hog.push(v);
        } else {
            block /= 2;
        }
    }
    let taken: usize = hog.iter().map(Vec::capacity).sum();
    assert!(taken > 3 << 30, "{taken} bytes taken");
    let err: JsValue = JsTally::new(&dtype).map(|_| ()).unwrap_err().into();
    assert_eq!(field(&err, "kind"), "OutOfMemory");
    assert_eq!(
        field(&err, "message"),
        "a Tally's counts: 524288 bytes do not fit in wasm memory (4 GiB in all)"
    );
    drop(hog);
    assert!(JsTally::new(&dtype).is_ok());
}
