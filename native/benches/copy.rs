//! Copying views into C order, for `cargo xtask bench`: each group's
//! baseline is a memcpy of the same number of bytes (the machine's ceiling
//! for any copy), so the ratio printed is how many times a memcpy's time
//! the copy takes. numpy's figures for the same copies are in
//! `cargo xtask bench python` (native/benches/python_copy.py).

use std::hint::black_box;
use std::time::Duration;

use bytelens::{Buffer, DType, Layout, gather_into};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A buffer of `nbytes` with every byte written (so no page is shared zeros).
fn filled(nbytes: usize) -> Buffer {
    let mut buf = Buffer::new(nbytes).expect("memory for the benchmark");
    for (i, b) in buf.as_bytes_mut().iter_mut().enumerate() {
        *b = (i * 7 + i / 4093) as u8;
    }
    buf
}

fn group(c: &mut Criterion, name: &str, layout: Layout) {
    // Every layout here views the whole of a contiguous array.
    let src = filled(layout.nbytes());
    let mut out = filled(layout.nbytes());
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(layout.nbytes() as u64));
    let same = filled(layout.nbytes());
    group.bench_function("baseline: memcpy", |b| {
        b.iter(|| {
            out.as_bytes_mut()
                .copy_from_slice(black_box(same.as_bytes()))
        })
    });
    group.bench_function("gather_into", |b| {
        b.iter(|| gather_into(black_box(src.as_bytes()), &layout, out.as_bytes_mut()).unwrap())
    });
    group.finish();
}

fn copies(c: &mut Criterion) {
    let f32s = Layout::contiguous(DType::F32, &[8192, 8192]).unwrap();
    group(c, "transposed 8192x8192 f32", f32s.transpose());
    let seed = Layout::contiguous(DType::F64, &[64, 64, 32, 32]).unwrap();
    group(
        c,
        "seed 002 transpose(1,0,2,3) f64",
        seed.permute(&[1, 0, 2, 3]).unwrap(),
    );
    let u16s = Layout::contiguous(DType::U16, &[8192, 8192]).unwrap();
    group(c, "transposed 8192x8192 u16", u16s.transpose());
    let f64s = Layout::contiguous(DType::F64, &[4096, 4096]).unwrap();
    group(c, "transposed 4096x4096 f64", f64s.transpose());
    let bytes = Layout::contiguous(DType::U8, &[8192, 8192]).unwrap();
    group(c, "transposed 8192x8192 u8", bytes.transpose());
    group(
        c,
        "reversed 64M f32",
        f32s.reshape(&[1 << 26])
            .unwrap()
            .slice(0, None, None, -1)
            .unwrap(),
    );
}

criterion_group!(benches, copies);
criterion_main!(benches);
