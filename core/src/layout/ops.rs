//! The operations on a layout that numpy has on arrays (`view(dtype)`,
//! slicing, indexing, transposes, `reshape`, `broadcast_to`): each O(ndim),
//! none touching data.
#![forbid(unsafe_code)]

use super::{Layout, MAX_NDIM, READ_ONLY, add, checked_nbytes, mul};
use crate::{DType, Error};

impl Layout {
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
        // `n * old` fits: the lengths (0 counted as 1) times `old` do (INVARIANT).
        let axis_bytes = n * old;
        if !axis_bytes.is_multiple_of(new) {
            return Err(Error::ItemsizeMismatch {
                nbytes: axis_bytes,
                itemsize: new,
                dtype,
            });
        }
        out.shape[axis] = axis_bytes / new;
        out.strides[axis] = new as isize;
        // A wider dtype over an empty last axis keeps the other lengths, whose
        // product (0 counted as 1) times the new itemsize may then pass
        // `isize::MAX`: the size rule every layout keeps, checked again.
        checked_nbytes(dtype, out.shape())?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn reinterpret_keeps_the_size_rule() {
        // Found by the layout fuzzer: an empty last axis seen as a wider dtype
        // kept a length of 2^61, then transposed and narrowed, `n * old` overflowed.
        let big = 1usize << 61;
        let l = Layout::new(DType::U8, 0, &[big, 0], &[1, 1]).unwrap();
        assert_eq!(
            l.reinterpret(DType::U64),
            Err(Error::Overflow {
                what: "the array size"
            })
        );
        let l = Layout::new(DType::U8, 0, &[1 << 40, 0], &[1, 1]).unwrap();
        assert_eq!(l.reinterpret(DType::U64).unwrap().shape(), &[1 << 40, 0]);
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
