//! How an n-dimensional array sits in bytes, and the operations on it.
#![forbid(unsafe_code)]

use core::fmt;
use core::ops::Range;

use crate::{ByteOrder, DType, Descr, Error};

mod offsets;
mod ops;

pub use offsets::Offsets;

/// The most dimensions a [`Layout`] holds (numpy 1.x's `NPY_MAXDIMS`).
///
/// # Examples
/// ```
/// assert_eq!(bytelens_core::MAX_NDIM, 32);
/// ```
pub const MAX_NDIM: usize = 32;

pub(crate) const READ_ONLY: u8 = 1;
pub(crate) const UNALIGNED: u8 = 2;

/// How an n-dimensional array of one dtype sits in a byte buffer: byte
/// offset, shape and signed byte strides, as numpy's `ndarray` describes it.
///
/// A layout is plain data, stored inline (no heap, at most [`MAX_NDIM`]
/// dimensions), and knows nothing about any buffer until [`Layout::check`]
/// proves it fits one. Every operation is O(ndim), touches no data and
/// returns a new layout.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout};
/// // A 3x4 int32 matrix, C order.
/// let m = Layout::contiguous(DType::I32, &[3, 4])?;
/// assert_eq!(m.strides(), &[16, 4]);
/// // Its transpose walks the same 48 bytes column by column.
/// let t = m.transpose();
/// assert_eq!((t.shape(), t.strides()), (&[4, 3][..], &[4, 16][..]));
/// assert!(t.is_f_contiguous() && !t.is_c_contiguous());
/// t.check(48)?;
/// // Seen as int16, the last axis doubles.
/// assert_eq!(m.reinterpret(DType::I16)?.shape(), &[3, 8]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Layout {
    dtype: DType,
    order: ByteOrder,
    flags: u8,
    ndim: u8,
    offset: isize,
    // INVARIANT: `ndim <= MAX_NDIM`; the product of the shape times the
    // itemsize is at most `isize::MAX`. Entries past `ndim` mean nothing.
    shape: [usize; MAX_NDIM],
    strides: [isize; MAX_NDIM],
}

/// Converts a byte count to `isize`, or reports what overflowed.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn to_isize(value: usize, what: &'static str) -> Result<isize, Error> {
    isize::try_from(value).map_err(|_| Error::Overflow { what })
}

fn mul(a: isize, b: isize, what: &'static str) -> Result<isize, Error> {
    a.checked_mul(b).ok_or(Error::Overflow { what })
}

fn add(a: isize, b: isize, what: &'static str) -> Result<isize, Error> {
    a.checked_add(b).ok_or(Error::Overflow { what })
}

/// The byte size of a packed array of `shape`, if it fits in `isize`.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn checked_nbytes(dtype: DType, shape: &[usize]) -> Result<usize, Error> {
    if shape.len() > MAX_NDIM {
        return Err(Error::TooManyDims {
            ndim: shape.len(),
            max: MAX_NDIM,
        });
    }
    // numpy's rule: the product of the lengths, counting 0 as 1, times the
    // itemsize must fit in isize, so that every length and every extent
    // computed later fits too, whatever the order of the axes.
    let too_big = Error::Overflow {
        what: "the array size",
    };
    let mut bound = dtype.size();
    let mut nbytes = dtype.size();
    for &n in shape {
        bound = bound.checked_mul(n.max(1)).ok_or(too_big)?;
        nbytes *= n; // at most `bound`
    }
    to_isize(bound, "the array size")?;
    Ok(nbytes)
}

impl Layout {
    // `inline(always)` on the constructors and `with_*` builders: a Layout is
    // 528 bytes, and inlining lets callers build it in place rather than
    // copy it through every `Result` (measured: a third of a Python view's cost).
    // Not on wasm32, where every inlined copy costs download size instead.
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub(crate) fn build(
        dtype: DType,
        order: ByteOrder,
        flags: u8,
        offset: isize,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Layout, Error> {
        // First, so that `TooManyDims` is reported before a length mismatch.
        checked_nbytes(dtype, shape)?;
        if strides.len() != shape.len() {
            return Err(Error::LengthMismatch {
                what: "strides",
                expected: shape.len(),
                got: strides.len(),
            });
        }
        let mut layout = Layout {
            dtype,
            order,
            flags,
            ndim: shape.len() as u8,
            offset,
            shape: [0; MAX_NDIM],
            strides: [0; MAX_NDIM],
        };
        layout.shape[..shape.len()].copy_from_slice(shape);
        layout.strides[..shape.len()].copy_from_slice(strides);
        Ok(layout)
    }

    /// A layout from its parts, as `np.ndarray(buffer=..., dtype, offset, shape, strides)`
    /// takes them. Strides are in bytes and may be negative or zero.
    ///
    /// Fails with `TooManyDims`, `LengthMismatch` or `Overflow`; whether the
    /// layout fits a buffer is [`check`](Layout::check)'s job.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let reversed = Layout::new(DType::U16, 6, &[4], &[-2])?;
    /// assert_eq!(reversed.byte_span()?, 0..8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn new(
        dtype: DType,
        offset: usize,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Layout, Error> {
        let offset = to_isize(offset, "the offset")?;
        Layout::build(dtype, ByteOrder::NATIVE, 0, offset, shape, strides)
    }

    /// A C-contiguous (row-major) layout at offset 0.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let l = Layout::contiguous(DType::F64, &[2, 3])?;
    /// assert_eq!(l.strides(), &[24, 8]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn contiguous(dtype: DType, shape: &[usize]) -> Result<Layout, Error> {
        Layout::build_c(dtype, ByteOrder::NATIVE, 0, 0, shape)
    }

    /// The whole of a buffer of `len` bytes as a one-dimensional array, as
    /// `np.frombuffer(buf, dtype)` sees it: `len` must divide by the itemsize.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Error, Layout};
    /// assert_eq!(Layout::from_bytes(DType::I16, 4)?.shape(), &[2]);
    /// assert!(matches!(Layout::from_bytes(DType::I16, 3), Err(Error::ItemsizeMismatch { .. })));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn from_bytes(dtype: DType, len: usize) -> Result<Layout, Error> {
        let itemsize = dtype.size();
        if !len.is_multiple_of(itemsize) {
            return Err(Error::ItemsizeMismatch {
                nbytes: len,
                itemsize,
                dtype,
            });
        }
        Layout::contiguous(dtype, &[len / itemsize])
    }

    /// Like `build`, with C-order strides.
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub(crate) fn build_c(
        dtype: DType,
        order: ByteOrder,
        flags: u8,
        offset: isize,
        shape: &[usize],
    ) -> Result<Layout, Error> {
        let zeros = [0; MAX_NDIM];
        let mut layout = Layout::build(
            dtype,
            order,
            flags,
            offset,
            shape,
            &zeros[..shape.len().min(MAX_NDIM)],
        )?;
        layout.set_c_strides();
        Ok(layout)
    }

    /// Sets C-order strides for the current shape (offset unchanged).
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    fn set_c_strides(&mut self) {
        // Cannot overflow: the product of the shape times the itemsize fits in isize (INVARIANT).
        let mut stride = self.dtype.size() as isize;
        for axis in (0..self.ndim()).rev() {
            self.strides[axis] = stride;
            stride = stride.saturating_mul(self.shape[axis].max(1) as isize);
        }
    }

    /// The same layout starting `offset` bytes into the buffer; `Overflow`
    /// beyond `isize::MAX`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U8, &[2])?.with_offset(5)?.byte_span()?, 5..7);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn with_offset(mut self, offset: usize) -> Result<Layout, Error> {
        self.offset = to_isize(offset, "the offset")?;
        Ok(self)
    }

    /// The same layout with elements stored in `order`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Layout};
    /// let be = Layout::contiguous(DType::I32, &[2])?.with_byte_order(ByteOrder::Big);
    /// assert_eq!(be.descr().to_string(), ">i4");
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn with_byte_order(mut self, order: ByteOrder) -> Layout {
        self.order = order;
        self
    }

    /// Opts out of the alignment check: [`check`](Layout::check) then accepts
    /// offsets and strides that are not multiples of the dtype's alignment,
    /// and views read and write through unaligned loads and stores (numpy's
    /// behaviour for unaligned arrays).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let l = Layout::contiguous(DType::I32, &[1])?.with_offset(1)?;
    /// assert!(l.check(8).is_err());
    /// assert!(l.unaligned().check(8).is_ok());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn unaligned(mut self) -> Layout {
        self.flags |= UNALIGNED;
        self
    }

    /// Marks the layout read-only: [`ViewMut`](crate::ViewMut) refuses it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert!(Layout::contiguous(DType::U8, &[2])?.read_only().is_read_only());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn read_only(mut self) -> Layout {
        self.flags |= READ_ONLY;
        self
    }

    /// The element type.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::F16, &[2])?.dtype(), DType::F16);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The byte order of the elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Layout};
    /// let l = Layout::contiguous(DType::U16, &[2])?;
    /// assert_eq!(l.byte_order(), ByteOrder::NATIVE);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn byte_order(&self) -> ByteOrder {
        self.order
    }

    /// Dtype and byte order together, printable as a numpy type string.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::I32, &[2])?.descr().to_string(), "<i4");
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn descr(&self) -> Descr {
        Descr::new(self.dtype, self.order)
    }

    /// Byte offset of the element with all indices zero (negative only for
    /// layouts that no buffer can hold).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let m = Layout::contiguous(DType::I32, &[2, 2])?;
    /// assert_eq!(m.index(0, 1)?.offset(), 8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn offset(&self) -> isize {
        self.offset
    }

    /// Number of dimensions.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U8, &[2, 3, 4])?.ndim(), 3);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn ndim(&self) -> usize {
        usize::from(self.ndim)
    }

    /// Length of each axis.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U8, &[2, 3])?.shape(), &[2, 3]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.ndim()]
    }

    /// Byte step of each axis.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U16, &[2, 3])?.strides(), &[6, 2]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn strides(&self) -> &[isize] {
        &self.strides[..self.ndim()]
    }

    /// Number of elements (1 for zero dimensions).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U16, &[2, 3])?.size(), 6);
    /// assert_eq!(Layout::contiguous(DType::U16, &[])?.size(), 1);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    #[inline]
    pub fn size(&self) -> usize {
        // Cannot overflow (INVARIANT).
        self.shape().iter().product()
    }

    /// Bytes the elements would take if packed: `size() * dtype().size()`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// assert_eq!(Layout::contiguous(DType::U16, &[2, 3])?.nbytes(), 12);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype.size()
    }

    /// True when views through this layout must not write.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let l = Layout::contiguous(DType::U8, &[1])?;
    /// assert!(!l.is_read_only() && l.broadcast_to(&[4])?.is_read_only());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_read_only(&self) -> bool {
        self.flags & READ_ONLY != 0
    }

    /// True unless [`unaligned`](Layout::unaligned) was asked for.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let l = Layout::contiguous(DType::U8, &[1])?;
    /// assert!(l.requires_alignment() && !l.unaligned().requires_alignment());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn requires_alignment(&self) -> bool {
        self.flags & UNALIGNED == 0
    }

    /// Proves that every element lies inside a buffer of `len` bytes and,
    /// unless [`unaligned`](Layout::unaligned), that every element's offset is
    /// a multiple of the dtype's alignment. A layout with no elements is valid
    /// at any offset from 0 to `len`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Error, Layout};
    /// let l = Layout::contiguous(DType::I32, &[2])?;
    /// assert!(l.check(8).is_ok());
    /// assert_eq!(l.check(7), Err(Error::OutOfBounds { start: 0, end: 8, len: 7 }));
    /// assert_eq!(
    ///     l.check(7).unwrap_err().to_string(),
    ///     "the view reaches bytes 0..8 but the buffer holds 7 bytes"
    /// );
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn check(&self, len: usize) -> Result<(), Error> {
        let span = self.byte_span()?;
        let len_i = to_isize(len, "the buffer length")?;
        if span.start < 0 || span.end > len_i {
            return Err(Error::OutOfBounds {
                start: span.start,
                end: span.end,
                len,
            });
        }
        if self.size() == 0 || !self.requires_alignment() {
            return Ok(());
        }
        let align = self.dtype.align();
        // `span.start >= 0` and `self.offset >= span.start` here.
        if !(self.offset as usize).is_multiple_of(align) {
            return Err(Error::Misaligned {
                offset: self.offset as usize,
                align,
                dtype: self.dtype,
            });
        }
        for axis in 0..self.ndim() {
            let stride = self.strides[axis];
            if self.shape[axis] > 1 && !stride.unsigned_abs().is_multiple_of(align) {
                return Err(Error::MisalignedStride {
                    axis,
                    stride,
                    align,
                    dtype: self.dtype,
                });
            }
        }
        Ok(())
    }

    /// The bytes the layout touches, `start..end`; `offset..offset` when it has
    /// no elements. Fails only with `Overflow`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let col = Layout::new(DType::F32, 4, &[3], &[16])?;
    /// assert_eq!(col.byte_span()?, 4..40);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn byte_span(&self) -> Result<Range<isize>, Error> {
        if self.size() == 0 {
            return Ok(self.offset..self.offset);
        }
        let (mut lo, mut hi) = (self.offset, self.offset);
        for axis in 0..self.ndim() {
            let last = self.shape[axis] as isize - 1;
            let extent = mul(self.strides[axis], last, "the view's extent")?;
            if extent < 0 {
                lo = add(lo, extent, "the view's extent")?;
            } else {
                hi = add(hi, extent, "the view's extent")?;
            }
        }
        let end = add(hi, self.dtype.size() as isize, "the view's extent")?;
        Ok(lo..end)
    }

    /// True when the elements are packed in C (row-major) order; axes of
    /// length 1 are ignored and an empty layout is contiguous, as in numpy.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let m = Layout::contiguous(DType::F32, &[2, 3])?;
    /// assert!(m.is_c_contiguous() && !m.slice(1, None, None, 2)?.is_c_contiguous());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_c_contiguous(&self) -> bool {
        self.is_packed((0..self.ndim()).rev())
    }

    /// True when the elements are packed in Fortran (column-major) order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let m = Layout::contiguous(DType::F32, &[2, 3])?;
    /// assert!(!m.is_f_contiguous() && m.transpose().is_f_contiguous());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_f_contiguous(&self) -> bool {
        self.is_packed(0..self.ndim())
    }

    fn is_packed(&self, axes_inner_first: impl Iterator<Item = usize>) -> bool {
        if self.size() == 0 {
            return true;
        }
        let mut expected = self.dtype.size() as isize;
        for axis in axes_inner_first {
            let n = self.shape[axis];
            if n == 1 {
                continue;
            }
            if self.strides[axis] != expected {
                return false;
            }
            expected *= n as isize;
        }
        true
    }
}

impl PartialEq for Layout {
    fn eq(&self, other: &Layout) -> bool {
        self.dtype == other.dtype
            && self.order == other.order
            && self.flags == other.flags
            && self.offset == other.offset
            && self.shape() == other.shape()
            && self.strides() == other.strides()
    }
}

impl Eq for Layout {}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layout")
            .field("descr", &format_args!("{}", self.descr()))
            .field("offset", &self.offset)
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("read_only", &self.is_read_only())
            .field("requires_alignment", &self.requires_alignment())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_size_is_valid_at_any_offset_in_range() {
        let empty = Layout::contiguous(DType::I64, &[0, 5]).unwrap();
        for offset in 0..=8 {
            assert_eq!(
                empty.with_offset(offset).unwrap().check(8),
                Ok(()),
                "offset {offset}"
            );
        }
        assert!(empty.with_offset(9).unwrap().check(8).is_err());
    }

    #[test]
    fn negative_strides_in_bounds() {
        let l = Layout::new(DType::I32, 12, &[4], &[-4]).unwrap();
        assert_eq!(l.check(16), Ok(()));
        assert_eq!(l.byte_span(), Ok(0..16));
        let l = Layout::new(DType::I32, 8, &[4], &[-4]).unwrap();
        assert_eq!(
            l.check(16),
            Err(Error::OutOfBounds {
                start: -4,
                end: 12,
                len: 16
            })
        );
    }

    #[test]
    fn misaligned_stride_is_named() {
        let l = Layout::new(DType::F32, 0, &[2, 2], &[6, 4]).unwrap();
        let err = l.check(64).unwrap_err();
        assert_eq!(
            err,
            Error::MisalignedStride {
                axis: 0,
                stride: 6,
                align: 4,
                dtype: DType::F32
            }
        );
        // A length-1 axis never steps, so its stride does not matter.
        let l = Layout::new(DType::F32, 0, &[1, 2], &[6, 4]).unwrap();
        assert_eq!(l.check(64), Ok(()));
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        let l = Layout::new(DType::U8, 0, &[3], &[isize::MAX]).unwrap();
        assert!(matches!(l.check(usize::MAX), Err(Error::Overflow { .. })));
        assert!(matches!(
            Layout::contiguous(DType::F64, &[usize::MAX / 4, 2]),
            Err(Error::Overflow { .. })
        ));
        assert!(matches!(
            Layout::new(DType::U8, usize::MAX, &[1], &[1]),
            Err(Error::Overflow { .. })
        ));
        let l = Layout::new(DType::U8, 0, &[2], &[isize::MAX]).unwrap();
        assert!(l.slice(0, Some(1), None, 1).is_ok());
        // One element: the stride is kept, as numpy's does not matter.
        assert_eq!(l.slice(0, None, None, 2).unwrap().strides(), &[isize::MAX]);
        assert_eq!(l.slice(0, None, None, isize::MIN).unwrap().shape(), &[1]);
        let l3 = Layout::new(DType::U8, 0, &[3], &[isize::MAX / 2 + 1]).unwrap();
        assert!(matches!(
            l3.slice(0, None, None, 2),
            Err(Error::Overflow { .. })
        ));
        // Lengths past a zero still count (numpy: "array is too big").
        assert!(matches!(
            Layout::contiguous(DType::U8, &[0, usize::MAX]),
            Err(Error::Overflow { .. })
        ));
        assert!(matches!(
            Layout::contiguous(DType::F64, &[0, 1 << 31, 1 << 31]),
            Err(Error::Overflow { .. })
        ));
        assert!(Layout::contiguous(DType::U8, &[0, 1 << 31, 1 << 31]).is_ok());
        assert!(matches!(
            Layout::contiguous(DType::U8, &[1])
                .unwrap()
                .with_offset(usize::MAX),
            Err(Error::Overflow { .. })
        ));
        assert!(l.index(0, 1).is_ok());
        assert!(matches!(
            l.index(0, 1).unwrap().byte_span(),
            Err(Error::Overflow { .. })
        ));
        let far = Layout::new(DType::U8, usize::MAX / 2, &[2], &[isize::MAX]).unwrap();
        assert!(matches!(far.index(0, 1), Err(Error::Overflow { .. })));
        assert!(far.reshape(&[2, 1]).is_ok());
        assert!(matches!(far.reshape(&[1, 2]), Err(Error::Overflow { .. })));
        let wide = Layout::new(DType::U8, 0, &[2, 3], &[isize::MAX, isize::MAX / 2]).unwrap();
        assert!(matches!(wide.reshape(&[6]), Err(Error::Overflow { .. })));
        let far = l.slice(0, Some(1), None, 1).unwrap();
        assert!(matches!(
            far.index(0, 0).unwrap().slice(0, None, None, 1),
            Err(Error::BadAxis { .. })
        ));
    }

    #[test]
    fn too_many_dims() {
        let shape = [1usize; MAX_NDIM + 1];
        assert_eq!(
            Layout::contiguous(DType::U8, &shape),
            Err(Error::TooManyDims { ndim: 33, max: 32 })
        );
        assert!(Layout::contiguous(DType::U8, &shape[..MAX_NDIM]).is_ok());
        let l = Layout::contiguous(DType::U8, &[1]).unwrap();
        assert!(matches!(l.reshape(&shape), Err(Error::TooManyDims { .. })));
        assert!(matches!(
            l.broadcast_to(&shape),
            Err(Error::TooManyDims { .. })
        ));
    }
}
