//! `readHeader` for files of 4 GiB and more, under Node
//! (`wasm-pack test --node -- --test headers --features files`): wasm32's
//! `usize` is 32 bits, and model shards are larger than that.
#![cfg(all(target_arch = "wasm32", feature = "files"))]

use bytelens_wasm::read_header;
use js_sys::{JSON, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

/// The first bytes of a safetensors file: the length and the JSON header.
fn safetensors(json: &str) -> Vec<u8> {
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file
}

fn u8a(bytes: &[u8]) -> JsValue {
    js_sys::Uint8Array::from(bytes).into()
}

fn text(value: &JsValue) -> String {
    JSON::stringify(value).unwrap().as_string().unwrap()
}

fn thrown_message(result: Result<JsValue, impl Into<JsValue>>) -> String {
    let err: JsValue = result.map(|_| ()).unwrap_err().into();
    let message = Reflect::get(&err, &"message".into()).unwrap();
    message.dyn_into::<js_sys::JsString>().unwrap().into()
}

#[wasm_bindgen_test]
fn offsets_past_4_gib_are_exact() {
    let length: u64 = 5_368_709_248;
    // A tensor of almost 1 GiB from 4 GiB into the data to the end of the
    // file, and a small one at the start.
    let json = r#"{"big":{"dtype":"F32","shape":[268435424],"data_offsets":[4294967296,5368708992]},"small":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#;
    // Padded with spaces (as the format allows) so that the data starts at
    // a multiple of 128.
    let padded = format!(
        "{json:<width$}",
        width = (8 + json.len()).next_multiple_of(128) - 8
    );
    let head = safetensors(&padded);
    let start = head.len() as u64;
    assert_eq!(start % 128, 0);
    let header = read_header(&u8a(&head), &JsValue::from(length as f64)).unwrap();
    let expected = format!(
        r#"{{"format":"safetensors","version":[0,0],"dataStart":{start},"metadata":[],"arrays":[{{"name":"big","dtype":"F32","descr":"<f4","shape":[268435424],"fortran":false,"offset":{},"nbytes":1073741696,"aligned":true}},{{"name":"small","dtype":"U8","descr":"|u1","shape":[4],"fortran":false,"offset":{start},"nbytes":4,"aligned":true}}]}}"#,
        start + 4_294_967_296
    );
    assert_eq!(text(&header), expected);
    // One byte short of the tensor's end: refused with the exact numbers.
    assert_eq!(start + 5_368_708_992, length);
    let short = length - 1;
    let message = thrown_message(read_header(&u8a(&head), &JsValue::from(short as f64)));
    assert_eq!(
        message,
        format!(
            "array \"big\" lies at bytes {}..{}, past the end of the file ({short} bytes)",
            start + 4_294_967_296,
            length
        )
    );
}

#[wasm_bindgen_test]
fn lengths_up_to_2_to_the_53_are_taken() {
    let head = safetensors("{}");
    let header = read_header(&u8a(&head), &JsValue::from(9_007_199_254_740_992.0)).unwrap();
    assert_eq!(
        Reflect::get(&header, &"dataStart".into()).unwrap().as_f64(),
        Some(10.0)
    );
    for bad in [9_007_199_254_740_994.0, -1.0, 1.5, f64::NAN] {
        let message = thrown_message(read_header(&u8a(&head), &JsValue::from(bad)));
        assert!(
            message.contains("a whole number from 0 to 9007199254740992"),
            "{message}"
        );
    }
}
