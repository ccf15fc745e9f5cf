//! Where a layout's elements are: [`Layout::element_offset`] for one, and
//! [`Offsets`], the byte offset of every element of a checked layout in C order.
#![forbid(unsafe_code)]

use super::{Layout, MAX_NDIM, add, mul};
use crate::Error;

impl Layout {
    /// Byte offset of the element at `index` (one entry per axis).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let m = Layout::contiguous(DType::I32, &[3, 4])?;
    /// assert_eq!(m.element_offset(&[2, 1])?, 36);
    /// assert!(m.element_offset(&[3, 0]).is_err());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn element_offset(&self, index: &[usize]) -> Result<isize, Error> {
        if index.len() != self.ndim() {
            return Err(Error::LengthMismatch {
                what: "indices",
                expected: self.ndim(),
                got: index.len(),
            });
        }
        let mut offset = self.offset;
        for (axis, &i) in index.iter().enumerate() {
            if i >= self.shape[axis] {
                let index = isize::try_from(i).unwrap_or(isize::MAX);
                return Err(Error::IndexOutOfRange {
                    index,
                    axis,
                    len: self.shape[axis],
                });
            }
            let step = mul(self.strides[axis], i as isize, "an element offset")?;
            offset = add(offset, step, "an element offset")?;
        }
        Ok(offset)
    }

    /// The byte offset of every element in C order, after proving with
    /// [`check`](Layout::check) that the layout fits `len` bytes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let t = Layout::contiguous(DType::U8, &[2, 3])?.transpose();
    /// let walk: Vec<usize> = t.offsets(6)?.collect();
    /// assert_eq!(walk, [0, 3, 1, 4, 2, 5]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn offsets(&self, len: usize) -> Result<Offsets, Error> {
        self.check(len)?;
        Ok(Offsets::new(self))
    }
}

/// The byte offsets of a checked layout's elements, in C order. Made by
/// [`Layout::offsets`].
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout};
/// let reversed = Layout::new(DType::U16, 4, &[3], &[-2])?;
/// assert_eq!(reversed.offsets(6)?.collect::<Vec<_>>(), [4, 2, 0]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Offsets {
    // INVARIANT: `layout` was checked against a buffer, so every element
    // offset lies in `0..len` and every sum below stays between the smallest
    // and largest element offset.
    layout: Layout,
    index: [usize; MAX_NDIM],
    next: isize,
    remaining: usize,
}

impl Offsets {
    pub(crate) fn new(layout: &Layout) -> Offsets {
        Offsets {
            layout: *layout,
            index: [0; MAX_NDIM],
            next: layout.offset,
            remaining: layout.size(),
        }
    }
}

impl Iterator for Offsets {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.next as usize;
        if self.remaining > 0 {
            // Odometer step: each intermediate value is some element's offset.
            let l = &self.layout;
            for axis in (0..l.ndim()).rev() {
                if self.index[axis] + 1 < l.shape[axis] {
                    self.index[axis] += 1;
                    self.next += l.strides[axis];
                    break;
                }
                self.next -= l.strides[axis] * self.index[axis] as isize;
                self.index[axis] = 0;
            }
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets {}
