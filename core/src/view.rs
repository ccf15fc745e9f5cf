//! Typed, checked access to the elements of a layout over borrowed bytes.
//!
//! The only `unsafe` of the core lives here: element reads and writes skip
//! bounds checks because [`Layout::check`] proved them once, up front.

use core::marker::PhantomData;

use bytemuck::Pod;
use half::{bf16, f16};

use crate::{ByteOrder, DType, Error, Layout, Offsets};

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be an element of a [`View`]: plain old data with a
/// bytelens dtype. Implemented for the integer and float types, including
/// `half`'s `f16` and `bf16`. (`bool` is not `Pod`: read booleans as `u8`
/// or as [`Scalar`](crate::Scalar)s.)
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Element};
/// assert_eq!(<half::bf16 as Element>::DTYPE, DType::BF16);
/// ```
pub trait Element: Pod + sealed::Sealed {
    /// The dtype this type stores.
    const DTYPE: DType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}

elements! {
    u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
    u64 => U64, i64 => I64, f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
    crate::F8E4M3FN => F8E4M3FN, crate::F8E5M2 => F8E5M2, crate::F8E8M0FNU => F8E8M0FNU,
}

/// Checks everything a view needs before its unchecked accesses.
fn check_view<T: Element>(bytes: &[u8], layout: &Layout) -> Result<(), Error> {
    if layout.dtype() != T::DTYPE {
        return Err(Error::WrongElement {
            layout: layout.dtype(),
            element: T::DTYPE,
        });
    }
    layout.check(bytes.len())?;
    let align = T::DTYPE.align();
    let address = bytes.as_ptr() as usize;
    if layout.requires_alignment() && layout.size() > 0 && !address.is_multiple_of(align) {
        return Err(Error::MisalignedBuffer {
            address,
            align,
            dtype: T::DTYPE,
        });
    }
    Ok(())
}

fn swap_if<T: Element>(mut value: T, order: ByteOrder) -> T {
    if order != ByteOrder::NATIVE {
        bytemuck::bytes_of_mut(&mut value).reverse();
    }
    value
}

/// A typed, read-only view of a layout's elements over borrowed bytes.
///
/// Made only through [`View::new`], which checks the layout against the
/// bytes once; element access afterwards cannot go out of bounds. Byte order
/// is honoured: a big-endian layout reads correct values on a little-endian
/// host. Iteration is in C order.
///
/// Alignment is checked against the real addresses: `[u8; N]` and
/// `Vec<u8>` only promise alignment 1, so give views storage aligned for
/// the element (bytelens's `Buffer`, or `[u64; N]` seen through
/// `bytemuck::cast_slice`), or opt out with [`Layout::unaligned`].
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout, View};
/// let word = [0x11223344u32.to_le()]; // u32 storage: aligned for u16 too
/// let bytes: &[u8] = bytemuck::cast_slice(&word);
/// let halves = View::<i16>::new(bytes, Layout::from_bytes(DType::I16, 4)?)?;
/// assert_eq!(halves.iter().collect::<Vec<_>>(), [0x3344, 0x1122]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct View<'a, T: Element> {
    // INVARIANT: `check_view::<T>(bytes, &layout)` succeeded.
    bytes: &'a [u8],
    layout: Layout,
    element: PhantomData<T>,
}

impl<'a, T: Element> View<'a, T> {
    /// Checks `layout` against `bytes` and `T`, then builds the view.
    ///
    /// Fails with the layout's own errors from [`Layout::check`], with
    /// `WrongElement` when `T` is not the layout's dtype, or with
    /// `MisalignedBuffer` when `bytes` itself starts at an address that is
    /// not a multiple of `T`'s alignment (unless the layout is
    /// [`unaligned`](Layout::unaligned)).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Error, Layout, View};
    /// let bytes = [0u8; 3];
    /// let l = Layout::new(DType::I16, 0, &[2], &[2])?;
    /// assert!(matches!(View::<i16>::new(&bytes, l), Err(Error::OutOfBounds { .. })));
    /// assert!(matches!(View::<u16>::new(&bytes[..2], l), Err(Error::WrongElement { .. })));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn new(bytes: &'a [u8], layout: Layout) -> Result<View<'a, T>, Error> {
        check_view::<T>(bytes, &layout)?;
        // SAFETY: `check_view` just succeeded for these bytes and this layout.
        Ok(unsafe { View::new_unchecked(bytes, layout) })
    }

    /// Builds a view without checking.
    ///
    /// # Safety
    /// `layout.dtype()` must be `T::DTYPE`, every element of `layout` must lie
    /// inside `bytes` (as [`Layout::check`] proves), and if the layout requires
    /// alignment, `bytes` must start at a multiple of `T`'s alignment.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, View};
    /// let bytes = [1u8, 2, 3, 4];
    /// let layout = Layout::from_bytes(DType::U8, 4)?;
    /// layout.check(bytes.len())?;
    /// // SAFETY: checked just above; u8 needs no alignment.
    /// let view = unsafe { View::<u8>::new_unchecked(&bytes, layout) };
    /// assert_eq!(view.get(&[3])?, 4);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub unsafe fn new_unchecked(bytes: &'a [u8], layout: Layout) -> View<'a, T> {
        View {
            bytes,
            layout,
            element: PhantomData,
        }
    }

    /// The whole of `bytes` as a one-dimensional array (numpy's `frombuffer`).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::View;
    /// let floats = [1.0f32, 2.0];
    /// assert_eq!(View::<f32>::from_bytes(bytemuck::cast_slice(&floats))?.get(&[1])?, 2.0);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn from_bytes(bytes: &'a [u8]) -> Result<View<'a, T>, Error> {
        View::new(bytes, Layout::from_bytes(T::DTYPE, bytes.len())?)
    }

    /// The checked layout.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::View;
    /// let words = [1u16, 2, 3];
    /// let v = View::<u16>::from_bytes(bytemuck::cast_slice(&words))?;
    /// assert_eq!((v.layout().shape(), v.len(), v.is_empty()), (&[3][..], 3, false));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The bytes the view was made over (all of them, not only the view's elements).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::View;
    /// let words = [7u32, 8];
    /// let v = View::<u32>::from_bytes(bytemuck::cast_slice(&words))?;
    /// assert_eq!((v.bytes().len(), v.layout().shape()), (8, &[2][..]));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::View;
    /// let words = [1u16, 2, 3];
    /// let v = View::<u16>::from_bytes(bytemuck::cast_slice(&words))?;
    /// assert_eq!(v.len(), 3);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// True when the view has no elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::View;
    /// let words = [1u16, 2, 3];
    /// let v = View::<u16>::from_bytes(bytemuck::cast_slice(&words))?;
    /// assert!(!v.is_empty());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `index` (one entry per axis).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, View};
    /// let bytes: Vec<u8> = (0u8..6).collect();
    /// let m = View::<u8>::new(&bytes, Layout::contiguous(DType::U8, &[2, 3])?.transpose())?;
    /// assert_eq!(m.get(&[2, 1])?, 5);
    /// assert!(m.get(&[3, 0]).is_err());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn get(&self, index: &[usize]) -> Result<T, Error> {
        let offset = self.layout.element_offset(index)?;
        // SAFETY: `element_offset` succeeded, so `index` is within the shape
        // and `offset` is an element offset of the checked layout (INVARIANT).
        Ok(unsafe { self.read_at(offset as usize) })
    }

    /// Reads the element at byte `offset`.
    ///
    /// # Safety
    /// `offset` must be one of the layout's element offsets.
    unsafe fn read_at(&self, offset: usize) -> T {
        // SAFETY: by the INVARIANT every element offset `o` satisfies
        // `o + size_of::<T>() <= bytes.len()`, so the read stays in `bytes`;
        // `read_unaligned` has no alignment requirement and `T: Pod` accepts
        // any bit pattern.
        let value = unsafe { self.bytes.as_ptr().add(offset).cast::<T>().read_unaligned() };
        swap_if(value, self.layout.byte_order())
    }

    /// The elements in C order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Layout, View};
    /// let word = [u32::from_ne_bytes([0x12, 0x34, 0x56, 0x78])];
    /// let be = Layout::from_bytes(DType::U16, 4)?.with_byte_order(ByteOrder::Big);
    /// let v = View::<u16>::new(bytemuck::cast_slice(&word), be)?;
    /// assert_eq!(v.iter().collect::<Vec<_>>(), [0x1234, 0x5678]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn iter(&self) -> Iter<'a, T> {
        Iter {
            view: *self,
            offsets: Offsets::new(&self.layout),
        }
    }

    /// The elements as a slice, when they are packed in C order, in native
    /// byte order and aligned; `None` otherwise (then use [`iter`](View::iter)).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, View};
    /// let words = [1u32, 2, 3, 4];
    /// let bytes: &[u8] = bytemuck::cast_slice(&words);
    /// let v = View::<u32>::from_bytes(bytes)?;
    /// assert_eq!(v.as_slice(), Some(&words[..]));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn as_slice(&self) -> Option<&'a [T]> {
        let range = packed_range(&self.layout)?;
        bytemuck::try_cast_slice(self.bytes.get(range)?).ok()
    }
}

/// The byte range of a C-contiguous, native-order layout's elements.
fn packed_range(layout: &Layout) -> Option<core::ops::Range<usize>> {
    if !layout.is_c_contiguous() || layout.byte_order() != ByteOrder::NATIVE {
        return None;
    }
    let start = usize::try_from(layout.offset()).ok()?;
    Some(start..start + layout.nbytes())
}

impl<T: Element + core::fmt::Debug> core::fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("View")
            .field("layout", &self.layout)
            .field("elements", &DebugList(self.iter()))
            .finish()
    }
}

/// At most this many elements are shown by `Debug`.
const DEBUG_ELEMENTS: usize = 32;

struct DebugList<I>(I);

impl<I: ExactSizeIterator + Clone> core::fmt::Debug for DebugList<I>
where
    I::Item: core::fmt::Debug,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut list = f.debug_list();
        list.entries(self.0.clone().take(DEBUG_ELEMENTS));
        let rest = self.0.len().saturating_sub(DEBUG_ELEMENTS);
        if rest > 0 {
            list.entry(&format_args!("... {rest} more"));
        }
        list.finish()
    }
}

/// The elements of a [`View`] in C order.
///
/// # Examples
/// ```
/// use bytelens_core::View;
/// let words = [1u16, 2, 3];
/// let it = View::<u16>::from_bytes(bytemuck::cast_slice(&words))?.iter();
/// assert_eq!(it.len(), 3);
/// assert_eq!(it.sum::<u16>(), 6);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Iter<'a, T: Element> {
    view: View<'a, T>,
    offsets: Offsets,
}

impl<T: Element> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let offset = self.offsets.next()?;
        // SAFETY: `offsets` yields exactly the element offsets of the view's
        // checked layout.
        Some(unsafe { self.view.read_at(offset) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.offsets.size_hint()
    }
}

impl<T: Element> ExactSizeIterator for Iter<'_, T> {}

/// A typed view that can also write, over exclusively borrowed bytes.
///
/// Refuses read-only layouts (such as [`broadcast_to`](Layout::broadcast_to)'s).
/// Writes honour the byte order.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout, ViewMut};
/// let mut word = [0u32];
/// let mut v = ViewMut::<f32>::from_bytes(bytemuck::cast_slice_mut(&mut word))?;
/// v.set(&[0], 1.0)?;
/// assert_eq!(bytemuck::cast_slice::<u32, u8>(&word), [0x00, 0x00, 0x80, 0x3f]);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
pub struct ViewMut<'a, T: Element> {
    // INVARIANT: `check_view::<T>(bytes, &layout)` succeeded and the layout is not read-only.
    bytes: &'a mut [u8],
    layout: Layout,
    element: PhantomData<T>,
}

impl<'a, T: Element> ViewMut<'a, T> {
    /// Checks `layout` against `bytes` and `T` (as [`View::new`] does) and
    /// that it is not read-only, then builds the view.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, ViewMut};
    /// let mut words = [0u32; 2];
    /// let col = Layout::new(DType::U32, 4, &[1], &[4])?;
    /// ViewMut::<u32>::new(bytemuck::cast_slice_mut(&mut words), col)?.fill(9);
    /// assert_eq!(words, [0, 9]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn new(bytes: &'a mut [u8], layout: Layout) -> Result<ViewMut<'a, T>, Error> {
        if layout.is_read_only() {
            return Err(Error::ReadOnly);
        }
        check_view::<T>(bytes, &layout)?;
        Ok(ViewMut {
            bytes,
            layout,
            element: PhantomData,
        })
    }

    /// The whole of `bytes` as a one-dimensional array.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 4];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// assert_eq!((v.len(), v.is_empty(), v.layout().shape()), (4, false, &[4][..]));
    /// v.set(&[3], 1)?;
    /// assert_eq!(v.as_view().get(&[3])?, 1);
    /// assert_eq!(v.get(&[3])?, 1);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn from_bytes(bytes: &'a mut [u8]) -> Result<ViewMut<'a, T>, Error> {
        let layout = Layout::from_bytes(T::DTYPE, bytes.len())?;
        ViewMut::new(bytes, layout)
    }

    /// The checked layout.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 2];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// assert_eq!(v.layout().strides(), &[2]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 2];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// assert_eq!(v.len(), 2);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// True when the view has no elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 2];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// assert!(!v.is_empty());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A read-only view of the same elements.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 2];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// v.fill(4);
    /// assert_eq!(v.as_view().iter().sum::<u16>(), 8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn as_view(&self) -> View<'_, T> {
        // SAFETY: the INVARIANT of `self` is the precondition of `new_unchecked`.
        unsafe { View::new_unchecked(self.bytes, self.layout) }
    }

    /// The element at `index`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 2];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// v.set(&[1], 6)?;
    /// assert_eq!(v.get(&[1])?, 6);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn get(&self, index: &[usize]) -> Result<T, Error> {
        self.as_view().get(index)
    }

    /// Writes the element at byte `offset`.
    ///
    /// # Safety
    /// `offset` must be one of the layout's element offsets.
    unsafe fn write_at(&mut self, offset: usize, value: T) {
        let value = swap_if(value, self.layout.byte_order());
        // SAFETY: by the INVARIANT, `offset + size_of::<T>() <= bytes.len()`;
        // `write_unaligned` has no alignment requirement; `bytes` is borrowed
        // exclusively, so no one else observes the write.
        unsafe {
            self.bytes
                .as_mut_ptr()
                .add(offset)
                .cast::<T>()
                .write_unaligned(value)
        }
    }

    /// Sets the element at `index`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, ViewMut};
    /// let mut word = [0u32];
    /// let mut v = ViewMut::<i32>::from_bytes(bytemuck::cast_slice_mut(&mut word))?;
    /// v.set(&[0], 0x11223344)?;
    /// assert_eq!(bytemuck::cast_slice::<u32, u8>(&word), [0x44, 0x33, 0x22, 0x11]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn set(&mut self, index: &[usize], value: T) -> Result<(), Error> {
        let offset = self.layout.element_offset(index)?;
        // SAFETY: `element_offset` succeeded, so `offset` is an element offset.
        unsafe { self.write_at(offset as usize, value) };
        Ok(())
    }

    /// Sets every element to `value`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 4];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// v.fill(5);
    /// assert_eq!(words, [5; 4]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn fill(&mut self, value: T) {
        for offset in Offsets::new(&self.layout) {
            // SAFETY: `Offsets` yields the element offsets of the checked layout.
            unsafe { self.write_at(offset, value) };
        }
    }

    /// Writes `values` into the elements in C order; `values` must have
    /// exactly [`len`](ViewMut::len) entries.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout, ViewMut};
    /// let mut bytes = [0u8; 6];
    /// let t = Layout::contiguous(DType::U8, &[2, 3])?.transpose();
    /// ViewMut::<u8>::new(&mut bytes, t)?.copy_from(&[1, 2, 3, 4, 5, 6])?;
    /// assert_eq!(bytes, [1, 3, 5, 2, 4, 6]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn copy_from(&mut self, values: &[T]) -> Result<(), Error> {
        if values.len() != self.len() {
            return Err(Error::CountMismatch {
                expected: self.len(),
                got: values.len(),
            });
        }
        for (offset, &value) in Offsets::new(&self.layout).zip(values) {
            // SAFETY: `Offsets` yields the element offsets of the checked layout.
            unsafe { self.write_at(offset, value) };
        }
        Ok(())
    }

    /// The elements as a mutable slice, when packed in C order, native byte
    /// order and aligned; `None` otherwise.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ViewMut;
    /// let mut words = [0u16; 4];
    /// let mut v = ViewMut::<u16>::from_bytes(bytemuck::cast_slice_mut(&mut words))?;
    /// v.as_mut_slice().unwrap()[1] = 3;
    /// assert_eq!(words, [0, 3, 0, 0]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        let range = packed_range(&self.layout)?;
        bytemuck::try_cast_slice_mut(self.bytes.get_mut(range)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(16))]
    struct Aligned([u8; 32]);

    #[test]
    fn read_only_layouts_refuse_writes() {
        let mut buf = Aligned([0; 32]);
        let row = Layout::contiguous(DType::U32, &[4]).unwrap();
        let grid = row.broadcast_to(&[2, 4]).unwrap();
        assert!(matches!(
            ViewMut::<u32>::new(&mut buf.0, grid),
            Err(Error::ReadOnly)
        ));
        assert!(matches!(
            ViewMut::<u32>::new(&mut buf.0, row.read_only()),
            Err(Error::ReadOnly)
        ));
        let v = View::<u32>::new(&buf.0, grid).unwrap();
        assert_eq!(v.len(), 8);
    }

    #[test]
    fn misaligned_base_needs_opt_in() {
        let buf = Aligned([7; 32]);
        let bytes = &buf.0[1..9];
        let l = Layout::from_bytes(DType::U32, 8).unwrap();
        let err = View::<u32>::new(bytes, l).unwrap_err();
        assert!(err.is_alignment(), "{err}");
        let v = View::<u32>::new(bytes, l.unaligned()).unwrap();
        assert_eq!(
            v.iter().collect::<std::vec::Vec<_>>(),
            [0x0707_0707, 0x0707_0707]
        );
        assert_eq!(v.as_slice(), None);
    }

    #[test]
    fn every_element_type_round_trips_in_both_orders() {
        fn round_trip<T: Element + PartialEq + core::fmt::Debug>(value: T) {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let mut buf = Aligned([0; 32]);
                let l = Layout::contiguous(T::DTYPE, &[2])
                    .unwrap()
                    .with_byte_order(order)
                    .with_offset(8)
                    .unwrap();
                let mut v = ViewMut::<T>::new(&mut buf.0, l).unwrap();
                v.set(&[1], value).unwrap();
                assert_eq!(v.get(&[1]).unwrap(), value);
                let size = core::mem::size_of::<T>();
                let mut stored = [0u8; 8];
                stored[..size].copy_from_slice(&buf.0[8 + size..8 + 2 * size]);
                if order == ByteOrder::Big {
                    stored[..size].reverse();
                }
                assert_eq!(&stored[..size], bytemuck::bytes_of(&value));
            }
        }
        round_trip(0xABu8);
        round_trip(-5i8);
        round_trip(0xABCDu16);
        round_trip(-1234i16);
        round_trip(0xDEAD_BEEFu32);
        round_trip(-123_456i32);
        round_trip(0x0123_4567_89AB_CDEFu64);
        round_trip(i64::MIN);
        round_trip(f16::from_f32(1.5));
        round_trip(bf16::from_f32(-2.5));
        round_trip(3.25f32);
        round_trip(-1e300f64);
    }

    extern crate std;
}
