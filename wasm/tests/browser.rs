//! The wasm package in a real browser (`wasm-pack test --headless --chrome`).
#![cfg(target_arch = "wasm32")]

mod common;

use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

common::shared_tests!(layouts: 1000, args: 1000);

#[wasm_bindgen_test]
fn errors_are_range_errors_with_the_core_s_kind_and_message() {
    let buf = bytelens_wasm::Buffer::new(&3.0.into()).unwrap();
    let err = common::thrown(buf.read(&common::js("<i2"), None));
    assert!(err.is_instance_of::<js_sys::RangeError>());
    common::assert_thrown(
        &err,
        "ItemsizeMismatch",
        "3 bytes is not a multiple of 2, the size of int16",
    );
}
