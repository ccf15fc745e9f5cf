//! Checks shared by the Node and the browser test suites. The oracle is
//! `DataView`: an independent reading of the same bytes at offsets computed
//! here by brute force from the shape, strides and offset.

pub mod args;
pub mod transfer;

/// Declares the tests both runners run (Node and the browser): every
/// vector, `$layouts` random layouts and `$args` random view arguments,
/// and memory growth. Each random test asserts that each outcome came up
/// often enough that the comparison could have failed in each way.
macro_rules! shared_tests {
    (layouts: $layouts:expr, args: $args:expr) => {
        #[wasm_bindgen_test::wasm_bindgen_test]
        fn every_vector_agrees_with_data_view() {
            assert_eq!($crate::common::vectors(), 72);
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn every_argument_vector_resolves_as_the_core_says() {
            assert_eq!($crate::common::args::vectors(), 33);
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn random_arguments_resolve_as_the_reference_model_says() {
            let seen = $crate::common::args::random($args);
            $crate::common::args::assert_every_outcome(&seen, $args / 64);
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn random_layouts_agree_with_data_view() {
            let cases = $layouts;
            let (ok, out_of_bounds, misaligned) = $crate::common::random_layouts(cases);
            assert!(
                ok > cases / 6 && out_of_bounds > cases / 10 && misaligned > cases / 30,
                "{ok} {out_of_bounds} {misaligned}"
            );
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn reads_are_the_dtype_s_typed_array_with_the_element_path_s_values() {
            assert_eq!(
                $crate::common::transfer::read_agrees_with_the_element_path(),
                32 * 9
            );
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn writes_from_typed_arrays_and_arrays_read_back() {
            assert!($crate::common::transfer::writes_from_every_source_round_trip() > 32 * 8 * 2);
        }

        #[wasm_bindgen_test::wasm_bindgen_test]
        fn typed_views_detach_on_memory_growth_and_fresh_ones_do_not() {
            $crate::common::memory_growth();
        }
    };
}
pub(crate) use shared_tests;

use bytelens_wasm::{
    BindingError, Buffer, ByteSource, JsLayout as Layout, LayoutOptions, LayoutSpec, TypedArray,
};
use js_sys::{Array, DataView, JsString, Object, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

const VECTOR_FILES: [(&str, &str); 4] = [
    (
        "seeds.json",
        include_str!("../../../tests/vectors/seeds.json"),
    ),
    (
        "dtypes.json",
        include_str!("../../../tests/vectors/dtypes.json"),
    ),
    (
        "strided.json",
        include_str!("../../../tests/vectors/strided.json"),
    ),
    (
        "errors.json",
        include_str!("../../../tests/vectors/errors.json"),
    ),
];

/// A JS string, as the API takes dtypes.
pub fn js(text: &str) -> JsString {
    JsString::from(text)
}

/// Bytes as the `Uint8Array` `setBytes` takes.
pub fn byte_source(bytes: &[u8]) -> ByteSource {
    JsValue::from(Uint8Array::from(bytes)).unchecked_into()
}

fn set(object: &Object, key: &str, value: JsValue) {
    Reflect::set(object, &JsValue::from_str(key), &value).unwrap();
}

pub fn numbers(values: &[i64]) -> JsValue {
    values
        .iter()
        .map(|&v| JsValue::from_f64(v as f64))
        .collect::<Array>()
        .into()
}

fn options(
    offset: usize,
    shape: Option<&[i64]>,
    strides: Option<&[i64]>,
    unaligned: bool,
) -> LayoutOptions {
    let object = Object::new();
    set(&object, "offset", JsValue::from_f64(offset as f64));
    if let Some(shape) = shape {
        set(&object, "shape", numbers(shape));
    }
    if let Some(strides) = strides {
        set(&object, "strides", numbers(strides));
    }
    if unaligned {
        set(&object, "unaligned", JsValue::TRUE);
    }
    object.unchecked_into()
}

/// The bytes of a hex string.
pub fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

pub fn ints(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// What a call threw, as JS sees it; panics if it returned.
pub fn thrown<T>(result: Result<T, BindingError>) -> JsValue {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(err) => err.into(),
    }
}

/// The `message` property of a thrown error.
pub fn message(err: &JsValue) -> String {
    Reflect::get(err, &"message".into())
        .unwrap()
        .as_string()
        .unwrap()
}

/// Asserts that `err` is a `RangeError` of `kind` saying `message`.
pub fn assert_thrown(err: &JsValue, kind: &str, message: &str) {
    assert_eq!(
        (self::kind(err), self::message(err)),
        (kind.to_owned(), message.to_owned())
    );
}

/// The `kind` property of a thrown error (bytelens's RangeErrors carry one).
pub fn kind(err: &JsValue) -> String {
    assert!(
        err.is_instance_of::<js_sys::RangeError>(),
        "not a RangeError: {err:?}"
    );
    Reflect::get(err, &"kind".into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

/// The bytes, size and byte order a dtype string names.
struct Dtype {
    code: String,
    size: usize,
    little: bool,
}

fn dtype(text: &str) -> Dtype {
    let (order, code) = match text.as_bytes()[0] {
        b'<' | b'|' => (true, &text[1..]),
        b'>' => (false, &text[1..]),
        _ => (true, text),
    };
    let size = match code {
        "bfloat16" => 2,
        _ if code.starts_with("float8_") => 1,
        _ => code[1..].parse().unwrap(),
    };
    Dtype {
        code: code.to_owned(),
        size,
        little: order,
    }
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + mantissa / 1024.0) * 2f64.powi(exponent - 15),
    }
}

/// A float8 byte's value, by the OCP 8-bit formats' definitions (written
/// here, not the core's `FloatFormat`): `e4m3fn` has bias 7, no infinity
/// and NaN only at S.1111.111; `e5m2` is binary16's top byte; `e8m0fnu` is
/// an unsigned 2^(bits - 127), NaN at 0xff.
fn f8_to_f64(bits: u8, code: &str) -> f64 {
    if code == "float8_e8m0fnu" {
        return if bits == 0xff {
            f64::NAN
        } else {
            2f64.powi(i32::from(bits) - 127)
        };
    }
    if code == "float8_e5m2" {
        return f16_to_f64(u16::from(bits) << 8);
    }
    assert_eq!(code, "float8_e4m3fn");
    let sign = if bits >> 7 == 1 { -1.0 } else { 1.0 };
    let (exponent, mantissa) = (i32::from((bits >> 3) & 0xf), f64::from(bits & 7));
    match exponent {
        15 if mantissa == 7.0 => f64::NAN,
        0 => sign * mantissa * 2f64.powi(-9),
        _ => sign * (1.0 + mantissa / 8.0) * 2f64.powi(exponent - 7),
    }
}

/// What `DataView` reads for one element, as `read` would give it.
fn data_view_read(view: &DataView, at: usize, dtype: &Dtype) -> JsValue {
    let le = dtype.little;
    let wide = |signed: bool| -> JsValue {
        let (lo, hi) = if le { (at, at + 4) } else { (at + 4, at) };
        let bits = (u64::from(view.get_uint32_endian(hi, le)) << 32)
            | u64::from(view.get_uint32_endian(lo, le));
        if signed {
            js_sys::BigInt::from(bits as i64).into()
        } else {
            js_sys::BigInt::from(bits).into()
        }
    };
    match dtype.code.as_str() {
        "b1" => JsValue::from_bool(view.get_uint8(at) != 0),
        "u1" => view.get_uint8(at).into(),
        "i1" => view.get_int8(at).into(),
        "u2" => view.get_uint16_endian(at, le).into(),
        "i2" => view.get_int16_endian(at, le).into(),
        "u4" => view.get_uint32_endian(at, le).into(),
        "i4" => view.get_int32_endian(at, le).into(),
        "u8" => wide(false),
        "i8" => wide(true),
        "f2" => f16_to_f64(view.get_uint16_endian(at, le)).into(),
        "bfloat16" => f64::from(f32::from_bits(
            u32::from(view.get_uint16_endian(at, le)) << 16,
        ))
        .into(),
        "f4" => f64::from(view.get_float32_endian(at, le)).into(),
        "f8" => view.get_float64_endian(at, le).into(),
        float8 if float8.starts_with("float8_") => f8_to_f64(view.get_uint8(at), float8).into(),
        other => panic!("no DataView reading for {other}"),
    }
}

/// Byte offsets of every element in C order, by brute force.
pub fn element_offsets(offset: i64, shape: &[i64], strides: &[i64]) -> Vec<i64> {
    let mut out = vec![];
    let count: i64 = shape.iter().product();
    for flat in 0..count {
        let (mut rest, mut at) = (flat, offset);
        for axis in (0..shape.len()).rev() {
            at += (rest % shape[axis]) * strides[axis];
            rest /= shape[axis];
        }
        out.push(at);
    }
    out
}

/// A number, or a boolean as 0 or 1 (as `read` gives bool elements).
fn as_number(value: &JsValue) -> Option<f64> {
    value.as_f64().or_else(|| value.as_bool().map(f64::from))
}

/// Same element values: bit-equal numbers (NaN equals NaN; a boolean is 0
/// or 1), equal bigints.
pub fn same(a: &JsValue, b: &JsValue) -> bool {
    match (as_number(a), as_number(b)) {
        (Some(x), Some(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a.is_bigint() && b.is_bigint() && a.loose_eq(b),
    }
}

/// An expected value from a vector file as JS sees it.
fn expected_js(value: &Value, dtype: &Dtype) -> JsValue {
    match value {
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::String(text) if text == "nan" => f64::NAN.into(),
        Value::String(text) if text == "inf" => f64::INFINITY.into(),
        Value::String(text) if text == "-inf" => f64::NEG_INFINITY.into(),
        Value::String(text) => js_sys::BigInt::new(&JsValue::from_str(text))
            .unwrap()
            .into(),
        Value::Number(n) if dtype.code.ends_with('8') && dtype.code.starts_with(['i', 'u']) => {
            js_sys::BigInt::from(n.as_i64().unwrap_or(0)).into()
        }
        Value::Number(n) => n.as_f64().unwrap().into(),
        other => panic!("unexpected value {other}"),
    }
}

/// Reads (and writes) one vector case through the JS API; returns the final
/// layout and the values read.
fn run(case: &Value, buf: &mut Buffer) -> Result<(Layout, TypedArray), BindingError> {
    let spec = &case["layout"];
    let dtype_text = spec["dtype"].as_str().unwrap();
    let offset = spec.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let unaligned = case
        .get("unaligned")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let shape = match spec.get("shape") {
        Some(shape) => ints(shape),
        None => {
            // The whole buffer from the offset, as `read` without a shape takes it.
            let all = buf.offsets(&js(dtype_text), Some(options(offset, None, None, false)))?;
            vec![Array::from(&all).length() as i64]
        }
    };
    let strides = spec.get("strides").map(ints);
    let given: LayoutSpec =
        options(offset, Some(&shape), strides.as_deref(), unaligned).unchecked_into();
    let mut layout = Layout::new(&js(dtype_text), given)?;
    for op in case
        .get("ops")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // A number argument, or undefined for one the op leaves out.
        let int = |key: &str| op[key].as_f64().map_or(JsValue::UNDEFINED, JsValue::from);
        let list = |key: &str| numbers(&ints(&op[key])).unchecked_into();
        layout = match op["op"].as_str().unwrap() {
            "reinterpret" => layout.reinterpret(&js(op["dtype"].as_str().unwrap()))?,
            "slice" => layout.slice(&int("axis"), &int("start"), &int("stop"), &int("step"))?,
            "index" => layout.index(&int("axis"), &int("index"))?,
            "transpose" => layout.transpose(),
            "permute" => layout.permute(list("axes"))?,
            "reshape" => layout.reshape(list("shape"))?,
            "broadcast_to" => layout.broadcast_to(list("shape"))?,
            other => panic!("unknown op {other}"),
        };
    }
    let dtype = layout.dtype();
    if let Some(values) = case.get("write").and_then(Value::as_array) {
        let d = self::dtype(&dtype);
        let values: Array = values.iter().map(|v| expected_js(v, &d)).collect();
        buf.write(
            &js(&dtype),
            Some(layout.options()?.unchecked_into()),
            values.unchecked_into(),
        )?;
    }
    let values = buf.read(&js(&dtype), Some(layout.options()?.unchecked_into()))?;
    Ok((layout, values))
}

/// Every vector case, with DataView as the oracle; returns how many ran.
pub fn vectors() -> usize {
    let mut count = 0;
    for (file, text) in VECTOR_FILES {
        let json: Value = serde_json::from_str(text).unwrap();
        for case in json["cases"].as_array().unwrap() {
            let name = format!("{file}: {}", case["name"].as_str().unwrap());
            let bytes = hex(case["bytes"].as_str().unwrap());
            let mut buf = Buffer::new(&(bytes.len() as f64).into()).unwrap();
            buf.set_bytes(&0.0.into(), byte_source(&bytes)).unwrap();
            let expect = &case["expect"];
            let result = run(case, &mut buf);
            count += 1;
            if let Some(kind_expected) = expect.get("error").and_then(Value::as_str) {
                let err: JsValue = result
                    .err()
                    .unwrap_or_else(|| panic!("{name}: expected {kind_expected}"))
                    .into();
                assert_eq!(kind(&err), kind_expected, "{name}");
                continue;
            }
            let (layout, values) =
                result.unwrap_or_else(|e| panic!("{name}: {:?}", JsValue::from(e)));
            let (shape, strides) = (ints(&expect["shape"]), ints(&expect["strides"]));
            let offset = expect["offset"].as_i64().unwrap();
            let got_shape: Vec<i64> = Array::from(&layout.shape())
                .iter()
                .map(|v| v.as_f64().unwrap() as i64)
                .collect();
            let got_strides: Vec<i64> = Array::from(&layout.strides())
                .iter()
                .map(|v| v.as_f64().unwrap() as i64)
                .collect();
            assert_eq!(
                (got_shape, got_strides, layout.offset() as i64),
                (shape.clone(), strides.clone(), offset),
                "{name}"
            );
            let d = dtype(&layout.dtype());
            let values = Array::from(&values);
            let expected = expect["values"].as_array().unwrap();
            assert_eq!(values.length() as usize, expected.len(), "{name}");
            let copy = Uint8Array::from(buf.bytes().as_slice());
            let view = DataView::new(&copy.buffer(), 0, copy.length() as usize);
            for (i, at) in element_offsets(offset, &shape, &strides)
                .into_iter()
                .enumerate()
            {
                let got = values.get(i as u32);
                assert!(
                    same(&got, &expected_js(&expected[i], &d)),
                    "{name}[{i}]: {got:?} vs {}",
                    expected[i]
                );
                let oracle = data_view_read(&view, at as usize, &d);
                assert!(
                    same(&got, &oracle),
                    "{name}[{i}]: read {got:?}, DataView {oracle:?}"
                );
            }
            if let Some(bytes) = expect.get("bytes").and_then(Value::as_str) {
                assert_eq!(buf.bytes(), hex(bytes), "{name}: bytes after the write");
            }
        }
    }
    count
}

/// A small xorshift generator: the same cases on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const DTYPES: [&str; 25] = [
    "|b1",
    "|u1",
    "|i1",
    "<u2",
    ">u2",
    "<i2",
    ">i2",
    "<u4",
    ">u4",
    "<i4",
    ">i4",
    "<u8",
    ">u8",
    "<i8",
    ">i8",
    "<f2",
    ">f2",
    "<bfloat16",
    ">bfloat16",
    "<f4",
    ">f4",
    "<f8",
    "|float8_e4m3fn",
    "|float8_e5m2",
    "|float8_e8m0fnu",
];

/// Random layouts over random bytes: `read` agrees with DataView where the
/// layout is in bounds and aligned, and throws the right kind elsewhere.
pub fn random_layouts(cases: usize) -> (usize, usize, usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut out_of_bounds, mut misaligned) = (0, 0, 0);
    for case in 0..cases {
        let len = rng.below(48) as usize + 1;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let text = DTYPES[rng.below(DTYPES.len() as u64) as usize];
        let d = dtype(text);
        let size = d.size as i64;
        let ndim = rng.below(4) as usize;
        let shape: Vec<i64> = (0..ndim).map(|_| rng.below(4) as i64).collect();
        let strides: Vec<i64> = (0..ndim)
            .map(|_| {
                let s = rng.below(7) as i64 - 3;
                if rng.below(8) == 0 {
                    s * size + 1
                } else {
                    s * size
                }
            })
            .collect();
        let offset = rng.below(len as u64 + 1) as usize;
        let mut buf = Buffer::new(&(len as f64).into()).unwrap();
        buf.set_bytes(&0.0.into(), byte_source(&bytes)).unwrap();
        let result = buf.read(
            &js(text),
            Some(options(offset, Some(&shape), Some(&strides), false)),
        );

        let count: i64 = shape.iter().product();
        let offsets = element_offsets(offset as i64, &shape, &strides);
        let (low, high) = offsets
            .iter()
            .fold((offset as i64, offset as i64), |(lo, hi), &at| {
                (lo.min(at), hi.max(at + size))
            });
        // numpy's rules: an empty view touches nothing but must start within the buffer.
        let in_bounds = if count == 0 {
            offset <= len
        } else {
            low >= 0 && high <= len as i64
        };
        let align = if d.code == "bfloat16" { 2 } else { size.min(8) };
        let aligned = count == 0
            || (offset as i64 % align == 0
                && shape
                    .iter()
                    .zip(&strides)
                    .all(|(&n, &s)| n <= 1 || s % align == 0));
        let label = format!(
            "case {case}: {text} len {len} offset {offset} shape {shape:?} strides {strides:?}"
        );
        match result {
            Ok(values) => {
                assert!(in_bounds && aligned, "{label}: read succeeded");
                let view = DataView::new(&Uint8Array::from(bytes.as_slice()).buffer(), 0, len);
                let values = Array::from(&values);
                for (i, at) in offsets.into_iter().enumerate() {
                    let (got, oracle) =
                        (values.get(i as u32), data_view_read(&view, at as usize, &d));
                    assert!(
                        same(&got, &oracle),
                        "{label}[{i}]: {got:?} vs DataView {oracle:?}"
                    );
                }
                ok += 1;
            }
            Err(err) if !in_bounds => {
                assert_eq!(kind(&err.into()), "OutOfBounds", "{label}");
                out_of_bounds += 1;
            }
            Err(err) => {
                let err = JsValue::from(err);
                assert!(!aligned, "{label}: unexpected {err:?}");
                assert_eq!(kind(&err), "Misaligned", "{label}");
                misaligned += 1;
            }
        }
    }
    (ok, out_of_bounds, misaligned)
}

/// `typed()` views taken before wasm memory grows are detached; a fresh one
/// reads the same bytes, and `read` never goes stale.
pub fn memory_growth() {
    let mut buf = Buffer::new(&16.0.into()).unwrap();
    buf.write(
        &js("<i4"),
        None,
        js_sys::Array::of1(&JsValue::from_f64(f64::from(0x1122_3344))).unchecked_into(),
    )
    .unwrap();
    let before: js_sys::Int32Array = buf
        .typed(&js("<i4"), &JsValue::UNDEFINED, &JsValue::UNDEFINED)
        .unwrap()
        .unchecked_into();
    assert_eq!(before.length(), 4);
    assert_eq!(before.get_index(0), 0x1122_3344);
    let pages_before = wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer();
    let pages_before = pages_before
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length();
    // Far more than is free: wasm memory has to grow.
    let big = Buffer::new(&(f64::from(64 << 20)).into()).unwrap();
    let pages_after = wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer();
    let pages_after = pages_after
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length();
    assert!(
        pages_after > pages_before,
        "memory did not grow ({pages_before} -> {pages_after})"
    );
    assert_eq!(
        before.length(),
        0,
        "a typed view from before the growth is detached"
    );
    let after: js_sys::Int32Array = buf
        .typed(&js("<i4"), &JsValue::UNDEFINED, &JsValue::UNDEFINED)
        .unwrap()
        .unchecked_into();
    assert_eq!(after.length(), 4);
    assert_eq!(after.get_index(0), 0x1122_3344);
    let halves = Array::from(&buf.read(&js("<i2"), None).unwrap());
    assert_eq!(halves.get(0).as_f64(), Some(f64::from(0x3344)));
    assert_eq!(halves.get(1).as_f64(), Some(f64::from(0x1122)));
    drop(big);
}
