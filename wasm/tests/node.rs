//! The wasm package under Node (`wasm-pack test --node`).
#![cfg(target_arch = "wasm32")]

mod common;
#[cfg(feature = "files")]
mod stats;

use common::{assert_thrown, js, kind, message, thrown};
#[cfg(feature = "files")]
use stats::u8a;

use bytelens_wasm::{Buffer, ByteSource, JsLayout, LayoutOptions, Plan, describe_dtype, dtypes};
use js_sys::{Array, JsString, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

common::shared_tests!(layouts: 3000, args: 4000);

/// `{ key: value, ... }` as view options.
fn options(entries: &[(&str, JsValue)]) -> LayoutOptions {
    let object = Object::new();
    for (key, value) in entries {
        Reflect::set(&object, &(*key).into(), value).unwrap();
    }
    object.unchecked_into()
}

fn list(values: &[f64]) -> JsValue {
    values
        .iter()
        .map(|&v| JsValue::from_f64(v))
        .collect::<Array>()
        .into()
}

fn values(values: &[f64]) -> bytelens_wasm::Values {
    list(values).unchecked_into()
}

#[wasm_bindgen_test]
fn errors_are_range_errors_with_the_core_message() {
    let buf = Buffer::new(&3.0.into()).unwrap();
    let err = thrown(buf.read(&js("<i2"), None));
    assert_eq!(kind(&err), "ItemsizeMismatch");
    assert_eq!(
        message(&err),
        "3 bytes is not a multiple of 2, the size of int16"
    );
    let shifted = options(&[("offset", 1.0.into()), ("shape", list(&[1.0]))]);
    let err = thrown(buf.read(&js("<i2"), Some(shifted)));
    assert_eq!(kind(&err), "Misaligned");
    let err = thrown(buf.read(&js("<i3"), None));
    assert_thrown(&err, "BadDType", "unknown dtype \"<i3\"");
}

#[wasm_bindgen_test]
fn strides_without_a_shape_are_refused_everywhere() {
    let mut buf = Buffer::new(&16.0.into()).unwrap();
    let strided = || options(&[("strides", list(&[4.0]))]);
    let refused = [
        thrown(buf.read(&js("<i4"), Some(strided()))),
        thrown(buf.offsets(&js("<i4"), Some(strided()))),
        thrown(buf.write(&js("<i4"), Some(strided()), values(&[1.0]))),
        thrown(JsLayout::new(&js("<i4"), strided().unchecked_into())),
    ];
    for err in refused {
        assert_eq!(kind(&err), "MissingShape");
        assert_eq!(
            message(&err),
            "strides were given without a shape: give the shape too"
        );
    }
    assert_eq!(buf.bytes(), vec![0; 16], "nothing written");
    let err = thrown(JsLayout::new(&js("<i4"), options(&[]).unchecked_into()));
    assert_thrown(
        &err,
        "MissingShape",
        "a layout without a buffer needs a shape",
    );
}

#[wasm_bindgen_test]
fn writes_without_a_shape_take_one_element_per_value() {
    let mut buf = Buffer::new(&8.0.into()).unwrap();
    buf.write(
        &js("<u2"),
        Some(options(&[("offset", 2.0.into())])),
        values(&[1.0, 2.0]),
    )
    .unwrap();
    assert_eq!(buf.bytes(), [0, 0, 1, 0, 2, 0, 0, 0]);
    let err = thrown(buf.write(
        &js("<u2"),
        Some(options(&[("offset", 4.0.into())])),
        values(&[1.0, 2.0, 3.0]),
    ));
    assert_eq!(
        message(&err),
        "the view reaches bytes 4..10 but the buffer holds 8 bytes"
    );
    let shaped = options(&[("shape", list(&[3.0]))]);
    let err = thrown(buf.write(&js("<u2"), Some(shaped), values(&[1.0, 2.0])));
    assert_thrown(
        &err,
        "CountMismatch",
        "the view holds 3 elements but 2 values were given",
    );
}

#[wasm_bindgen_test]
fn offsets_outside_the_buffer_are_out_of_bounds_with_their_numbers() {
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    let cases: [(f64, &str); 4] = [
        (
            -2.0,
            "offset -2 is outside the buffer of 4 bytes (offsets go from 0 to 4)",
        ),
        (
            5.0,
            "offset 5 is outside the buffer of 4 bytes (offsets go from 0 to 4)",
        ),
        (
            2f64.powi(31),
            "offset 2147483648 lies outside every buffer: wasm32 addresses at most 2147483647 bytes",
        ),
        (
            -2f64.powi(40),
            "offset -1099511627776 lies outside every buffer: wasm32 addresses at most 2147483647 bytes",
        ),
    ];
    for (offset, expected) in cases {
        let errors = [
            thrown(buf.set_bytes(&offset.into(), common::byte_source(&[9]))),
            thrown(buf.read(&js("|u1"), Some(options(&[("offset", offset.into())])))),
            thrown(buf.typed(&js("|u1"), &offset.into(), &JsValue::UNDEFINED)),
        ];
        for err in errors {
            assert_thrown(&err, "OutOfBounds", expected);
        }
    }
    let err = thrown(buf.set_bytes(&3.0.into(), common::byte_source(&[9, 9])));
    assert_eq!(
        message(&err),
        "the view reaches bytes 3..5 but the buffer holds 4 bytes"
    );
    let err = thrown(JsLayout::new(
        &js("|u1"),
        options(&[("offset", (-1.0).into()), ("shape", list(&[1.0]))]).unchecked_into(),
    ));
    assert_thrown(&err, "OutOfBounds", "offset -1 is negative");
    assert_eq!(buf.bytes(), vec![0, 0, 0, 0]);
}

#[wasm_bindgen_test]
fn bad_values_write_nothing() {
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    let err = thrown(buf.write(&js("|u1"), None, values(&[1.0, 300.0])));
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert_eq!(message(&err), "300 is not a value of uint8");
    assert_eq!(
        buf.bytes(),
        vec![0, 0, 0, 0],
        "the valid first value was not written either"
    );
    let err = thrown(buf.write(&js("<i2"), None, values(&[1.5])));
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert_eq!(message(&err), "1.5 is not a value of int16");
    let strings = Array::of1(&JsValue::from_str("7"));
    let err = thrown(buf.write(&js("<i2"), None, strings.unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(message(&err), "\"7\" is not a value of int16");
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
    assert_eq!(
        (plan.nbytes(), plan.alternatives(), plan.align()),
        (48, 2, 4)
    );
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
    let padding = Array::from(&plan.padding(&1.0.into()).unwrap());
    assert_eq!(padding.length(), 1);
    let err = thrown(plan.padding(&2.0.into()));
    assert_eq!(kind(&err), "NoAlternative");
    assert!(plan.wgsl().unwrap().contains("struct Work1"));
    let bad = plan.union(specs(&[("F", "<i2", 2.0)])).unwrap();
    assert_eq!(
        kind(&thrown(bad.wgsl())),
        "NotWgslShareable",
        "WGSL cannot share int16"
    );
    let text = "Work\nA <f4 4\nB <f4 3\nC <f4 5\nunion\nD <i4 6\nE <i4 4";
    assert_eq!(plan.to_text(), text);
    let again = Plan::from_text(&js(text)).unwrap();
    assert_eq!(again.nbytes(), 48);
    assert_eq!(again.wgsl().unwrap(), plan.wgsl().unwrap());
}

/// `readHeader` (feature `files`) reads what the core reads: a safetensors
/// header, asking for more bytes when the head ends inside it, and a clear
/// `FormatError` for a broken one.
#[cfg(feature = "files")]
#[wasm_bindgen_test]
fn headers_of_files() {
    use bytelens_wasm::read_header;
    let json = r#"{"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"t":{"dtype":"U8","shape":[3],"data_offsets":[24,27]}}"#;
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file.resize(file.len() + 27, 0);
    let more = read_header(&u8a(&file[..16]), &JsValue::from(file.len() as f64)).unwrap();
    let need = Reflect::get(&more, &"need".into())
        .unwrap()
        .as_f64()
        .unwrap();
    assert_eq!(need, (8 + json.len()) as f64);
    let header = read_header(
        &u8a(&file[..need as usize]),
        &JsValue::from(file.len() as f64),
    )
    .unwrap();
    let text = js_sys::JSON::stringify(&header)
        .unwrap()
        .as_string()
        .unwrap();
    let start = 8 + json.len();
    assert_eq!(
        text,
        format!(
            r#"{{"format":"safetensors","version":[0,0],"dataStart":{start},"metadata":[["k","v"]],"arrays":[{{"name":"w","dtype":"F32","descr":"<f4","shape":[2,3],"fortran":false,"offset":{start},"nbytes":24,"aligned":{}}},{{"name":"t","dtype":"U8","descr":"|u1","shape":[3],"fortran":false,"offset":{},"nbytes":3,"aligned":true}}]}}"#,
            start.is_multiple_of(4),
            start + 24
        )
    );
    let cut = &file[..file.len() - 1]; // the last tensor's last byte is missing
    let err = thrown(read_header(&u8a(cut), &JsValue::from(cut.len() as f64)));
    assert_eq!(kind(&err), "FormatError");
    assert!(
        message(&err).contains("past the end of the file"),
        "{}",
        message(&err)
    );
}

/// `readHeader` of a GGUF file: typed metadata with long arrays cut to
/// their first 8 elements (and counted), integers past 2^53 as strings,
/// float32 values exact; tensors with their ggml type, and a quantised
/// one's block and fields from the core's table.
#[cfg(feature = "files")]
#[wasm_bindgen_test]
fn gguf_headers_of_files() {
    use bytelens_wasm::read_header;
    fn string(file: &mut Vec<u8>, text: &str) {
        file.extend((text.len() as u64).to_le_bytes());
        file.extend(text.as_bytes());
    }
    let mut file = b"GGUF".to_vec();
    file.extend(3u32.to_le_bytes());
    file.extend(2u64.to_le_bytes()); // tensors
    file.extend(6u64.to_le_bytes()); // keys
    // Where each value starts: a string's text, an array's first element.
    let mut at = Vec::new();
    string(&mut file, "general.architecture");
    file.extend(8u32.to_le_bytes());
    at.push(file.len() + 8);
    string(&mut file, "llama");
    string(&mut file, "seed");
    file.extend(10u32.to_le_bytes()); // uint64
    at.push(file.len());
    file.extend((u64::MAX - 1).to_le_bytes());
    string(&mut file, "eps");
    file.extend(6u32.to_le_bytes()); // float32
    at.push(file.len());
    file.extend(0.1f32.to_le_bytes());
    string(&mut file, "neg");
    file.extend(1u32.to_le_bytes()); // int8
    at.push(file.len());
    file.push(0xfb);
    string(&mut file, "tokens");
    file.extend(9u32.to_le_bytes()); // array
    file.extend(8u32.to_le_bytes()); // of strings
    file.extend(10u64.to_le_bytes());
    at.push(file.len());
    for i in 0..10 {
        string(&mut file, &format!("t{i}"));
    }
    string(&mut file, "types");
    file.extend(9u32.to_le_bytes());
    file.extend(1u32.to_le_bytes()); // of int8
    file.extend(9u64.to_le_bytes());
    at.push(file.len());
    file.extend((0..9).map(|i: i8| (-i) as u8));
    for (name, dims, code) in [("q", &[32u64, 2][..], 8u32), ("f", &[3][..], 0)] {
        string(&mut file, name);
        file.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            file.extend(d.to_le_bytes());
        }
        file.extend(code.to_le_bytes());
        file.extend(if name == "q" { 0u64 } else { 96 }.to_le_bytes());
    }
    let start = file.len().next_multiple_of(32);
    file.resize(start + 96 + 12, 0);

    // Asked for more, at least twice what it had.
    let more = read_header(&u8a(&file[..40]), &JsValue::from(file.len() as f64)).unwrap();
    let need = Reflect::get(&more, &"need".into()).unwrap().as_f64();
    assert!(need >= Some(80.0), "{need:?}");
    let header = read_header(&u8a(&file), &JsValue::from(file.len() as f64)).unwrap();
    let text = js_sys::JSON::stringify(&header)
        .unwrap()
        .as_string()
        .unwrap();
    let eps = f64::from(0.1f32); // exact, as JS would hold it
    assert_eq!(
        text,
        format!(
            r#"{{"format":"gguf","version":[3,0],"dataStart":{start},"metadata":[],"gguf":[{{"key":"general.architecture","type":"string","count":1,"offset":{},"nbytes":5,"value":"llama"}},{{"key":"seed","type":"uint64","count":1,"offset":{},"nbytes":8,"value":"18446744073709551614"}},{{"key":"eps","type":"float32","count":1,"offset":{},"nbytes":4,"value":{eps}}},{{"key":"neg","type":"int8","count":1,"offset":{},"nbytes":1,"value":-5}},{{"key":"tokens","type":"array","elementType":"string","count":10,"offset":{},"nbytes":100,"value":["t0","t1","t2","t3","t4","t5","t6","t7"]}},{{"key":"types","type":"array","elementType":"int8","count":9,"offset":{},"nbytes":9,"value":[0,-1,-2,-3,-4,-5,-6,-7]}}],"arrays":[{{"name":"q","dtype":"Q8_0","descr":null,"shape":[2,32],"fortran":false,"offset":{start},"nbytes":68,"aligned":true,"ggml":"Q8_0","block":32,"blockBytes":34,"blocks":2,"fields":[{{"name":"d","dtype":"<f2","count":1,"offset":0}},{{"name":"qs","dtype":"|i1","count":32,"offset":2}}]}},{{"name":"f","dtype":"F32","descr":"<f4","shape":[3],"fortran":false,"offset":{},"nbytes":12,"aligned":true,"ggml":"F32"}}]}}"#,
            at[0],
            at[1],
            at[2],
            at[3],
            at[4],
            at[5],
            start + 96
        )
    );
    assert_eq!(
        at[0], 64,
        "the first value: after 24 bytes, a key of 20, a type and a length"
    );
}

#[wasm_bindgen_test]
fn fields_at_explicit_offsets() {
    let field = |dtype: &str, n: f64, offset: f64| {
        Array::of3(&dtype.into(), &list(&[n]), &JsValue::from_f64(offset))
    };
    let fields = Object::new();
    Reflect::set(&fields, &"magic".into(), &field("|u1", 8.0, 0.0)).unwrap();
    Reflect::set(&fields, &"data".into(), &field("<f4", 4.0, 64.0)).unwrap();
    let plan = Plan::new(Some("Header".into()))
        .unwrap()
        .struct_(fields.unchecked_into())
        .unwrap();
    assert_eq!(plan.nbytes(), 80);
    assert_eq!(plan.to_text(), "Header\nmagic |u1 8 @0\ndata <f4 4 @64");
    let clash = Object::new();
    Reflect::set(&clash, &"late".into(), &field("<u4", 1.0, 72.0)).unwrap();
    let err = thrown(plan.struct_(clash.unchecked_into()));
    assert_thrown(
        &err,
        "FieldsOverlap",
        "field \"late\" would overlap field \"data\"",
    );
    let misaligned = Object::new();
    Reflect::set(&misaligned, &"odd".into(), &field("<u4", 1.0, 2.0)).unwrap();
    let err = thrown(plan.struct_(misaligned.unchecked_into()));
    assert_eq!(kind(&err), "Misaligned");
    let negative = Object::new();
    Reflect::set(&negative, &"neg".into(), &field("<u4", 1.0, -4.0)).unwrap();
    assert!(thrown(plan.struct_(negative.unchecked_into())).is_instance_of::<js_sys::RangeError>());
}

#[wasm_bindgen_test]
fn a_field_of_four_items_is_refused_not_cut_short() {
    let fields = Object::new();
    let four = Array::of4(&"<f4".into(), &list(&[1.0]), &0.0.into(), &0.0.into());
    Reflect::set(&fields, &"A".into(), &four).unwrap();
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(
        message(&err),
        "field A: a field must be a dtype, [dtype, shape] or [dtype, shape, offset], \
         not Array(4) [\"<f4\", Array(1) [1], 0, 0]"
    );
    // Three, two and one items, and a bare dtype, are fields.
    let fields = Object::new();
    let three = Array::of3(&"<f4".into(), &list(&[1.0]), &8.0.into());
    Reflect::set(&fields, &"B".into(), &three).unwrap();
    Reflect::set(
        &fields,
        &"C".into(),
        &Array::of2(&"<u2".into(), &list(&[2.0])),
    )
    .unwrap();
    Reflect::set(&fields, &"D".into(), &Array::of1(&"<u1".into())).unwrap();
    Reflect::set(&fields, &"E".into(), &"<u1".into()).unwrap();
    let plan = Plan::new(None)
        .unwrap()
        .struct_(fields.unchecked_into())
        .unwrap();
    assert_eq!(plan.to_text(), "Plan\nB <f4 1 @8\nC <u2 2\nD |u1\nE |u1");
}

#[wasm_bindgen_test]
fn plan_text_errors_are_the_core_s() {
    let err = thrown(Plan::from_text(&js("Work\nA <f4 [4]")));
    assert_eq!(kind(&err), "BadPlanLine");
    assert_eq!(
        message(&err),
        "the plan's line \"A <f4 [4]\" does not read as `name dtype length... [@offset]` or `union`"
    );
    let err = thrown(Plan::from_text(&js("Work\nA <f4 4\nA <i4 2")));
    assert_eq!(kind(&err), "BadName");
    let not_text: JsString = JsValue::from_f64(1.0).unchecked_into();
    assert!(thrown(Plan::from_text(&not_text)).is_instance_of::<js_sys::TypeError>());
}

#[wasm_bindgen_test]
fn a_field_s_errors_name_the_field() {
    let fields = Object::new();
    Reflect::set(
        &fields,
        &"A".into(),
        &Array::of2(&"<i3".into(), &list(&[2.0])),
    )
    .unwrap();
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    assert_thrown(&err, "BadDType", "field A: unknown dtype \"<i3\"");
}

#[wasm_bindgen_test]
fn the_dtype_table_is_the_core_s() {
    let table = Array::from(&dtypes());
    let get = |row: &JsValue, key: &str| Reflect::get(row, &key.into()).unwrap();
    let names: Vec<String> = table
        .iter()
        .map(|row| get(&row, "name").as_string().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bool",
            "uint8",
            "int8",
            "uint16",
            "int16",
            "uint32",
            "int32",
            "uint64",
            "int64",
            "float16",
            "bfloat16",
            "float32",
            "float64",
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e8m0fnu"
        ]
    );
    for (row, dtype) in table.iter().zip(bytelens_core::DType::ALL) {
        let name = get(&row, "name").as_string().unwrap();
        assert_eq!(row_of(dtype), json_of(&row), "{name}");
        // Every spelling, in either byte order, describes this row's dtype.
        for spelling in Array::from(&get(&row, "spellings")).iter() {
            let spelling = spelling.as_string().unwrap();
            for text in [spelling.clone(), format!(">{spelling}")] {
                let described = describe_dtype(&js(&text)).unwrap();
                assert_eq!(
                    get(&described, "name").as_string(),
                    Some(name.clone()),
                    "{text}"
                );
            }
        }
        let size = get(&row, "size").as_f64().unwrap();
        assert_eq!(get(&row, "align").as_f64(), Some(size), "{name}");
        let big = get(&get(&row, "typeStrings"), "big").as_string().unwrap();
        let described = describe_dtype(&js(&big)).unwrap();
        let order = if size > 1.0 { "big" } else { "little" };
        assert_eq!(
            get(&described, "order").as_string().as_deref(),
            Some(order),
            "{big}"
        );
        assert_eq!(get(&described, "typeString").as_string(), Some(big));
    }
    let f2 = describe_dtype(&js("<f2")).unwrap();
    assert_eq!(get(&f2, "code").as_string().as_deref(), Some("f2"));
    assert_eq!(get(&f2, "kind").as_string().as_deref(), Some("f"));
    assert_eq!(get(&f2, "float").as_bool(), Some(true));
    let err = thrown(describe_dtype(&js("float33")));
    assert_thrown(&err, "BadDType", "unknown dtype \"float33\"");
    // A row as a person reads it in the DLPack and safetensors specs and
    // ml_dtypes, for a float8 and for an integer (no float columns).
    let e4m3 = describe_dtype(&js("f8e4m3fn")).unwrap();
    assert_eq!(
        json_of(&e4m3),
        serde_json::json!({
            "name": "float8_e4m3fn", "code": "float8_e4m3fn", "size": 1, "align": 1, "kind": "V",
            "float": true, "typeStrings": { "little": "|float8_e4m3fn", "big": "|float8_e4m3fn" },
            "safetensors": "F8_E4M3", "mlDtypes": "float8_e4m3fn", "npy": false,
            "dlpack": { "code": 10, "bits": 8 }, "jsArray": "Float32Array",
            "format": {
                "signed": true, "exponentBits": 4, "mantissaBits": 3, "bias": 7,
                "subnormals": true, "specials": "NanOnly", "rounding": "NearestEven"
            },
            "spellings": ["float8_e4m3fn", "float8_e4m3fn", "f8e4m3fn", "e4m3fn"],
            "order": "little", "typeString": "|float8_e4m3fn"
        })
    );
    let i8 = json_of(&describe_dtype(&js(">i8")).unwrap());
    assert_eq!(
        (
            &i8["safetensors"],
            &i8["mlDtypes"],
            &i8["npy"],
            &i8["dlpack"]
        ),
        (
            &serde_json::json!("I64"),
            &serde_json::Value::Null,
            &serde_json::json!(true),
            &serde_json::json!({ "code": 0, "bits": 64 })
        )
    );
    assert_eq!(
        (&i8["jsArray"], &i8["format"]),
        (
            &serde_json::json!("BigInt64Array"),
            &serde_json::Value::Null
        )
    );
    let e8m0 = json_of(&table.get(15));
    assert_eq!(
        (
            &e8m0["format"]["signed"],
            &e8m0["format"]["subnormals"],
            &e8m0["format"]["rounding"]
        ),
        (
            &serde_json::json!(false),
            &serde_json::json!(false),
            &serde_json::json!("NearestAway")
        )
    );
}

/// A JS value as JSON (through `JSON.stringify`), to compare whole.
fn json_of(value: &JsValue) -> serde_json::Value {
    let text = js_sys::JSON::stringify(value).unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What `dtypes()` must say for `dtype`: the core's table row, each column
/// under its TypeScript name.
fn row_of(dtype: bytelens_core::DType) -> serde_json::Value {
    use bytelens_core::{ByteOrder, Descr};
    let info = dtype.info();
    let format = info.float.map(|f| {
        serde_json::json!({
            "signed": f.signed, "exponentBits": f.exponent_bits, "mantissaBits": f.mantissa_bits,
            "bias": f.bias, "subnormals": f.subnormals,
            "specials": format!("{:?}", f.specials), "rounding": format!("{:?}", f.rounding),
        })
    });
    serde_json::json!({
        "name": dtype.name(), "code": dtype.code(), "spellings": info.spellings,
        "size": info.size, "align": dtype.align(), "kind": info.kind.to_string(),
        "float": dtype.is_float(),
        "typeStrings": {
            "little": Descr::new(dtype, ByteOrder::Little).to_string(),
            "big": Descr::new(dtype, ByteOrder::Big).to_string(),
        },
        "safetensors": info.safetensors, "mlDtypes": info.ml_dtypes, "npy": info.npy,
        "dlpack": { "code": info.dlpack.0, "bits": info.dlpack.1 },
        "jsArray": info.js_array.name(), "format": format,
    })
}

/// The float8 cases of tests/vectors/dtypes.json (ml_dtypes' values): each
/// read's values, and each write's bytes, through every source `write`
/// takes (a plain array, a Float64Array, a Float32Array where its values
/// are float32s, one element at a time), in both byte orders.
#[wasm_bindgen_test]
fn float8_reads_and_writes_are_ml_dtypes() {
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/vectors/dtypes.json")).unwrap();
    let number = |v: &serde_json::Value| match v.as_str() {
        Some("nan") => f64::NAN,
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap(),
    };
    let (mut reads, mut writes) = (0, 0);
    for case in vectors["cases"].as_array().unwrap() {
        let dtype = case["layout"]["dtype"].as_str().unwrap();
        let Some(name) = dtype.strip_prefix('|').filter(|d| d.starts_with("float8_")) else {
            continue;
        };
        if case.get("ops").is_some() || case["layout"].get("shape").is_some() {
            continue; // the shared vector test runs those
        }
        let label = case["name"].as_str().unwrap();
        let bytes = common::hex(case["bytes"].as_str().unwrap());
        let expected: Vec<f64> = case["expect"]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(number)
            .collect();
        let n = bytes.len();
        let mut buf = Buffer::new(&(n as f64).into()).unwrap();
        let Some(written) = case.get("write").and_then(|w| w.as_array()) else {
            buf.set_bytes(&0.0.into(), common::byte_source(&bytes))
                .unwrap();
            for text in [format!("|{name}"), format!(">{name}"), name.to_owned()] {
                let read: JsValue = buf.read(&js(&text), None).unwrap().into();
                assert_eq!(
                    common::transfer::class_name(&read),
                    "Float32Array",
                    "{label}"
                );
                let got: Vec<f64> = Array::from(&read)
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                assert_eq!(got.len(), expected.len(), "{label}");
                for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                    assert!(
                        g.to_bits() == e.to_bits() || g.is_nan() && e.is_nan(),
                        "{label}[{i}]: {g} vs {e}"
                    );
                }
                reads += 1;
            }
            continue;
        };
        let want = common::hex(case["expect"]["bytes"].as_str().unwrap());
        let numbers: Vec<f64> = written.iter().map(number).collect();
        let plain: JsValue = list(&numbers);
        let wide: JsValue = js_sys::Float64Array::from(numbers.as_slice()).into();
        let mut sources = vec![("an Array", plain), ("a Float64Array", wide)];
        if numbers
            .iter()
            .all(|&x| f64::from(x as f32).to_bits() == x.to_bits() || x.is_nan())
        {
            let narrow: Vec<f32> = numbers.iter().map(|&x| x as f32).collect();
            sources.push((
                "a Float32Array",
                js_sys::Float32Array::from(narrow.as_slice()).into(),
            ));
        }
        for (source, values) in sources {
            for text in [format!("|{name}"), format!(">{name}")] {
                buf.set_bytes(&0.0.into(), common::byte_source(&vec![0x55; n]))
                    .unwrap();
                buf.write(&js(&text), None, values.clone().unchecked_into())
                    .unwrap_or_else(|e| panic!("{label} from {source}: {:?}", JsValue::from(e)));
                assert_eq!(buf.bytes(), want, "{label}, {text} from {source}");
                writes += 1;
            }
        }
        // One element at a time, at its offset.
        buf.set_bytes(&0.0.into(), common::byte_source(&vec![0x55; n]))
            .unwrap();
        for (i, &x) in numbers.iter().enumerate() {
            let at = options(&[("offset", (i as f64).into())]);
            buf.write(&js(dtype), Some(at), values(&[x])).unwrap();
        }
        assert_eq!(buf.bytes(), want, "{label}, one element at a time");
        // Read back: the values ml_dtypes gives for what it wrote.
        let got = Array::from(&buf.read(&js(dtype), None).unwrap());
        for (i, e) in expected.iter().enumerate() {
            let g = got.get(i as u32).as_f64().unwrap();
            assert!(
                g.to_bits() == e.to_bits() || g.is_nan() && e.is_nan(),
                "{label}[{i}]: {g} vs {e}"
            );
        }
    }
    // Three reads in three spellings; the writes from two sources each (three
    // for float8_e5m2, whose values are all float32s), in two byte orders.
    assert_eq!((reads, writes), (3 * 3, 2 * (2 + 3 + 2)));
}

#[wasm_bindgen_test]
fn float8_values_refuse_what_is_not_a_number_and_typed_views_refuse_float8() {
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    for dtype in ["|float8_e4m3fn", "|float8_e5m2", "|float8_e8m0fnu"] {
        // A bigint is not a float's value: a TypeError, and nothing written.
        let err = thrown(buf.write(&js(dtype), None, eval("[1, 2n]").unchecked_into()));
        assert!(
            err.is_instance_of::<js_sys::TypeError>(),
            "{dtype}: {err:?}"
        );
        let name = &dtype[1..];
        assert_eq!(message(&err), format!("2n is not a value of {name}"));
        assert_eq!(buf.bytes(), [0; 4], "{dtype}");
        // Not a class of their own: `typed` refuses, naming what it takes.
        let err = thrown(buf.typed(&js(dtype), &JsValue::UNDEFINED, &JsValue::UNDEFINED));
        assert_eq!(kind(&err), "BadValue");
        assert!(
            message(&err).contains("not float16, bfloat16 or a float8"),
            "{}",
            message(&err)
        );
    }
    // Booleans are bool's only.
    let err = thrown(buf.write(&js("|float8_e5m2"), None, eval("[true]").unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
}

#[wasm_bindgen_test]
fn a_typed_view_kept_after_free_never_reaches_another_buffer() {
    let a = Buffer::new(&64.0.into()).unwrap();
    let stale: js_sys::Int32Array = a
        .typed(&js("<i4"), &JsValue::UNDEFINED, &JsValue::UNDEFINED)
        .unwrap()
        .unchecked_into();
    drop(a); // JS: a.free()
    let c = Buffer::new(&64.0.into()).unwrap();
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
    let proxy = make.call0(&JsValue::NULL).unwrap();
    let mut buf = Buffer::new(&2.0.into()).unwrap();
    let err = thrown(buf.write(&js("|u1"), None, proxy.unchecked_into()));
    assert_eq!(message(&err), "boom");
    assert_eq!(buf.bytes(), vec![0, 0], "nothing written");
    let make =
        js_sys::Function::new_no_args("return { get A() { throw new Error('no fields'); } }");
    let fields = make.call0(&JsValue::NULL).unwrap();
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    assert_eq!(message(&err), "no fields");
    let make =
        js_sys::Function::new_no_args("return { get shape() { throw new Error('no shape'); } }");
    let layout = make.call0(&JsValue::NULL).unwrap();
    let err = thrown(buf.read(&js("|u1"), Some(layout.unchecked_into())));
    assert_eq!(message(&err), "no shape");
}

#[wasm_bindgen_test]
fn arguments_of_the_wrong_kind_are_type_errors() {
    let buf = Buffer::new(&8.0.into()).unwrap();
    let not_a_string: JsString = JsValue::from_f64(4.0).unchecked_into();
    let err = thrown(buf.read(&not_a_string, None));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(
        message(&err),
        "a dtype must be a string such as \"<i4\", not 4"
    );
    let mut buf = Buffer::new(&8.0.into()).unwrap();
    let err = thrown(buf.write(&js("|u1"), None, JsValue::from_f64(3.0).unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(
        message(&err),
        "values must be an array or a typed array, not 3"
    );
    for (layout, expected) in [
        (
            options(&[("offset", "2".into())]),
            "offset must be a number, not \"2\"",
        ),
        (
            options(&[("shape", list(&[1.0])), ("readonly", 1.0.into())]),
            "readonly must be true or false, not 1",
        ),
        (
            options(&[("readonly", "yes".into())]),
            "readonly must be true or false, not \"yes\"",
        ),
        (
            options(&[("shape", Array::of1(&"2".into()).into())]),
            "shape must be a number, not \"2\"",
        ),
        (
            options(&[
                ("shape", list(&[2.0])),
                ("strides", Array::of1(&"0".into()).into()),
            ]),
            "strides must be a number, not \"0\"",
        ),
        (
            JsValue::from_f64(5.0).unchecked_into(),
            "a layout must be an object such as { offset, shape, strides }, not 5",
        ),
        (
            JsValue::from_f64(3.0).unchecked_into(),
            "a layout must be an object such as { offset, shape, strides }, not 3",
        ),
        (
            // An array is an object to JS, but no options object.
            list(&[0.0, 2.0]).unchecked_into(),
            "a layout must be an object such as { offset, shape, strides }, not Array(2) [0, 2]",
        ),
    ] {
        let err = thrown(buf.read(&js("|u1"), Some(layout)));
        assert!(err.is_instance_of::<js_sys::TypeError>(), "{expected}");
        assert_eq!(message(&err), expected);
    }
}

#[wasm_bindgen_test]
fn numbers_that_do_not_fit_are_refused_not_wrapped() {
    for bad in [2f64.powi(32) + 8.0, 1.5, f64::NAN, -1.0] {
        assert!(Buffer::new(&bad.into()).is_err(), "Buffer({bad})");
    }
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    let err = thrown(buf.set_bytes(&1.5.into(), common::byte_source(&[9])));
    assert_eq!(message(&err), "offset must be an integer, not 1.5");
    assert!(err.is_instance_of::<js_sys::RangeError>());
    let too_big: ByteSource = Array::of2(&1.0.into(), &300.0.into()).unchecked_into();
    let err = thrown(buf.set_bytes(&0.0.into(), too_big));
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert_eq!(message(&err), "300 is not a value of uint8");
    let text: ByteSource = Array::of1(&"7".into()).unchecked_into();
    let err = thrown(buf.set_bytes(&0.0.into(), text));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(message(&err), "\"7\" is not a value of uint8");
    assert_eq!(buf.bytes(), vec![0, 0, 0, 0]);
    let axis: JsLayout = JsLayout::new(
        &js("|u1"),
        options(&[("shape", list(&[10.0]))]).unchecked_into(),
    )
    .unwrap();
    let all = axis
        .slice(
            &0.0.into(),
            &0.0.into(),
            &2f64.powi(31).into(),
            &JsValue::UNDEFINED,
        )
        .unwrap();
    assert_eq!(
        Array::from(&all.shape()).get(0).as_f64(),
        Some(10.0),
        "a stop past the end clamps"
    );
    assert!(axis.index(&0.0.into(), &1.5.into()).is_err());
    assert!(axis.check(&(2f64.powi(32) + 40.0).into()).is_err());
    // A length past usize is a size past the address space, as the core says.
    let huge = options(&[("shape", list(&[2f64.powi(40)]))]);
    assert_eq!(kind(&thrown(buf.read(&js("|u1"), Some(huge)))), "Overflow");
}

#[wasm_bindgen_test]
fn float16_and_bfloat16_writes_round_once() {
    let mut buf = Buffer::new(&2.0.into()).unwrap();
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
        buf.write(&js(dtype), None, values(&[value])).unwrap();
        let read = Array::from(&buf.read(&js(dtype), None).unwrap())
            .get(0)
            .as_f64();
        assert_eq!(read, Some(expected), "{dtype} {value}");
    }
}

/// A JS value made by an expression.
fn eval(expression: &str) -> JsValue {
    js_sys::Function::new_no_args(&format!("return {expression}"))
        .call0(&JsValue::NULL)
        .unwrap()
}

#[wasm_bindgen_test]
fn a_bad_value_in_any_source_writes_nothing_and_is_named() {
    let cases: [(&str, &str, &str, bool); 9] = [
        (
            "<i2",
            "new Float64Array([1, 1.5])",
            "1.5 is not a value of int16",
            false,
        ),
        (
            "<i2",
            "new Int32Array([1, 70000])",
            "70000 is not a value of int16",
            false,
        ),
        (
            ">u1",
            "new Int8Array([1, -1])",
            "-1 is not a value of uint8",
            false,
        ),
        (
            "|b1",
            "new Uint8Array([0, 2])",
            "2 is not a value of bool",
            false,
        ),
        (
            "<f4",
            "new BigInt64Array([1n, 2n])",
            "1n is not a value of float32",
            true,
        ),
        (
            "<u8",
            "new BigInt64Array([1n, -1n])",
            "-1n is not a value of uint64",
            false,
        ),
        (
            "<i4",
            "new BigUint64Array([1n, 2n ** 63n])",
            "9223372036854775808n is not a value of int32",
            false,
        ),
        ("<f4", "[1, 'x']", "\"x\" is not a value of float32", true),
        (
            "<i8",
            "[1n, 2n ** 64n]",
            "18446744073709551616n is not a value of int64",
            false,
        ),
    ];
    for (dtype, values, expected, type_error) in cases {
        for layout in [
            None,
            Some(options(&[
                ("shape", list(&[2.0])),
                ("strides", list(&[8.0])),
            ])),
        ] {
            let mut buf = Buffer::new(&16.0.into()).unwrap();
            let err = thrown(buf.write(&js(dtype), layout, eval(values).unchecked_into()));
            assert_eq!(message(&err), expected, "{dtype} {values}");
            assert_eq!(
                err.is_instance_of::<js_sys::TypeError>(),
                type_error,
                "{values}"
            );
            assert_eq!(
                buf.bytes(),
                vec![0; 16],
                "{dtype} {values}: nothing written"
            );
        }
    }
}

#[wasm_bindgen_test]
fn typed_arrays_of_other_classes_convert_when_their_values_fit() {
    let mut buf = Buffer::new(&16.0.into()).unwrap();
    buf.write(
        &js(">i2"),
        None,
        eval("new Uint8ClampedArray([1, 255])").unchecked_into(),
    )
    .unwrap();
    buf.write(
        &js("<f8"),
        Some(options(&[("offset", 8.0.into())])),
        eval("new Int32Array([-3])").unchecked_into(),
    )
    .unwrap();
    assert_eq!(&buf.bytes()[..4], [0, 1, 0, 255]);
    let read = Array::from(
        &buf.read(&js("<f8"), Some(options(&[("offset", 8.0.into())])))
            .unwrap()
            .into(),
    );
    assert_eq!(read.get(0).as_f64(), Some(-3.0));
    buf.write(&js("<i8"), None, eval("[-1, 2n ** 62n]").unchecked_into())
        .unwrap();
    let read = buf.read(&js("<i8"), None).unwrap();
    assert_eq!(common::transfer::class_name(&read), "BigInt64Array");
    let read = Array::from(&read.into());
    assert!(read.get(0).loose_eq(&eval("-1n")) && read.get(1).loose_eq(&eval("2n ** 62n")));
}

#[wasm_bindgen_test]
fn a_typed_view_of_the_same_buffer_is_copied_as_memmove_copies() {
    let mut buf = Buffer::new(&16.0.into()).unwrap();
    buf.write(&js("<i4"), None, values(&[1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    let front = buf.typed(&js("<i4"), &0.0.into(), &3.0.into()).unwrap();
    buf.write(
        &js("<i4"),
        Some(options(&[("offset", 4.0.into())])),
        front.unchecked_into(),
    )
    .unwrap();
    let read = Array::from(&buf.read(&js("<i4"), None).unwrap().into());
    let read: Vec<f64> = read.iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(read, [1.0, 1.0, 2.0, 3.0]);
}

#[wasm_bindgen_test]
fn messages_show_an_excerpt_of_a_huge_argument_never_all_of_it() {
    let mut buf = Buffer::new(&16.0.into()).unwrap();
    let huge = [
        (
            "new Float32Array(1 << 20)",
            "Float32Array(1048576) [0, 0, 0, ",
        ),
        ("new Array(1 << 20).fill(7)", "Array(1048576) [7, 7, 7, "),
        (
            "'x'.repeat(1 << 20)",
            "a string of 1048576 characters, \"xxx",
        ),
        ("({ big: new Array(1 << 20).fill(1) })", "{\"big\":[1,1,1,"),
    ];
    for (expression, start) in huge {
        let value = eval(expression);
        let errors = [
            thrown(buf.read(&value.clone().unchecked_into(), None)),
            thrown(buf.read(&js("<f4"), Some(options(&[("offset", value.clone())])))),
        ];
        for (i, err) in errors.into_iter().enumerate() {
            let text = message(&err);
            // A string as a dtype is the core's BadDType, with its own excerpt.
            let named = i == 1 || !expression.starts_with('\'');
            assert!(!named || text.contains(start), "{expression}: {text}");
            assert!(
                text.chars().count() < 160,
                "{expression}: {} characters",
                text.len()
            );
        }
    }
    let view = eval("new DataView(new ArrayBuffer(1 << 22))");
    let err = thrown(buf.write(&js("<f4"), None, view.unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert_eq!(
        message(&err),
        "values must be an array or a typed array, not DataView(4194304 bytes)"
    );
    let mut bad = vec![1.0; 1 << 20];
    bad[1 << 19] = f64::NAN;
    let err = thrown(buf.write(
        &js("<i2"),
        Some(options(&[("shape", list(&[0.0]))])),
        values(&bad),
    ));
    assert_eq!(
        message(&err),
        "the view holds 0 elements but 1048576 values were given"
    );
}

/// Wasm memory's size in 64 KiB pages: unchanged across a call that
/// allocated nothing large (a 200 MB allocation cannot fit in what earlier
/// tests freed).
fn pages() -> usize {
    core::arch::wasm32::memory_size::<0>()
}

#[wasm_bindgen_test]
fn a_stride_0_view_of_more_elements_than_one_call_handles_is_refused_before_any_work() {
    let mut buf = Buffer::new(&8.0.into()).unwrap();
    let huge = || options(&[("shape", list(&[2e8])), ("strides", list(&[0.0]))]);
    let before = pages();
    let refused = [
        (thrown(buf.read(&js("<u1"), Some(huge()))), "read() returns"),
        (thrown(buf.read(&js("<f8"), Some(huge()))), "read() returns"),
        (
            thrown(buf.offsets(&js("<u1"), Some(huge()))),
            "offsets() returns",
        ),
        (
            thrown(buf.write(&js("<u1"), Some(huge()), values(&[1.0, 2.0]))),
            "write() takes",
        ),
        (
            // An array as long as the view: not one of its values is read.
            thrown(buf.write(
                &js("<u1"),
                Some(huge()),
                eval("new Array(2e8)").unchecked_into(),
            )),
            "write() takes",
        ),
    ];
    for (err, call) in refused {
        assert!(err.is_instance_of::<js_sys::RangeError>(), "{call}");
        assert_eq!(
            message(&err),
            format!(
                "a view of 200000000 elements is more than {call} at once \
                 (limit 67108864); take it in parts"
            )
        );
    }
    assert_eq!(pages(), before, "wasm memory grew: something was allocated");
    assert_eq!(buf.bytes(), [0; 8]);
}

#[wasm_bindgen_test]
fn the_element_limit_is_2_to_the_26() {
    let buf = Buffer::new(&1024.0.into()).unwrap();
    // 2^16 rows of the same 1024 bytes: one copy per row.
    let rows = |n: f64| {
        options(&[
            ("shape", list(&[n, 1024.0])),
            ("strides", list(&[0.0, 1.0])),
        ])
    };
    let read = buf.read(&js("|u1"), Some(rows(65536.0))).unwrap();
    assert_eq!(
        read.unchecked_into::<js_sys::Uint8Array>().length(),
        1 << 26
    );
    let err = thrown(buf.read(&js("|u1"), Some(rows(65537.0))));
    assert_eq!(
        message(&err),
        "a view of 67109888 elements is more than read() returns at once \
         (limit 67108864); take it in parts"
    );
}

/// `expression`'s value behind a proxy, and a function that says how many
/// of its properties were read since.
fn counted(expression: &str) -> (JsValue, js_sys::Function) {
    let pair = eval(&format!(
        "(() => {{
            let reads = 0;
            const proxy = new Proxy({expression}, {{
                get(t, k) {{ reads++; return Reflect.get(t, k); }},
            }});
            return [proxy, () => reads];
        }})()"
    ));
    let pair = Array::from(&pair);
    (pair.get(0), pair.get(1).unchecked_into())
}

fn reads(counter: &js_sys::Function) -> f64 {
    counter.call0(&JsValue::NULL).unwrap().as_f64().unwrap()
}

#[wasm_bindgen_test]
fn long_arguments_are_measured_before_they_are_read() {
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    let holes = "new Array(2 ** 20)";
    // Bytes that cannot fit: refused by their count alone.
    let (bytes, counter) = counted(holes);
    let err = thrown(buf.set_bytes(&0.0.into(), bytes.unchecked_into()));
    assert_thrown(
        &err,
        "OutOfBounds",
        "the view reaches bytes 0..1048576 but the buffer holds 4 bytes",
    );
    assert!(reads(&counter) < 4.0, "{} reads", reads(&counter));
    let before = pages();
    let err = thrown(buf.set_bytes(&0.0.into(), eval("new Uint8Array(2e8)").unchecked_into()));
    assert_eq!(kind(&err), "OutOfBounds");
    assert_eq!(pages(), before, "the bytes were copied in before the check");
    // Values for a view that cannot take them.
    let (values, counter) = counted(holes);
    let err = thrown(buf.write(&js("<u1"), None, values.unchecked_into()));
    assert_eq!(kind(&err), "OutOfBounds");
    assert!(reads(&counter) < 4.0, "{} reads", reads(&counter));
    // Shapes, strides and axes: one per dimension, 32 at most.
    let (shape, counter) = counted(holes);
    let err = thrown(buf.read(&js("<u1"), Some(options(&[("shape", shape)]))));
    assert_thrown(
        &err,
        "TooManyDims",
        "1048576 dimensions is more than the limit of 32",
    );
    assert!(reads(&counter) < 4.0, "{} reads", reads(&counter));
    let layout = JsLayout::new(
        &js("<u1"),
        options(&[("shape", list(&[4.0]))]).unchecked_into(),
    )
    .unwrap();
    let (axes, counter) = counted(holes);
    assert_eq!(
        kind(&thrown(layout.permute(axes.unchecked_into()))),
        "TooManyDims"
    );
    assert!(reads(&counter) < 4.0, "{} reads", reads(&counter));
    // A plan field of more than three items: refused by its length.
    let (field, counter) = counted("Object.assign(new Array(2 ** 20), ['<f4', [2]])");
    let fields = Object::new();
    Reflect::set(&fields, &"A".into(), &field).unwrap();
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    assert!(reads(&counter) < 24.0, "{} reads", reads(&counter));
    // Fields: no more are read than a plan holds, and the one it refuses.
    let (fields, counter) =
        counted("Object.fromEntries(Array.from({ length: 1e5 }, (_, i) => [`f${i}`, '<u1']))");
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    assert_thrown(&err, "PlanFull", "a plan holds at most 32 fields");
    assert_eq!(reads(&counter), 33.0);
}

#[wasm_bindgen_test]
fn messages_escape_control_characters_and_stay_short() {
    let buf = Buffer::new(&4.0.into()).unwrap();
    let err = thrown(buf.read(
        &js("<u1"),
        Some(options(&[("offset", "x\n\r\t\0\u{1b}\"\\".into())])),
    ));
    assert_eq!(
        message(&err),
        r#"offset must be a number, not "x\n\r\t\0\u{1b}\"\\""#
    );
    // A field's name, however long, with the end of the message kept.
    let fields = Object::new();
    let name = format!("a\n{}", "x".repeat(1 << 20));
    Reflect::set(&fields, &name.into(), &"<i3".into()).unwrap();
    let err = thrown(Plan::new(None).unwrap().struct_(fields.unchecked_into()));
    let text = message(&err);
    assert!(text.starts_with(r"field a\nxxx"), "{text}");
    assert!(text.ends_with(r#"xxx: unknown dtype "<i3""#), "{text}");
    assert!(
        text.chars().count() <= 303,
        "{} characters",
        text.chars().count()
    );
    // Rejected arrays of a million elements, through every export that
    // takes one.
    let million = || eval("new Int8Array(1e6).fill(-1)");
    let layout = JsLayout::new(
        &js("<u1"),
        options(&[("shape", list(&[4.0]))]).unchecked_into(),
    )
    .unwrap();
    let mut buf = Buffer::new(&4.0.into()).unwrap();
    let errors = [
        thrown(buf.set_bytes(&0.0.into(), million().unchecked_into())),
        thrown(buf.read(&million().unchecked_into(), None)),
        thrown(buf.typed(
            &million().unchecked_into(),
            &JsValue::UNDEFINED,
            &JsValue::UNDEFINED,
        )),
        thrown(buf.write(
            &js("<u1"),
            None,
            eval("new DataView(new ArrayBuffer(1e6))").unchecked_into(),
        )),
        thrown(layout.reinterpret(&million().unchecked_into())),
        thrown(Plan::new(Some(million().unchecked_into()))),
        thrown(Plan::from_text(&million().unchecked_into())),
        thrown(describe_dtype(&million().unchecked_into())),
    ];
    for err in errors {
        let text = message(&err);
        assert!(err.is_instance_of::<js_sys::TypeError>(), "{text}");
        assert!(
            text.contains("Int8Array(1000000) [-1, -1, -1, ")
                || text.contains("DataView(1000000 bytes)"),
            "{text}"
        );
        assert!(text.len() < 500, "{} characters", text.len());
    }
}

#[wasm_bindgen_test]
fn number_arguments_of_another_type_are_type_errors_not_converted() {
    let layout = JsLayout::new(
        &js("<u1"),
        options(&[("shape", list(&[4.0]))]).unchecked_into(),
    )
    .unwrap();
    let plan = Plan::from_text(&js("P\nA <f4 1")).unwrap();
    let mut buf = Buffer::new(&8.0.into()).unwrap();
    let none = &JsValue::UNDEFINED;
    let (zero, text) = (&0.0.into(), &JsValue::from_str("1"));
    let bytes = || common::byte_source(&[1]);
    let refused = [
        (thrown(Buffer::new(&"8".into())), "nbytes", "\"8\""),
        (thrown(Buffer::new(&Object::new().into())), "nbytes", "{}"),
        (thrown(Buffer::new(none)), "nbytes", "undefined"),
        (thrown(Buffer::new(&eval("8n"))), "nbytes", "8n"),
        (thrown(buf.set_bytes(text, bytes())), "offset", "\"1\""),
        (thrown(buf.set_bytes(none, bytes())), "offset", "undefined"),
        (thrown(buf.typed(&js("|u1"), text, none)), "offset", "\"1\""),
        (thrown(buf.typed(&js("|u1"), none, text)), "length", "\"1\""),
        (thrown(layout.check(text)), "nbytes", "\"1\""),
        (
            thrown(layout.slice(text, none, none, none)),
            "axis",
            "\"1\"",
        ),
        (
            thrown(layout.slice(zero, text, none, none)),
            "start",
            "\"1\"",
        ),
        (
            thrown(layout.slice(zero, none, text, none)),
            "stop",
            "\"1\"",
        ),
        (
            thrown(layout.slice(zero, none, none, text)),
            "step",
            "\"1\"",
        ),
        (thrown(layout.index(text, zero)), "axis", "\"1\""),
        (thrown(layout.index(zero, text)), "index", "\"1\""),
        (thrown(plan.padding(text)), "alternative", "\"1\""),
    ];
    for (err, what, got) in refused {
        let expected = format!("{what} must be a number, not {got}");
        assert!(err.is_instance_of::<js_sys::TypeError>(), "{expected}");
        assert_eq!(message(&err), expected);
    }
    // Left out, as undefined or null: the defaults.
    let all = buf.typed(&js("|u1"), &JsValue::NULL, none).unwrap();
    assert_eq!(all.unchecked_into::<js_sys::Uint8Array>().length(), 8);
    let sliced = layout.slice(zero, &JsValue::NULL, none, none).unwrap();
    assert_eq!(Array::from(&sliced.shape()).get(0).as_f64(), Some(4.0));
    // A number an argument cannot take stays a RangeError.
    let err = thrown(Buffer::new(&f64::NAN.into()));
    assert!(err.is_instance_of::<js_sys::RangeError>());
    assert!(message(&err).ends_with(", not NaN"), "{}", message(&err));
    assert_eq!(buf.bytes(), [0; 8]);
}

/// The core's one table of error kinds, as JS sees it: every kind's JS
/// class exists, and errors of several kinds are of their kind's class
/// with the kind as their `kind` property.
#[wasm_bindgen_test]
fn errors_are_of_their_kind_s_class_and_carry_their_kind() {
    use bytelens_core::ErrorKind;
    let global = js_sys::global();
    for &kind in ErrorKind::ALL {
        let class = Reflect::get(&global, &kind.js_class().into()).unwrap();
        assert!(
            class.is_function(),
            "{kind}: no JS class {}",
            kind.js_class()
        );
    }
    let is = |err: &JsValue, kind: ErrorKind| {
        let class = Reflect::get(&global, &kind.js_class().into()).unwrap();
        let class: js_sys::Function = class.unchecked_into();
        assert!(err.is_instance_of::<js_sys::Error>(), "{kind}");
        assert!(
            Reflect::get(err, &"constructor".into()).unwrap() == JsValue::from(class),
            "{kind}: {}",
            message(err)
        );
        let got = Reflect::get(err, &"kind".into()).unwrap().as_string();
        assert_eq!(got.as_deref(), Some(kind.name()), "{}", message(err));
    };
    let buf = Buffer::new(&3.0.into()).unwrap();
    is(
        &thrown(buf.read(&js("<i2"), None)),
        ErrorKind::ItemsizeMismatch,
    );
    is(&thrown(buf.read(&js("float33"), None)), ErrorKind::BadDType);
    is(
        &thrown(Buffer::new(&js("many").into())),
        ErrorKind::WrongType,
    );
    is(&thrown(Buffer::new(&1.5.into())), ErrorKind::BadValue);
}
