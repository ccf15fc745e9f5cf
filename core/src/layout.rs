//! How an n-dimensional array sits in bytes, and the operations on it.
#![forbid(unsafe_code)]

use core::fmt;
use core::ops::Range;

use crate::{ByteOrder, DType, Descr, Error};

/// The most dimensions a [`Layout`] holds (numpy 1.x's `NPY_MAXDIMS`).
///
/// # Examples
/// ```
/// assert_eq!(bytelens_core::MAX_NDIM, 32);
/// ```
pub const MAX_NDIM: usize = 32;

const READ_ONLY: u8 = 1;
const UNALIGNED: u8 = 2;

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
    fn build(
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
        if len % itemsize != 0 {
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
    fn build_c(
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
        if self.offset as usize % align != 0 {
            return Err(Error::Misaligned {
                offset: self.offset as usize,
                align,
                dtype: self.dtype,
            });
        }
        for axis in 0..self.ndim() {
            let stride = self.strides[axis];
            if self.shape[axis] > 1 && stride.unsigned_abs() % align != 0 {
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

    /// numpy's `arr.view(dtype)`: the same bytes as another dtype (byte order kept).
    ///
    /// The same itemsize always works. Another itemsize needs at least one
    /// dimension and a contiguous last axis (stride equal to the itemsize,
    /// unless that axis has length 1 or the array is empty); that axis is
    /// rescaled and its byte length must divide by the new itemsize
    /// (numpy ≥ 1.23's rules).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Error, Layout};
    /// let bytes3 = Layout::contiguous(DType::I8, &[3])?;
    /// assert!(matches!(bytes3.reinterpret(DType::I16), Err(Error::ItemsizeMismatch { .. })));
    /// let bytes2 = bytes3.slice(0, None, Some(2), 1)?;
    /// assert_eq!(bytes2.reinterpret(DType::I16)?.shape(), &[1]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn reinterpret(&self, dtype: DType) -> Result<Layout, Error> {
        let (old, new) = (self.dtype.size(), dtype.size());
        let mut out = *self;
        out.dtype = dtype;
        if old == new {
            return Ok(out);
        }
        let Some(axis) = self.ndim().checked_sub(1) else {
            return Err(Error::ScalarItemsize {
                from: self.dtype,
                to: dtype,
            });
        };
        let n = self.shape[axis];
        if n != 1 && self.size() != 0 && self.strides[axis] != old as isize {
            return Err(Error::NotContiguous {
                axis,
                stride: self.strides[axis],
                itemsize: old,
            });
        }
        // `n * old` cannot overflow: it is at most the array's byte size (INVARIANT).
        let axis_bytes = n * old;
        if axis_bytes % new != 0 {
            return Err(Error::ItemsizeMismatch {
                nbytes: axis_bytes,
                itemsize: new,
                dtype,
            });
        }
        out.shape[axis] = axis_bytes / new;
        out.strides[axis] = new as isize;
        Ok(out)
    }

    /// numpy's `a[start:stop:step]` along `axis`, with Python's rules:
    /// negative indices count from the end, out-of-range bounds are clamped,
    /// `None` means "from the start / to the end" (reversed for a negative step).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let v = Layout::contiguous(DType::I16, &[10])?;
    /// let evens_reversed = v.slice(0, None, None, -2)?; // v[::-2]
    /// assert_eq!((evens_reversed.shape(), evens_reversed.strides()), (&[5][..], &[-4][..]));
    /// assert_eq!(evens_reversed.offset(), 18);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn slice(
        &self,
        axis: usize,
        start: Option<isize>,
        stop: Option<isize>,
        step: isize,
    ) -> Result<Layout, Error> {
        if axis >= self.ndim() {
            return Err(Error::BadAxis {
                axis,
                ndim: self.ndim(),
            });
        }
        if step == 0 {
            return Err(Error::ZeroStep { axis });
        }
        // Lengths fit in isize (INVARIANT).
        let n = self.shape[axis] as isize;
        let clamp = |i: isize, lo: isize, hi: isize| {
            let i = if i < 0 { i.saturating_add(n) } else { i };
            i.clamp(lo, hi)
        };
        let (start, len) = if step > 0 {
            let start = start.map_or(0, |s| clamp(s, 0, n));
            let stop = stop.map_or(n, |s| clamp(s, 0, n));
            let len = if stop > start {
                (stop - start - 1) / step + 1
            } else {
                0
            };
            (start, len)
        } else {
            let start = start.map_or(n - 1, |s| clamp(s, -1, n - 1));
            let stop = stop.map_or(-1, |s| clamp(s, -1, n - 1));
            let len = if start > stop {
                (start - stop - 1) / step.unsigned_abs() as isize + 1
            } else {
                0
            };
            (start, len)
        };
        let mut out = *self;
        if len == 0 {
            // numpy points an empty slice at the axis' start and keeps the stride.
            out.shape[axis] = 0;
            return Ok(out);
        }
        let shift = mul(self.strides[axis], start, "the slice offset")?;
        out.offset = add(self.offset, shift, "the slice offset")?;
        if len > 1 {
            // A single element never steps, so its stride is kept (numpy's
            // would be `stride * step`, possibly wrapped; it does not matter).
            out.strides[axis] = mul(self.strides[axis], step, "the slice stride")?;
        }
        out.shape[axis] = len as usize;
        Ok(out)
    }

    /// numpy's `a[..., i, ...]`: fixes `axis` at `i` (negative counts from the
    /// end) and drops that axis.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let m = Layout::contiguous(DType::F32, &[3, 4])?;
    /// let last_col = m.index(1, -1)?;
    /// assert_eq!((last_col.shape(), last_col.strides(), last_col.offset()), (&[3][..], &[16][..], 12));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn index(&self, axis: usize, i: isize) -> Result<Layout, Error> {
        let ndim = self.ndim();
        if axis >= ndim {
            return Err(Error::BadAxis { axis, ndim });
        }
        let n = self.shape[axis];
        let resolved = if i < 0 {
            i.checked_add(n as isize)
        } else {
            Some(i)
        };
        let Some(j) = resolved.filter(|&j| j >= 0 && (j as usize) < n) else {
            return Err(Error::IndexOutOfRange {
                index: i,
                axis,
                len: n,
            });
        };
        let mut out = *self;
        let shift = mul(self.strides[axis], j, "the index offset")?;
        out.offset = add(self.offset, shift, "the index offset")?;
        out.shape.copy_within(axis + 1..ndim, axis);
        out.strides.copy_within(axis + 1..ndim, axis);
        out.ndim -= 1;
        Ok(out)
    }

    /// numpy's `a.transpose(axes)`: axis `k` of the result is axis `axes[k]` of `self`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let l = Layout::contiguous(DType::U8, &[2, 3, 4])?.permute(&[2, 0, 1])?;
    /// assert_eq!((l.shape(), l.strides()), (&[4, 2, 3][..], &[1, 12, 4][..]));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn permute(&self, axes: &[usize]) -> Result<Layout, Error> {
        let ndim = self.ndim();
        if axes.len() != ndim {
            return Err(Error::LengthMismatch {
                what: "axes",
                expected: ndim,
                got: axes.len(),
            });
        }
        let mut seen = 0u32;
        let mut out = *self;
        for (k, &axis) in axes.iter().enumerate() {
            if axis >= ndim {
                return Err(Error::BadAxis { axis, ndim });
            }
            if seen & (1 << axis) != 0 {
                return Err(Error::RepeatedAxis { axis });
            }
            seen |= 1 << axis;
            out.shape[k] = self.shape[axis];
            out.strides[k] = self.strides[axis];
        }
        Ok(out)
    }

    /// numpy's `a.T`: the axes in reverse order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let t = Layout::contiguous(DType::F32, &[2, 3])?.transpose();
    /// assert_eq!((t.shape(), t.strides()), (&[3, 2][..], &[4, 12][..]));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn transpose(&self) -> Layout {
        let mut out = *self;
        let ndim = self.ndim();
        out.shape[..ndim].reverse();
        out.strides[..ndim].reverse();
        out
    }

    /// numpy's `a.reshape(shape)` when it can return a view; `NeedsCopy` when
    /// no strides over the same bytes give that shape in C order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Error, Layout};
    /// let m = Layout::contiguous(DType::I32, &[3, 4])?;
    /// assert_eq!(m.reshape(&[2, 6])?.strides(), &[24, 4]);
    /// assert!(matches!(m.transpose().reshape(&[12]), Err(Error::NeedsCopy { .. })));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn reshape(&self, shape: &[usize]) -> Result<Layout, Error> {
        let to = checked_nbytes(self.dtype, shape)? / self.dtype.size();
        let from = self.size();
        if from != to {
            return Err(Error::SizeMismatch { from, to });
        }
        if shape == self.shape() {
            return Ok(*self); // numpy keeps the strides as they are
        }
        // Start from a copy (cheaper than a fresh zeroed layout); entries
        // past the new `ndim` are never read.
        let mut out = *self;
        out.ndim = shape.len() as u8;
        out.shape[..shape.len()].copy_from_slice(shape);
        out.set_c_strides();
        if from == 0 {
            return Ok(out);
        }
        // The old axes that matter: length-1 axes can be dropped.
        let mut old_axis = [0u8; MAX_NDIM];
        let mut m = 0;
        for axis in 0..self.ndim() {
            if self.shape[axis] != 1 {
                old_axis[m] = axis as u8;
                m += 1;
            }
        }
        let old_axes = |k: usize| usize::from(old_axis[k]);
        let old_shape = |k: usize| self.shape[old_axes(k)];
        let old_strides = |k: usize| self.strides[old_axes(k)];
        // Match groups of old axes to groups of new axes with equal products;
        // each old group must be mergeable (C-contiguous among itself).
        let new_shape = shape;
        let (mut oi, mut ni) = (0, 0);
        let mut last_stride = self.dtype.size() as isize;
        while oi < m && ni < new_shape.len() {
            let (mut oj, mut nj) = (oi + 1, ni + 1);
            let (mut op, mut np) = (old_shape(oi), new_shape[ni]);
            while op != np {
                if np < op {
                    np *= new_shape[nj];
                    nj += 1;
                } else {
                    op *= old_shape(oj);
                    oj += 1;
                }
            }
            for k in oi..oj - 1 {
                let needed = mul(
                    old_strides(k + 1),
                    old_shape(k + 1) as isize,
                    "a merged stride",
                )?;
                if old_strides(k) != needed {
                    let axis = old_axes(k);
                    return Err(Error::NeedsCopy {
                        axis,
                        stride: old_strides(k),
                        needed,
                    });
                }
            }
            out.strides[nj - 1] = old_strides(oj - 1);
            for k in (ni + 1..nj).rev() {
                out.strides[k - 1] = mul(out.strides[k], new_shape[k] as isize, "a merged stride")?;
            }
            // numpy gives trailing length-1 axes the innermost stride so far.
            last_stride = out.strides[nj - 1];
            oi = oj;
            ni = nj;
        }
        // Trailing length-1 axes of the new shape.
        for k in ni..new_shape.len() {
            out.strides[k] = last_stride;
        }
        Ok(out)
    }

    /// numpy's `np.broadcast_to(a, shape)`: leading axes are added and
    /// length-1 axes stretched with stride 0. The result is read-only, since
    /// its elements share bytes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let row = Layout::contiguous(DType::F32, &[3])?;
    /// let grid = row.broadcast_to(&[2, 3])?;
    /// assert_eq!(grid.strides(), &[0, 4]);
    /// assert!(grid.is_read_only());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout, Error> {
        let ndim = self.ndim();
        if shape.len() < ndim {
            return Err(Error::BroadcastRank {
                ndim,
                to: shape.len(),
            });
        }
        if shape.len() > MAX_NDIM {
            return Err(Error::TooManyDims {
                ndim: shape.len(),
                max: MAX_NDIM,
            });
        }
        let lead = shape.len() - ndim;
        let mut strides = [0isize; MAX_NDIM];
        for (k, &to) in shape.iter().enumerate().skip(lead) {
            let (from, stride) = (self.shape[k - lead], self.strides[k - lead]);
            // numpy gives every length-1 source axis stride 0, stretched or not.
            strides[k] = if from == 1 {
                0
            } else if from == to {
                stride
            } else {
                return Err(Error::NotBroadcastable { axis: k, from, to });
            };
        }
        let strides = &strides[..shape.len()];
        Layout::build(
            self.dtype,
            self.order,
            self.flags | READ_ONLY,
            self.offset,
            shape,
            strides,
        )
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

    #[test]
    fn permute_rejects_repeats_and_strangers() {
        let l = Layout::contiguous(DType::U8, &[2, 3]).unwrap();
        assert_eq!(l.permute(&[0, 0]), Err(Error::RepeatedAxis { axis: 0 }));
        assert_eq!(l.permute(&[2, 0]), Err(Error::BadAxis { axis: 2, ndim: 2 }));
        assert_eq!(
            l.permute(&[0]),
            Err(Error::LengthMismatch {
                what: "axes",
                expected: 2,
                got: 1
            })
        );
        assert_eq!(l.permute(&[1, 0]), Ok(l.transpose()));
    }

    #[test]
    fn reinterpret_follows_numpy() {
        let scalar = Layout::contiguous(DType::I32, &[]).unwrap();
        assert_eq!(
            scalar.reinterpret(DType::F32).unwrap().shape(),
            &[] as &[usize]
        );
        let err = scalar.reinterpret(DType::U8).unwrap_err();
        assert_eq!(
            err,
            Error::ScalarItemsize {
                from: DType::I32,
                to: DType::U8
            }
        );
        let l = Layout::contiguous(DType::I32, &[2, 3]).unwrap();
        // Non-contiguous last axis.
        let t = l.transpose();
        assert_eq!(
            t.reinterpret(DType::I16),
            Err(Error::NotContiguous {
                axis: 1,
                stride: 12,
                itemsize: 4
            })
        );
        assert!(t.reinterpret(DType::F32).is_ok());
        // 0-d
        let s = l.index(0, 0).unwrap().index(0, 0).unwrap();
        assert!(s.reinterpret(DType::I16).is_err());
        assert!(s.reinterpret(DType::U32).is_ok());
        // Growing: 3 * 4 bytes does not divide by 8.
        assert_eq!(
            l.reinterpret(DType::F64),
            Err(Error::ItemsizeMismatch {
                nbytes: 12,
                itemsize: 8,
                dtype: DType::F64
            })
        );
        // Length-1 last axis with any stride.
        let col = l.slice(1, Some(0), Some(1), 1).unwrap();
        assert_eq!(col.reinterpret(DType::U8).unwrap().shape(), &[2, 4]);
    }

    #[test]
    fn empty_slice_keeps_the_offset() {
        let l = Layout::contiguous(DType::I16, &[4]).unwrap();
        let e = l.slice(0, Some(3), Some(1), 1).unwrap();
        assert_eq!((e.shape(), e.offset()), (&[0][..], 0));
        let e = l.slice(0, Some(1), Some(3), -1).unwrap();
        assert_eq!((e.shape(), e.offset()), (&[0][..], 0));
        assert_eq!(l.slice(0, None, None, 0), Err(Error::ZeroStep { axis: 0 }));
        assert_eq!(
            l.slice(1, None, None, 1),
            Err(Error::BadAxis { axis: 1, ndim: 1 })
        );
    }
}
