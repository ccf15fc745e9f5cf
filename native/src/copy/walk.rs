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

use bytelens_core::{DType, Descr, Layout, MAX_NDIM, Offsets};

use super::convert::Convert;
use crate::Error;

/// Bytes collected before a piece is handed on (rows and single elements).
/// Small enough for L2, large enough to amortise the hand-off.
const SCRATCH: usize = 256 * 1024;
/// Rows shorter than this are collected in scratch rather than handed on alone.
const DIRECT_ROW: usize = 4096;
/// Bytes of a block of transposed rows (gathered together, then handed on).
const BLOCK: usize = 2 << 20;
/// Most rows in a transposed block (64 rows: 8 tiles down).
const BLOCK_ROWS: usize = 64;

/// A checked view ready to be copied out in C order, converted to the
/// destination's element.
pub(crate) struct Copier<'a> {
    bytes: &'a [u8],
    layout: Layout,
    convert: Convert,
}

impl<'a> Copier<'a> {
    /// Checks `layout` against `bytes` and the conversion to `to`.
    pub(crate) fn new(bytes: &'a [u8], layout: &Layout, to: Descr) -> Result<Copier<'a>, Error> {
        layout.check(bytes.len())?;
        let convert = Convert::new(layout.descr(), to)?;
        Ok(Copier {
            bytes,
            layout: *layout,
            convert,
        })
    }

    /// Bytes of the whole copy.
    pub(crate) fn out_bytes(&self) -> usize {
        self.layout.size() * self.convert.to().dtype.size()
    }

    /// Fills `out` with the C-order elements starting at element `first`.
    pub(crate) fn fill(&self, first: usize, out: &mut [u8]) {
        assert_eq!(first, 0, "TEMPORARY: ranges come with the new walk");
        let (a, b) = (
            self.convert.from().dtype.size(),
            self.convert.to().dtype.size(),
        );
        let mut at = 0;
        let mut scratch = Vec::new();
        for_each_piece::<core::convert::Infallible>(
            self.bytes,
            &self.layout,
            &mut scratch,
            &mut |piece| {
                let n = piece.len() / a * b;
                self.convert.run(piece, &mut out[at..at + n]);
                at += n;
                Ok(())
            },
        )
        .unwrap_or_else(|never| match never {});
    }
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

/// The byte offset of every index of `axes` from `base`, in C order (just
/// `base` when there are no axes): the core's own walk, over the axes as
/// bytes. The axes are those of a view checked against `bytes`.
fn starts(bytes: &[u8], base: usize, axes: &[Axis]) -> Offsets {
    let mut shape = [0; MAX_NDIM];
    let mut strides = [0; MAX_NDIM];
    for (k, axis) in axes.iter().enumerate() {
        shape[k] = axis.len;
        strides[k] = axis.stride;
    }
    let n = axes.len();
    Layout::new(DType::U8, base, &shape[..n], &strides[..n])
        .and_then(|layout| layout.offsets(bytes.len()))
        .expect("the axes of a checked view stay within its bytes")
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
        for at in starts(bytes, base, outer) {
            emit(&bytes[at..at + row_bytes])?;
        }
        return Ok(());
    }
    scratch.clear();
    for at in starts(bytes, base, outer) {
        if scratch.len() + row_bytes > SCRATCH {
            emit(scratch)?;
            scratch.clear();
        }
        scratch.extend_from_slice(&bytes[at..at + row_bytes]);
    }
    emit(scratch)
}

/// A transposed view: for every index of `outer`, `across.len` output rows
/// of `last.len` elements each, where consecutive rows start `N` bytes apart
/// (or `-N`). A block of output rows is filled in 8×8 tiles: eight source
/// runs of eight adjacent elements are read, and written out as the
/// eight rows' next eight elements. The transpose is bound by memory
/// latency, not arithmetic, so what matters is touching each source and
/// scratch line as few times as possible.
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
    let block_rows = (BLOCK / row_bytes).clamp(1, BLOCK_ROWS).min(across.len);
    // Long rows are kept a cache line more than a multiple of 64 bytes apart
    // in scratch: rows a power of two apart would all fall into the same
    // cache sets, and writing to all of them at once would thrash L1 and
    // L2. Such rows are handed on one by one; short rows as a block.
    let pitch = if row_bytes >= DIRECT_ROW {
        row_bytes.next_multiple_of(64) + 64
    } else {
        row_bytes
    };
    scratch.clear();
    scratch.resize(block_rows * pitch, 0);
    for start in starts(bytes, base, outer) {
        let mut row = 0;
        while row < across.len {
            let rows_here = block_rows.min(across.len - row);
            let block = &mut scratch[..rows_here * pitch];
            // Source offset of (row r of the block, element j).
            let first = start as isize + across.stride * row as isize;
            let at = |r: usize, j: usize| {
                (first + across.stride * r as isize + last.stride * j as isize) as usize
            };
            for j0 in (0..last.len).step_by(8) {
                let cols = 8.min(last.len - j0);
                for r0 in (0..rows_here).step_by(8) {
                    if cols == 8 && rows_here - r0 >= 8 {
                        tile::<N>(
                            bytes,
                            at(r0, j0),
                            across.stride,
                            last.stride,
                            block,
                            r0 * pitch + j0 * N,
                            pitch,
                        );
                    } else {
                        for r in r0..rows_here.min(r0 + 8) {
                            for j in j0..j0 + cols {
                                let from = at(r, j);
                                block[r * pitch + j * N..][..N]
                                    .copy_from_slice(&bytes[from..from + N]);
                            }
                        }
                    }
                }
            }
            if pitch == row_bytes {
                emit(block)?;
            } else {
                for r in 0..rows_here {
                    emit(&block[r * pitch..r * pitch + row_bytes])?;
                }
            }
            row += rows_here;
        }
    }
    Ok(())
}

/// One 8×8 tile: output row `r` (at `out + r * pitch`) gets the eight
/// elements at `from + r * across + j * step`, j = 0..8, where `across` is
/// `N` or `-N`, so each column j of the tile is one contiguous 8-element run.
#[inline(always)]
fn tile<const N: usize>(
    bytes: &[u8],
    from: usize,
    across: isize,
    step: isize,
    block: &mut [u8],
    out: usize,
    pitch: usize,
) {
    let mut m = [[[0u8; N]; 8]; 8];
    for (j, column) in m.iter_mut().enumerate() {
        let start = from as isize + step * j as isize;
        let lowest = if across > 0 {
            start
        } else {
            start - 7 * N as isize
        } as usize;
        let run = &bytes[lowest..lowest + 8 * N];
        for (k, cell) in column.iter_mut().enumerate() {
            let k = if across > 0 { k } else { 7 - k };
            cell.copy_from_slice(&run[k * N..k * N + N]);
        }
    }
    for r in 0..8 {
        let dst = &mut block[out + r * pitch..out + r * pitch + 8 * N];
        for (j, cell) in dst.chunks_exact_mut(N).enumerate() {
            cell.copy_from_slice(&m[j][r]);
        }
    }
}

/// Any other view, one `N`-byte element at a time, into a scratch block
/// that is handed on when full. A reversed run (stride `-N`) is read as one
/// contiguous slice backwards.
fn elements<const N: usize, E>(
    bytes: &[u8],
    base: usize,
    axes: &[Axis],
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let (last, outer) = axes.split_last().expect("a view with at least one axis");
    // Small views need only their own size of scratch.
    let elements = axes.iter().map(|axis| axis.len).product::<usize>();
    let capacity = (SCRATCH / N).min(elements);
    scratch.clear();
    scratch.resize(capacity * N, 0);
    let mut filled = 0;
    for start in starts(bytes, base, outer) {
        let mut j = 0;
        while j < last.len {
            if filled == capacity {
                emit(scratch)?;
                filled = 0;
            }
            let count = (last.len - j).min(capacity - filled);
            let dst = scratch[filled * N..(filled + count) * N].chunks_exact_mut(N);
            let first = start as isize + last.stride * j as isize;
            if last.stride == -(N as isize) {
                let lowest = (first - (count as isize - 1) * N as isize) as usize;
                let run = bytes[lowest..lowest + count * N].chunks_exact(N).rev();
                for (cell, element) in dst.zip(run) {
                    cell.copy_from_slice(element);
                }
            } else {
                for (k, cell) in dst.enumerate() {
                    let at = (first + last.stride * k as isize) as usize;
                    cell.copy_from_slice(&bytes[at..at + N]);
                }
            }
            filled += count;
            j += count;
        }
    }
    if filled > 0 {
        emit(&scratch[..filled * N])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather_into;
    use bytelens_core::DType;

    /// The plain walk: every element offset from the core, in C order.
    fn reference(bytes: &[u8], layout: &Layout) -> Vec<u8> {
        let n = layout.dtype().size();
        let mut out = Vec::with_capacity(layout.nbytes());
        for at in layout.offsets(bytes.len()).unwrap() {
            out.extend_from_slice(&bytes[at..at + n]);
        }
        out
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
        // Natively, views larger than the scratch block (so it fills and is
        // handed on mid-view): 130 transposed rows do not divide into blocks
        // of 64; 299-byte rows fill the block unevenly; a long strided run
        // overflows it. Under Miri, smaller shapes with the same ragged
        // tiles, in a time Miri can afford.
        let big = !cfg!(miri);
        let bytes = pattern(if big { 600_000 } else { 12_000 });
        let shape: &[usize] = if big { &[75, 130] } else { &[20, 27] };
        let t = Layout::contiguous(DType::U16, shape).unwrap().transpose();
        check(&bytes, &t);
        // Full 8×8 tiles with rows running backwards, and ragged edges.
        for dtype in [DType::U8, DType::I16, DType::F32, DType::F64] {
            let r = Layout::contiguous(dtype, &[43, 26])
                .unwrap()
                .slice(1, None, None, -1)
                .unwrap()
                .transpose();
            check(&bytes, &r);
            check(&bytes, &r.slice(0, None, None, -1).unwrap());
        }
        let rows = if big { 1000 } else { 20 };
        let r = Layout::contiguous(DType::U8, &[rows, 300])
            .unwrap()
            .slice(1, None, Some(299), 1)
            .unwrap();
        check(&bytes, &r);
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
