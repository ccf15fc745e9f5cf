//! The walk: a checked view's elements in C order, written into a
//! destination (or into a block the conversion then writes out), for any
//! range of elements, so that the GPU upload fills each staging chunk in
//! place and several threads can fill parts of one destination.
//!
//! The walk first merges axes that are contiguous with each other (as numpy
//! does before iterating) and drops axes of length 1, then copies output
//! rows (the last merged axis) in one of three ways:
//!
//! - rows whose elements are adjacent: each row is one block copy;
//! - a transposed view (the second-to-last merged axis steps by one
//!   element, forwards or backwards): blocks of rows are filled in square
//!   tiles transposed in registers ([`tile`](super::tile)), in an order
//!   that consumes every source cache line it loads and completes every
//!   destination line before moving on;
//! - anything else: element by element, specialised by element size, with
//!   reversed runs read as one slice backwards and broadcast runs filled.

use std::ops::Range;

use bytelens_core::{Descr, Layout, MAX_NDIM};

use super::convert::Convert;
use super::tile::{Grid, Tile};
use crate::Error;

/// Bytes of source elements gathered into a block before the conversion
/// writes them out: small enough to stay in L2 with the source lines.
const CONVERT_BLOCK: usize = 64 * 1024;
/// Bytes of the source lines a tile group consumes whole.
const LINE: usize = 64;
/// Bytes along each side of a block of tiles (rows × columns of output):
/// for 8192² float32 on this machine, blocks of 256, 512 and 1024 bytes
/// moved 4.2, 4.8 and 4.7 GB/s (a standalone experiment, quiet machine).
const BLOCK_BYTES: usize = 512;

/// One axis after merging: its length and its stride in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    len: usize,
    stride: isize,
}

/// A checked view ready to be copied out in C order, converted to the
/// destination's element.
pub(crate) struct Copier<'a> {
    bytes: &'a [u8],
    base: usize,
    axes: [Axis; MAX_NDIM],
    ndim: usize,
    elements: usize,
    itemsize: usize,
    convert: Convert,
    tile: Tile,
}

impl<'a> Copier<'a> {
    /// Checks `layout` against `bytes` and the conversion to `to`.
    pub(crate) fn new(bytes: &'a [u8], layout: &Layout, to: Descr) -> Result<Copier<'a>, Error> {
        layout.check(bytes.len())?;
        let convert = Convert::new(layout.descr(), to)?;
        let (axes, ndim) = merged_axes(layout);
        let itemsize = convert.from().dtype.size();
        Ok(Copier {
            bytes,
            base: layout.offset() as usize,
            axes,
            ndim,
            elements: layout.size(),
            itemsize,
            convert,
            tile: Tile::for_itemsize(itemsize),
        })
    }

    /// The same copy with the portable tile kernel (the reference the
    /// SIMD kernels are tested against).
    #[cfg(test)]
    fn portable(mut self) -> Self {
        self.tile = Tile::portable(self.itemsize);
        self
    }

    /// Elements in each output row (the last merged axis; 1 for a single
    /// element).
    pub(crate) fn row_len(&self) -> usize {
        self.ndim
            .checked_sub(1)
            .map_or(1, |last| self.axes[last].len)
    }

    /// Whether the copy is one unconverted run of adjacent elements: a
    /// memcpy, which needs fewer threads to reach memory bandwidth.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn is_block_copy(&self) -> bool {
        self.contiguous(0, self.elements).is_some()
    }

    /// The source bytes of elements `first..first + count` when the copy
    /// is a block copy (see [`is_block_copy`](Self::is_block_copy)).
    pub(crate) fn contiguous(&self, first: usize, count: usize) -> Option<&'a [u8]> {
        self.convert
            .is_identity()
            .then(|| self.one_run(first, count))
            .flatten()
    }

    /// The source bytes of elements `first..first + count` when the view
    /// is one run of adjacent elements (converted or not).
    fn one_run(&self, first: usize, count: usize) -> Option<&'a [u8]> {
        let one_run = match self.axes[..self.ndim] {
            [] => true,
            [Axis { stride, .. }] => stride == self.itemsize as isize,
            _ => false,
        };
        if !one_run || first + count > self.elements {
            return None;
        }
        let at = self.base + first * self.itemsize;
        Some(&self.bytes[at..at + count * self.itemsize])
    }

    /// Whether the walk moves register tiles: the last two merged axes are
    /// transposed (see [`transposed`](Self::transposed)).
    pub(crate) fn is_transposed(&self) -> bool {
        let n = self.itemsize as isize;
        match self.axes[..self.ndim] {
            [.., across, last] => {
                last.stride != n && last.len > 1 && across.stride.unsigned_abs() == self.itemsize
            }
            _ => false,
        }
    }

    /// Where `parts` threads' byte ranges of `range` of the destination
    /// start, and where the last ends: cuts fall on whole elements, on
    /// multiples of `align` bytes and, where rows are short enough, on whole
    /// rows (so transposed tiles stay whole). Ranges with less than
    /// `min_bytes` of the copy stay whole.
    pub(crate) fn cuts(
        &self,
        parts: usize,
        align: usize,
        min_bytes: usize,
        range: Range<usize>,
    ) -> Vec<usize> {
        let total = self.out_bytes();
        let size = self.out_itemsize();
        let mut unit = lcm(size, align);
        let row = self.row_len() * size;
        if row > 0 && row * parts * 4 <= total {
            unit = lcm(unit, row);
        }
        cuts_in_units(unit, total, parts, min_bytes, range)
    }

    /// Bytes of one destination element.
    pub(crate) fn out_itemsize(&self) -> usize {
        self.convert.to().dtype.size()
    }

    /// Bytes of the whole copy.
    pub(crate) fn out_bytes(&self) -> usize {
        self.elements * self.out_itemsize()
    }

    /// Fills `out` with the converted C-order elements `first..`, as many as
    /// `out` holds.
    ///
    /// # Panics
    /// When `out` does not hold a whole number of elements, or more than
    /// the view has from `first` on.
    pub(crate) fn fill(&self, first: usize, out: &mut [u8]) {
        let size = self.out_itemsize();
        let count = out.len() / size;
        assert!(out.len() == count * size && first + count <= self.elements);
        if count == 0 {
            return;
        }
        if self.convert.is_identity() {
            return self.gather(first, count, out);
        }
        let n = self.itemsize;
        // A view that is one contiguous run converts straight from its bytes.
        if let Some(src) = self.one_run(first, count) {
            return self.convert.run(src, out);
        }
        // Whole rows per block where they fit, so that tiles stay whole.
        let row = self.row_len();
        let per_block = (CONVERT_BLOCK / n).max(1);
        let per_block = if row <= per_block {
            per_block / row * row
        } else {
            per_block
        };
        let mut block = vec![0u8; per_block.min(count) * n];
        let mut done = 0;
        while done < count {
            let k = per_block.min(count - done);
            let src = &mut block[..k * n];
            self.gather(first + done, k, src);
            self.convert
                .run(src, &mut out[done * size..(done + k) * size]);
            done += k;
        }
    }

    /// Copies the `count` C-order elements from `first` on, unconverted,
    /// into `out` (`count` source elements).
    fn gather(&self, first: usize, count: usize, out: &mut [u8]) {
        let n = self.itemsize;
        let Some((last, outer)) = self.axes[..self.ndim].split_last() else {
            out.copy_from_slice(&self.bytes[self.base..self.base + n]);
            return;
        };
        let len = last.len;
        let mut rows = Rows::at(self.base, outer, first / len);
        let mut done = 0;
        let head = first % len;
        if head != 0 {
            let k = (len - head).min(count);
            self.run(rows.at, *last, head, &mut out[..k * n]);
            done += k;
            rows.advance(1);
        }
        let whole = (count - done) / len;
        if whole > 0 {
            self.rows(
                &mut rows,
                *last,
                whole,
                &mut out[done * n..(done + whole * len) * n],
            );
            done += whole * len;
        }
        if done < count {
            self.run(rows.at, *last, 0, &mut out[done * n..count * n]);
        }
    }

    /// `count` whole rows from `rows` on (advancing it), into `out`.
    fn rows(&self, rows: &mut Rows, last: Axis, count: usize, out: &mut [u8]) {
        let n = self.itemsize;
        let row_bytes = last.len * n;
        let across = rows.axes.last().copied();
        let transposed = self.is_transposed();
        let mut done = 0;
        while done < count {
            if let (true, Some(across)) = (transposed, across) {
                // A run of rows within one index of the outer axes.
                let r = rows.index_of_last();
                let k = (across.len - r).min(count - done);
                let dst = &mut out[done * row_bytes..(done + k) * row_bytes];
                self.transposed(rows.at, across.stride, last, k, dst);
                rows.advance(k);
                done += k;
            } else {
                self.run(
                    rows.at,
                    last,
                    0,
                    &mut out[done * row_bytes..(done + 1) * row_bytes],
                );
                rows.advance(1);
                done += 1;
            }
        }
    }

    /// Elements `from..` of the row starting at byte `at` along `last`, as
    /// many as `out` holds.
    fn run(&self, at: isize, last: Axis, from: usize, out: &mut [u8]) {
        match self.itemsize {
            1 => run::<1>(self.bytes, at, last.stride, from, out),
            2 => run::<2>(self.bytes, at, last.stride, from, out),
            4 => run::<4>(self.bytes, at, last.stride, from, out),
            _ => run::<8>(self.bytes, at, last.stride, from, out),
        }
    }

    /// `rows` output rows of `last.len` elements: row `r` starts at byte
    /// `at + r * across` (`across` is plus or minus the itemsize) and
    /// steps by `last.stride`.
    ///
    /// Filled in register tiles, in blocks about 512 bytes a side (to keep
    /// the pages touched at once few). Within a block, a group of tiles down
    /// the rows reads whole source cache lines (16 float32 rows: 64 bytes of
    /// each source run), and the groups go along the columns, so each
    /// destination line is completed by consecutive groups. Source and
    /// destination rows are often a power of two apart, with all their
    /// lines in one cache set: a line left half used would be evicted
    /// before its other half came. (Transposing each square of one line a
    /// side through a buffer in L1 measured slower here for float32 and
    /// float64, 2.0–2.5 against 3.1–3.5 GB/s, and only bytes gained.)
    fn transposed(&self, at: isize, across: isize, last: Axis, rows: usize, out: &mut [u8]) {
        let n = self.itemsize as isize;
        let cols = last.len;
        let pitch = (cols * self.itemsize) as isize;
        let side = self.tile.side;
        let group = (LINE / self.itemsize).max(side) / side * side;
        let block = (BLOCK_BYTES / self.itemsize).max(group) / group * group;
        // Source byte of (row r, column j).
        let src = |r: usize, j: usize| at + across * r as isize + last.stride * j as isize;
        let reversed = across < 0;
        let tiled_rows = rows / side * side;
        let tiled_cols = cols / side * side;
        for r0 in (0..tiled_rows).step_by(block) {
            let r1 = (r0 + block).min(tiled_rows);
            for j0 in (0..tiled_cols).step_by(block) {
                let j1 = (j0 + block).min(tiled_cols);
                for rg in (r0..r1).step_by(group) {
                    let rg1 = (rg + group).min(r1);
                    // Tile rows r..r+side: run k is column j+k; its lowest
                    // element is row r (or r+side-1 backwards), and so is
                    // the first destination run.
                    let first_row = if reversed { rg + side - 1 } else { rg };
                    let step = side as isize;
                    let from = Grid {
                        at: src(first_row, j0),
                        pitch: last.stride,
                        r_step: across * step,
                        j_step: last.stride * step,
                    };
                    let to = Grid {
                        at: first_row as isize * pitch + j0 as isize * n,
                        pitch: if reversed { -pitch } else { pitch },
                        r_step: pitch * step,
                        j_step: n * step,
                    };
                    let (tile_rows, tile_cols) = ((rg1 - rg) / side, (j1 - j0) / side);
                    self.tile
                        .move_tiles(self.bytes, from, out, to, tile_rows, tile_cols);
                }
            }
        }
        // The ragged edges: columns past the last whole tile in the tiled
        // rows, then the rows past the last whole tile.
        for r in 0..rows {
            let from = if r < tiled_rows { tiled_cols } else { 0 };
            if from < cols {
                let row = &mut out[r * pitch as usize..(r + 1) * pitch as usize];
                self.run(src(r, 0), last, from, &mut row[from * self.itemsize..]);
            }
        }
    }
}

/// Elements `from..` of a row starting at byte `at` with stride `stride`,
/// `N` bytes each, as many as `out` holds.
fn run<const N: usize>(bytes: &[u8], at: isize, stride: isize, from: usize, out: &mut [u8]) {
    let count = out.len() / N;
    let first = at + stride * from as isize;
    if stride == N as isize {
        let first = first as usize;
        out.copy_from_slice(&bytes[first..first + count * N]);
    } else if stride == -(N as isize) {
        let lowest = (first - (count as isize - 1) * N as isize) as usize;
        let src = bytes[lowest..lowest + count * N].chunks_exact(N).rev();
        for (cell, element) in out.chunks_exact_mut(N).zip(src) {
            cell.copy_from_slice(element);
        }
    } else if stride == 0 {
        let first = first as usize;
        let element: [u8; N] = bytes[first..first + N].try_into().expect("N bytes");
        for cell in out.chunks_exact_mut(N) {
            cell.copy_from_slice(&element);
        }
    } else {
        for (k, cell) in out.chunks_exact_mut(N).enumerate() {
            let at = (first + stride * k as isize) as usize;
            cell.copy_from_slice(&bytes[at..at + N]);
        }
    }
}

/// The least common multiple of two sizes.
pub(crate) fn lcm(a: usize, b: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    a / gcd(a, b) * b
}

/// Where `parts` threads' byte ranges of `range` of an output of `total`
/// bytes start, and where the last ends: at multiples of `unit` bytes from
/// the start of the output, as evenly as they go; a range holding less
/// than `min_bytes` of the output stays whole.
pub(crate) fn cuts_in_units(
    unit: usize,
    total: usize,
    parts: usize,
    min_bytes: usize,
    range: Range<usize>,
) -> Vec<usize> {
    let data = total.min(range.end).saturating_sub(range.start);
    let first = range.start.div_ceil(unit);
    let units = ((range.start + data) / unit).saturating_sub(first);
    let parts = if data < min_bytes {
        1
    } else {
        parts.min(units).max(1)
    };
    let mut cuts = vec![range.start];
    cuts.extend((1..parts).map(|k| (first + units * k / parts) * unit));
    cuts.push(range.end);
    cuts
}

/// An odometer over the outer axes: the byte where each output row starts.
struct Rows<'a> {
    axes: &'a [Axis],
    index: [usize; MAX_NDIM],
    at: isize,
}

impl<'a> Rows<'a> {
    /// Positioned at row `row` (C order over `axes`) of a view starting at `base`.
    fn at(base: usize, axes: &'a [Axis], mut row: usize) -> Rows<'a> {
        let mut index = [0; MAX_NDIM];
        let mut at = base as isize;
        for (k, axis) in axes.iter().enumerate().rev() {
            index[k] = row % axis.len;
            row /= axis.len;
            at += index[k] as isize * axis.stride;
        }
        Rows { axes, index, at }
    }

    /// The index along the innermost outer axis (0 with no outer axes).
    fn index_of_last(&self) -> usize {
        self.axes.len().checked_sub(1).map_or(0, |k| self.index[k])
    }

    /// Moves `k` rows on (possibly past the last row, which is never read).
    fn advance(&mut self, mut k: usize) {
        for (axis, index) in self.axes.iter().zip(&mut self.index).rev() {
            if k == 0 {
                return;
            }
            let total = *index + k;
            let wrapped = total % axis.len;
            self.at += (wrapped as isize - *index as isize) * axis.stride;
            *index = wrapped;
            k = total / axis.len;
        }
    }
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

    /// The whole copy, every kernel, and ranges of it starting and ending
    /// anywhere (inside rows, on row and tile boundaries) match the plain walk.
    fn check(bytes: &[u8], layout: &Layout) {
        let expected = reference(bytes, layout);
        let mut out = vec![0xAA; layout.nbytes()];
        gather_into(bytes, layout, &mut out).unwrap();
        assert_eq!(out, expected, "{layout:?}");
        let n = layout.dtype().size();
        let size = layout.size();
        let to = layout.descr();
        for copier in [
            Copier::new(bytes, layout, to).unwrap(),
            Copier::new(bytes, layout, to).unwrap().portable(),
        ] {
            let mut cuts = vec![0, size];
            let mut seed = size as u64 * 2654435761 + n as u64;
            for _ in 0..if cfg!(miri) { 2 } else { 6 } {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                cuts.push((seed >> 33) as usize % (size + 1));
            }
            cuts.sort_unstable();
            let mut out = vec![0xAA; layout.nbytes()];
            for pair in cuts.windows(2) {
                copier.fill(pair[0], &mut out[pair[0] * n..pair[1] * n]);
            }
            assert_eq!(out, expected, "{layout:?} in pieces {cuts:?}");
        }
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

    /// Random views (permuted, sliced with any step, reversed, broadcast)
    /// of every itemsize: every kernel and every range matches the walk.
    #[test]
    fn random_views_match_the_plain_walk() {
        let bytes = pattern(1 << 14);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |bound: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % bound.max(1)
        };
        for case in 0..if cfg!(miri) { 12 } else { 1500 } {
            let dtype = [DType::U8, DType::I16, DType::F32, DType::F64][case % 4];
            let ndim = 1 + next(4);
            let most = if cfg!(miri) {
                9
            } else {
                [40, 40, 14, 9][ndim - 1]
            };
            let shape: Vec<usize> = (0..ndim).map(|_| 1 + next(most)).collect();
            let Ok(mut l) = Layout::contiguous(dtype, &shape) else {
                continue;
            };
            if l.nbytes() > bytes.len() {
                continue;
            }
            let mut axes: Vec<usize> = (0..ndim).collect();
            for k in (1..ndim).rev() {
                axes.swap(k, next(k + 1));
            }
            l = l.permute(&axes).unwrap();
            for axis in 0..ndim {
                let len = l.shape()[axis] as isize;
                let step = [1, 1, -1, 2, -3][next(5)];
                let start = next(len as usize) as isize;
                l = l.slice(axis, Some(start), None, step).unwrap_or(l);
            }
            if next(6) == 0 {
                let mut wide = vec![1 + next(3)];
                wide.extend_from_slice(l.shape());
                l = l.broadcast_to(&wide).unwrap();
            }
            check(&bytes, &l);
        }
    }

    /// Transposing copies of 8 MiB or more are split between threads on
    /// whole rows: the parts meet exactly (reversed rows and a row count
    /// that does not divide evenly included).
    #[test]
    #[cfg_attr(miri, ignore = "8 MiB is too much for Miri; the walk is the same")]
    fn large_transposes_split_between_threads_match_the_plain_walk() {
        let bytes = pattern(9 << 20);
        for layout in [
            Layout::contiguous(DType::F32, &[1031, 2203])
                .unwrap()
                .transpose(),
            Layout::contiguous(DType::I16, &[2203, 2053])
                .unwrap()
                .slice(0, None, None, -1)
                .unwrap()
                .transpose(),
        ] {
            assert!(
                Copier::new(&bytes, &layout, layout.descr())
                    .unwrap()
                    .is_transposed()
            );
            let mut out = vec![0xAA; layout.nbytes()];
            gather_into(&bytes, &layout, &mut out).unwrap();
            assert!(out == reference(&bytes, &layout), "{layout:?}");
        }
    }

    #[test]
    fn cuts_fall_on_rows_and_aligned_elements_and_cover_the_copy() {
        let bytes = vec![0u8; 300 * 200 * 4];
        let t = Layout::contiguous(DType::F32, &[300, 200])
            .unwrap()
            .transpose();
        let copier = Copier::new(&bytes, &t, t.descr()).unwrap();
        let whole = t.nbytes();
        // Rows of 300 float32 (1200 bytes): cuts on whole rows.
        assert_eq!(
            copier.cuts(3, 8, 0, 0..whole),
            [0, 66 * 1200, 133 * 1200, whole]
        );
        // Within a range that starts mid-row: cuts still on whole rows.
        assert_eq!(
            copier.cuts(2, 8, 0, 1000..50_000),
            [1000, 21 * 1200, 50_000]
        );
        // A uint8 view with 3-byte rows, 8-byte aligned: multiples of 24 bytes.
        let small = Layout::contiguous(DType::U8, &[20, 3]).unwrap();
        let copier = Copier::new(&bytes, &small, small.descr()).unwrap();
        assert_eq!(copier.cuts(2, 8, 0, 0..60), [0, 24, 60]);
        // Too small, or one part: whole.
        let copier = Copier::new(&bytes, &t, t.descr()).unwrap();
        assert_eq!(copier.cuts(4, 8, whole + 1, 0..whole), [0, whole]);
        assert_eq!(copier.cuts(1, 8, 0, 0..whole), [0, whole]);
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
