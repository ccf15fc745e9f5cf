//! The core's `Stats` and `Histogram` against numpy's answers in
//! `tests/vectors/stats.json` (written by `generate_stats.py`): counts
//! exactly, minimum and maximum and the histogram's edges bit for bit, its
//! counts exactly, the mean and standard deviation within float64 rounding (a few ulps, or
//! 1e-14 of the values' mean magnitude where the mean cancels).

use std::path::PathBuf;

use bytelens_core::{Descr, Histogram, Scalar, Stats};
use serde_json::Value;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn float(value: &Value) -> Option<f64> {
    value
        .as_str()
        .map(|bits| f64::from_bits(u64::from_str_radix(bits, 16).expect("float64 bits")))
}

/// The distance between two floats in units in the last place.
fn ulps(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

#[test]
#[cfg_attr(
    miri,
    ignore = "100 KB of JSON: slow under Miri, and no unsafe code here (the unit tests run)"
)]
fn stats_and_histograms_equal_numpy_s() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/stats.json");
    let text = std::fs::read_to_string(path).expect("stats.json");
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let bins = vectors["bins"].as_u64().unwrap() as usize;
    let cases = vectors["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let descr: Descr = case["dtype"].as_str().unwrap().parse().unwrap();
        let bytes = hex(case["bytes"].as_str().unwrap());
        let n = bytes.len() / descr.dtype.size();
        let mut stats = Stats::new();
        // In three chunks of whole elements.
        let cut = |k: usize| k * n / 3 * descr.dtype.size();
        for k in 0..3 {
            stats.push(descr, &bytes[cut(k)..cut(k + 1)]).unwrap();
        }
        let finite: Vec<f64> = bytes
            .chunks_exact(descr.dtype.size())
            .map(|e| Scalar::read(descr, e).unwrap().to_f64())
            .filter(|x| x.is_finite())
            .collect();
        let mean_abs = finite.iter().map(|x| x.abs()).sum::<f64>() / finite.len() as f64;
        let c = stats.counts();
        let count = |key: &str| case[key].as_u64().unwrap();
        assert_eq!(
            [
                c.elements,
                c.finite,
                c.nan,
                c.pos_inf,
                c.neg_inf,
                c.zero,
                c.subnormal
            ],
            [
                "count",
                "finite",
                "nan",
                "posinf",
                "neginf",
                "zero",
                "subnormal"
            ]
            .map(count),
            "{name}"
        );
        assert_eq!(stats.min(), float(&case["min"]), "{name}");
        assert_eq!(stats.max(), float(&case["max"]), "{name}");
        for (got, key) in [(stats.mean(), "mean"), (stats.std(), "std")] {
            match (got, float(&case[key])) {
                (None, None) => {}
                // A few ulps, or of the values' magnitude where the mean
                // cancels (numpy's pairwise sums and these round apart).
                (Some(got), Some(numpy)) => assert!(
                    ulps(got, numpy) <= 8 || (got - numpy).abs() <= 1e-14 * mean_abs,
                    "{name}: {key} {got:e} vs numpy's {numpy:e}"
                ),
                other => panic!("{name}: {key} {other:?}"),
            }
        }
        let (Some(min), Some(max)) = (stats.min(), stats.max()) else {
            assert!(case["histogram"].is_null(), "{name}");
            continue;
        };
        let hist = Histogram::for_range(min, max, bins, descr.dtype);
        let Some(numpy) = case["histogram"].as_object() else {
            assert_eq!(case["histogram"], "too many bins", "{name}");
            assert!(hist.is_none(), "{name}: numpy refuses these bins");
            continue;
        };
        let mut hist = hist.expect(name);
        hist.push(descr, &bytes).unwrap();
        let edges: Vec<u64> = hist.edges().iter().map(|e| e.to_bits()).collect();
        let numpy_edges: Vec<u64> = numpy["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| float(e).unwrap().to_bits())
            .collect();
        assert_eq!(edges, numpy_edges, "{name}: edges");
        let counts: Vec<u64> = numpy["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(hist.counts(), counts, "{name}: counts");
    }
}
