//! The wasm package under Node (`wasm-pack test --node`).
#![cfg(target_arch = "wasm32")]

mod common;

use bytelens_wasm::{Buffer, Plan};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn every_vector_agrees_with_data_view() {
    assert_eq!(common::vectors(), 64);
}

#[wasm_bindgen_test]
fn random_layouts_agree_with_data_view() {
    let (ok, out_of_bounds, misaligned) = common::random_layouts(3000);
    // Each outcome is exercised, so the test could fail in each way.
    assert!(
        ok > 500 && out_of_bounds > 300 && misaligned > 100,
        "{ok} {out_of_bounds} {misaligned}"
    );
}

#[wasm_bindgen_test]
fn typed_views_detach_on_memory_growth_and_fresh_ones_do_not() {
    common::memory_growth();
}

#[wasm_bindgen_test]
fn errors_are_range_errors_with_the_core_message() {
    let buf = Buffer::new(3).unwrap();
    let err = buf.read("<i2", None).err().unwrap();
    assert_eq!(common::kind(&err), "ItemsizeMismatch");
    let message = Reflect::get(&err, &"message".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(message, "3 bytes is not a multiple of 2, the size of int16");
    let layout = Object::new();
    Reflect::set(&layout, &"offset".into(), &JsValue::from_f64(1.0)).unwrap();
    Reflect::set(
        &layout,
        &"shape".into(),
        &Array::of1(&JsValue::from_f64(1.0)),
    )
    .unwrap();
    let err = buf
        .read("<i2", Some(layout.unchecked_into()))
        .err()
        .unwrap();
    assert_eq!(common::kind(&err), "Misaligned");
}

#[wasm_bindgen_test]
fn bad_values_write_nothing() {
    let mut buf = Buffer::new(4).unwrap();
    let values: Array = [1.0, 300.0].iter().map(|&v| JsValue::from_f64(v)).collect();
    let err = buf.write("|u1", None, values.unchecked_into()).unwrap_err();
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert_eq!(
        buf.bytes(),
        vec![0, 0, 0, 0],
        "the valid first value was not written either"
    );
    let values: Array = [1.5].iter().map(|&v| JsValue::from_f64(v)).collect();
    let err = buf
        .write("<i2", None, values.unchecked_into())
        .err()
        .unwrap();
    let message = Reflect::get(&err, &"message".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(message, "1.5 is not a value of int16");
    let values = Array::of1(&JsValue::from_str("7"));
    let err = buf
        .write("<i2", None, values.unchecked_into())
        .err()
        .unwrap();
    let message = Reflect::get(&err, &"message".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(message, "\"7\" is not a value of int16");
}

#[wasm_bindgen_test]
fn plan_of_the_seed() {
    let specs = |pairs: &[(&str, &str, f64)]| {
        let object = Object::new();
        for &(name, dtype, n) in pairs {
            let spec = Array::of2(&dtype.into(), &Array::of1(&JsValue::from_f64(n)));
            Reflect::set(&object, &name.into(), &spec).unwrap();
        }
        object.unchecked_into()
    };
    let plan = Plan::new(Some("Work".into()))
        .unwrap()
        .struct_(specs(&[
            ("A", "<f4", 4.0),
            ("B", "<f4", 3.0),
            ("C", "<f4", 5.0),
        ]))
        .unwrap()
        .union(specs(&[("D", "<i4", 6.0), ("E", "<i4", 4.0)]))
        .unwrap();
    assert_eq!(plan.nbytes().unwrap(), 48);
    assert_eq!(plan.alternatives().unwrap(), 2);
    let fields = Array::from(&plan.fields().unwrap());
    let offsets: Vec<f64> = fields
        .iter()
        .map(|f| {
            Reflect::get(&f, &"offset".into())
                .unwrap()
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(offsets, [0.0, 16.0, 28.0, 0.0, 24.0]);
    let padding = Array::from(&plan.padding(1).unwrap());
    assert_eq!(padding.length(), 1);
    assert!(plan.wgsl().unwrap().contains("struct Work1"));
    let bad = plan.union(specs(&[("F", "<i2", 2.0)])).unwrap();
    assert!(bad.wgsl().is_err(), "WGSL cannot share int16");
}
