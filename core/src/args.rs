//! [`ViewArgs`]: the one rule by which every binding turns the arguments of
//! a view (`dtype, offset, shape?, strides?`) into a checked [`Layout`].
//!
//! The rule is on [`ViewArgs`].
#![forbid(unsafe_code)]

use crate::layout::{READ_ONLY, UNALIGNED};
use crate::{Descr, Error, Layout};

/// The arguments of a view, as a binding receives them, before any rule is
/// applied. Python's `Buffer.view` and `bl.Layout`, and JavaScript's
/// `Buffer.read`, `write`, `offsets` and `new Layout` all resolve their
/// arguments with [`resolve`](ViewArgs::resolve), so a view means the same
/// in every language. The rule:
///
/// - `offset` (bytes, default 0) must lie in `0..=len`; a negative offset,
///   or one past the end, is `OffsetOutside` (an out-of-bounds error).
/// - A `shape` with `strides` is taken as given (strides in bytes, negative
///   and zero allowed, one per axis).
/// - A `shape` without `strides` is C-contiguous from `offset`.
/// - No `shape`: one axis, of `count` elements when the caller knows how
///   many (JS `write` with its values), else of every element from `offset`
///   to the end of the buffer, whose byte length must divide by the
///   itemsize (numpy's `frombuffer` rule). Without a buffer length (a
///   `Layout` on its own) a shape is required: `MissingShape`.
/// - `strides` without a `shape` are refused (`MissingShape`): which axis
///   lengths they go with would be a guess.
/// - Then the layout is [`check`](Layout::check)ed against the buffer's
///   length (bounds, alignment) when there is one.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Descr, Error, ViewArgs};
/// let i16s = ViewArgs::new(Descr::native(DType::I16));
/// // The whole of a 16-byte buffer from byte 4: six int16.
/// let rest = ViewArgs { offset: 4, ..i16s }.resolve(Some(16))?;
/// assert_eq!((rest.shape(), rest.strides()), (&[6][..], &[2][..]));
/// // Every other int16, backwards, from the last.
/// let back = ViewArgs { offset: 14, shape: Some(&[4]), strides: Some(&[-4]), ..i16s };
/// assert_eq!(back.resolve(Some(16))?.offsets(16)?.collect::<Vec<_>>(), [14, 10, 6, 2]);
/// // Strides need a shape; negative offsets lie outside the buffer.
/// let err = ViewArgs { strides: Some(&[4]), ..i16s }.resolve(Some(16)).unwrap_err();
/// assert_eq!(err.to_string(), "strides were given without a shape: give the shape too");
/// let err = ViewArgs { offset: -2, ..i16s }.resolve(Some(16)).unwrap_err();
/// assert_eq!(err.kind(), "OutOfBounds");
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewArgs<'a> {
    /// The element type and byte order.
    pub descr: Descr,
    /// Byte offset of the first element (of element `[0, …, 0]`).
    pub offset: isize,
    /// Axis lengths; `None` for one axis as long as [`count`](Self::count)
    /// or the buffer allows.
    pub shape: Option<&'a [usize]>,
    /// Byte strides, one per axis; `None` for C order.
    pub strides: Option<&'a [isize]>,
    /// The length of the one axis when there is no shape (`None`: as many
    /// elements as fit from the offset to the end of the buffer).
    pub count: Option<usize>,
    /// Mark the layout read-only.
    pub read_only: bool,
    /// Allow offsets and strides that are not multiples of the alignment.
    pub unaligned: bool,
}

impl<'a> ViewArgs<'a> {
    /// The arguments of a plain `view(dtype)`: offset 0, no shape, no strides.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Descr, ViewArgs};
    /// let all = ViewArgs::new(Descr::native(DType::U32)).resolve(Some(12))?;
    /// assert_eq!(all.shape(), &[3]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub const fn new(descr: Descr) -> ViewArgs<'a> {
        ViewArgs {
            descr,
            offset: 0,
            shape: None,
            strides: None,
            count: None,
            read_only: false,
            unaligned: false,
        }
    }

    /// The checked layout these arguments describe over a buffer of `len`
    /// bytes, or, with `len` `None`, the layout alone (unchecked: no buffer
    /// to check it against).
    ///
    /// # Errors
    /// `OffsetOutside`, `MissingShape`, `ItemsizeMismatch` (a shapeless view
    /// whose bytes do not divide), the errors of [`Layout::new`], and with a
    /// length those of [`Layout::check`].
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Descr, ViewArgs};
    /// let args = ViewArgs { offset: 4, shape: Some(&[2, 2]), ..ViewArgs::new(Descr::native(DType::F32)) };
    /// let layout = args.resolve(None)?;
    /// assert_eq!((layout.offset(), layout.strides()), (4, &[8, 4][..]));
    /// assert_eq!(
    ///     args.resolve(Some(16)).unwrap_err().to_string(),
    ///     "the view reaches bytes 4..20 but the buffer holds 16 bytes"
    /// );
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    // Inlined so that the 528-byte Layout is built where the caller keeps it.
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    pub fn resolve(&self, len: Option<usize>) -> Result<Layout, Error> {
        let outside = || Error::OffsetOutside {
            offset: self.offset,
            len,
        };
        let offset = self.offset;
        if offset < 0 || len.is_some_and(|len| offset as usize > len) {
            return Err(outside());
        }
        let Descr { dtype, order } = self.descr;
        let flags =
            if self.read_only { READ_ONLY } else { 0 } | if self.unaligned { UNALIGNED } else { 0 };
        // One constructor call, each argument in place, and its result
        // returned as it is (checked through a reference): chaining `with_*`
        // calls or `?` copies the 528-byte Layout through every `Result`,
        // which shows in a Python view's ~200 ns.
        let result = match (self.shape, self.strides) {
            (Some(shape), Some(strides)) => {
                Layout::build(dtype, order, flags, offset, shape, strides)
            }
            (Some(shape), None) => Layout::build_c(dtype, order, flags, offset, shape),
            (None, Some(strides)) => Err(Error::MissingShape {
                strides: strides.len(),
            }),
            (None, None) => match (self.count, len) {
                (Some(count), _) => Layout::build_c(dtype, order, flags, offset, &[count]),
                (None, Some(len)) => {
                    // `0 <= offset <= len` was checked above.
                    let nbytes = len - offset as usize;
                    if !nbytes.is_multiple_of(dtype.size()) {
                        return Err(Error::ItemsizeMismatch {
                            nbytes,
                            itemsize: dtype.size(),
                            dtype,
                        });
                    }
                    Layout::build_c(dtype, order, flags, offset, &[nbytes / dtype.size()])
                }
                (None, None) => Err(Error::MissingShape { strides: 0 }),
            },
        };
        if let (Ok(layout), Some(len)) = (&result, len) {
            layout.check(len)?;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::{ByteOrder, DType};
    use std::string::ToString;

    const I32: Descr = Descr::native(DType::I32);

    #[test]
    fn offsets_from_zero_to_the_end_are_accepted() {
        for offset in [0, 4, 8] {
            let args = ViewArgs {
                offset,
                ..ViewArgs::new(I32)
            };
            let layout = args.resolve(Some(8)).unwrap();
            assert_eq!(layout.size(), (8 - offset as usize) / 4);
            assert_eq!(layout.offset(), offset);
        }
    }

    #[test]
    fn offsets_outside_name_the_offset_and_the_length() {
        for (offset, len) in [(-1, Some(8)), (9, Some(8)), (isize::MIN, None)] {
            let args = ViewArgs {
                offset,
                shape: Some(&[]),
                ..ViewArgs::new(I32)
            };
            let err = args.resolve(len).unwrap_err();
            assert_eq!(err, Error::OffsetOutside { offset, len });
            assert!(err.is_bounds());
            assert!(err.to_string().contains(&offset.to_string()));
        }
    }

    #[test]
    fn shapes_strides_and_counts() {
        let big = Descr::new(DType::U16, ByteOrder::Big);
        let args = ViewArgs {
            offset: 2,
            shape: Some(&[2, 3]),
            ..ViewArgs::new(big)
        };
        let c = args.resolve(Some(14)).unwrap();
        assert_eq!((c.strides(), c.descr()), (&[6, 2][..], big));
        let t = ViewArgs {
            strides: Some(&[2, 4]),
            ..args
        }
        .resolve(Some(14))
        .unwrap();
        assert_eq!(t.strides(), &[2, 4]);
        let counted = ViewArgs {
            count: Some(3),
            ..ViewArgs::new(I32)
        };
        assert_eq!(counted.resolve(Some(12)).unwrap().shape(), &[3]);
        assert!(counted.resolve(Some(8)).unwrap_err().is_bounds());
        assert_eq!(counted.resolve(None).unwrap().shape(), &[3]);
    }

    #[test]
    fn missing_shapes_are_refused() {
        let strided = ViewArgs {
            strides: Some(&[4, 8]),
            ..ViewArgs::new(I32)
        };
        for len in [Some(64), None] {
            assert_eq!(
                strided.resolve(len),
                Err(Error::MissingShape { strides: 2 })
            );
        }
        assert_eq!(
            ViewArgs::new(I32).resolve(None),
            Err(Error::MissingShape { strides: 0 })
        );
    }

    #[test]
    fn shapeless_views_need_whole_elements_and_flags_apply() {
        let err = ViewArgs {
            offset: 1,
            ..ViewArgs::new(I32)
        }
        .resolve(Some(8))
        .unwrap_err();
        assert_eq!(err.kind(), "ItemsizeMismatch");
        let unaligned = ViewArgs {
            offset: 1,
            shape: Some(&[1]),
            unaligned: true,
            read_only: true,
            ..ViewArgs::new(I32)
        };
        let layout = unaligned.resolve(Some(8)).unwrap();
        assert!(layout.is_read_only() && !layout.requires_alignment());
        let aligned = ViewArgs {
            unaligned: false,
            ..unaligned
        };
        assert!(aligned.resolve(Some(8)).unwrap_err().is_alignment());
    }
}
