//! Layout operations, for `cargo xtask bench`: each is O(ndim) arithmetic on
//! an inline struct, so the baseline is copying a `Layout` (which every
//! operation does at least once).

use std::hint::black_box;

use bytelens::{DType, Layout};
use criterion::{Criterion, criterion_group, criterion_main};

fn layouts(c: &mut Criterion) {
    for ndim in [1usize, 2, 4] {
        let shape: Vec<usize> = [64, 32, 16, 8][..ndim].to_vec();
        let layout = Layout::contiguous(DType::F32, &shape).unwrap();
        let len = layout.nbytes();
        let flat = [layout.size()];
        let mut group = c.benchmark_group(format!("ndim{ndim}"));
        group.bench_function("baseline: copy a Layout", |b| {
            b.iter(|| black_box(*black_box(&layout)))
        });
        group.bench_function("check", |b| {
            b.iter(|| black_box(&layout).check(black_box(len)))
        });
        group.bench_function("reinterpret f32->i16", |b| {
            b.iter(|| black_box(&layout).reinterpret(black_box(DType::I16)))
        });
        group.bench_function("slice ::-2", |b| {
            b.iter(|| black_box(&layout).slice(0, None, None, black_box(-2)))
        });
        group.bench_function("index", |b| {
            b.iter(|| black_box(&layout).index(0, black_box(3)))
        });
        group.bench_function("transpose", |b| b.iter(|| black_box(&layout).transpose()));
        group.bench_function("reshape to 1-D", |b| {
            b.iter(|| black_box(&layout).reshape(black_box(&flat)))
        });
        let mut wide = vec![3usize];
        wide.extend_from_slice(&shape);
        group.bench_function("broadcast_to", |b| {
            b.iter(|| black_box(&layout).broadcast_to(black_box(&wide)))
        });
        let half = layout.slice(0, Some(1), None, 2).unwrap();
        let other = layout.slice(0, None, None, 2).unwrap();
        group.bench_function("overlaps (interleaved, No)", |b| {
            b.iter(|| black_box(&half).overlaps(black_box(&other), 1 << 20))
        });
        group.finish();
    }
}

criterion_group!(benches, layouts);
criterion_main!(benches);
