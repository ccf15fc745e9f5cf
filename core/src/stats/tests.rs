//! `Stats`, `Histogram` and `Heatmap` against plain references: every
//! element read one at a time by `Scalar::read`, subnormals found from the
//! bits, moments two-pass over the whole array with compensated sums,
//! histogram bins found by comparing with the edges, pixels averaged
//! directly; over random data of every dtype in both byte orders, cut
//! into random chunks.
extern crate std;

use std::vec::Vec;

use super::*;
use crate::FloatFormat;

/// Small under Miri, which runs these with no unsafe code to check.
const ELEMENTS: usize = if cfg!(miri) { 16 } else { 3000 };
const ROUNDS: usize = if cfg!(miri) { 1 } else { 4 };

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal: a sum of uniforms.
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let s: f64 = (0..4).map(|_| self.unit()).sum::<f64>() - 2.0;
        mean + sd * s * 1.7
    }
}

/// `n` random elements of `descr`: for floats most of them normal values
/// around a random mean, the rest random bit patterns (NaN, infinities,
/// subnormals and extremes among them; float64's only as wide as
/// float32's, so that sums stay finite); for integers and bool, any bits.
fn random_bytes(rng: &mut Rng, descr: Descr, n: usize) -> Vec<u8> {
    let size = descr.dtype.size();
    let mut out = std::vec![0u8; n * size];
    let (mean, sd) = (rng.normal(0.0, 50.0), 0.1 + rng.unit() * 20.0);
    for chunk in out.chunks_exact_mut(size) {
        for b in chunk.iter_mut() {
            *b = rng.next() as u8;
        }
        if descr.dtype == DType::F64 && rng.below(4) == 0 {
            let wide = f64::from(f32::from_bits(rng.next() as u32));
            Scalar::F64(wide).write(descr.order, chunk).unwrap();
        } else if descr.dtype.is_float() && (descr.dtype == DType::F64 || rng.below(4) != 0) {
            let value = Scalar::float(descr.dtype, rng.normal(mean, sd)).unwrap();
            value.write(descr.order, chunk).unwrap();
        }
    }
    out
}

fn every_descr() -> Vec<Descr> {
    let mut all = Vec::new();
    for dtype in DType::ALL {
        all.push(Descr::new(dtype, ByteOrder::Little));
        if dtype.size() > 1 {
            all.push(Descr::new(dtype, ByteOrder::Big));
        }
    }
    all
}

/// An element's value, read the slow way.
fn value(descr: Descr, element: &[u8]) -> f64 {
    Scalar::read(descr, element).unwrap().to_f64()
}

/// Whether an element is a subnormal float, from its bits.
fn is_subnormal(descr: Descr, element: &[u8]) -> bool {
    let Some(format) = descr.dtype.float_format() else {
        return false;
    };
    let mut raw = [0u8; 8];
    raw[..element.len()].copy_from_slice(element);
    if descr.order == ByteOrder::Big {
        raw[..element.len()].reverse();
    }
    let bits = u64::from_le_bytes(raw);
    let FloatFormat {
        exponent_bits: e,
        mantissa_bits: m,
        ..
    } = format;
    let exponent = (bits >> m) & ((1 << e) - 1);
    let mantissa = bits & ((1u64 << m) - 1);
    format.subnormals && exponent == 0 && mantissa != 0
}

/// Neumaier's compensated sum.
fn sum(values: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in values {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

struct Reference {
    counts: Counts,
    finite: Vec<f64>,
    min: f64,
    max: f64,
    mean: f64,
    std: f64,
}

fn reference(descr: Descr, bytes: &[u8]) -> Reference {
    let mut counts = Counts::default();
    let mut finite = Vec::new();
    for element in bytes.chunks_exact(descr.dtype.size()) {
        let x = value(descr, element);
        counts.elements += 1;
        if x.is_nan() {
            counts.nan += 1;
        } else if x == f64::INFINITY {
            counts.pos_inf += 1;
        } else if x == f64::NEG_INFINITY {
            counts.neg_inf += 1;
        } else {
            counts.finite += 1;
            counts.zero += u64::from(x == 0.0);
            counts.subnormal += u64::from(is_subnormal(descr, element));
            finite.push(x);
        }
    }
    let n = finite.len() as f64;
    let mean = sum(finite.iter().copied()) / n;
    let var = sum(finite.iter().map(|x| (x - mean) * (x - mean))) / n;
    Reference {
        counts,
        min: finite.iter().copied().fold(f64::INFINITY, f64::min),
        max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        std: var.sqrt(),
        finite,
    }
}

/// `bytes` cut at random element boundaries.
fn random_cuts<'a>(rng: &mut Rng, bytes: &'a [u8], size: usize) -> Vec<&'a [u8]> {
    let n = bytes.len() / size;
    let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(n + 1)).collect();
    cuts.extend([0, n]);
    cuts.sort_unstable();
    cuts.windows(2)
        .map(|w| &bytes[w[0] * size..w[1] * size])
        .collect()
}

fn check_stats(stats: &Stats, expected: &Reference, what: &str) {
    assert_eq!(stats.counts(), expected.counts, "{what}");
    if expected.finite.is_empty() {
        assert_eq!((stats.min(), stats.mean(), stats.std()), (None, None, None));
        return;
    }
    assert_eq!(stats.min(), Some(expected.min), "{what}");
    assert_eq!(stats.max(), Some(expected.max), "{what}");
    let scale = expected.finite.iter().map(|x| x.abs()).sum::<f64>() / expected.finite.len() as f64;
    let (mean, std) = (stats.mean().unwrap(), stats.std().unwrap());
    assert!(
        (mean - expected.mean).abs() <= 1e-13 * scale,
        "{what}: mean {mean} vs {}",
        expected.mean
    );
    assert!(
        (std - expected.std).abs() <= 1e-12 * (expected.std + 1e-3 * scale),
        "{what}: std {std} vs {}",
        expected.std
    );
}

#[test]
fn stats_equal_the_reference_for_every_dtype_and_any_chunking() {
    let mut rng = Rng(1);
    for descr in every_descr() {
        for round in 0..ROUNDS {
            let n = rng.below(ELEMENTS) + round;
            let bytes = random_bytes(&mut rng, descr, n);
            let expected = reference(descr, &bytes);
            let size = descr.dtype.size();
            let mut whole = Stats::new();
            for chunk in random_cuts(&mut rng, &bytes, size) {
                whole.push(descr, chunk).unwrap();
            }
            check_stats(&whole, &expected, &std::format!("{descr}, {n} elements"));
            // Two parts pushed apart, merged the other way round.
            let cut = rng.below(n + 1) * size;
            let (mut first, mut second) = (Stats::new(), Stats::new());
            first.push(descr, &bytes[..cut]).unwrap();
            second.push(descr, &bytes[cut..]).unwrap();
            second.merge(&first);
            check_stats(&second, &expected, &std::format!("{descr}, merged"));
        }
    }
}

#[test]
fn partial_elements_are_refused_and_nothing_is_counted() {
    let d = Descr::native(DType::F32);
    let mut stats = Stats::new();
    assert_eq!(
        stats.push(d, &[0; 6]),
        Err(Error::ItemsizeMismatch {
            nbytes: 6,
            itemsize: 4,
            dtype: DType::F32
        })
    );
    assert_eq!(stats, Stats::new());
    let mut hist = Histogram::new(0.0, 1.0, 4, DType::F32).unwrap();
    assert!(hist.push(d, &[0; 3]).is_err());
    assert_eq!(hist.counts(), [0; 4]);
}

#[test]
fn the_square_root_is_correctly_rounded() {
    let mut rng = Rng(2);
    for _ in 0..if cfg!(miri) { 50 } else { 100_000 } {
        let x = f64::from_bits(rng.next() >> 1);
        if x.is_finite() {
            assert_eq!(sqrt(x).to_bits(), x.sqrt().to_bits(), "{x:e}");
        }
    }
    for x in [
        0.0,
        1.0,
        4.0,
        2.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::INFINITY,
    ] {
        assert_eq!(sqrt(x), x.sqrt());
    }
    assert!(sqrt(-1.0).is_nan() && sqrt(f64::NAN).is_nan());
}

/// The value numpy's histogram compares, in the array's arithmetic.
fn in_type(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => f64::from(x as f32),
        DType::F16 | DType::BF16 => Scalar::float(dtype, x).unwrap().to_f64(),
        _ => x,
    }
}

#[test]
fn histogram_counts_equal_comparisons_with_its_edges() {
    let mut rng = Rng(3);
    for descr in every_descr() {
        for round in 0..ROUNDS {
            let n = rng.below(ELEMENTS) + round + 1;
            let bytes = random_bytes(&mut rng, descr, n);
            let expected = reference(descr, &bytes);
            if expected.finite.is_empty() {
                continue;
            }
            let bins = [1, 7, 64, 200][rng.below(4)];
            let Some(mut hist) =
                Histogram::for_range(expected.min, expected.max, bins, descr.dtype)
            else {
                // Only a range too narrow for the type's bins, or too wide.
                let width = in_type(descr.dtype, expected.max - expected.min);
                assert!(
                    descr.dtype.size() <= 2 || width.is_infinite(),
                    "{descr} {bins}"
                );
                continue;
            };
            for chunk in random_cuts(&mut rng, &bytes, descr.dtype.size()) {
                hist.push(descr, chunk).unwrap();
            }
            let edges = hist.edges();
            assert_eq!(edges.len(), bins + 1);
            let mut naive = std::vec![0u64; bins];
            for &x in &expected.finite {
                if !(x >= edges[0] && x <= edges[bins]) {
                    continue;
                }
                let x = in_type(descr.dtype, x);
                let i = edges[1..bins].iter().filter(|&&e| e <= x).count();
                naive[i] += 1;
            }
            assert_eq!(hist.counts(), naive, "{descr}, {bins} bins");
            assert_eq!(
                naive.iter().sum::<u64>(),
                expected.finite.len() as u64,
                "{descr}: every finite value in some bin"
            );
        }
    }
}

/// numpy's `np.histogram(a, bins, range=(lo, hi))`, the range given as
/// Python floats, for arrays of every kind of dtype (`ranges.json`,
/// written by `generate_ranges.py`): edges bit for bit, counts exactly,
/// refusals; pushed value by value, and from a tally of the bytes.
#[test]
#[cfg_attr(miri, ignore = "60 KB of JSON and 65,536-key tallies: slow under Miri")]
fn a_given_range_bins_as_numpy_s() {
    use std::string::String;
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("ranges.json")).expect("ranges.json");
    let float = |v: &serde_json::Value| {
        f64::from_bits(u64::from_str_radix(v.as_str().expect("bits"), 16).expect("hex"))
    };
    let cases = vectors["cases"].as_array().expect("cases");
    assert!(cases.len() >= 50);
    let (mut refused, mut narrow) = (0, 0);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let descr: Descr = case["dtype"]
            .as_str()
            .expect("dtype")
            .parse()
            .expect("a dtype");
        let text: String = case["bytes"].as_str().expect("bytes").into();
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect();
        let (lo, hi) = (float(&case["lo"]), float(&case["hi"]));
        let bins = case["bins"].as_u64().expect("bins") as usize;
        let hist = Histogram::new(lo, hi, bins, descr.dtype);
        let Some(numpy) = case["histogram"].as_object() else {
            assert_eq!(case["histogram"], "too many bins", "{name}");
            assert!(hist.is_none(), "{name}: numpy refuses these bins");
            refused += 1;
            continue;
        };
        let mut hist = hist.expect(name);
        let edges: Vec<f64> = numpy["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .map(float)
            .collect();
        let counts: Vec<u64> = numpy["counts"]
            .as_array()
            .expect("counts")
            .iter()
            .map(|c| c.as_u64().expect("a count"))
            .collect();
        assert_eq!(
            hist.edges().iter().map(|e| e.to_bits()).collect::<Vec<_>>(),
            edges.iter().map(|e| e.to_bits()).collect::<Vec<_>>(),
            "{name}: edges"
        );
        #[cfg(feature = "alloc")]
        {
            let mut tally = Tally::new(descr);
            tally.push(&bytes).unwrap();
            let mut rest = tally.count(hist.clone());
            rest.push(&bytes).unwrap();
            assert_eq!(rest.histogram().counts(), counts, "{name}: tallied counts");
        }
        hist.push(descr, &bytes).unwrap();
        assert_eq!(hist.counts(), counts, "{name}: counts");
        narrow += usize::from(descr.dtype.size() <= 4 && descr.dtype.is_float());
    }
    assert!(refused >= 1 && narrow >= 30, "{refused} {narrow}");
}

/// The case: float16 edges from float64 numbers rounded once, not
/// stepped in float16 (which gave [1, 2]); a range of one number widened.
#[test]
fn a_given_range_is_not_stepped_in_the_array_s_type() {
    let values = [2.6484375f32, 0.1, 5.2].map(half::f16::from_f32);
    let mut h = Histogram::new(0.1, 5.2, 2, DType::F16).unwrap();
    h.push(Descr::native(DType::F16), bytemuck::cast_slice(&values))
        .unwrap();
    assert_eq!(h.counts(), [2, 1]);
    let mut h = Histogram::for_range(0.1, 5.2, 2, DType::F16).unwrap();
    h.push(Descr::native(DType::F16), bytemuck::cast_slice(&values))
        .unwrap();
    assert_eq!(h.counts(), [1, 2], "numpy's own range is in float16");
    let h = Histogram::new(7.0, 7.0, 4, DType::I32).unwrap();
    assert_eq!(h.edges(), [6.5, 6.75, 7.0, 7.25, 7.5]);
}

#[test]
fn histogram_refuses_what_numpy_refuses() {
    assert!(Histogram::new(0.0, 1.0, 0, DType::F64).is_none());
    assert!(Histogram::new(0.0, 1.0, MAX_BINS + 1, DType::F64).is_none());
    assert!(Histogram::new(1.0, 0.0, 4, DType::F64).is_none());
    assert!(Histogram::new(0.0, f64::INFINITY, 4, DType::F64).is_none());
    assert!(Histogram::new(f64::NAN, 1.0, 4, DType::F64).is_none());
    // float16 has no 64 values between 1000 and 1001.
    assert!(Histogram::new(1000.0, 1001.0, 64, DType::F16).is_none());
    assert!(Histogram::new(1000.0, 1001.0, 2, DType::F16).is_some());
    assert!(Histogram::new(1000.0, 1001.0, 64, DType::F32).is_some());
    // Merging needs the same edges.
    let mut a = Histogram::new(0.0, 1.0, 4, DType::F64).unwrap();
    let b = Histogram::new(0.0, 2.0, 4, DType::F64).unwrap();
    assert!(!a.merge(&b));
    assert!(a.merge(&a.clone()));
}

#[cfg(feature = "alloc")]
#[test]
fn heatmap_pixels_are_the_means_and_maxima_of_what_they_cover() {
    let mut rng = Rng(4);
    let descrs = [
        Descr::new(DType::F32, ByteOrder::Little),
        Descr::new(DType::F16, ByteOrder::Big),
        Descr::new(DType::I16, ByteOrder::Little),
        Descr::new(DType::F8E4M3FN, ByteOrder::Little),
    ];
    for round in 0..if cfg!(miri) { 2 } else { 60 } {
        let descr = descrs[round % descrs.len()];
        let (rows, cols) = (rng.below(30) + 1, rng.below(30) + 1);
        let (out_h, out_w) = (rng.below(rows) + 1, rng.below(cols) + 1);
        let bytes = random_bytes(&mut rng, descr, rows * cols);
        let size = descr.dtype.size();
        let values: Vec<f64> = bytes.chunks_exact(size).map(|e| value(descr, e)).collect();
        for reduce in [Reduce::Mean, Reduce::Max] {
            let mut map = Heatmap::new(rows as u64, cols as u64, out_h, out_w, reduce).unwrap();
            for chunk in random_cuts(&mut rng, &bytes, size) {
                assert!(!map.is_done() || chunk.is_empty());
                map.push(descr, chunk).unwrap();
            }
            assert!(map.is_done());
            for i in 0..out_h {
                for j in 0..out_w {
                    let mut finite = Vec::new();
                    for r in i * rows / out_h..(i + 1) * rows / out_h {
                        for c in j * cols / out_w..(j + 1) * cols / out_w {
                            let x = values[r * cols + c];
                            if x.is_finite() {
                                finite.push(x);
                            }
                        }
                    }
                    let expected = match (finite.is_empty(), reduce) {
                        (true, _) => f32::NAN,
                        (_, Reduce::Mean) => {
                            (finite.iter().sum::<f64>() / finite.len() as f64) as f32
                        }
                        (_, Reduce::Max) => finite.iter().copied().fold(f64::MIN, f64::max) as f32,
                    };
                    let got = map.values()[i * out_w + j];
                    let same = got == expected || (got.is_nan() && expected.is_nan());
                    assert!(same, "({i}, {j}) of {rows}x{cols}: {got} vs {expected}");
                }
            }
            let finite: Vec<f32> = map
                .values()
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .collect();
            let range = finite.iter().fold(None, |r: Option<(f32, f32)>, &v| {
                Some(r.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
            });
            assert_eq!(map.range(), range);
        }
    }
}

#[cfg(feature = "alloc")]
#[test]
fn a_heatmap_refuses_elements_past_the_end_and_finishes_early() {
    let d = Descr::native(DType::U8);
    assert!(Heatmap::new(2, 2, 3, 1, Reduce::Mean).is_none());
    assert!(Heatmap::new(2, 2, 1, 0, Reduce::Mean).is_none());
    let mut map = Heatmap::new(4, 2, 2, 1, Reduce::Max).unwrap();
    map.push(d, &[1, 2, 3, 4, 5]).unwrap();
    assert_eq!(
        map.push(d, &[0; 4]),
        Err(Error::CountMismatch {
            expected: 8,
            got: 9
        })
    );
    map.finish();
    assert!(map.is_done());
    // Rows 0 and 1, then row 2's first element only.
    assert_eq!(map.values(), [4.0, 5.0]);
    assert!(map.push(d, &[1]).is_err());
    let mut empty = Heatmap::new(2, 2, 2, 2, Reduce::Mean).unwrap();
    empty.finish();
    assert!(empty.values().iter().all(|v| v.is_nan()));
    assert_eq!(empty.range(), None);
}

/// An array of 2^32 elements or more (2^32 × 2, 3 × 2^62): only the
/// picture is kept, so it is made, and its rows come in; a picture whose
/// memory cannot be had is `None`, not an abort.
#[cfg(feature = "alloc")]
#[test]
fn a_heatmap_of_an_array_past_usize_and_a_picture_past_memory() {
    let d = Descr::native(DType::U8);
    let mut map = Heatmap::new(1 << 32, 2, 2, 2, Reduce::Mean).unwrap();
    assert_eq!(map.left(), 1 << 33);
    map.push(d, &[0, 1, 0]).unwrap();
    map.push(d, &[1]).unwrap();
    assert_eq!(map.left(), (1 << 33) - 4);
    map.finish();
    // Output row 0 covers rows 0..2^31, of which two came.
    assert_eq!(map.values()[..2], [0.0, 1.0]);
    assert!(map.values()[2..].iter().all(|v| v.is_nan()));
    assert_eq!(map.left(), 0);
    let mut wide = Heatmap::new(3, 1 << 62, 3, 2, Reduce::Max).unwrap();
    wide.push(d, &[7; 100]).unwrap();
    assert_eq!(wide.left(), 3 * (1 << 62) - 100);
    wide.finish();
    assert_eq!(wide.values()[0], 7.0);
    assert!(wide.values()[1..].iter().all(|v| v.is_nan()));
    // rows × cols past u64, and pictures no memory holds.
    assert!(Heatmap::new(1 << 32, 1 << 32, 1, 1, Reduce::Mean).is_none());
    assert!(Heatmap::new(1, u64::MAX, 1, usize::MAX, Reduce::Mean).is_none());
    assert!(Heatmap::new(u64::MAX, 1, usize::MAX / 2, 1, Reduce::Mean).is_none());
}

/// `n` elements of `descr` near a random mean: floats normal, integers
/// within a few thousand of it (a few keys of the wider ones).
#[cfg(feature = "alloc")]
fn clustered_bytes(rng: &mut Rng, descr: Descr, n: usize) -> Vec<u8> {
    let size = descr.dtype.size();
    let mut out = std::vec![0u8; n * size];
    let (mean, sd) = (rng.normal(0.0, 50.0), 0.1 + rng.unit() * 20.0);
    for chunk in out.chunks_exact_mut(size) {
        if descr.dtype.is_float() {
            let value = Scalar::float(descr.dtype, rng.normal(mean, sd)).unwrap();
            value.write(descr.order, chunk).unwrap();
        } else {
            // Two's complement, wrapped to the size.
            let x = (mean * 100.0 + rng.normal(0.0, sd * 100.0)) as i64;
            chunk.copy_from_slice(&x.to_le_bytes()[..size]);
            if descr.order == ByteOrder::Big {
                chunk.reverse();
            }
        }
    }
    out
}

#[cfg(feature = "alloc")]
#[test]
#[cfg_attr(
    miri,
    ignore = "walks 65,536 keys a tally, ~10 s each under Miri (no unsafe code here)"
)]
fn a_tally_and_its_rest_count_what_the_histogram_counts() {
    let mut rng = Rng(5);
    for descr in every_descr() {
        for round in 0..2 * ROUNDS {
            let n = rng.below(ELEMENTS) + round + 1;
            let bytes = if round % 2 == 0 {
                random_bytes(&mut rng, descr, n)
            } else {
                clustered_bytes(&mut rng, descr, n)
            };
            let expected = reference(descr, &bytes);
            if expected.finite.is_empty() {
                continue;
            }
            let bins = [1, 7, 64, 200][rng.below(4)];
            // numpy's range, or one between two of the values (some outside).
            let (lo, hi) = if rng.below(3) == 0 {
                let (a, b) = (
                    rng.below(expected.finite.len()),
                    rng.below(expected.finite.len()),
                );
                let (a, b) = (expected.finite[a], expected.finite[b]);
                (a.min(b), a.max(b))
            } else {
                (expected.min, expected.max)
            };
            let Some(hist) = Histogram::for_range(lo, hi, bins, descr.dtype) else {
                continue;
            };
            let mut direct = hist.clone();
            let mut tally = Tally::new(descr);
            for chunk in random_cuts(&mut rng, &bytes, descr.dtype.size()) {
                direct.push(descr, chunk).unwrap();
            }
            for chunk in random_cuts(&mut rng, &bytes, descr.dtype.size()) {
                tally.push(chunk).unwrap();
            }
            // The same tally taken keyed, in other cuts, its chunks kept.
            let mut keyed_tally = Tally::new(descr);
            let mut keyed = Vec::new();
            for chunk in random_cuts(&mut rng, &bytes, descr.dtype.size()) {
                let before = keyed.len();
                keyed_tally.push_keyed(chunk, &mut keyed).unwrap();
                assert!(
                    keyed.len() - before <= keyed_tally.keyed_len(chunk.len()),
                    "{descr}"
                );
            }
            assert_eq!(keyed_tally, tally, "{descr}: keyed or not, the same counts");
            let mut from_keyed = keyed_tally.count(hist.clone());
            from_keyed.push_keyed(&keyed).unwrap();
            assert_eq!(
                from_keyed.histogram(),
                &direct,
                "{descr}: {bins} bins, keyed"
            );
            let mut rest = tally.count(hist);
            let left = rest.left();
            assert!(left <= n as u64, "{descr}");
            if descr.dtype.size() <= 2 {
                assert!(
                    tally.is_exact() && left == 0,
                    "{descr}: every key one value"
                );
                assert_eq!(
                    rest.histogram(),
                    &direct,
                    "{descr}: {bins} bins before the rest"
                );
            }
            for chunk in random_cuts(&mut rng, &bytes, descr.dtype.size()) {
                rest.push(chunk).unwrap();
            }
            assert_eq!(
                rest.histogram(),
                &direct,
                "{descr}: {bins} bins over {lo}..={hi}"
            );
        }
    }
}

#[cfg(feature = "alloc")]
#[test]
#[cfg_attr(
    miri,
    ignore = "a property of 20,000 values, not of memory: the native run checks it"
)]
fn a_tally_leaves_few_of_a_weight_like_float32_array() {
    // Normal values around 0, as a layer's weights are, over 64 bins.
    let mut rng = Rng(7);
    let d = Descr::native(DType::F32);
    let values: Vec<f32> = (0..20_000).map(|_| rng.normal(0.0, 0.02) as f32).collect();
    let bytes: &[u8] = bytemuck::cast_slice(&values);
    let mut tally = Tally::new(d);
    tally.push(bytes).unwrap();
    let (min, max) = values
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let hist = Histogram::for_range(f64::from(min), f64::from(max), 64, DType::F32).unwrap();
    let rest = tally.count(hist);
    let share = rest.left() as f64 / values.len() as f64;
    assert!(share < 0.06, "{:.1}% left", share * 100.0);
}

#[cfg(feature = "alloc")]
#[test]
#[cfg_attr(
    miri,
    ignore = "walks 65,536 keys a tally, ~10 s each under Miri (no unsafe code here)"
)]
fn tallies_merge_and_refuse_partial_elements() {
    let mut rng = Rng(6);
    let descr: Descr = ">f4".parse().unwrap();
    let bytes = clustered_bytes(&mut rng, descr, 1000);
    let (mut whole, mut a, mut b) = (Tally::new(descr), Tally::new(descr), Tally::new(descr));
    whole.push(&bytes).unwrap();
    a.push(&bytes[..400]).unwrap();
    b.push(&bytes[400..]).unwrap();
    assert!(a.merge(&b));
    assert_eq!(a, whole);
    assert!(!a.merge(&Tally::new("<i4".parse().unwrap())));
    let before = whole.clone();
    assert!(matches!(
        whole.push(&bytes[..6]),
        Err(Error::ItemsizeMismatch {
            nbytes: 6,
            itemsize: 4,
            ..
        })
    ));
    assert_eq!(whole, before, "nothing counted");
    let hist = Histogram::for_range(-1.0, 1.0, 4, DType::F32).unwrap();
    let mut rest = whole.count(hist);
    let counted = rest.histogram().clone();
    assert!(rest.push(&bytes[..6]).is_err());
    assert_eq!(rest.histogram(), &counted);
    // A keyed chunk cut short, or with a key past 2^16, is refused.
    let mut keyed = Vec::new();
    Tally::new(descr).push_keyed(&bytes, &mut keyed).unwrap();
    assert_eq!(
        keyed.len(),
        4 + 8 * u32::from_le_bytes(keyed[..4].try_into().unwrap()) as usize + 2 * 1000
    );
    for cut in [1, 5, keyed.len() - 1] {
        let err = rest.clone().push_keyed(&keyed[..cut]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    what: "keyed chunk",
                    ..
                }
            ),
            "{cut}: {err}"
        );
    }
    let mut bad = keyed.clone();
    bad[4..8].copy_from_slice(&70_000u32.to_le_bytes());
    assert!(rest.clone().push_keyed(&bad).is_err());
    assert!(rest.push_keyed(&[]).is_ok());
}
