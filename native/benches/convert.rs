//! Converting while copying, for `cargo xtask bench`: 64 MiB of source
//! elements (a contiguous view, so the walk hands the whole run to the
//! conversion kernel) against a memcpy of the same 64 MiB, the baseline.
//! Throughput is counted in source bytes. numpy's `byteswap()` and
//! `astype` on the same data are in `cargo xtask bench python`.
//!
//! The `convert float8` group converts 16 Mi elements to and from the
//! float8 types (so 64 MiB of float32 on one side), throughput counted in
//! elements, against a memcpy of 64 MiB and a plain loop of the core's
//! reference conversion (`F8E4M3FN::from_f64`, element by element).

use std::hint::black_box;
use std::time::Duration;

use bytelens::{Buffer, ByteOrder, DType, Descr, F8E4M3FN, Layout, copy_into};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const SOURCE_BYTES: usize = 64 << 20;

/// `nbytes` of float-like data: every byte written (no shared zero pages),
/// finite values of ordinary magnitudes whether read as float16, float32 or
/// float64, so no kernel takes its NaN path.
fn filled(nbytes: usize) -> Buffer {
    let mut buf = Buffer::new(nbytes).expect("memory for the benchmark");
    for (i, b) in buf.as_bytes_mut().iter_mut().enumerate() {
        // Every other byte below 0x40 keeps each 2-byte exponent finite.
        *b = if i % 2 == 1 {
            0x3c ^ (i / 2 % 3) as u8
        } else {
            (i * 7 + i / 4093) as u8
        };
    }
    buf
}

fn convert(c: &mut Criterion) {
    let mut group = c.benchmark_group("convert");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(SOURCE_BYTES as u64));
    let src = filled(SOURCE_BYTES);
    let mut out = filled(2 * SOURCE_BYTES);
    group.bench_function("baseline: memcpy", |b| {
        b.iter(|| out.as_bytes_mut()[..SOURCE_BYTES].copy_from_slice(black_box(src.as_bytes())))
    });
    let le = |d| Descr::new(d, ByteOrder::Little);
    let be = |d| Descr::new(d, ByteOrder::Big);
    let cases = [
        ("byteswap f32", le(DType::F32), be(DType::F32)),
        ("f32 -> f16", le(DType::F32), le(DType::F16)),
        ("f16 -> f32", le(DType::F16), le(DType::F32)),
        ("f32 -> bf16", le(DType::F32), le(DType::BF16)),
        ("f64 -> f32", le(DType::F64), le(DType::F32)),
        // Scalar loops left to the compiler's vectoriser.
        ("i64 -> i32", le(DType::I64), le(DType::I32)),
        ("i32 -> f32", le(DType::I32), le(DType::F32)),
        ("f64 -> f16", le(DType::F64), le(DType::F16)),
    ];
    for (name, from, to) in cases {
        let n = SOURCE_BYTES / from.dtype.size();
        let layout = Layout::contiguous(from.dtype, &[n])
            .unwrap()
            .with_byte_order(from.order);
        let dst = &mut out.as_bytes_mut()[..n * to.dtype.size()];
        group.bench_function(name, |b| {
            b.iter(|| copy_into(black_box(src.as_bytes()), &layout, dst, to).unwrap())
        });
    }
    group.finish();
}

/// `n` float32 values spread over float8_e4m3fn's range (±2^-10 .. ±2^9:
/// subnormals, every binade, a little overflow), as little-endian bytes.
fn float8_range(n: usize) -> Buffer {
    let mut buf = Buffer::new(4 * n).expect("memory for the benchmark");
    for (i, e) in buf.as_bytes_mut().chunks_exact_mut(4).enumerate() {
        let i = i as u32;
        let exponent = 117 + (i.wrapping_mul(2_654_435_761) >> 27) % 20; // 2^-10 ..= 2^9
        let bits = (i & 1) << 31 | exponent << 23 | i.wrapping_mul(0x9e37_79b9) >> 9;
        e.copy_from_slice(&bits.to_le_bytes());
    }
    buf
}

fn convert_float8(c: &mut Criterion) {
    const N: usize = 16 << 20;
    let mut group = c.benchmark_group("convert float8");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(N as u64));
    let f32s = float8_range(N);
    let mut out = filled(8 * N);
    group.bench_function("baseline: memcpy 64 MiB", |b| {
        b.iter(|| out.as_bytes_mut()[..4 * N].copy_from_slice(black_box(f32s.as_bytes())))
    });
    group.bench_function(
        "baseline: f32 -> f8e4m3fn, a loop of F8E4M3FN::from_f64",
        |b| {
            b.iter(|| {
                let src = black_box(f32s.as_bytes()).chunks_exact(4);
                for (s, d) in src.zip(&mut out.as_bytes_mut()[..N]) {
                    let x = f32::from_le_bytes(s.try_into().expect("4 bytes"));
                    *d = F8E4M3FN::from_f64(x.into()).to_bits();
                }
            })
        },
    );
    let le = |d| Descr::new(d, ByteOrder::Little);
    let be = |d| Descr::new(d, ByteOrder::Big);
    // float8 sources: the float32 values converted, so every class occurs.
    let mut sources = Vec::new();
    for dtype in [DType::F8E4M3FN, DType::F8E5M2, DType::F8E8M0FNU] {
        let mut buf = Buffer::new(N).expect("memory for the benchmark");
        let layout = Layout::contiguous(DType::F32, &[N]).unwrap();
        copy_into(f32s.as_bytes(), &layout, buf.as_bytes_mut(), le(dtype)).unwrap();
        sources.push((dtype, buf));
    }
    let f64s = {
        let mut buf = Buffer::new(8 * N).expect("memory for the benchmark");
        let layout = Layout::contiguous(DType::F32, &[N]).unwrap();
        copy_into(f32s.as_bytes(), &layout, buf.as_bytes_mut(), le(DType::F64)).unwrap();
        buf
    };
    let cases = [
        ("f32 -> f8e4m3fn", le(DType::F32), le(DType::F8E4M3FN)),
        ("f32 -> f8e5m2", le(DType::F32), le(DType::F8E5M2)),
        ("f32 -> f8e8m0fnu", le(DType::F32), le(DType::F8E8M0FNU)),
        (
            "f32 big-endian -> f8e4m3fn",
            be(DType::F32),
            le(DType::F8E4M3FN),
        ),
        ("bf16 -> f8e4m3fn", le(DType::BF16), le(DType::F8E4M3FN)),
        ("f16 -> f8e5m2", le(DType::F16), le(DType::F8E5M2)),
        ("f64 -> f8e4m3fn", le(DType::F64), le(DType::F8E4M3FN)),
        ("f8e4m3fn -> f32", le(DType::F8E4M3FN), le(DType::F32)),
        ("f8e5m2 -> f32", le(DType::F8E5M2), le(DType::F32)),
        ("f8e8m0fnu -> f32", le(DType::F8E8M0FNU), le(DType::F32)),
        ("f8e4m3fn -> bf16", le(DType::F8E4M3FN), le(DType::BF16)),
        ("f8e4m3fn -> f16", le(DType::F8E4M3FN), le(DType::F16)),
        ("f8e4m3fn -> f64", le(DType::F8E4M3FN), le(DType::F64)),
        // A table of the reference's answers for every byte.
        ("f8e4m3fn -> f8e5m2", le(DType::F8E4M3FN), le(DType::F8E5M2)),
        // Integers: float32 rounded to odd, then the encoder.
        ("i32 -> f8e4m3fn", le(DType::I32), le(DType::F8E4M3FN)),
    ];
    for (name, from, to) in cases {
        let src = match from.dtype {
            DType::F8E4M3FN | DType::F8E5M2 | DType::F8E8M0FNU => {
                let (_, buf) = sources.iter().find(|(d, _)| *d == from.dtype).unwrap();
                buf.as_bytes()
            }
            DType::F64 => f64s.as_bytes(),
            // float32's bytes read as half as wide elements (the same
            // ordinary magnitudes for float16 and bfloat16), or as int32.
            _ => f32s.as_bytes(),
        };
        let n = N.min(src.len() / from.dtype.size());
        let layout = Layout::contiguous(from.dtype, &[n])
            .unwrap()
            .with_byte_order(from.order);
        let src = &src[..n * from.dtype.size()];
        let dst = &mut out.as_bytes_mut()[..n * to.dtype.size()];
        group.bench_function(name, |b| {
            b.iter(|| copy_into(black_box(src), &layout, dst, to).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, convert, convert_float8);
criterion_main!(benches);
