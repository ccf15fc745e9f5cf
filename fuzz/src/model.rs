//! A plain reference model of a layout, in `i128` so that no sum or product
//! of an `isize` offset, stride and `usize` index overflows: where each
//! element is, and whether a buffer holds them all, from the definitions
//! rather than the core's code.

use bytelens_core::{ByteOrder, Layout};

/// The most elements whose offsets the checks list one by one.
pub const LIMIT: usize = 512;

#[derive(Clone, Debug)]
pub struct Model {
    pub itemsize: i128,
    pub align: i128,
    pub offset: i128,
    pub shape: Vec<usize>,
    pub strides: Vec<i128>,
    pub aligned: bool,
    pub order: ByteOrder,
}

/// What [`Layout::check`] must answer for a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    Fits,
    OutOfBounds,
    Misaligned,
}

impl Model {
    pub fn of(layout: &Layout) -> Model {
        Model {
            itemsize: layout.dtype().size() as i128,
            align: layout.dtype().align() as i128,
            offset: layout.offset() as i128,
            shape: layout.shape().to_vec(),
            strides: layout.strides().iter().map(|&s| s as i128).collect(),
            aligned: layout.requires_alignment(),
            order: layout.byte_order(),
        }
    }

    /// The number of elements, saturating.
    pub fn size(&self) -> u128 {
        self.shape
            .iter()
            .fold(1u128, |n, &k| n.saturating_mul(k as u128))
    }

    /// The offset of the element at `index` (within the shape).
    pub fn at(&self, index: &[usize]) -> i128 {
        index
            .iter()
            .zip(&self.strides)
            .fold(self.offset, |o, (&i, &s)| o + i as i128 * s)
    }

    /// The elements with the lowest and the highest offset (corners of the
    /// shape: each axis at its start or its end), if there are elements.
    pub fn corners(&self) -> Option<(Vec<usize>, Vec<usize>)> {
        if self.size() == 0 {
            return None;
        }
        let low = self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(&n, &s)| if s < 0 { n - 1 } else { 0 })
            .collect();
        let high = self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(&n, &s)| if s > 0 { n - 1 } else { 0 })
            .collect();
        Some((low, high))
    }

    /// The bytes the elements span: `lowest offset .. highest + itemsize`.
    pub fn span(&self) -> Option<(i128, i128)> {
        let (low, high) = self.corners()?;
        Some((self.at(&low), self.at(&high) + self.itemsize))
    }

    /// Whether every element lies in a buffer of `len` bytes and, if the
    /// layout asks for it, at a multiple of the alignment.
    pub fn fit(&self, len: usize) -> Fit {
        let len = len as i128;
        let Some((start, end)) = self.span() else {
            // No elements: any offset from 0 to the end.
            return if (0..=len).contains(&self.offset) {
                Fit::Fits
            } else {
                Fit::OutOfBounds
            };
        };
        if start < 0 || end > len {
            return Fit::OutOfBounds;
        }
        // Offsets are `offset + sum(i * stride)`: all multiples of the
        // alignment iff the offset is and every stride that is ever taken is.
        let misaligned = self.offset % self.align != 0
            || self
                .shape
                .iter()
                .zip(&self.strides)
                .any(|(&n, &s)| n > 1 && s % self.align != 0);
        if self.aligned && misaligned {
            Fit::Misaligned
        } else {
            Fit::Fits
        }
    }

    /// Every index in C order, if there are at most `limit`.
    pub fn indices(shape: &[usize], limit: usize) -> Option<Vec<Vec<usize>>> {
        let size = shape.iter().try_fold(1usize, |n, &k| n.checked_mul(k))?;
        if size > limit {
            return None;
        }
        let mut out = Vec::with_capacity(size);
        let mut index = vec![0; shape.len()];
        for _ in 0..size {
            out.push(index.clone());
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Some(out)
    }

    /// Every element's offset in C order, if there are at most `limit`.
    pub fn offsets(&self, limit: usize) -> Option<Vec<i128>> {
        Some(
            Model::indices(&self.shape, limit)?
                .iter()
                .map(|index| self.at(index))
                .collect(),
        )
    }

    /// Every byte of every element in C order, element by element.
    pub fn bytes(&self, limit: usize) -> Option<Vec<i128>> {
        let offsets = self.offsets(limit)?;
        Some(
            offsets
                .iter()
                .flat_map(|&o| (0..self.itemsize).map(move |b| o + b))
                .collect(),
        )
    }

    /// Whether the elements, visited in the order of `axes_inner_first`,
    /// sit one right after another.
    pub fn packed(&self, axes_inner_first: impl Iterator<Item = usize>) -> bool {
        if self.size() == 0 {
            return true;
        }
        let mut expected = self.itemsize;
        for axis in axes_inner_first {
            let n = self.shape[axis];
            if n != 1 {
                if self.strides[axis] != expected {
                    return false;
                }
                expected *= n as i128;
            }
        }
        true
    }
}

/// Python's (and numpy's) `range(n)[start:stop:step]`: the indices a slice
/// takes, if there are at most `limit`.
pub fn slice_indices(
    n: usize,
    start: Option<isize>,
    stop: Option<isize>,
    step: isize,
    limit: usize,
) -> Option<Vec<usize>> {
    let (n, step) = (n as i128, step as i128);
    let resolve = |i: isize, low: i128, high: i128| {
        let i = i as i128;
        (if i < 0 { i + n } else { i }).clamp(low, high)
    };
    let (first, end) = if step > 0 {
        (
            start.map_or(0, |s| resolve(s, 0, n)),
            stop.map_or(n, |s| resolve(s, 0, n)),
        )
    } else {
        (
            start.map_or(n - 1, |s| resolve(s, -1, n - 1)),
            stop.map_or(-1, |s| resolve(s, -1, n - 1)),
        )
    };
    let mut out = vec![];
    let mut i = first;
    while (step > 0 && i < end) || (step < 0 && i > end) {
        if out.len() == limit {
            return None;
        }
        out.push(i as usize);
        i += step;
    }
    Some(out)
}
