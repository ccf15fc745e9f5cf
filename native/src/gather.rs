//! Copying a checked view out in C order, in one pass over the source.
//!
//! The GPU upload streams a view's elements into mapped staging memory; the
//! same walk copies a view into any byte slice ([`gather_into`]). The walk
//! first merges axes that are contiguous with each other (as numpy does
//! before iterating), then takes the fastest of three paths:
//!
//! - rows whose elements are adjacent: each row is one slice, handed on
//!   without an intermediate copy when it is long;
//! - a transposed view (the second-to-last merged axis has the element size
//!   as its stride): blocks of rows are gathered together, so every source
//!   cache line read fills several output rows (a blocked transpose);
//! - anything else: element by element, specialised by element size.
//!
//! Pieces that are not handed on directly are collected in a scratch block
//! small enough to stay in cache, so the output is written sequentially,
//! which is what write-combined GPU staging memory wants.

use bytelens_core::{Layout, MAX_NDIM};

use crate::Error;

/// Bytes collected before a piece is handed on; also the size of a block of
/// transposed rows. Small enough for L2, large enough to amortise the hand-off.
const SCRATCH: usize = 256 * 1024;
/// Rows shorter than this are collected in scratch rather than handed on alone.
const DIRECT_ROW: usize = 4096;
/// Most rows gathered together in a transposed block (64 × 8-byte elements
/// reads 512 contiguous source bytes per output column).
const MAX_BLOCK_ROWS: usize = 64;

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
    layout.check(bytes.len())?;
    if out.len() != layout.nbytes() {
        return Err(Error::SizeMismatch {
            expected: layout.nbytes(),
            got: out.len(),
        });
    }
    let mut at = 0;
    let mut scratch = Vec::new();
    for_each_piece::<core::convert::Infallible>(bytes, layout, &mut scratch, &mut |piece| {
        out[at..at + piece.len()].copy_from_slice(piece);
        at += piece.len();
        Ok(())
    })
    .unwrap_or_else(|never| match never {});
    debug_assert_eq!(at, out.len());
    Ok(())
}

/// One axis after merging: its length and its stride in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    len: usize,
    stride: isize,
}

/// The view's axes with length-1 axes dropped and neighbours that step
/// through memory as one axis merged. Empty for a single element.
fn merged_axes(layout: &Layout) -> ([Axis; MAX_NDIM], usize) {
    let mut axes = [Axis { len: 1, stride: 0 }; MAX_NDIM];
    let mut n = 0;
    for (&len, &stride) in layout.shape().iter().zip(layout.strides()) {
        if len == 1 {
            continue;
        }
        if n > 0 {
            let last = &mut axes[n - 1];
            // `last` steps over exactly `len` of the new axis's steps.
            if last.stride == stride * len as isize {
                last.len *= len;
                last.stride = stride;
                continue;
            }
        }
        axes[n] = Axis { len, stride };
        n += 1;
    }
    (axes, n)
}

/// Hands the view's bytes, in C order, to `emit` in pieces (each non-empty,
/// together exactly `layout.nbytes()` bytes). `layout` must have been checked
/// against `bytes`; `scratch` is reused between calls.
pub(crate) fn for_each_piece<E>(
    bytes: &[u8],
    layout: &Layout,
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    if layout.size() == 0 {
        return Ok(());
    }
    let itemsize = layout.dtype().size();
    let base = layout.offset() as usize;
    let (axes, n) = merged_axes(layout);
    let axes = &axes[..n];
    let Some((last, outer)) = axes.split_last() else {
        return emit(&bytes[base..base + itemsize]);
    };
    if last.stride == itemsize as isize {
        return rows(bytes, base, outer, last.len * itemsize, scratch, emit);
    }
    if let Some((across, outer)) = outer.split_last()
        && across.stride.unsigned_abs() == itemsize
    {
        return match itemsize {
            1 => blocks::<1, E>(bytes, base, outer, *across, *last, scratch, emit),
            2 => blocks::<2, E>(bytes, base, outer, *across, *last, scratch, emit),
            4 => blocks::<4, E>(bytes, base, outer, *across, *last, scratch, emit),
            _ => blocks::<8, E>(bytes, base, outer, *across, *last, scratch, emit),
        };
    }
    match itemsize {
        1 => elements::<1, E>(bytes, base, axes, scratch, emit),
        2 => elements::<2, E>(bytes, base, axes, scratch, emit),
        4 => elements::<4, E>(bytes, base, axes, scratch, emit),
        _ => elements::<8, E>(bytes, base, axes, scratch, emit),
    }
}

/// Calls `f` with the byte offset (from `base`) of every index of `axes`, in
/// C order. With no axes, `f` is called once with `base`.
fn odometer<E>(
    base: usize,
    axes: &[Axis],
    f: &mut dyn FnMut(usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut index = [0usize; MAX_NDIM];
    let mut at = base as isize;
    loop {
        f(at as usize)?;
        let mut axis = axes.len();
        loop {
            if axis == 0 {
                return Ok(());
            }
            axis -= 1;
            if index[axis] + 1 < axes[axis].len {
                index[axis] += 1;
                at += axes[axis].stride;
                break;
            }
            at -= axes[axis].stride * index[axis] as isize;
            index[axis] = 0;
        }
    }
}

/// Contiguous rows of `row_bytes`, one per index of `outer`.
fn rows<E>(
    bytes: &[u8],
    base: usize,
    outer: &[Axis],
    row_bytes: usize,
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    if row_bytes >= DIRECT_ROW {
        return odometer(base, outer, &mut |at| emit(&bytes[at..at + row_bytes]));
    }
    scratch.clear();
    odometer(base, outer, &mut |at| {
        if scratch.len() + row_bytes > SCRATCH {
            emit(scratch)?;
            scratch.clear();
        }
        scratch.extend_from_slice(&bytes[at..at + row_bytes]);
        Ok(())
    })?;
    emit(scratch)
}

/// A transposed view: for every index of `outer`, `across.len` output rows
/// of `last.len` elements each, where consecutive rows start `N` bytes apart
/// (or `-N`). Rows are gathered in blocks so one pass over a source line
/// serves a block of rows.
fn blocks<const N: usize, E>(
    bytes: &[u8],
    base: usize,
    outer: &[Axis],
    across: Axis,
    last: Axis,
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let row_bytes = last.len * N;
    let block_rows = (SCRATCH / row_bytes).clamp(1, MAX_BLOCK_ROWS);
    scratch.clear();
    scratch.resize(block_rows * row_bytes, 0);
    odometer(base, outer, &mut |start| {
        let mut row = 0;
        while row < across.len {
            let rows_here = block_rows.min(across.len - row);
            let block = &mut scratch[..rows_here * row_bytes];
            // The block's rows start at these source offsets; the lowest
            // address among them is where each column's run begins.
            let first = start as isize + across.stride * row as isize;
            let lowest = if across.stride > 0 {
                first
            } else {
                first + across.stride * (rows_here as isize - 1)
            } as usize;
            for j in 0..last.len {
                let column = lowest as isize + last.stride * j as isize;
                let run = &bytes[column as usize..column as usize + rows_here * N];
                for (k, element) in run.chunks_exact(N).enumerate() {
                    // Element k of the run belongs to row k (or, for a
                    // negative stride, to row rows_here - 1 - k).
                    let r = if across.stride > 0 {
                        k
                    } else {
                        rows_here - 1 - k
                    };
                    let at = r * row_bytes + j * N;
                    block[at..at + N].copy_from_slice(element);
                }
            }
            emit(block)?;
            row += rows_here;
        }
        Ok(())
    })
}

/// Any other view, one `N`-byte element at a time.
fn elements<const N: usize, E>(
    bytes: &[u8],
    base: usize,
    axes: &[Axis],
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let (last, outer) = axes.split_last().expect("a view with at least one axis");
    scratch.clear();
    odometer(base, outer, &mut |start| {
        for j in 0..last.len {
            if scratch.len() + N > SCRATCH {
                emit(scratch)?;
                scratch.clear();
            }
            let at = (start as isize + last.stride * j as isize) as usize;
            scratch.extend_from_slice(&bytes[at..at + N]);
        }
        Ok(())
    })?;
    emit(scratch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytelens_core::DType;

    /// The plain walk: every element offset from the core, in C order.
    fn reference(bytes: &[u8], layout: &Layout) -> Vec<u8> {
        let n = layout.dtype().size();
        layout
            .offsets(bytes.len())
            .unwrap()
            .flat_map(|at| bytes[at..at + n].to_vec())
            .collect()
    }

    fn check(bytes: &[u8], layout: &Layout) {
        let mut out = vec![0xAA; layout.nbytes()];
        gather_into(bytes, layout, &mut out).unwrap();
        assert_eq!(out, reference(bytes, layout), "{layout:?}");
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn merges_only_axes_that_step_as_one() {
        let l = Layout::contiguous(DType::I32, &[2, 1, 3, 4]).unwrap();
        let (axes, n) = merged_axes(&l);
        assert_eq!(&axes[..n], [Axis { len: 24, stride: 4 }]);
        let t = l.transpose();
        let (axes, n) = merged_axes(&t);
        assert_eq!(
            &axes[..n],
            [
                Axis { len: 4, stride: 4 },
                Axis { len: 3, stride: 16 },
                Axis { len: 2, stride: 48 }
            ]
        );
    }

    #[test]
    fn every_path_matches_the_plain_walk() {
        let bytes = pattern(4096);
        for dtype in [DType::U8, DType::I16, DType::F32, DType::F64] {
            let n = dtype.size();
            let cases = [
                Layout::contiguous(dtype, &[64 / n * 4]).unwrap(),
                Layout::contiguous(dtype, &[3, 5]).unwrap().transpose(),
                Layout::contiguous(dtype, &[2, 3, 4])
                    .unwrap()
                    .permute(&[2, 0, 1])
                    .unwrap(),
                Layout::contiguous(dtype, &[2, 3, 4])
                    .unwrap()
                    .permute(&[0, 2, 1])
                    .unwrap(),
                Layout::contiguous(dtype, &[7, 9])
                    .unwrap()
                    .slice(1, Some(1), None, 2)
                    .unwrap(),
                Layout::contiguous(dtype, &[7, 9])
                    .unwrap()
                    .slice(0, None, None, -1)
                    .unwrap()
                    .transpose(),
                Layout::contiguous(dtype, &[6, 5])
                    .unwrap()
                    .slice(1, None, None, -1)
                    .unwrap(),
                Layout::contiguous(dtype, &[7, 9])
                    .unwrap()
                    .slice(1, None, None, -1)
                    .unwrap()
                    .transpose(),
                Layout::contiguous(dtype, &[1]).unwrap(),
                Layout::contiguous(dtype, &[0, 3]).unwrap(),
                Layout::contiguous(dtype, &[])
                    .unwrap()
                    .broadcast_to(&[3, 2])
                    .unwrap(),
            ];
            for layout in cases {
                check(&bytes, &layout);
            }
        }
    }

    #[test]
    fn blocks_and_scratch_flushes_cross_their_boundaries() {
        // 130 transposed rows do not divide into blocks of 64; 300-byte rows
        // fill the scratch block unevenly; a long strided run overflows it.
        let bytes = pattern(if cfg!(miri) { 40_000 } else { 600_000 });
        let t = Layout::contiguous(DType::U16, &[75, 130])
            .unwrap()
            .transpose();
        check(&bytes, &t);
        let r = Layout::contiguous(DType::U8, &[1000, 300])
            .unwrap()
            .slice(1, None, Some(299), 1)
            .unwrap();
        check(
            &bytes[..if cfg!(miri) { 30_000 } else { 300_000 }],
            &r.slice(0, None, Some(if cfg!(miri) { 100 } else { 1000 }), 1)
                .unwrap(),
        );
        let s = Layout::new(DType::U16, 0, &[bytes.len() / 4], &[4]).unwrap();
        check(&bytes, &s);
    }

    #[test]
    fn wrong_sizes_and_bad_layouts_are_errors() {
        let bytes = pattern(16);
        let l = Layout::contiguous(DType::I32, &[4]).unwrap();
        let mut short = [0u8; 15];
        assert_eq!(
            gather_into(&bytes, &l, &mut short),
            Err(Error::SizeMismatch {
                expected: 16,
                got: 15
            })
        );
        let mut out = [0u8; 16];
        assert!(matches!(
            gather_into(&bytes[..12], &l, &mut out),
            Err(Error::Layout(e)) if e.is_bounds()
        ));
    }
}
