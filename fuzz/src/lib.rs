//! The fuzz targets' inputs and checks, one module per target (the binaries
//! in `fuzz_targets/` only hand libFuzzer's bytes to them):
//!
//! - [`layout`]: layouts built from parts or from a `tests/vectors` case,
//!   then every operation on them, each result checked against [`model`];
//! - [`plan`]: plan text parsed, printed and parsed again, plans built from
//!   parts, placed, and written as WGSL;
//! - [`header`]: shared-memory headers read from hostile bytes;
//! - [`args`]: a view's arguments as JavaScript passes them, resolved by
//!   the core's `ViewArgs::resolve`, and the `args.json` cases;
//! - [`files`]: `.npy`, safetensors and GGUF headers read from hostile
//!   bytes, GGUF's quantised tensors dequantised.
//!
//! Inputs are `arbitrary` types. Those that start from a vector case take it
//! by number: an input of four zero bytes (the first variant) and the case's
//! index is that case, which is how `cargo xtask fuzz` writes the seeds.
//! A check that fails panics, which libFuzzer reports as a crash.
#![forbid(unsafe_code)]

pub mod args;
pub mod files;
pub mod header;
pub mod layout;
pub mod model;
pub mod plan;
mod vectors;

use arbitrary::Arbitrary;
use bytelens_core::{ByteOrder, DType, Descr, Error};

/// A `usize` the fuzzer reaches easily: small, an edge of the range, or any.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Uint {
    Small(u8),
    Edge(u8),
    Any(usize),
}

const USIZE_EDGES: [usize; 18] = [
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    16,
    4096,
    1 << 31,
    1 << 32,
    1 << 62,
    isize::MAX as usize - 1,
    isize::MAX as usize,
    isize::MAX as usize + 1,
    usize::MAX / 2,
    usize::MAX - 1,
    usize::MAX,
];

impl Uint {
    pub fn get(self) -> usize {
        match self {
            Uint::Small(n) => usize::from(n),
            Uint::Edge(i) => USIZE_EDGES[usize::from(i) % USIZE_EDGES.len()],
            Uint::Any(n) => n,
        }
    }
}

/// An `isize` the fuzzer reaches easily: small, an edge of the range, or any.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Int {
    Small(i8),
    Edge(u8),
    Any(isize),
}

const ISIZE_EDGES: [isize; 17] = [
    0,
    1,
    -1,
    2,
    -2,
    4,
    -4,
    8,
    -8,
    1 << 40,
    -(1 << 40),
    1 << 62,
    -(1 << 62),
    isize::MAX / 2 + 1,
    isize::MAX,
    isize::MIN + 1,
    isize::MIN,
];

impl Int {
    pub fn get(self) -> isize {
        match self {
            Int::Small(n) => isize::from(n),
            Int::Edge(i) => ISIZE_EDGES[usize::from(i) % ISIZE_EDGES.len()],
            Int::Any(n) => n,
        }
    }
}

/// A dtype and byte order.
#[derive(Arbitrary, Clone, Copy, Debug, Default)]
pub struct DescrIn {
    dtype: u8,
    big: bool,
}

impl DescrIn {
    pub fn get(self) -> Descr {
        let dtype = DType::ALL[usize::from(self.dtype) % DType::ALL.len()];
        let order = if self.big {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        Descr::new(dtype, order)
    }
}

/// The longest message an error may have: errors are "bounded in length"
/// (the design card), names and text in them cut short.
pub const MAX_MESSAGE: usize = 400;

/// Checks what every error must do: name a kind, and print a message that
/// is not empty and not long.
pub fn check_error(err: &Error) {
    assert!(!err.kind().name().is_empty());
    let message = err.to_string();
    assert!(
        !message.is_empty() && message.len() <= MAX_MESSAGE,
        "{} bytes: {message}",
        message.len()
    );
}

/// Runs `check` on the input `arbitrary` makes of `data`, as a target does:
/// for the regression tests, which replay saved inputs.
pub fn replay<'a, T: Arbitrary<'a>>(data: &'a [u8], check: impl FnOnce(&T)) {
    if let Ok(input) = T::arbitrary_take_rest(arbitrary::Unstructured::new(data)) {
        check(&input);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every saved input under `regressions/<target>/` (crashes the fuzzer
    /// found, minimized) still passes its target's checks.
    #[test]
    fn regressions_pass() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
        type Replay = fn(&[u8]);
        let targets: [(&str, Replay); 5] = [
            ("layout", |d| super::replay(d, super::layout::run)),
            ("plan", |d| super::replay(d, super::plan::run)),
            ("header", |d| super::replay(d, super::header::run)),
            ("args", |d| super::replay(d, super::args::run)),
            ("files", super::files::run),
        ];
        for (target, run) in targets {
            let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                println!("{}", path.display());
                run(&std::fs::read(&path).unwrap());
            }
        }
    }
}
