//! Every build of the dequantisers against the reference, bit for bit, on
//! random blocks (random scales included: infinities, NaNs, subnormals),
//! and each output type against the float32 result rounded once. gguf-py's
//! answers are held in tests/vectors/dequant.txt (tests/python).

use bytelens_core::files::GgmlType;
use bytelens_core::{DType, Descr};
use proptest::prelude::*;

use super::{Kernel, can_dequantize, dequantize_with};
use crate::Error;
use crate::copy::convert::Convert;

/// Whether two outputs of `to` elements are equal bit for bit, a NaN
/// matching any NaN: Rust leaves the payload of a NaN an operation makes
/// (`inf * 0`) to the hardware (x86 makes the negative quiet NaN, Arm the
/// positive one) and Miri picks one at random, so only NaN-ness is the
/// contract there; every other bit is.
fn same(a: &[u8], b: &[u8], to: DType) -> bool {
    let nan = |e: &[u8]| match to {
        DType::F32 => f32::from_ne_bytes(e.try_into().unwrap()).is_nan(),
        _ => {
            let bits = u16::from_ne_bytes(e.try_into().unwrap());
            let (exp, frac) = if to == DType::F16 {
                (0x7c00, 0x03ff)
            } else {
                (0x7f80, 0x007f)
            };
            bits & exp == exp && bits & frac != 0
        }
    };
    let size = to.size();
    a.len() == b.len()
        && a.chunks(size)
            .zip(b.chunks(size))
            .all(|(x, y)| x == y || (nan(x) && nan(y)))
}

fn quantized() -> Vec<GgmlType> {
    GgmlType::ALL
        .into_iter()
        .filter(|t| t.is_quantized())
        .collect()
}

fn dequantize(kernel: Kernel, ggml: GgmlType, blocks: &[u8], to: DType) -> Vec<u8> {
    let info = ggml.info();
    let n = blocks.len() / info.bytes as usize * info.block as usize;
    let mut out = vec![0u8; n * to.size()];
    dequantize_with(kernel, ggml, blocks, &mut out, Descr::native(to), 4).unwrap();
    out
}

#[test]
fn every_quantised_type_has_a_kernel() {
    let lacking: Vec<_> = quantized()
        .into_iter()
        .filter(|&t| !can_dequantize(t))
        .collect();
    assert!(lacking.is_empty(), "{lacking:?}");
    assert!(!can_dequantize(GgmlType::F32));
}

/// Random cases per property (Miri interprets every instruction).
const CASES: u32 = if cfg!(miri) { 2 } else { 64 };

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn the_detected_build_gives_the_references_bits(
        which in 0..15usize,
        seed in proptest::collection::vec(any::<u8>(), 1..4000),
    ) {
        let ggml = quantized()[which];
        let bytes = ggml.info().bytes as usize;
        let blocks = &seed[..seed.len() / bytes * bytes];
        let fast = dequantize(Kernel::detect(), ggml, blocks, DType::F32);
        let reference = dequantize(Kernel::Portable, ggml, blocks, DType::F32);
        prop_assert!(same(&fast, &reference, DType::F32));
    }

    #[test]
    fn half_outputs_are_float32_rounded_once(
        which in 0..15usize,
        seed in proptest::collection::vec(any::<u8>(), 300..2000),
        bf16 in any::<bool>(),
    ) {
        let ggml = quantized()[which];
        let bytes = ggml.info().bytes as usize;
        let blocks = &seed[..seed.len() / bytes * bytes];
        let to = if bf16 { DType::BF16 } else { DType::F16 };
        let f32s = dequantize(Kernel::Portable, ggml, blocks, DType::F32);
        let mut expected = vec![0u8; f32s.len() / 4 * 2];
        Convert::new(Descr::native(DType::F32), Descr::native(to)).unwrap().run(&f32s, &mut expected);
        prop_assert!(same(&dequantize(Kernel::detect(), ggml, blocks, to), &expected, to));
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "16 MiB is too much for Miri; fan_out is copy_into's, tested there"
)]
fn large_outputs_split_between_threads_give_the_same_bits() {
    // 16 MiB of float32 from Q4_K: past the parallel threshold.
    let n_blocks = 16 * 1024;
    let blocks: Vec<u8> = (0..n_blocks * 144)
        .map(|i| (i * 7919 % 251) as u8 ^ (i / 144) as u8)
        .collect();
    let mut whole = vec![0u8; n_blocks * 256 * 4];
    dequantize_with(
        Kernel::detect(),
        GgmlType::Q4_K,
        &blocks,
        &mut whole,
        Descr::native(DType::F32),
        4,
    )
    .unwrap();
    let mut by_block = vec![0u8; 1024];
    for (i, block) in blocks.chunks(144).enumerate().step_by(997) {
        dequantize_with(
            Kernel::Portable,
            GgmlType::Q4_K,
            block,
            &mut by_block,
            Descr::native(DType::F32),
            1,
        )
        .unwrap();
        assert!(
            same(&whole[i * 1024..][..1024], &by_block, DType::F32),
            "block {i}"
        );
    }
}

#[test]
fn an_unaligned_output_is_written_through_scratch() {
    let blocks: Vec<u8> = (0..34 * 3).map(|i| i as u8).collect();
    let aligned = dequantize(Kernel::detect(), GgmlType::Q8_0, &blocks, DType::F32);
    let mut shifted = vec![0u8; aligned.len() + 1];
    dequantize_with(
        Kernel::detect(),
        GgmlType::Q8_0,
        &blocks,
        &mut shifted[1..],
        Descr::native(DType::F32),
        1,
    )
    .unwrap();
    assert_eq!(&shifted[1..], &aligned[..]);
}

#[test]
fn bad_calls_say_what_is_wrong() {
    let f32 = Descr::native(DType::F32);
    let mut out = vec![0u8; 128];
    let err = |ggml, blocks: &[u8], out: &mut [u8], to| {
        dequantize_with(Kernel::detect(), ggml, blocks, out, to, 1)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(GgmlType::Q8_0, &[0; 35], &mut out, f32),
        "35 bytes are not a whole number of Q8_0 blocks of 34 bytes"
    );
    assert_eq!(
        err(GgmlType::F16, &[0; 4], &mut out, f32),
        "F16 is not a quantised type bytelens dequantises"
    );
    assert_eq!(
        err(
            GgmlType::Q8_0,
            &[0; 34],
            &mut out,
            Descr::native(DType::F64)
        ),
        "blocks dequantise to float32, float16 or bfloat16, not float64"
    );
    let mismatch = dequantize_with(
        Kernel::detect(),
        GgmlType::Q8_0,
        &[0; 34],
        &mut out[..100],
        f32,
        1,
    );
    assert_eq!(
        mismatch,
        Err(Error::SizeMismatch {
            expected: 128,
            got: 100
        })
    );
}

#[test]
fn q8_0_by_hand() {
    let mut block = bytelens_core::f16::from_f32(-0.25).to_le_bytes().to_vec();
    block.extend((0..32u8).map(|i| i.wrapping_mul(8)));
    let out = dequantize(Kernel::detect(), GgmlType::Q8_0, &block, DType::F32);
    let values: Vec<f32> = out
        .chunks(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    let expected: Vec<f32> = (0..32u8)
        .map(|i| i.wrapping_mul(8) as i8 as f32 * -0.25)
        .collect();
    assert_eq!(values, expected);
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Every case of dequant.txt, gguf-py's answers, through the detected
/// build and the portable one.
#[test]
fn gguf_py_answers_bit_for_bit() {
    const VECTORS: &str = include_str!("../../../../tests/vectors/dequant.txt");
    let mut seen = std::collections::BTreeSet::new();
    for line in VECTORS
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut parts = line.split(' ');
        let (name, blocks, expected) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let ggml = GgmlType::from_name(name).unwrap();
        let blocks = unhex(blocks);
        let expected: Vec<u8> = unhex(expected)
            .chunks(4)
            .flat_map(|c| f32::from_le_bytes(c.try_into().unwrap()).to_ne_bytes())
            .collect();
        let kernels = if cfg!(miri) {
            &[Kernel::Portable][..]
        } else {
            &[Kernel::detect(), Kernel::Portable]
        };
        for &kernel in kernels {
            let got = dequantize(kernel, ggml, &blocks, DType::F32);
            if !same(&got, &expected, DType::F32) {
                let at = got.iter().zip(&expected).position(|(a, b)| a != b).unwrap() / 4;
                panic!(
                    "{name} ({kernel:?}): element {at} of {} differs",
                    got.len() / 4
                );
            }
        }
        seen.insert(name);
    }
    assert_eq!(seen.len(), quantized().len(), "{seen:?}");
}

/// A run of elements from anywhere to anywhere (a staging slot's, a
/// thread's part) gives the bytes of the whole output there; the cuts fall
/// on whole blocks.
#[test]
fn any_run_of_elements_gives_the_whole_outputs_bytes() {
    use super::Dequantizer;
    for (ggml, to) in [
        (GgmlType::Q4_K, DType::F32),
        (GgmlType::Q8_0, DType::F16),
        (GgmlType::MXFP4, DType::BF16),
    ] {
        let bytes = ggml.info().bytes as usize;
        let blocks: Vec<u8> = (0..bytes * 5)
            .map(|i| (i * 131 % 256) as u8 & 0xbf)
            .collect();
        let whole = dequantize(Kernel::detect(), ggml, &blocks, to);
        let d = Dequantizer::new(ggml, &blocks, Descr::native(to)).unwrap();
        assert_eq!(d.out_bytes(), whole.len());
        let size = to.size();
        let n = whole.len() / size;
        for (first, count) in [
            (0, n),
            (1, n - 1),
            (3, 40),
            (31, 2),
            (n - 1, 1),
            (0, 0),
            (n / 3, n / 2),
        ] {
            let mut part = vec![0u8; count * size];
            d.fill(first, &mut part);
            assert!(
                same(&part, &whole[first * size..(first + count) * size], to),
                "{ggml} {first}+{count}"
            );
        }
        let cuts = d.cuts(3, 8, 0, 0..whole.len());
        let unit = ggml.info().block as usize * size;
        assert!(
            cuts.len() == 4 && cuts[1..3].iter().all(|c| c % unit == 0),
            "{cuts:?}"
        );
    }
    let err = Dequantizer::new(GgmlType::Q8_0, &[0; 35], Descr::native(DType::F32)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "35 bytes are not a whole number of Q8_0 blocks of 34 bytes"
    );
}

/// Issue 40: a Q4_1 or Q5_1 block whose scale and minimum are both NaN
/// gives the scale's NaN (quieted, its sign kept) for every value, in
/// every build, as gguf-py does for two blocks or more; the compiler had
/// put the minimum first for 4 of Q5_1's 32 values.
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri picks the NaN an operation on NaNs gives at random, as Rust's float semantics allow"
)]
fn two_nans_give_the_scales() {
    for (ggml, bytes) in [(GgmlType::Q4_1, 20), (GgmlType::Q5_1, 24)] {
        let mut blocks = vec![];
        for (i, (d, m)) in [(0x7e01u16, 0x7e02u16), (0xfe00, 0x7c01), (0x7d55, 0xffff)]
            .into_iter()
            .enumerate()
        {
            let mut block: Vec<u8> = (0..bytes).map(|j| (j * 37 + i * 11) as u8).collect();
            block[..2].copy_from_slice(&d.to_le_bytes());
            block[2..4].copy_from_slice(&m.to_le_bytes());
            blocks.extend(block);
        }
        let kernels = if cfg!(miri) {
            &[Kernel::Portable][..]
        } else {
            &[Kernel::detect(), Kernel::Portable]
        };
        for &kernel in kernels {
            let out = dequantize(kernel, ggml, &blocks, DType::F32);
            for (i, value) in out.chunks(4).enumerate() {
                let d = u16::from_le_bytes([blocks[i / 32 * bytes], blocks[i / 32 * bytes + 1]]);
                let expected =
                    (u32::from(d & 0x8000) << 16) | 0x7fc0_0000 | (u32::from(d & 0x3ff) << 13);
                let got = u32::from_ne_bytes(value.try_into().unwrap());
                assert_eq!(got, expected, "{ggml} ({kernel:?}): value {i}: {got:#x}");
            }
        }
    }
}
