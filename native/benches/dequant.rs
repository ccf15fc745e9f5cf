//! Dequantising ggml blocks (GGUF tensors), for `cargo xtask bench`: 256
//! MiB of float32 output from each goal type, on one thread and on every
//! thread, against a memcpy of the output's 256 MiB (the baseline,
//! measured in the same run). gguf-py's numpy dequantiser on the same
//! blocks is in `cargo xtask bench python files`.
//!
//! Prints each time as a median of several runs and its ratio to the
//! memcpy, then one `goal ...: ratio (met|MISSED)` line per type (one
//! thread at most 1.5× the memcpy).

mod common;

use std::hint::black_box;
use std::time::Duration;

use bytelens::files::GgmlType;
use bytelens::{Buffer, DType, Descr, dequantize_into_threads};
use common::median;

const OUT_BYTES: usize = 256 << 20;
const REPS: usize = 7;

/// Blocks of `ggml` for `OUT_BYTES` of float32: every byte written,
/// float16 scales finite (what a real file holds; the kernels do not
/// branch on values either way).
fn blocks(ggml: GgmlType) -> Buffer {
    let info = ggml.info();
    let n = OUT_BYTES / 4 / info.block as usize;
    let mut buf = Buffer::new(n * info.bytes as usize).expect("memory for the benchmark");
    for (i, b) in buf.as_bytes_mut().iter_mut().enumerate() {
        *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    let halves: Vec<u16> = info
        .fields
        .iter()
        .filter(|f| f.dtype == DType::F16)
        .map(|f| f.offset)
        .collect();
    for block in buf.as_bytes_mut().chunks_exact_mut(info.bytes as usize) {
        for &at in &halves {
            block[at as usize + 1] &= 0x3b; // below 2^15: finite
        }
    }
    buf
}

fn main() {
    // `cargo xtask bench FILTER` passes criterion's filters to every bench:
    // run only where none is given or one names this one.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|f| "dequant".contains(f.as_str())) {
        return;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = Buffer::new(OUT_BYTES).expect("memory for the benchmark");
    let src = {
        let mut b = Buffer::new(OUT_BYTES).expect("memory for the benchmark");
        b.as_bytes_mut()
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as u8);
        b
    };
    let memcpy = median(REPS, || {
        out.as_bytes_mut()
            .copy_from_slice(black_box(src.as_bytes()))
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("memcpy of 256 MiB (the baseline): {:.1} ms", ms(memcpy));
    println!(
        "{:<8} {:>14} {:>8} {:>18} {:>8}",
        "type",
        "1 thread (ms)",
        "/memcpy",
        format!("{threads} threads (ms)"),
        "/memcpy"
    );
    let f32 = Descr::native(DType::F32);
    let mut goals = Vec::new();
    for ggml in [
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
    ] {
        let src = blocks(ggml);
        let mut run = |n| {
            median(REPS, || {
                dequantize_into_threads(ggml, black_box(src.as_bytes()), out.as_bytes_mut(), f32, n)
                    .unwrap()
            })
        };
        let (one, all) = (run(1), run(threads));
        let (r1, rn) = (ms(one) / ms(memcpy), ms(all) / ms(memcpy));
        println!(
            "{:<8} {:>14.1} {:>8.2} {:>18.1} {:>8.2}",
            ggml.name(),
            ms(one),
            r1,
            ms(all),
            rn
        );
        goals.push((ggml, r1));
    }
    println!();
    for (ggml, ratio) in goals {
        let verdict = if ratio <= 1.5 { "met" } else { "MISSED" };
        println!(
            "goal dequantise {ggml} to float32 on one thread <= 1.5x memcpy: {ratio:.2} ({verdict})"
        );
    }
}
