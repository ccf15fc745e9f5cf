//! Copying any checked view out in C order: the one gather/convert kernel
//! behind [`gather_into`], [`copy_into`], the GPU upload and Python's
//! `bytelens.ascontiguous`.
//!
//! A copy has two stages that never touch memory twice:
//!
//! - the walk ([`walk`]) reads the view's elements in C order, whatever its
//!   strides: contiguous rows as block copies, transposed axes in register
//!   tiles, anything else element by element;
//! - the conversion ([`convert`]) turns a run of elements into another byte
//!   order or dtype (numpy's `same_kind` casting).
//!
//! When the copy converts, the walk fills a block small enough to stay in
//! cache and the conversion writes it out; otherwise the walk writes the
//! destination directly.

mod convert;
mod dequant;
mod tile;
mod walk;

use bytelens_core::{Descr, Layout};

use crate::LayoutError;

pub use convert::can_cast;
pub use convert::is_copy;
#[cfg_attr(not(feature = "gpu"), allow(unused_imports))]
pub(crate) use dequant::Dequantizer;
pub use dequant::{can_dequantize, check_dequantize_to, dequantize_into, dequantize_into_threads};
pub(crate) use walk::Copier;

use crate::Error;

/// Copies the elements of the view `layout` over `bytes` into `out`, in C
/// order (the last index varying fastest): the bytes of
/// `np.ascontiguousarray(view)`.
///
/// The layout is checked against `bytes` first; `out` must be exactly
/// `layout.nbytes()` long.
///
/// # Examples
/// ```
/// use bytelens::{DType, Layout, gather_into};
/// // A 2×3 uint16 matrix, transposed: the 3×2 result reads down the columns.
/// let bytes: Vec<u8> = [1u16, 2, 3, 4, 5, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let t = Layout::contiguous(DType::U16, &[2, 3])?.transpose();
/// let mut out = [0u8; 12];
/// gather_into(&bytes, &t, &mut out)?;
/// let values: Vec<u16> = out.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
/// assert_eq!(values, [1, 4, 2, 5, 3, 6]);
/// # Ok::<(), bytelens::Error>(())
/// ```
pub fn gather_into(bytes: &[u8], layout: &Layout, out: &mut [u8]) -> Result<(), Error> {
    copy_into(bytes, layout, out, layout.descr())
}

/// Copies the view `layout` over `bytes` into `out` in C order, converted
/// to `to` on the way: the bytes of
/// `np.ascontiguousarray(view).astype(to)`. Byte order, float16, bfloat16,
/// float32, float64 and the integer types convert as numpy's `same_kind`
/// casting allows ([`can_cast`]); anything else is `Error::Cast`.
///
/// The layout is checked against `bytes` first; `out` must hold exactly
/// `layout.size()` elements of `to`.
///
/// A transposing copy of 8 MiB or more is split on whole rows between up
/// to four threads (as many as there are CPUs): on the 2-core machine this
/// was tuned on, a transposed 8192² float32 copy went from 3.5–4.7 GB/s on
/// one thread to 5.1–6.5 on two, float64 from 3.1 to 5.1. Block copies,
/// byte swaps, conversions and reversed runs already run at memory speed
/// on one thread (two measured no faster) and stay on the calling thread.
///
/// # Examples
/// ```
/// use bytelens::{Descr, DType, Layout, copy_into};
/// // Big-endian float64 to native float32, transposed on the way.
/// let bytes: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_be_bytes()).collect();
/// let t = Layout::contiguous(DType::F64, &[2, 2])?.with_byte_order(bytelens::ByteOrder::Big).transpose();
/// let mut out = [0u8; 16];
/// copy_into(&bytes, &t, &mut out, Descr::native(DType::F32))?;
/// let values: Vec<f32> = out.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
/// assert_eq!(values, [1.0, 3.0, 2.0, 4.0]);
/// # Ok::<(), bytelens::Error>(())
/// ```
pub fn copy_into(bytes: &[u8], layout: &Layout, out: &mut [u8], to: Descr) -> Result<(), Error> {
    let copier = Copier::new(bytes, layout, to)?;
    let expected = copier.out_bytes();
    if out.len() != expected {
        return Err(Error::SizeMismatch {
            expected,
            got: out.len(),
        });
    }
    let threads = threads_for(&copier);
    if threads < 2 {
        copier.fill(0, out);
        return Ok(());
    }
    let size = copier.out_itemsize();
    let cuts = copier.cuts(threads, size, 0, 0..expected);
    let mut parts = Vec::with_capacity(threads);
    let mut rest = out;
    for pair in cuts.windows(2) {
        let (part, after) = rest.split_at_mut(pair[1] - pair[0]);
        parts.push(part);
        rest = after;
    }
    fan_out(&cuts, parts, |part, range| {
        copier.fill(range.start / size, part);
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|never| match never {});
    Ok(())
}

/// Runs `work` once for each consecutive range of `cuts` (`cuts[i]` to
/// `cuts[i + 1]`), each with the next of `states`: on the calling thread when there
/// is one range, else on a scoped thread per range. The first error is
/// returned (after every thread ended); a panic in a thread is resumed here.
///
/// The one fan-out of the crate: [`copy_into`]'s parts and the GPU
/// uploads' (one staging ring per thread, or one range of a mapping).
pub(crate) fn fan_out<S, E, I>(
    cuts: &[usize],
    states: I,
    work: impl Fn(S, std::ops::Range<usize>) -> Result<(), E> + Sync,
) -> Result<(), E>
where
    I: IntoIterator<Item = S>,
    S: Send,
    E: Send,
{
    let mut ranges = cuts.windows(2).map(|pair| pair[0]..pair[1]).zip(states);
    if cuts.len() <= 2 {
        return ranges
            .next()
            .map_or(Ok(()), |(range, state)| work(state, range));
    }
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> = ranges
            .map(|(range, state)| scope.spawn(move || work(state, range)))
            .collect();
        // Join every thread before returning, whichever failed first.
        let results: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        results.into_iter().collect()
    })
}

/// The C-contiguous layout of the result of copying `layout` converted to
/// `to`: its shape, `to`'s dtype and byte order.
pub fn converted_layout(layout: &Layout, to: Descr) -> Result<Layout, LayoutError> {
    Ok(Layout::contiguous(to.dtype, layout.shape())?.with_byte_order(to.order))
}

/// Copies smaller than this stay on one thread (a transposing copy here, a
/// GPU upload in `gpu`, a dequantisation in the Python package).
pub const PARALLEL_MIN: usize = 8 << 20;
/// The most threads one copy takes.
pub(crate) const MOST_THREADS: usize = 4;

/// Whether [`copy_into`] would split this copy between threads (false for
/// a copy it would refuse).
pub fn is_parallel(bytes: &[u8], layout: &Layout, to: Descr) -> bool {
    Copier::new(bytes, layout, to).is_ok_and(|copier| threads_for(&copier) > 1)
}

/// How many threads fill a copy: see [`copy_into`].
fn threads_for(copier: &Copier<'_>) -> usize {
    if copier.out_bytes() < PARALLEL_MIN || !copier.is_transposed() {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MOST_THREADS))
}
