//! The shared segment's lock, for `cargo xtask bench`: an uncontended lock
//! plus unlock, against the same with `std::sync::Mutex` (one process) as
//! the baseline. Goal: at most 30 ns.

use std::hint::black_box;
use std::sync::Mutex;

use criterion::{Criterion, criterion_group, criterion_main};

#[cfg(unix)]
fn lock(c: &mut Criterion) {
    use bytelens::SharedBuffer;
    let name = format!("bytelens-bench-lock-{}", std::process::id());
    // SAFETY: the benchmark's own segment, never shrunk.
    let shared = unsafe { SharedBuffer::create(&name, 64, None) }.unwrap();
    let mutex = Mutex::new(0u64);
    let mut group = c.benchmark_group("lock");
    group.bench_function("baseline: std Mutex lock+unlock", |b| {
        b.iter(|| drop(black_box(&mutex).lock()))
    });
    group.bench_function("SharedBuffer lock+unlock (robust, process-shared)", |b| {
        b.iter(|| drop(black_box(&shared).lock(None)))
    });
    group.finish();
    SharedBuffer::unlink(&name).unwrap();
}

#[cfg(not(unix))]
fn lock(_: &mut Criterion) {}

criterion_group!(benches, lock);
criterion_main!(benches);
