//! The tensor panel's calls given what a page should not give them (issue
//! 40's probe): bytes of the wrong JS type, sizes past wasm memory,
//! arrays past 2^32 elements, memory run out, one object as two.

use bytelens_wasm::{JsHeatmap, JsHistogram, JsStats, JsTally, dequantize, read_header};
use js_sys::{ArrayBuffer, BigInt, DataView, Float32Array, Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use super::{NONE, field, num, u8a};
use crate::common::{js, kind, message, thrown};

fn is_type_error(err: &JsValue) -> bool {
    err.is_instance_of::<js_sys::TypeError>()
}

fn count(stats: &JsStats) -> (f64, f64) {
    let r: JsValue = stats.result().unwrap().into();
    (
        field(&r, "count").as_f64().unwrap(),
        field(&r, "min").as_f64().unwrap_or(f64::NAN),
    )
}

/// A typed array, a `DataView` and an `ArrayBuffer` are taken by the bytes
/// they hold (a Float32Array's four an element), and anything else is a
/// `TypeError` naming the argument, in every call that takes bytes.
#[wasm_bindgen_test]
fn byte_arguments_are_bytes_or_a_type_error() {
    let floats = Float32Array::from(&[1.5f32, 2.5, 3.5, 4.5][..]);
    let buffer = floats.buffer();
    let sources: [JsValue; 4] = [
        floats.clone().into(),
        buffer.clone().into(),
        DataView::new(&buffer, 0, 16).into(),
        Uint8Array::new(&buffer).into(),
    ];
    for source in &sources {
        let mut stats = JsStats::new(&js("<f4")).unwrap();
        stats.push(source).unwrap();
        assert_eq!(count(&stats), (4.0, 1.5));
    }
    // A view of part of a buffer: its bytes only.
    let mut stats = JsStats::new(&js("<f4")).unwrap();
    stats.push(&floats.subarray(1, 3).into()).unwrap();
    assert_eq!(count(&stats), (2.0, 2.5));

    let wrong: [JsValue; 6] = [
        "abcd".into(),
        num(4.0),
        JsValue::NULL,
        NONE,
        Object::new().into(),
        js_sys::Array::of4(&num(0.0), &num(0.0), &num(0.0), &num(0.0)).into(),
    ];
    let mut tally = JsTally::new(&js("<f4")).unwrap();
    let mut tallied = JsHistogram::new(&num(0.0), &num(1.0), &NONE, &js("<f4").into()).unwrap();
    tallied.add_tally(&tally).unwrap();
    for bad in &wrong {
        let mut hist = JsHistogram::new(&num(0.0), &num(1.0), &NONE, &NONE).unwrap();
        let mut map = JsHeatmap::new(
            &num(2.0),
            &num(2.0),
            &num(1.0),
            &num(1.0),
            &js("|u1"),
            &"max".into(),
        )
        .unwrap();
        let errors = [
            ("bytes", thrown(stats.push(bad))),
            ("bytes", thrown(hist.push(bad, &js("<f4")))),
            ("bytes", thrown(tally.push(bad))),
            ("bytes", thrown(tally.push_keyed(bad))),
            ("bytes", thrown(tallied.push_rest(bad))),
            ("keyed", thrown(tallied.push_keyed(bad))),
            ("bytes", thrown(map.push_rows(bad))),
            ("blocks", thrown(dequantize(&js("Q8_0"), bad))),
            ("head", thrown(read_header(bad, &num(24.0)))),
        ];
        for (what, err) in errors {
            assert!(is_type_error(&err), "{what}: {}", message(&err));
            assert!(
                message(&err).starts_with(&format!("{what} must be bytes: a Uint8Array")),
                "{}",
                message(&err)
            );
        }
    }
    assert_eq!(count(&stats), (2.0, 2.5), "nothing counted");
}

/// `readHeader` reads a header from an `ArrayBuffer` (it answered `{ need:
/// 10 }` for a whole file), and takes its length as a whole number or a
/// BigInt only (`"24"` and null were 24 and 0).
#[wasm_bindgen_test]
fn read_header_takes_buffers_and_whole_lengths() {
    let json = r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#;
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file.extend([1, 2, 3, 4]);
    let n = file.len() as f64;
    let buffer: ArrayBuffer = Uint8Array::from(&file[..]).buffer();
    for head in [buffer.clone().into(), u8a(&file)] {
        let header = read_header(&head, &num(n)).unwrap();
        assert_eq!(field(&header, "dataStart").as_f64(), Some(n - 4.0));
        let header = read_header(&head, &BigInt::from(file.len() as u64).into()).unwrap();
        assert_eq!(field(&header, "dataStart").as_f64(), Some(n - 4.0));
    }
    for bad in [
        JsValue::from("24"),
        JsValue::NULL,
        NONE,
        Object::new().into(),
    ] {
        let err = thrown(read_header(&buffer.clone().into(), &bad));
        assert!(is_type_error(&err), "{}", message(&err));
        assert!(message(&err).starts_with("length must be a whole number (a number or a BigInt)"));
    }
    let past: JsValue = BigInt::from(u64::MAX).into();
    for bad in [num(-1.0), num(2.5), past] {
        let err = thrown(read_header(&buffer.clone().into(), &bad));
        assert!(
            !is_type_error(&err) && kind(&err) == "BadValue",
            "{}",
            message(&err)
        );
        assert!(
            message(&err).starts_with("length must be a whole number from 0 to 9007199254740992")
        );
    }
}

/// A shape with a length past 2^53 (a tensor of no elements may have
/// one) is BigInts, exactly: 2^60 + 1 read as 1152921504606847000.
#[wasm_bindgen_test]
fn shapes_past_2_to_the_53_are_big_ints() {
    let json = r#"{"z":{"dtype":"F32","shape":[0,1152921504606846977],"data_offsets":[0,0]},"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#;
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file.extend([0, 0]);
    let header = read_header(&u8a(&file), &num(file.len() as f64)).unwrap();
    let arrays = field(&header, "arrays");
    let shape = |i: u32| field(&Reflect::get_u32(&arrays, i).unwrap(), "shape");
    let z: js_sys::Array = shape(0).unchecked_into();
    assert_eq!(z.get(0), JsValue::from(BigInt::from(0u64)));
    assert_eq!(z.get(1), JsValue::from(BigInt::from((1u64 << 60) + 1)));
    let w: js_sys::Array = shape(1).unchecked_into();
    assert_eq!(w.get(0).as_f64(), Some(2.0), "numbers below 2^53");
}

/// np.histogram(a, bins, range=(lo, hi)): a range of one number is
/// widened (it threw), and float16 edges are float64 numbers rounded once
/// (stepping in float16 counted [1, 2]).
#[wasm_bindgen_test]
fn histogram_ranges_are_numpy_s() {
    let h = JsHistogram::new(&num(3.0), &num(3.0), &num(2.0), &js("<f4").into()).unwrap();
    assert_eq!(h.edges(), [2.5, 3.0, 3.5]);
    let values = [2.6484375f32, 0.1, 5.2].map(half_bits);
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut h = JsHistogram::new(&num(0.1), &num(5.2), &num(2.0), &js("<f2").into()).unwrap();
    h.push(&u8a(&bytes), &js("<f2")).unwrap();
    assert_eq!(h.counts(), [2.0, 1.0]);
}

/// float16 bits of a float32 that float16 holds (or rounds, to nearest).
fn half_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mant = bits & 0x7f_ffff;
    let half = ((exp as u32) << 10) | (mant >> 13);
    // Round to nearest, ties to even.
    let rest = mant & 0x1fff;
    let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
    (((bits >> 16) & 0x8000) | (half + u32::from(up))) as u16
}

/// Pictures past 2^26 pixels are refused, with their sizes, before
/// anything is allocated (they aborted the instance: `RuntimeError:
/// unreachable`); arrays of 2^32 elements or more are pictured.
#[wasm_bindgen_test]
fn heatmaps_refuse_huge_pictures_and_take_huge_arrays() {
    let make = |rows: f64, cols: f64, h: f64, w: f64| {
        JsHeatmap::new(
            &num(rows),
            &num(cols),
            &num(h),
            &num(w),
            &js("<f4"),
            &"mean".into(),
        )
    };
    for (rows, cols, h, w, pixels) in [
        (46340.0, 46340.0, 46340.0, 46340.0, "2147395600"),
        (1.0, 4294967295.0, 1.0, 4294967295.0, "4294967295"),
        (65535.0, 65535.0, 65535.0, 65535.0, "4294836225"),
    ] {
        let err = thrown(make(rows, cols, h, w));
        assert_eq!(
            message(&err),
            format!("outH × outW must be at most 67108864 pixels (2^26), not {pixels}")
        );
    }
    // 65536 × 65536 uint8 (2^32 elements) as 2 × 2 pixels.
    let mut map = JsHeatmap::new(
        &num(65536.0),
        &BigInt::from(65536u64).into(),
        &num(2.0),
        &num(2.0),
        &js("|u1"),
        &"mean".into(),
    )
    .unwrap();
    let row: Vec<u8> = (0..65536u32).map(|c| u8::from(c >= 32768)).collect();
    map.push_rows(&u8a(&row)).unwrap();
    map.push_rows(&u8a(&row)).unwrap();
    map.done();
    let values = map.values().unwrap();
    assert_eq!(values[..2], [0.0, 1.0]);
    assert!(values[2].is_nan() && values[3].is_nan());
    let err = thrown(map.push_rows(&u8a(&[0; 3])));
    assert_eq!(kind(&err), "CountMismatch");
    assert_eq!(
        message(&err),
        "3 elements given, but the 65536 × 65536 array has 0 left"
    );
    // 2 × 2^31 float32 as 1 × 2 pixels, its first elements come.
    let mut wide = make(2.0, 2147483648.0, 1.0, 2.0).unwrap();
    wide.push_rows(&u8a(&f32::to_le_bytes(5.0))).unwrap();
    wide.done();
    assert_eq!(wide.values().unwrap()[0], 5.0);
    assert!(wide.values().unwrap()[1].is_nan());
}

/// `stats.merge(stats)` is a `TypeError` naming the argument (it was the
/// glue's plain `Error` about aliasing).
#[wasm_bindgen_test]
fn stats_do_not_merge_with_themselves() {
    let mut stats = JsStats::new(&js("|u1")).unwrap();
    stats.push(&u8a(&[1, 2])).unwrap();
    let err = thrown(stats.merge(&stats));
    assert!(is_type_error(&err));
    assert!(
        message(&err).starts_with("other must be another Stats"),
        "{}",
        message(&err)
    );
    assert_eq!(count(&stats), (2.0, 1.0));
}
