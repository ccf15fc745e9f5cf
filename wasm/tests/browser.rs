//! The wasm package in a real browser (`wasm-pack test --headless --chrome`).
#![cfg(target_arch = "wasm32")]

mod common;

use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn every_vector_agrees_with_data_view() {
    assert_eq!(common::vectors(), 64);
}

#[wasm_bindgen_test]
fn random_layouts_agree_with_data_view() {
    let (ok, out_of_bounds, misaligned) = common::random_layouts(1000);
    assert!(
        ok > 150 && out_of_bounds > 100 && misaligned > 30,
        "{ok} {out_of_bounds} {misaligned}"
    );
}

#[wasm_bindgen_test]
fn typed_views_detach_on_memory_growth_and_fresh_ones_do_not() {
    common::memory_growth();
}
