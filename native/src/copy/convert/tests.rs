//! The casting table and the conversions against numpy's and ml_dtypes'
//! answers (`tests/vectors/convert.txt`).

use bytelens_core::{ByteOrder, DType, Descr};

use super::{Convert, can_cast};

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
    let (mut lines, mut elements) = (0, 0);
    for line in VECTORS
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut fields = line.split(' ');
        let mut field = || fields.next().expect("FROM TO SRC DST");
        let from: DType = field().parse().expect("a dtype");
        let to: DType = field().parse().expect("a dtype");
        let (src, want) = (field(), field());
        let n = src.len() / 2 / from.size();
        assert_eq!(want.len() / 2, n * to.size(), "{from} → {to}");
        lines += 1;
        elements += n;
        // Miri runs a sample: a few elements of every pair.
        let n = if cfg!(miri) { n.min(6) } else { n };
        let src = hex(&src[..2 * n * from.size()]);
        let want = hex(&want[..2 * n * to.size()]);
        let (src, want) = (&src[..], &want[..]);
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
                for c in [Convert::new(f, t).unwrap(), Convert::scalar(f, t)] {
                    let mut got = vec![0xa5; want.len()];
                    c.run(&src, &mut got);
                    if got != want {
                        let k = (0..n)
                            .find(|&k| {
                                got[k * to.size()..][..to.size()]
                                    != want[k * to.size()..][..to.size()]
                            })
                            .unwrap_or(0);
                        panic!(
                            "{f} → {t} ({:?}), element {k}: {:02x?} gave {:02x?}, numpy {:02x?}",
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
    // Every allowed pair has a line (float pairs that round have two).
    assert!(lines >= 112, "only {lines} lines of conversions");
    assert!(elements > 8000, "only {elements} elements");
}
