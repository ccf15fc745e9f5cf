//! The casting table and the conversions against numpy's and ml_dtypes'
//! answers (`tests/vectors/convert.txt`).

use bytelens_core::{ByteOrder, DType, Descr};

use super::{Convert, can_cast, float8};

/// `np.can_cast(row, column, "same_kind")` for numpy 2.4 with ml_dtypes 0.7
/// (its bfloat16 and float8 types are floats; numpy 1.26 agrees on numpy's
/// own dtypes). Rows and columns in `DType::ALL` order:
/// bool u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32 f64 f8e4m3fn f8e5m2 f8e8m0fnu.
const SAME_KIND: [&str; 16] = [
    "xxxxxxxxxxxxxxxx", // bool
    ".xxxxxxxxxxxxxxx", // uint8
    "..x.x.x.xxxxxxxx", // int8
    ".xxxxxxxxxxxxxxx", // uint16
    "..x.x.x.xxxxxxxx", // int16
    ".xxxxxxxxxxxxxxx", // uint32
    "..x.x.x.xxxxxxxx", // int32
    ".xxxxxxxxxxxxxxx", // uint64
    "..x.x.x.xxxxxxxx", // int64
    ".........xxxxxxx", // float16
    ".........xxxxxxx", // bfloat16
    ".........xxxxxxx", // float32
    ".........xxxxxxx", // float64
    ".........xxxxxxx", // float8_e4m3fn
    ".........xxxxxxx", // float8_e5m2
    ".........xxxxxxx", // float8_e8m0fnu
];

#[test]
fn can_cast_is_numpys_same_kind_table() {
    for (row, dtype) in SAME_KIND.iter().zip(DType::ALL) {
        assert!(
            row.len() == DType::ALL.len(),
            "{dtype}'s row has every column"
        );
    }
    for (row, &from) in SAME_KIND.iter().zip(&DType::ALL) {
        for (cell, &to) in row.bytes().zip(&DType::ALL) {
            assert_eq!(can_cast(from, to), cell == b'x', "{from} → {to}");
            let made = Convert::new(Descr::native(from), Descr::native(to));
            assert_eq!(made.is_ok(), cell == b'x', "{from} → {to}");
        }
    }
}

#[test]
fn refused_casts_name_both_elements() {
    let err = Convert::new(Descr::native(DType::F32), Descr::native(DType::I32)).unwrap_err();
    assert!(matches!(err, crate::Error::Cast { .. }), "{err:?}");
}

#[test]
fn identity_is_a_copy_for_any_byte_order_of_single_bytes() {
    let le = |d| Descr::new(d, ByteOrder::Little);
    let be = |d| Descr::new(d, ByteOrder::Big);
    let c = |a, b| Convert::new(a, b).unwrap().is_identity();
    assert!(c(le(DType::I8), be(DType::I8)));
    assert!(c(be(DType::F32), be(DType::F32)));
    assert!(!c(le(DType::F32), be(DType::F32)));
    assert!(!c(le(DType::U8), le(DType::I8)));
}

#[test]
#[should_panic(expected = "do not convert")]
fn run_refuses_a_destination_of_another_length() {
    let c = Convert::new(Descr::native(DType::F32), Descr::native(DType::F16)).unwrap();
    c.run(&[0; 8], &mut [0; 2]);
}

/// `bytes` with each `size`-byte element reversed.
pub(super) fn swapped(bytes: &[u8], size: usize) -> Vec<u8> {
    bytes
        .chunks_exact(size)
        .flat_map(|e| e.iter().rev().copied())
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Every case of convert.txt, in both byte orders on both sides, through
/// the kernel `Convert::new` picks and through the scalar reference.
#[test]
fn conversions_match_numpy_and_ml_dtypes() {
    const VECTORS: &str = include_str!("../../../../tests/vectors/convert.txt");
    let (lines, elements) = check_vectors(VECTORS);
    // Every allowed pair has a line (float pairs that round have two).
    assert!(lines >= 112, "only {lines} lines of conversions");
    assert!(elements > 8000, "only {elements} elements");
}

/// Every case of convert_float8.txt (ml_dtypes' answers), the same way:
/// every float8 pattern into every float, every float16 and bfloat16
/// pattern into each float8, float32, float64 and integers at every
/// float8 rounding boundary.
#[test]
fn float8_conversions_match_ml_dtypes() {
    const VECTORS: &str = include_str!("../../../../tests/vectors/convert_float8.txt");
    let (lines, elements) = check_vectors(VECTORS);
    // 3 × 7 float8 sources, and 13 sources into each of the 3 float8s.
    assert_eq!(lines, 60, "lines of float8 conversions");
    assert!(elements > 450_000, "only {elements} elements");
}

/// Runs every line of a vectors file (`FROM TO SRC DST`, SRC `all` for
/// every pattern of FROM) in all four byte orders through both kernels;
/// panics at the first element that differs. Returns the lines and the
/// elements checked.
fn check_vectors(text: &str) -> (usize, usize) {
    let (mut lines, mut elements) = (0, 0);
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut fields = line.split(' ');
        let mut field = || fields.next().expect("FROM TO SRC DST");
        let from: DType = field().parse().expect("a dtype");
        let to: DType = field().parse().expect("a dtype");
        let (src, want) = (field(), field());
        let every = src == "all";
        let n = if every {
            1 << (8 * from.size())
        } else {
            src.len() / 2 / from.size()
        };
        assert_eq!(want.len() / 2, n * to.size(), "{from} → {to}");
        lines += 1;
        elements += n;
        // Miri runs a sample: a few elements of every pair.
        let n = if cfg!(miri) { n.min(6) } else { n };
        let src = if every {
            first_patterns(from, n)
        } else {
            hex(&src[..2 * n * from.size()])
        };
        let want = hex(&want[..2 * n * to.size()]);
        check_line(from, to, &src, &want);
    }
    (lines, elements)
}

/// The first `n` bit patterns of `dtype` (one or two bytes), little-endian,
/// in increasing order.
fn first_patterns(dtype: DType, n: usize) -> Vec<u8> {
    match dtype.size() {
        1 => (0..=u8::MAX).take(n).collect(),
        2 => (0..=u16::MAX).take(n).flat_map(u16::to_le_bytes).collect(),
        size => panic!("every pattern of {size}-byte {dtype}: too many"),
    }
}

/// `src` (little-endian `from`) must convert to `want` (little-endian
/// `to`) in every byte order, through `Convert::new`'s kernel and the
/// reference.
fn check_line(from: DType, to: DType, src: &[u8], want: &[u8]) {
    let n = src.len() / from.size();
    for a in [ByteOrder::Little, ByteOrder::Big] {
        for b in [ByteOrder::Little, ByteOrder::Big] {
            let (f, t) = (Descr::new(from, a), Descr::new(to, b));
            let src = if a == ByteOrder::Big {
                swapped(src, from.size())
            } else {
                src.to_vec()
            };
            let want = if b == ByteOrder::Big {
                swapped(want, to.size())
            } else {
                want.to_vec()
            };
            let kernels = [
                Some(Convert::new(f, t).expect("a same_kind cast")),
                Some(Convert::scalar(f, t)),
                Convert::portable(f, t),
            ];
            for c in kernels.into_iter().flatten() {
                let mut got = vec![0xa5; want.len()];
                c.run(&src, &mut got);
                if got != want {
                    let k = (0..n)
                        .find(|&k| {
                            got[k * to.size()..][..to.size()] != want[k * to.size()..][..to.size()]
                        })
                        .unwrap_or(0);
                    panic!(
                        "{f} → {t} ({:?}), element {k}: {:02x?} gave {:02x?}, expected {:02x?}",
                        c.kernel,
                        &src[k * from.size()..][..from.size()],
                        &got[k * to.size()..][..to.size()],
                        &want[k * to.size()..][..to.size()],
                    );
                }
            }
        }
    }
}

/// splitmix64: a seeded source of test bits (for every kernel's tests).
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`), for the SIMD kernels' tests.
    #[cfg(any(
        all(target_arch = "x86_64", not(miri)),
        all(target_arch = "aarch64", target_feature = "neon", not(miri))
    ))]
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
/// The pairs every SIMD kernel set converts, in both byte orders on both
/// sides: byte swaps of each size and the float conversions.
pub(super) const KERNEL_PAIRS: [(DType, DType); 11] = {
    use DType::*;
    [
        (U16, U16),
        (F32, F32),
        (F64, F64),
        (F32, F16),
        (F16, F32),
        (F64, F16),
        (F16, F64),
        (F32, BF16),
        (BF16, F32),
        (F64, F32),
        (F32, F64),
    ]
};

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
/// A random element of `dtype` as bits, every class of float equally
/// likely: anything, zero or subnormal, infinity or NaN (quiet,
/// signaling, any payload), an exponent near float16's and bfloat16's
/// limits, and a tie for float16, bfloat16 or float32.
fn element(rng: &mut Rng, dtype: DType) -> u64 {
    let (exp, man) = match dtype {
        DType::F16 => (5, 10),
        DType::BF16 => (8, 7),
        DType::F32 => (8, 23),
        DType::F64 => (11, 52),
        _ => return rng.next(),
    };
    let bias = (1i64 << (exp - 1)) - 1;
    let max = (1u64 << exp) - 1;
    let mut m = rng.next() & ((1 << man) - 1);
    let sign = rng.below(2) << (exp + man);
    let e = match rng.below(6) {
        0 => return rng.next() & (u64::MAX >> (63 - exp - man)),
        1 => {
            if rng.below(4) == 0 {
                m = 0;
            }
            0
        }
        2 => {
            m = match rng.below(4) {
                0 => 0,
                1 => 1 << (man - 1),
                _ => m,
            };
            max
        }
        3 => (bias + rng.below(48) as i64 - 30).clamp(0, max as i64) as u64,
        _ => {
            let drop = [3, 13, 16, 29, 42, 45][rng.below(6) as usize];
            if drop < man {
                m = m >> drop << drop | 1 << (drop - 1);
                if rng.below(2) == 0 {
                    m ^= 1 + rng.below(2) * ((1u64 << (drop - 1)) - 1);
                }
            }
            (bias + rng.below(60) as i64 - 40).clamp(1, max as i64 - 1) as u64
        }
    };
    sign | e << man | m
}

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
fn put(bits: u64, d: Descr, out: &mut [u8]) {
    let n = d.dtype.size();
    let le = bits.to_le_bytes();
    out.copy_from_slice(&le[..n]);
    if d.order == ByteOrder::Big {
        out.reverse();
    }
}

#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(target_arch = "aarch64", target_feature = "neon", not(miri))
))]
/// `run` (a SIMD kernel for `f` → `t`, named `what`) against the scalar
/// reference: 400 runs of random bits of every class ([`element`]),
/// lengths around and between vector widths, any misalignment of source
/// and destination, and the bytes around the destination left alone.
/// Panics at the first element that differs; returns the elements checked.
pub(super) fn kernel_matches_reference(
    rng: &mut Rng,
    f: Descr,
    t: Descr,
    what: &str,
    run: impl Fn(&[u8], &mut [u8]),
) -> usize {
    let (from, to) = (f.dtype, t.dtype);
    let mut checked = 0;
    for trial in 0..400 {
        let n = if trial % 8 == 0 {
            rng.below(1000)
        } else {
            rng.below(100)
        } as usize;
        let (os, od) = (rng.below(32) as usize, rng.below(32) as usize);
        let (sa, sb) = (from.size(), to.size());
        let mut src = vec![0u8; os + n * sa];
        for e in src[os..].chunks_exact_mut(sa) {
            put(element(rng, from), f, e);
        }
        let mut want = vec![0xa5u8; od + n * sb + 8];
        let mut got = want.clone();
        super::scalar::run(f, t, &src[os..], &mut want[od..od + n * sb]);
        run(&src[os..], &mut got[od..od + n * sb]);
        if got != want {
            let k = (0..n)
                .find(|&k| got[od + k * sb..][..sb] != want[od + k * sb..][..sb])
                .unwrap_or(n);
            let e = &src[os + k * sa..][..sa.min(src.len() - os - k * sa)];
            panic!(
                "{f} → {t} ({what}), {n} elements, element {k}: {e:02x?} gave {:02x?}, reference {:02x?}",
                &got[od + k * sb..][..sb.min(got.len() - od - k * sb)],
                &want[od + k * sb..][..sb.min(want.len() - od - k * sb)]
            );
        }
        checked += n;
    }
    checked
}

/// The kernel `Convert::new` picks for every pair with a float8 on one side
/// and a float (or an integer into a float8) on the other, in every byte
/// order, against the reference:
/// random bits (the exponent bits often near the float8s' range), random
/// lengths (around every SIMD width) and misalignments.
#[test]
fn float8_kernels_match_the_reference_on_random_runs() {
    use DType::*;
    let floats = [F16, BF16, F32, F64, F8E4M3FN, F8E5M2, F8E8M0FNU];
    let sources = [Bool, U8, I8, U16, I16, U32, I32, U64, I64]
        .into_iter()
        .chain(floats);
    let orders = [ByteOrder::Little, ByteOrder::Big];
    let mut rng = Rng(0x7261_6e64_6638);
    let trials = if cfg!(miri) { 2 } else { 60 };
    let (mut checked, mut portable_checked) = (0, 0);
    for from in sources {
        for to in floats {
            if from.size() != 1 && to.size() != 1 || from == to {
                continue;
            }
            for (a, b) in orders.into_iter().flat_map(|a| orders.map(|b| (a, b))) {
                let (f, t) = (Descr::new(from, a), Descr::new(to, b));
                let (fast, reference) = (Convert::new(f, t).unwrap(), Convert::scalar(f, t));
                for trial in 0..trials {
                    // Miri, ~10^4 times slower, runs short ones.
                    let most = match (cfg!(miri), trial % 8) {
                        (true, _) => 24,
                        (false, 0) => 3000,
                        (false, _) => 150,
                    };
                    let n = (rng.next() % most) as usize;
                    let (os, od) = ((rng.next() % 32) as usize, (rng.next() % 32) as usize);
                    let (sa, sb) = (from.size(), to.size());
                    let mut src = vec![0u8; os + n * sa];
                    for e in src[os..].chunks_exact_mut(sa) {
                        let bits = near_float8(&mut rng, from).to_le_bytes();
                        e.copy_from_slice(&bits[..sa]);
                        if a == ByteOrder::Big {
                            e.reverse();
                        }
                    }
                    let mut want = vec![0x5au8; od + n * sb + 8];
                    let mut got = want.clone();
                    reference.run(&src[os..], &mut want[od..od + n * sb]);
                    fast.run(&src[os..], &mut got[od..od + n * sb]);
                    // The portable float8 kernel too, where x86-64's AVX2
                    // build of it is the one `Convert::new` picks.
                    if let Some(portable) = float8::Kernel::detect(f, t) {
                        let mut also = want.clone();
                        portable.run(f, t, &src[os..], &mut also[od..od + n * sb]);
                        assert!(
                            also == want,
                            "{f} → {t}: the portable float8 kernel, {n} elements"
                        );
                        portable_checked += n;
                    }
                    if got != want {
                        let k = (0..n)
                            .find(|&k| got[od + k * sb..][..sb] != want[od + k * sb..][..sb])
                            .unwrap_or(n);
                        panic!(
                            "{f} → {t} ({:?}), {n} elements, element {k}: {:02x?} gave {:02x?}, reference {:02x?}",
                            fast.kernel,
                            &src[os + k * sa..][..sa],
                            &got[od + k * sb..][..sb.min(got.len() - od - k * sb)],
                            &want[od + k * sb..][..sb.min(want.len() - od - k * sb)],
                        );
                    }
                    checked += n;
                }
            }
        }
    }
    assert!(cfg!(miri) || checked > 100_000, "{checked} elements");
    assert!(
        cfg!(miri) || portable_checked > 50_000,
        "{portable_checked} elements"
    );
}

/// Random bits of `dtype`, the exponent often within a few binades of the
/// float8s' range, the low mantissa bits often zero (exact float8 values
/// and ties) or all but one (next to them).
fn near_float8(rng: &mut Rng, dtype: DType) -> u64 {
    let r = rng.next();
    let (exp, man) = match dtype {
        DType::F16 => (5, 10),
        DType::BF16 => (8, 7),
        DType::F32 => (8, 23),
        DType::F64 => (11, 52),
        // Integers of every magnitude, float8s any pattern.
        _ => return r >> (rng.next() % 64),
    };
    if r.is_multiple_of(4) {
        return r >> 8;
    }
    let bias = (1u64 << (exp - 1)) - 1;
    let max = (1 << exp) - 1;
    // 2^-140 ..= 2^130, clamped to the format (infinity and NaN included).
    let e = (bias + (r >> 8) % 271).saturating_sub(140).min(max);
    let mut m = rng.next() & ((1 << man) - 1);
    if man > 4 && r % 4 == 1 {
        m &= !0 << (man - 4); // four bits or fewer
        m = m.wrapping_add([0, 1, u64::MAX][(r >> 4) as usize % 3]) & ((1 << man) - 1);
    }
    (r >> 7 & 1) << (exp + man) | e << man | m
}
