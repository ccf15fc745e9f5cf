//! What the hand-timed benchmarks (`gpu`, `dequant`) share.

use std::time::{Duration, Instant};

/// The median of `reps` timed runs of `f`, after one untimed run that
/// warms what the runs would otherwise pay for first (page faults, first
/// mappings, caches).
pub fn median(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}
