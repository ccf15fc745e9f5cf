//! Dequantising ggml's blocks (GGUF tensors) into float32, float16 or
//! bfloat16, in the copy kernel's style: one reference
//! (the core's [`dequant`](bytelens_core::files::dequant), gguf-py's results bit for bit), builds of it for the
//! CPU's vector units chosen at run time, and big outputs split between
//! threads by [`fan_out`].
//!
//! The reference functions are written so that the compiler vectorises
//! them (fixed-size blocks in, fixed-size arrays out, constant loop
//! bounds, no branch on the data); [`Kernel`] is the same code compiled for
//! AVX2 and F16C on x86-64 where the CPU has them, for NEON on aarch64
//! (every aarch64 CPU has it), and for the target's baseline otherwise.
//! Compiling for other features cannot change a result: the arithmetic is
//! IEEE float32, each operation rounded, with no fused multiply-add (Rust
//! never contracts `a * b - c`).
//!
//! float16 and bfloat16 outputs are float32 blocks rounded once, by the
//! conversion kernel (`convert`), from a scratch block that stays in cache.

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86;

#[cfg(test)]
mod tests;

use std::ops::Range;

use bytelens_core::files::GgmlType;
use bytelens_core::{DType, Descr};

use super::convert::Convert;
use super::walk::{cuts_in_units, lcm};
use super::{MOST_THREADS, PARALLEL_MIN, fan_out};
use crate::Error;

/// The most elements a scratch block holds (float16 and bfloat16 outputs,
/// and outputs not aligned for float32): 64 KiB, in L2.
const SCRATCH: usize = 16 * 1024;

/// Outputs at least this large are streamed to memory (`x86`), from
/// scratch blocks of this many float32s (8 KiB, in L1).
#[cfg(all(target_arch = "x86_64", not(miri)))]
const STREAM_MIN: usize = 1 << 20;
#[cfg(all(target_arch = "x86_64", not(miri)))]
const STREAM_CHUNK: usize = 2048;

/// Whether `dequantize_into` can dequantise `ggml` (every quantised type of
/// the table).
pub fn can_dequantize(ggml: GgmlType) -> bool {
    dequantizer(ggml).is_some()
}

/// Whether blocks can be dequantised into `to`: float32, float16 or
/// bfloat16 in this machine's byte order, on the CPU as on the GPU. One
/// error for that one mistake on every path (`Error::Dequantize`, kind
/// `Dequantize`: Python's `ValueError`), naming the dtype asked and the
/// ones allowed.
///
/// # Examples
/// ```
/// use bytelens::{DType, Descr, ErrorKind, check_dequantize_to};
/// assert!(check_dequantize_to(Descr::native(DType::BF16)).is_ok());
/// let err = check_dequantize_to(Descr::native(DType::F64)).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Dequantize);
/// assert_eq!(err.to_string(), "blocks dequantise to float32, float16 or bfloat16, not float64");
/// ```
pub fn check_dequantize_to(to: Descr) -> Result<(), Error> {
    if !matches!(to.dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::Dequantize {
            detail: format!(
                "blocks dequantise to float32, float16 or bfloat16, not {}",
                to.dtype.name()
            ),
        });
    }
    if to != Descr::native(to.dtype) {
        let endian = |order| match order {
            bytelens_core::ByteOrder::Little => "little-endian",
            bytelens_core::ByteOrder::Big => "big-endian",
        };
        return Err(Error::Dequantize {
            detail: format!(
                "dequantised values are {} in this machine's byte order ({}), not {} ('{to}'): \
                 dequantise, then byteswap the result (blocks dequantise to float32, float16 or \
                 bfloat16 in the machine's byte order)",
                to.dtype.name(),
                endian(bytelens_core::ByteOrder::NATIVE),
                endian(to.order)
            ),
        });
    }
    Ok(())
}

/// A dequantiser of whole blocks: `blocks` (a multiple of the block size)
/// into `out` (as many float32s as they hold).
type Blocks = fn(&[u8], &mut [f32]);

/// Runs `f` over each block of `blocks` and each `N`-element run of `out`.
#[inline(always)]
fn each<const B: usize, const N: usize>(
    blocks: &[u8],
    out: &mut [f32],
    f: impl Fn(&[u8; B], &mut [f32; N]),
) {
    for (b, y) in blocks.chunks_exact(B).zip(out.chunks_exact_mut(N)) {
        // Both exact chunks: the conversions cannot fail.
        if let (Ok(b), Ok(y)) = (b.try_into(), y.try_into()) {
            f(b, y);
        }
    }
}

/// Defines, for each type, the portable loop over its blocks and the same
/// loop compiled for the vector units `Kernel` may pick.
macro_rules! dequantizers {
    ($($ty:ident => $f:ident [$b:literal, $n:literal]),* $(,)?) => {
        mod portable {
            $(#[inline(always)]
            pub(super) fn $f(blocks: &[u8], out: &mut [f32]) {
                super::each::<$b, $n>(blocks, out, bytelens_core::files::dequant::$f);
            })*
        }

        #[cfg(all(target_arch = "x86_64", not(miri)))]
        mod avx2 {
            $(
            /// # Safety
            /// The CPU must have AVX2 and F16C.
            #[target_feature(enable = "avx2,f16c")]
            pub(super) unsafe fn $f(blocks: &[u8], out: &mut [f32]) {
                super::portable::$f(blocks, out);
            })*
        }

        /// The portable loop for `ggml`.
        fn dequantizer(ggml: GgmlType) -> Option<Blocks> {
            Some(match ggml {
                $(GgmlType::$ty => portable::$f,)*
                _ => return None,
            })
        }

        /// The AVX2 loop for `ggml`.
        ///
        /// # Safety
        /// The CPU must have AVX2 and F16C.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        fn avx2_dequantizer(ggml: GgmlType) -> Option<unsafe fn(&[u8], &mut [f32])> {
            Some(match ggml {
                $(GgmlType::$ty => avx2::$f,)*
                _ => return None,
            })
        }
    };
}

dequantizers! {
    Q4_0 => q4_0 [18, 32],
    Q4_1 => q4_1 [20, 32],
    Q5_0 => q5_0 [22, 32],
    Q5_1 => q5_1 [24, 32],
    Q8_0 => q8_0 [34, 32],
    Q2_K => q2_k [84, 256],
    Q3_K => q3_k [110, 256],
    Q4_K => q4_k [144, 256],
    Q5_K => q5_k [176, 256],
    Q6_K => q6_k [210, 256],
    IQ4_NL => iq4_nl [18, 32],
    IQ4_XS => iq4_xs [136, 256],
    MXFP4 => mxfp4 [17, 32],
    TQ1_0 => tq1_0 [54, 256],
    TQ2_0 => tq2_0 [66, 256],
}

/// Which build of the dequantisers runs, chosen once per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Compiled for the target's baseline (on aarch64: NEON, which every
    /// aarch64 CPU has; under Miri: the reference as it is).
    Portable,
    /// Compiled for AVX2 and F16C, which the CPU was found to have.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Avx2,
}

impl Kernel {
    /// The fastest build this CPU runs.
    pub(crate) fn detect() -> Kernel {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return Kernel::Avx2;
        }
        Kernel::Portable
    }

    /// Dequantises whole `ggml` blocks into float32s.
    fn run(self, ggml: GgmlType, blocks: &[u8], out: &mut [f32]) {
        match self {
            Kernel::Portable => {
                if let Some(f) = dequantizer(ggml) {
                    f(blocks, out);
                }
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Kernel::Avx2 => {
                if let Some(f) = avx2_dequantizer(ggml) {
                    // SAFETY: `Avx2` is only made by `detect`, which found
                    // AVX2 and F16C on this CPU, the features `f` enables.
                    unsafe { f(blocks, out) }
                }
            }
        }
    }
}

/// Dequantises `blocks`, whole blocks of the ggml type `ggml`, into `out`:
/// as many elements of `to` (native float32, float16 or bfloat16) as the
/// blocks hold, in order. The float32 values are gguf-py's
/// (`gguf.quants.dequantize`) bit for bit; float16 and bfloat16 are those
/// rounded once, to nearest even.
///
/// Outputs of 8 MiB or more are split on whole blocks between up to four
/// threads (as many as there are CPUs).
///
/// # Examples
/// ```
/// use bytelens::{DType, Descr, dequantize_into};
/// use bytelens::files::GgmlType;
/// // One Q8_0 block: a float16 scale of 0.5, then 32 int8 values.
/// let mut block = bytelens::f16::from_f32(0.5).to_le_bytes().to_vec();
/// block.extend((0..32).map(|i| (i as i8 - 16) as u8));
/// let mut out = [0u8; 128];
/// dequantize_into(GgmlType::Q8_0, &block, &mut out, Descr::native(DType::F32))?;
/// let first: Vec<f32> = out[..12].chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
/// assert_eq!(first, [-8.0, -7.5, -7.0]);
/// # Ok::<(), bytelens::Error>(())
/// ```
pub fn dequantize_into(
    ggml: GgmlType,
    blocks: &[u8],
    out: &mut [u8],
    to: Descr,
) -> Result<(), Error> {
    dequantize_with(Kernel::detect(), ggml, blocks, out, to, MOST_THREADS)
}

/// [`dequantize_into`] on at most `threads` threads (1: the calling thread
/// only, whatever the size), for a caller that runs its own threads.
pub fn dequantize_into_threads(
    ggml: GgmlType,
    blocks: &[u8],
    out: &mut [u8],
    to: Descr,
    threads: usize,
) -> Result<(), Error> {
    dequantize_with(Kernel::detect(), ggml, blocks, out, to, threads)
}

pub(crate) fn dequantize_with(
    kernel: Kernel,
    ggml: GgmlType,
    blocks: &[u8],
    out: &mut [u8],
    to: Descr,
    most: usize,
) -> Result<(), Error> {
    let info = ggml.info();
    let (block, bytes) = (info.block as usize, info.bytes as usize);
    let n_blocks = check(ggml, blocks, out.len(), to)?;
    let size = to.dtype.size();
    let expected = n_blocks * block * size;
    let threads = if expected < PARALLEL_MIN {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(most.clamp(1, MOST_THREADS)))
    }
    .min(n_blocks.max(1));
    // Cut on whole blocks, as evenly as they go.
    let cuts: Vec<usize> = (0..=threads).map(|i| n_blocks * i / threads).collect();
    let mut parts = Vec::with_capacity(threads);
    let mut rest = out;
    for pair in cuts.windows(2) {
        let (part, after) = rest.split_at_mut((pair[1] - pair[0]) * block * size);
        parts.push(part);
        rest = after;
    }
    let convert = Convert::new(Descr::native(DType::F32), to)?;
    fan_out(&cuts, parts, |part, range| {
        let src = &blocks[range.start * bytes..range.end * bytes];
        fill(kernel, ggml, src, part, convert);
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|never| match never {});
    Ok(())
}

/// Checks a call: a type with a kernel, an output type it gives, whole
/// blocks, and an output of `out_len` bytes that holds exactly what they
/// give. The number of blocks.
fn check(ggml: GgmlType, blocks: &[u8], out_len: usize, to: Descr) -> Result<usize, Error> {
    let info = ggml.info();
    let (block, bytes) = (info.block as usize, info.bytes as usize);
    if dequantizer(ggml).is_none() {
        return Err(Error::Dequantize {
            detail: format!("{ggml} is not a quantised type bytelens dequantises"),
        });
    }
    check_dequantize_to(to)?;
    if !blocks.len().is_multiple_of(bytes) {
        return Err(Error::Dequantize {
            detail: format!(
                "{} bytes are not a whole number of {ggml} blocks of {bytes} bytes",
                blocks.len()
            ),
        });
    }
    let n_blocks = blocks.len() / bytes;
    let size = to.dtype.size();
    let expected = n_blocks * block * size;
    if out_len != expected {
        return Err(Error::SizeMismatch {
            expected,
            got: out_len,
        });
    }
    Ok(n_blocks)
}

/// Dequantises `src` into `out` (its exact size in the output type): in
/// place where `out` is float32 aligned for it, else through a scratch
/// block converted out.
fn fill(kernel: Kernel, ggml: GgmlType, src: &[u8], out: &mut [u8], convert: Convert) {
    let info = ggml.info();
    let (block, bytes) = (info.block as usize, info.bytes as usize);
    let direct = convert.is_identity();
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if direct && kernel == Kernel::Avx2 && out.len() >= STREAM_MIN {
        let per_chunk = STREAM_CHUNK / block;
        let mut scratch = vec![0f32; per_chunk * block];
        for (src, out) in src
            .chunks(per_chunk * bytes)
            .zip(out.chunks_mut(per_chunk * block * 4))
        {
            let floats = &mut scratch[..src.len() / bytes * block];
            kernel.run(ggml, src, floats);
            // SAFETY: `Avx2` is only made by `detect`, which found AVX2
            // (and so AVX and SSE2) on this CPU.
            unsafe { x86::stream(bytemuck::cast_slice(floats), out) };
        }
        // SAFETY: as above.
        unsafe { x86::fence() };
        return;
    }
    if direct && let Ok(floats) = bytemuck::try_cast_slice_mut::<u8, f32>(out) {
        kernel.run(ggml, src, floats);
        return;
    }
    let per_chunk = SCRATCH / block;
    let mut scratch = vec![0f32; per_chunk * block];
    let size = convert.to().dtype.size();
    for (src, out) in src
        .chunks(per_chunk * bytes)
        .zip(out.chunks_mut(per_chunk * block * size))
    {
        let n = src.len() / bytes * block;
        let floats = &mut scratch[..n];
        kernel.run(ggml, src, floats);
        convert.run(bytemuck::cast_slice(floats), out);
    }
}

/// Quantised blocks as a source of output elements in order, for a writer
/// that fills its output in pieces of its own choosing (the GPU upload's
/// staging slots and threads): any run of elements, whole blocks
/// dequantised straight into it, a block cut at either end of the run
/// through a scratch block.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dequantizer<'a> {
    ggml: GgmlType,
    blocks: &'a [u8],
    kernel: Kernel,
    convert: Convert,
}

#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
impl<'a> Dequantizer<'a> {
    /// `blocks` of `ggml` dequantised to `to`, checked as
    /// [`dequantize_into`] checks them.
    pub(crate) fn new(
        ggml: GgmlType,
        blocks: &'a [u8],
        to: Descr,
    ) -> Result<Dequantizer<'a>, Error> {
        let info = ggml.info();
        let n = blocks.len() / info.bytes as usize * info.block as usize;
        // The same checks as a whole call, on an output of the right size
        // that is never written: an empty slice for no blocks.
        check(ggml, blocks, n * to.dtype.size(), to)?;
        Ok(Dequantizer {
            ggml,
            blocks,
            kernel: Kernel::detect(),
            convert: Convert::new(Descr::native(DType::F32), to)?,
        })
    }

    /// Elements per block.
    pub(crate) fn block(&self) -> usize {
        self.ggml.info().block as usize
    }

    /// Bytes of one output element.
    pub(crate) fn out_itemsize(&self) -> usize {
        self.convert.to().dtype.size()
    }

    /// Bytes of the whole output.
    pub(crate) fn out_bytes(&self) -> usize {
        let info = self.ggml.info();
        self.blocks.len() / info.bytes as usize * info.block as usize * self.out_itemsize()
    }

    /// Fills `out` with output elements `first..`, as many as it holds.
    ///
    /// # Panics
    /// When `out` does not hold a whole number of elements, or more than
    /// the blocks hold from `first` on.
    pub(crate) fn fill(&self, first: usize, out: &mut [u8]) {
        let (block, bytes) = (self.block(), self.ggml.info().bytes as usize);
        let size = self.out_itemsize();
        let count = out.len() / size;
        assert!(out.len() == count * size && (first + count) * size <= self.out_bytes());
        let (mut at, mut out) = (first, out);
        while !out.is_empty() {
            let (b, skip) = (at / block, at % block);
            let available = out.len() / size;
            if skip == 0 && available >= block {
                // Whole blocks from here, as many as fit, straight in.
                let whole = available / block;
                let (part, rest) = std::mem::take(&mut out).split_at_mut(whole * block * size);
                let src = &self.blocks[b * bytes..(b + whole) * bytes];
                fill(self.kernel, self.ggml, src, part, self.convert);
                (at, out) = (at + whole * block, rest);
                continue;
            }
            // Part of a block: all of it into scratch, the part wanted out.
            let take = (block - skip).min(available);
            let (head, rest) = std::mem::take(&mut out).split_at_mut(take * size);
            let mut floats = [0f32; 256];
            let floats = &mut floats[..block];
            self.kernel
                .run(self.ggml, &self.blocks[b * bytes..(b + 1) * bytes], floats);
            let mut converted = [0u8; 1024];
            let converted = &mut converted[..block * size];
            self.convert.run(bytemuck::cast_slice(floats), converted);
            head.copy_from_slice(&converted[skip * size..(skip + take) * size]);
            (at, out) = (at + take, rest);
        }
    }

    /// Where `parts` threads' byte ranges of `range` of the output start,
    /// and where the last ends: on whole blocks, at multiples of `align`
    /// bytes; a range under `min_bytes` stays whole.
    pub(crate) fn cuts(
        &self,
        parts: usize,
        align: usize,
        min_bytes: usize,
        range: Range<usize>,
    ) -> Vec<usize> {
        let unit = lcm(self.block() * self.out_itemsize(), align);
        cuts_in_units(unit, self.out_bytes(), parts, min_bytes, range)
    }
}
