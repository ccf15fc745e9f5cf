//! Converting while copying, for `cargo xtask bench`: 64 MiB of source
//! elements (a contiguous view, so the walk hands the whole run to the
//! conversion kernel) against a memcpy of the same 64 MiB, the baseline.
//! Throughput is counted in source bytes. numpy's `byteswap()` and
//! `astype` on the same data are in `cargo xtask bench python`.

use std::hint::black_box;
use std::time::Duration;

use bytelens::{Buffer, ByteOrder, DType, Descr, Layout, copy_into};
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

criterion_group!(benches, convert);
criterion_main!(benches);
