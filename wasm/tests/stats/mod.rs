//! `Stats`, `Histogram`, `Tally`, `Heatmap` and `dequantize` (the demo's build,
//! feature `files`) through their JS API: numpy's answers in
//! tests/vectors/stats.json, and the errors each argument throws.

use bytelens_wasm::{JsHeatmap, JsHistogram, JsStats, JsTally, dequantize};
use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::common::{assert_thrown, js, kind, message, thrown};

mod hostile;

fn num(v: f64) -> JsValue {
    JsValue::from_f64(v)
}

const NONE: JsValue = JsValue::UNDEFINED;

fn field(object: &JsValue, key: &str) -> JsValue {
    Reflect::get(object, &key.into()).unwrap()
}

/// Bytes as a `Uint8Array`, as the tensor panel's calls take them.
pub fn u8a(bytes: &[u8]) -> JsValue {
    js_sys::Uint8Array::from(bytes).into()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn bits(value: &serde_json::Value) -> Option<f64> {
    value
        .as_str()
        .map(|b| f64::from_bits(u64::from_str_radix(b, 16).unwrap()))
}

#[wasm_bindgen_test]
fn stats_of_chunks_count_every_kind_of_value() {
    let values = [
        1.0f32,
        -2.0,
        f32::NAN,
        4.0,
        f32::INFINITY,
        0.0,
        f32::NEG_INFINITY,
        1e-40,
    ];
    let bytes = f32_bytes(&values);
    let mut stats = JsStats::new(&js("<f4")).unwrap();
    stats.push(&u8a(&bytes[..12])).unwrap();
    stats.push(&u8a(&bytes[12..])).unwrap();
    let r: JsValue = stats.result().unwrap().into();
    let got: Vec<f64> = [
        "count",
        "finite",
        "nan",
        "posinf",
        "neginf",
        "zero",
        "subnormal",
    ]
    .iter()
    .map(|k| field(&r, k).as_f64().unwrap())
    .collect();
    assert_eq!(got, [8.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    assert_eq!(field(&r, "min").as_f64(), Some(-2.0));
    assert_eq!(field(&r, "max").as_f64(), Some(4.0));
    let mean = (1.0 - 2.0 + 4.0 + 0.0 + f64::from(1e-40f32)) / 5.0;
    let close = |v: JsValue| (v.as_f64().unwrap() - mean).abs() <= 1e-15;
    assert!(close(field(&r, "mean")));
    // merge: the same values again, another Stats.
    let mut other = JsStats::new(&js("<f4")).unwrap();
    other.push(&u8a(&bytes)).unwrap();
    stats.merge(&other).unwrap();
    let r: JsValue = stats.result().unwrap().into();
    assert_eq!(field(&r, "count").as_f64(), Some(16.0));
    assert!(close(field(&r, "mean")));
    // No finite value: nulls.
    let mut none = JsStats::new(&js(">f8")).unwrap();
    none.push(&u8a(&f64::NAN.to_be_bytes())).unwrap();
    let r: JsValue = none.result().unwrap().into();
    for key in ["min", "max", "mean", "std"] {
        assert!(field(&r, key).is_null(), "{key}");
    }
}

#[wasm_bindgen_test]
fn stats_refuse_partial_elements_and_unknown_dtypes() {
    let mut stats = JsStats::new(&js("<i2")).unwrap();
    let err = thrown(stats.push(&u8a(&[1, 2, 3])));
    assert_thrown(
        &err,
        "ItemsizeMismatch",
        "3 bytes is not a multiple of 2, the size of int16",
    );
    assert_eq!(kind(&thrown(JsStats::new(&js("<i3")))), "BadDType");
}

#[wasm_bindgen_test]
fn histogram_bins_are_numpy_s_in_the_array_s_type() {
    // np.histogram(np.float32([0.1, 0.2, 0.3, 0.7]), bins=3)
    let values = [0.1f32, 0.2, 0.3, 0.7];
    let mut h = JsHistogram::for_range(
        &num(0.1f32.into()),
        &num(0.7f32.into()),
        &num(3.0),
        &js("<f4").into(),
    )
    .unwrap();
    h.push(&u8a(&f32_bytes(&values)), &js("<f4")).unwrap();
    assert_eq!(h.counts(), [2.0, 1.0, 1.0]);
    let edges: Vec<f32> = [0.1, 0.29999998, 0.49999997, 0.7].to_vec();
    assert_eq!(
        h.edges(),
        edges.iter().map(|&e| f64::from(e)).collect::<Vec<_>>()
    );
    // A constant array: numpy's range of one around it; 64 bins by default.
    let h = JsHistogram::for_range(&num(3.0), &num(3.0), &NONE, &NONE).unwrap();
    assert_eq!(h.edges().len(), 65);
    assert_eq!((h.edges()[0], h.edges()[64]), (2.5, 3.5));
    let h = JsHistogram::new(&num(0.0), &num(1.0), &num(4.0), &NONE).unwrap();
    assert_eq!(h.edges(), [0.0, 0.25, 0.5, 0.75, 1.0]);
}

#[wasm_bindgen_test]
fn histogram_arguments_that_cannot_be_bins_are_refused() {
    let err = thrown(JsHistogram::new(&num(0.0), &num(1.0), &num(0.0), &NONE));
    assert_eq!(
        message(&err),
        "bins must be a whole number from 1 to 1024, not 0"
    );
    let err = thrown(JsHistogram::new(&num(1.0), &num(0.0), &NONE, &NONE));
    assert_eq!(message(&err), "hi must be finite, with lo <= hi, not 0");
    let err = thrown(JsHistogram::new(&"0".into(), &num(1.0), &NONE, &NONE));
    assert!(err.is_instance_of::<js_sys::TypeError>());
    // float16 has no 64 steps between 1000 and 1001: numpy refuses too.
    let err = thrown(JsHistogram::new(
        &num(1000.0),
        &num(1001.0),
        &NONE,
        &js("<f2").into(),
    ));
    assert!(
        message(&err).starts_with("bins must be fewer"),
        "{}",
        message(&err)
    );
    let mut h = JsHistogram::new(&num(0.0), &num(1.0), &NONE, &NONE).unwrap();
    assert_eq!(
        kind(&thrown(h.push(&u8a(&[0; 3]), &js("<f4")))),
        "ItemsizeMismatch"
    );
}

/// Every case of tests/vectors/stats.json through the JS API: counts
/// exactly, extremes and edges bit for bit, mean and std within rounding.
#[wasm_bindgen_test]
fn stats_and_histograms_equal_numpy_s_vectors() {
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/vectors/stats.json")).unwrap();
    for case in vectors["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let dtype = js(case["dtype"].as_str().unwrap());
        let bytes = hex(case["bytes"].as_str().unwrap());
        let mut stats = JsStats::new(&dtype).unwrap();
        stats.push(&u8a(&bytes)).unwrap();
        let r: JsValue = stats.result().unwrap().into();
        for key in [
            "count",
            "finite",
            "nan",
            "posinf",
            "neginf",
            "zero",
            "subnormal",
        ] {
            assert_eq!(field(&r, key).as_f64(), case[key].as_f64(), "{name}: {key}");
        }
        assert_eq!(field(&r, "min").as_f64(), bits(&case["min"]), "{name}");
        assert_eq!(field(&r, "max").as_f64(), bits(&case["max"]), "{name}");
        for key in ["mean", "std"] {
            match (field(&r, key).as_f64(), bits(&case[key])) {
                (None, None) => {}
                (Some(got), Some(numpy)) => {
                    let scale = numpy.abs().max(1.0);
                    assert!(
                        (got - numpy).abs() <= 1e-12 * scale,
                        "{name}: {key} {got} vs {numpy}"
                    );
                }
                other => panic!("{name}: {key} {other:?}"),
            }
        }
        let (Some(min), Some(max)) = (field(&r, "min").as_f64(), field(&r, "max").as_f64()) else {
            continue;
        };
        let hist = JsHistogram::for_range(&num(min), &num(max), &NONE, &dtype.clone().into());
        let Some(numpy) = case["histogram"].as_object() else {
            assert!(hist.is_err(), "{name}");
            continue;
        };
        let mut hist = hist.unwrap();
        // The same bins counted from a tally, and the elements it left.
        let mut tallied =
            JsHistogram::for_range(&num(min), &num(max), &NONE, &dtype.clone().into()).unwrap();
        let mut tally = JsTally::new(&dtype).unwrap();
        let half = bytes.len() / 2 / itemsize(&dtype) * itemsize(&dtype);
        tally.push(&u8a(&bytes[..half])).unwrap();
        tally.push(&u8a(&bytes[half..])).unwrap();
        let left = tallied.add_tally(&tally).unwrap();
        assert!(left == 0.0 || !tally.is_exact(), "{name}: {left} left");
        tallied.push_rest(&u8a(&bytes)).unwrap();
        hist.push(&u8a(&bytes), &dtype).unwrap();
        assert_eq!(
            tallied.counts(),
            hist.counts(),
            "{name}: counted from a tally"
        );
        // And from the tally's keyed chunks.
        let mut keyed_tally = JsTally::new(&dtype).unwrap();
        let mut keyed = keyed_tally.push_keyed(&u8a(&bytes[..half])).unwrap();
        keyed.extend(keyed_tally.push_keyed(&u8a(&bytes[half..])).unwrap());
        let bound = keyed_tally.keyed_length(&num(half as f64)).unwrap()
            + keyed_tally
                .keyed_length(&num((bytes.len() - half) as f64))
                .unwrap();
        assert!(
            keyed.len() as f64 <= bound,
            "{name}: {} keyed bytes, at most {bound}",
            keyed.len()
        );
        let mut from_keyed =
            JsHistogram::for_range(&num(min), &num(max), &NONE, &dtype.clone().into()).unwrap();
        from_keyed.add_tally(&keyed_tally).unwrap();
        from_keyed.push_keyed(&u8a(&keyed)).unwrap();
        assert_eq!(
            from_keyed.counts(),
            hist.counts(),
            "{name}: counted from keyed chunks"
        );
        let edges: Vec<f64> = numpy["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| bits(e).unwrap())
            .collect();
        let same = hist
            .edges()
            .iter()
            .zip(&edges)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && hist.edges().len() == edges.len(), "{name}: edges");
        let counts: Vec<f64> = numpy["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_f64().unwrap())
            .collect();
        assert_eq!(hist.counts(), counts, "{name}: counts");
    }
}

fn itemsize(dtype: &js_sys::JsString) -> usize {
    let d: bytelens_core::Descr = String::from(dtype).parse().unwrap();
    d.dtype.size()
}

#[wasm_bindgen_test]
fn a_histogram_counted_from_a_tally_is_counted_by_push_rest_only() {
    // np.histogram(np.float32([0.1, 0.25, 0.5, 0.7, 1.0, 0.3]), bins=4)
    let bytes = f32_bytes(&[0.1, 0.25, 0.5, 0.7, 1.0, 0.3]);
    let hist = || {
        JsHistogram::for_range(&num(0.1f32.into()), &num(1.0), &num(4.0), &js("<f4").into())
            .unwrap()
    };
    let mut tally = JsTally::new(&js("<f4")).unwrap();
    tally.push(&u8a(&bytes)).unwrap();
    assert!(!tally.is_exact());
    let err = thrown(hist().push_rest(&u8a(&bytes)));
    assert_eq!(
        message(&err),
        "pushRest() cannot be called now: it counts what a tally left: addTally first"
    );
    let mut h = hist();
    // The keys of 0.1 and 1.0 reach past the range.
    assert_eq!(h.add_tally(&tally).unwrap(), 2.0);
    assert_eq!(h.counts(), [2.0, 1.0, 1.0, 0.0]);
    h.push_rest(&u8a(&bytes)).unwrap();
    assert_eq!(h.counts(), [3.0, 1.0, 1.0, 1.0]);
    for err in [
        thrown(h.push(&u8a(&bytes), &js("<f4"))),
        thrown(h.add_tally(&tally)),
    ] {
        assert!(
            message(&err).ends_with("cannot be called now: this histogram was counted from a tally (addTally): pushRest the bytes again"),
            "{}",
            message(&err)
        );
    }
    assert_eq!(
        kind(&thrown(h.push_rest(&u8a(&bytes[..3])))),
        "ItemsizeMismatch"
    );
    let keyed = JsTally::new(&js("<f4"))
        .unwrap()
        .push_keyed(&u8a(&bytes))
        .unwrap();
    assert_eq!(
        kind(&thrown(h.push_keyed(&u8a(&keyed[..keyed.len() - 1])))),
        "LengthMismatch"
    );
    assert!(
        message(&thrown(hist().push_keyed(&u8a(&keyed))))
            .starts_with("pushKeyed() cannot be called now")
    );
    // bfloat16: every key one value, nothing left.
    let mut exact = JsTally::new(&js("bfloat16")).unwrap();
    exact.push(&u8a(&[0x80, 0x3f, 0x00, 0x40])).unwrap(); // 1.0, 2.0
    assert!(exact.is_exact());
    let mut h =
        JsHistogram::for_range(&num(1.0), &num(2.0), &num(2.0), &js("bfloat16").into()).unwrap();
    assert_eq!(h.add_tally(&exact).unwrap(), 0.0);
    assert_eq!(h.counts(), [1.0, 1.0]);
}

#[wasm_bindgen_test]
fn heatmap_pixels_are_means_or_maxima_of_what_they_cover() {
    let mean = || js("mean").into();
    let mut map = JsHeatmap::new(
        &num(3.0),
        &num(4.0),
        &num(2.0),
        &num(2.0),
        &js("|u1"),
        &mean(),
    )
    .unwrap();
    map.push_rows(&u8a(&[1, 2, 3, 4])).unwrap();
    assert!(!map.is_done());
    map.push_rows(&u8a(&[5, 6, 7, 8, 9, 10, 11, 12])).unwrap();
    assert!(map.is_done());
    map.done();
    // Row 0 alone, then rows 1 and 2; columns 0..2 and 2..4.
    assert_eq!(map.values().unwrap(), [1.5, 3.5, 7.5, 9.5]);
    let range: JsValue = map.range().into();
    assert_eq!(js_sys::Array::from(&range).to_vec(), [num(1.5), num(9.5)]);
    let mut max = JsHeatmap::new(
        &num(2.0),
        &num(2.0),
        &num(1.0),
        &num(2.0),
        &js("<f4"),
        &js("max").into(),
    )
    .unwrap();
    max.push_rows(&u8a(&f32_bytes(&[f32::NAN, 2.0, f32::NAN, -1.0])))
        .unwrap();
    let values = max.values().unwrap();
    assert!(values[0].is_nan() && values[1] == 2.0);
    // Past the end.
    assert_eq!(kind(&thrown(max.push_rows(&u8a(&[0; 4])))), "CountMismatch");
    let mut empty = JsHeatmap::new(
        &num(1.0),
        &num(1.0),
        &num(1.0),
        &num(1.0),
        &js("<f4"),
        &mean(),
    )
    .unwrap();
    empty.done();
    assert!(JsValue::from(empty.range()).is_null());
}

#[wasm_bindgen_test]
fn heatmap_arguments_are_checked() {
    let new = |h: f64, mode: JsValue| {
        JsHeatmap::new(&num(4.0), &num(4.0), &num(h), &num(2.0), &js("<f4"), &mode)
    };
    let err = thrown(new(5.0, js("mean").into()));
    assert!(message(&err).starts_with("outH must be a whole number from 1 to the array's"));
    let err = thrown(new(2.0, js("median").into()));
    assert_eq!(
        message(&err),
        "mode must be \"mean\" or \"max\", not \"median\""
    );
    assert!(err.is_instance_of::<js_sys::RangeError>());
    let err = thrown(new(2.0, num(1.0)));
    assert!(err.is_instance_of::<js_sys::TypeError>());
}

#[wasm_bindgen_test]
fn dequantize_is_the_core_s_reference() {
    // One Q8_0 block: a float16 scale of 0.5, then 32 int8 values.
    let mut block = vec![0x00, 0x38];
    block.extend((0..32).map(|i| (i as i8 - 16) as u8));
    let out = dequantize(&js("q8_0"), &u8a(&block)).unwrap();
    assert_eq!(out.len(), 32);
    assert_eq!(out[..3], [-8.0, -7.5, -7.0]);
    let err = thrown(dequantize(&js("Q8_0"), &u8a(&block[..33])));
    assert_eq!(
        message(&err),
        "blocks' length must be a whole number of blocks (see the type's block size), not 33"
    );
    let err = thrown(dequantize(&js("F32"), &u8a(&block)));
    assert!(message(&err).starts_with("qtype must be a quantised ggml type"));
    assert_eq!(dequantize(&js("Q4_K"), &u8a(&[])).unwrap().len(), 0);
}
