//! The wasm package under Node (`wasm-pack test --node`).
#![cfg(target_arch = "wasm32")]

mod common;

use common::js;

use bytelens_wasm::{Buffer, ByteSource, JsLayout, Plan};
use js_sys::{Array, JsString, Object, Reflect};
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
    let buf = Buffer::new(3.0).unwrap();
    let err = buf.read(&js("<i2"), None).err().unwrap();
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
        .read(&js("<i2"), Some(layout.unchecked_into()))
        .err()
        .unwrap();
    assert_eq!(common::kind(&err), "Misaligned");
}

#[wasm_bindgen_test]
fn bad_values_write_nothing() {
    let mut buf = Buffer::new(4.0).unwrap();
    let values: Array = [1.0, 300.0].iter().map(|&v| JsValue::from_f64(v)).collect();
    let err = buf
        .write(&js("|u1"), None, values.unchecked_into())
        .unwrap_err();
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert_eq!(
        buf.bytes(),
        vec![0, 0, 0, 0],
        "the valid first value was not written either"
    );
    let values: Array = [1.5].iter().map(|&v| JsValue::from_f64(v)).collect();
    let err = buf
        .write(&js("<i2"), None, values.unchecked_into())
        .err()
        .unwrap();
    let message = Reflect::get(&err, &"message".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(message, "1.5 is not a value of int16");
    let values = Array::of1(&JsValue::from_str("7"));
    let err = buf
        .write(&js("<i2"), None, values.unchecked_into())
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
    let padding = Array::from(&plan.padding(1.0).unwrap());
    assert_eq!(padding.length(), 1);
    assert!(plan.wgsl().unwrap().contains("struct Work1"));
    let bad = plan.union(specs(&[("F", "<i2", 2.0)])).unwrap();
    assert!(bad.wgsl().is_err(), "WGSL cannot share int16");
}

/// Reading `prop` of a JS value.
fn get(value: &JsValue, prop: &str) -> JsValue {
    Reflect::get(value, &prop.into()).unwrap()
}

fn message(err: &JsValue) -> String {
    get(err, "message").as_string().unwrap()
}

#[wasm_bindgen_test]
fn a_typed_view_kept_after_free_never_reaches_another_buffer() {
    let a = Buffer::new(64.0).unwrap();
    let stale: js_sys::Int32Array = a.typed(&js("<i4"), None, None).unwrap().unchecked_into();
    drop(a); // JS: a.free()
    let c = Buffer::new(64.0).unwrap();
    for i in 0..16 {
        stale.set_index(i, 999);
    }
    let values = Array::from(&c.read(&js("<i4"), None).unwrap());
    assert!(
        values.iter().all(|v| v.as_f64() == Some(0.0)),
        "the new buffer was written through a stale view"
    );
}

#[wasm_bindgen_test]
fn a_throwing_getter_is_an_error_not_an_unwind() {
    let make = js_sys::Function::new_no_args(
        "return new Proxy([1, 2], { get(t, k) { if (k === '1') throw new Error('boom'); return Reflect.get(t, k); } })",
    );
    let values = make.call0(&JsValue::NULL).unwrap();
    let mut buf = Buffer::new(2.0).unwrap();
    let err = buf
        .write(&js("|u1"), None, values.unchecked_into())
        .unwrap_err();
    assert_eq!(message(&err), "boom");
    assert_eq!(buf.bytes(), vec![0, 0], "nothing written");
    let make =
        js_sys::Function::new_no_args("return { get A() { throw new Error('no fields'); } }");
    let fields = make.call0(&JsValue::NULL).unwrap();
    let err = Plan::new(None)
        .unwrap()
        .struct_(fields.unchecked_into())
        .err()
        .unwrap();
    assert_eq!(message(&err), "no fields");
}

#[wasm_bindgen_test]
fn arguments_of_the_wrong_kind_are_type_errors() {
    let buf = Buffer::new(8.0).unwrap();
    let not_a_string: JsString = JsValue::from_f64(4.0).unchecked_into();
    let err = buf.read(&not_a_string, None).err().unwrap();
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(message(&err), "a dtype is a string such as \"<i4\", not 4");
    let mut buf = Buffer::new(8.0).unwrap();
    let err = buf
        .write(&js("|u1"), None, JsValue::from_f64(3.0).unchecked_into())
        .unwrap_err();
    assert_eq!(message(&err), "values must be an array, not 3");
}

#[wasm_bindgen_test]
fn numbers_that_do_not_fit_are_refused_not_wrapped() {
    for bad in [2f64.powi(32) + 8.0, 1.5, f64::NAN, -1.0] {
        assert!(Buffer::new(bad).is_err(), "Buffer({bad})");
    }
    let mut buf = Buffer::new(4.0).unwrap();
    let bytes = common::byte_source(&[9]);
    let err = buf.set_bytes(2f64.powi(31), bytes).unwrap_err();
    assert_eq!(
        message(&err),
        "the view reaches bytes 2147483648..2147483649 but the buffer holds 4 bytes"
    );
    assert_eq!(common::kind(&err), "OutOfBounds");
    let err = buf
        .set_bytes(2f64.powi(32), common::byte_source(&[9]))
        .unwrap_err();
    assert_eq!(
        message(&err),
        "offset must be a whole number from 0 to 4294967295, not 4294967296"
    );
    let too_big: ByteSource = Array::of1(&JsValue::from_f64(300.0)).unchecked_into();
    assert!(buf.set_bytes(0.0, too_big).is_err());
    assert_eq!(buf.bytes(), vec![0, 0, 0, 0]);
    let axis: JsLayout = JsLayout::new(&js("|u1"), options_with_shape(10)).unwrap();
    let all = axis
        .slice(0.0, Some(0.0), Some(2f64.powi(31)), None)
        .unwrap();
    assert_eq!(
        Array::from(&all.shape()).get(0).as_f64(),
        Some(10.0),
        "a stop past the end clamps"
    );
    assert!(axis.index(0.0, 1.5).is_err());
    assert!(axis.check(2f64.powi(32) + 40.0).is_err());
}

fn options_with_shape(n: u32) -> bytelens_wasm::LayoutSpec {
    let object = Object::new();
    Reflect::set(&object, &"shape".into(), &Array::of1(&JsValue::from(n))).unwrap();
    object.unchecked_into()
}

#[wasm_bindgen_test]
fn float16_and_bfloat16_writes_round_once() {
    let mut buf = Buffer::new(2.0).unwrap();
    for (dtype, value, expected) in [
        (
            "<f2",
            1.0 + 2f64.powi(-11) + 2f64.powi(-40),
            1.0 + 2f64.powi(-10),
        ),
        (
            "<bfloat16",
            1.0 + 2f64.powi(-8) + 2f64.powi(-30),
            1.0 + 2f64.powi(-7),
        ),
        (">f2", 2f64.powi(-25) + 2f64.powi(-60), 2f64.powi(-24)),
    ] {
        buf.write(
            &js(dtype),
            None,
            Array::of1(&JsValue::from_f64(value)).unchecked_into(),
        )
        .unwrap();
        let read = Array::from(&buf.read(&js(dtype), None).unwrap())
            .get(0)
            .as_f64();
        assert_eq!(read, Some(expected), "{dtype} {value}");
    }
}
