//! The shared segment's lock, for `cargo xtask bench`: an uncontended lock
//! plus unlock, against the same with `std::sync::Mutex` (one process) as
//! the baseline. Goal: at most 30 ns.

use std::hint::black_box;
use std::sync::Mutex;

use criterion::{Criterion, criterion_group, criterion_main};

fn lock(c: &mut Criterion) {
    use bytelens::{LockKind, SharedBuffer};
    let name = format!("bytelens-bench-lock-{}", std::process::id());
    // SAFETY: the benchmark's own segment, never shrunk.
    let shared = unsafe { SharedBuffer::create(&name, 64, None) }.unwrap();
    let mutex = Mutex::new(0u64);
    let mut group = c.benchmark_group("lock");
    group.bench_function("baseline: std Mutex lock+unlock", |b| {
        b.iter(|| drop(black_box(&mutex).lock()))
    });
    group.bench_function(
        format!(
            "SharedBuffer lock+unlock ({}, process-shared)",
            shared.lock_kind()
        ),
        |b| b.iter(|| drop(black_box(&shared).lock(None))),
    );
    SharedBuffer::unlink(&name).unwrap();
    if LockKind::native() != LockKind::FileLock && LockKind::FileLock.is_available() {
        // macOS's kind, measured here too (no goal: two system calls).
        let name = format!("bytelens-bench-flock-{}", std::process::id());
        // SAFETY: as above.
        let file =
            unsafe { SharedBuffer::create_with(&name, 64, None, LockKind::FileLock) }.unwrap();
        group.bench_function("SharedBuffer lock+unlock (file, process-shared)", |b| {
            b.iter(|| drop(black_box(&file).lock(None)))
        });
        SharedBuffer::unlink(&name).unwrap();
    }
    group.finish();
}

criterion_group!(benches, lock);
criterion_main!(benches);
