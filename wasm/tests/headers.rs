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

/// A GGUF header of 50,000 zero-size tensors (2 MB) read with wasm
/// memory growing by less than 8 times its size: the JSON text is handed
/// to JS in pieces (it was one string, with the parts it was joined from:
/// wasm memory grew by 10.7 times this header, and by 1.2 GB for a 98.6
/// MB one). The header is built in JS memory, a piece at a time, so that
/// no free wasm memory is left from building it.
#[wasm_bindgen_test]
fn a_header_of_many_tensors_takes_memory_in_proportion() {
    const N: u32 = 50_000;
    const TENSOR: u32 = 40; // an 8-byte name, one dimension
    let mut start = b"GGUF".to_vec();
    start.extend(3u32.to_le_bytes());
    start.extend(u64::from(N).to_le_bytes());
    start.extend(0u64.to_le_bytes());
    let size = (start.len() as u32 + N * TENSOR).next_multiple_of(32);
    let head = js_sys::Uint8Array::new_with_length(size);
    head.subarray(0, start.len() as u32).copy_from(&start);
    let mut at = start.len() as u32;
    for first in (0..N).step_by(1000) {
        let mut piece = Vec::new();
        for i in first..first + 1000 {
            let name = format!("t{i:07}");
            piece.extend((name.len() as u64).to_le_bytes());
            piece.extend(name.as_bytes());
            piece.extend(1u32.to_le_bytes()); // one dimension
            piece.extend(0u64.to_le_bytes()); // of length 0
            piece.extend(0u32.to_le_bytes()); // float32
            piece.extend(0u64.to_le_bytes()); // at 0
        }
        head.subarray(at, at + piece.len() as u32).copy_from(&piece);
        at += piece.len() as u32;
    }
    let pages = || core::arch::wasm32::memory_size(0) as u64;
    let before = pages();
    let header = read_header(&head.into(), &JsValue::from(size)).unwrap();
    let grown = (pages() - before) << 16;
    let arrays = Reflect::get(&header, &"arrays".into()).unwrap();
    let count = Reflect::get(&arrays, &"length".into()).unwrap();
    assert_eq!(count.as_f64(), Some(f64::from(N)));
    let size = u64::from(size);
    assert!(
        grown < 8 * size,
        "wasm memory grew by {grown} bytes for a {size}-byte header"
    );
}
