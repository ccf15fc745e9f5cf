//! An owned, zeroed, aligned byte buffer that hands out checked typed views.

use std::alloc::{self, Layout as AllocLayout};
use std::fmt;
use std::ptr::NonNull;

use bytelens_core::{Element, Layout, View, ViewMut};

use crate::Error;

/// An owned, zero-initialised byte buffer, 64-byte aligned by default
/// (Arrow's alignment: enough for AVX-512 loads and GPU staging copies).
///
/// Typed views borrow it: [`view`](Buffer::view) sees all of it as one
/// array, [`view_as`](Buffer::view_as) through any checked [`Layout`].
///
/// # Examples
/// ```
/// use bytelens::{Buffer, DType, Layout};
/// let mut buf = Buffer::new(16)?;
/// buf.view_mut::<i32>()?.set(&[0], 0x11223344)?;
/// let halves = buf.view::<i16>()?;
/// assert_eq!((halves.get(&[0])?, halves.get(&[1])?), (0x3344, 0x1122));
/// // A checked as_strided: the second column of a 2x2 float32 matrix at offset 4.
/// let col = buf.view_as::<f32>(Layout::new(DType::F32, 4, &[2], &[8])?)?;
/// assert_eq!(col.len(), 2);
/// # Ok::<(), bytelens::Error>(())
/// ```
pub struct Buffer {
    // INVARIANT: `ptr` is valid for reads and writes of `len` initialised
    // bytes, aligned to `align`, owned by this value; it came from
    // `alloc_zeroed` with `AllocLayout(len, align)` when `len > 0`, and is a
    // dangling pointer aligned to `align` when `len == 0`.
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
}

// SAFETY: `Buffer` owns its bytes exclusively, like `Box<[u8]>`; shared
// access only reads and mutable access needs `&mut Buffer`.
unsafe impl Send for Buffer {}
// SAFETY: as above: `&Buffer` gives only shared, read-only access to the bytes.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// The default alignment of a new buffer, in bytes.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens::Buffer::DEFAULT_ALIGN, 64);
    /// ```
    pub const DEFAULT_ALIGN: usize = 64;

    /// A zeroed buffer of `nbytes` bytes, 64-byte aligned.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::new(1000)?;
    /// assert_eq!((buf.len(), buf.align()), (1000, 64));
    /// assert!(buf.as_bytes().iter().all(|&b| b == 0));
    /// assert_eq!(buf.as_ptr() as usize % 64, 0);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn new(nbytes: usize) -> Result<Buffer, Error> {
        Buffer::with_align(nbytes, Buffer::DEFAULT_ALIGN)
    }

    /// A zeroed buffer of `nbytes` bytes aligned to `align` (a power of two).
    ///
    /// # Examples
    /// ```
    /// use bytelens::{Buffer, Error};
    /// assert_eq!(Buffer::with_align(8, 4096)?.as_ptr() as usize % 4096, 0);
    /// assert!(matches!(Buffer::with_align(8, 3), Err(Error::BadAlign { align: 3 })));
    /// assert!(matches!(Buffer::new(usize::MAX), Err(Error::Alloc { .. })));
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn with_align(nbytes: usize, align: usize) -> Result<Buffer, Error> {
        if !align.is_power_of_two() {
            return Err(Error::BadAlign { align });
        }
        if nbytes == 0 {
            // `align` is a non-zero power of two, so it is a valid aligned dangling address.
            let ptr = NonNull::new(align as *mut u8).ok_or(Error::BadAlign { align })?;
            return Ok(Buffer { ptr, len: 0, align });
        }
        let layout = AllocLayout::from_size_align(nbytes, align)
            .map_err(|_| Error::Alloc { nbytes, align })?;
        // SAFETY: `layout` has a non-zero size (nbytes > 0 here).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(Error::Alloc { nbytes, align })?;
        Ok(Buffer {
            ptr,
            len: nbytes,
            align,
        })
    }

    /// A buffer holding a copy of `bytes`, 64-byte aligned.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::from_bytes(&[1, 0, 0, 0])?;
    /// assert_eq!((buf.len(), buf.is_empty()), (4, false));
    /// assert_eq!(buf.view::<u32>()?.get(&[0])?, 1);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Buffer, Error> {
        let mut buf = Buffer::new(bytes.len())?;
        buf.as_bytes_mut().copy_from_slice(bytes);
        Ok(buf)
    }

    /// Changes the length to `nbytes`, keeping the first bytes and zeroing
    /// any new ones; the alignment stays. Views borrow the buffer, so the
    /// borrow checker refuses a resize while any view is alive (Python's
    /// binding will raise `BufferError` instead, as `bytearray` does).
    ///
    /// On error the buffer is left as it was.
    ///
    /// # Examples
    /// ```
    /// let mut buf = bytelens::Buffer::from_bytes(&[1, 2, 3])?;
    /// buf.resize(5)?;
    /// assert_eq!(buf.as_bytes(), &[1, 2, 3, 0, 0]);
    /// buf.resize(2)?;
    /// assert_eq!(buf.as_bytes(), &[1, 2]);
    /// assert_eq!(buf.as_ptr() as usize % 64, 0);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn resize(&mut self, nbytes: usize) -> Result<(), Error> {
        if nbytes == self.len {
            return Ok(());
        }
        if self.len == 0 || nbytes == 0 {
            // Nothing to keep or nothing to hold: start afresh.
            let mut fresh = Buffer::with_align(nbytes, self.align)?;
            let kept = nbytes.min(self.len);
            fresh.as_bytes_mut()[..kept].copy_from_slice(&self.as_bytes()[..kept]);
            *self = fresh;
            return Ok(());
        }
        let (align, old) = (self.align, self.len);
        let too_big = Error::Alloc { nbytes, align };
        AllocLayout::from_size_align(nbytes, align).map_err(|_| too_big.clone())?;
        // SAFETY: by the INVARIANT (len > 0 here), `ptr` came from the global
        // allocator with `AllocLayout(old, align)`, which was valid; `nbytes`
        // is non-zero and, rounded up to `align`, fits in isize (checked
        // just above), as `realloc` requires.
        let raw = unsafe {
            alloc::realloc(
                self.ptr.as_ptr(),
                AllocLayout::from_size_align_unchecked(old, align),
                nbytes,
            )
        };
        // On failure `realloc` leaves the old block untouched, so `self` is unchanged.
        self.ptr = NonNull::new(raw).ok_or(too_big)?;
        self.len = nbytes;
        if nbytes > old {
            // `realloc` kept the first `old` bytes; the rest is uninitialised.
            // SAFETY: `ptr` is valid for writes of `nbytes` bytes, and
            // `old..nbytes` lies inside them.
            unsafe { self.ptr.as_ptr().add(old).write_bytes(0, nbytes - old) };
        }
        Ok(())
    }

    /// Length in bytes.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::new(8)?;
    /// assert_eq!(buf.len(), 8);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    ///
    /// # Examples
    /// ```
    /// assert!(bytelens::Buffer::new(0)?.is_empty());
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The alignment the buffer was allocated with.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens::Buffer::with_align(8, 128)?.align(), 128);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn align(&self) -> usize {
        self.align
    }

    /// Address of the first byte.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::new(8)?;
    /// assert_eq!(buf.as_ptr() as usize % 64, 0);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Mutable address of the first byte (for C code that fills the buffer).
    ///
    /// # Examples
    /// ```
    /// let mut buf = bytelens::Buffer::new(4)?;
    /// let p = buf.as_mut_ptr();
    /// // SAFETY: `p` points to 4 writable bytes owned by `buf`, which outlives the write.
    /// unsafe { p.add(3).write(7) };
    /// assert_eq!(buf.as_bytes(), &[0, 0, 0, 7]);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::new(8)?;
    /// assert_eq!(buf.as_bytes(), &[0; 8]);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: by the INVARIANT, `ptr` is valid for reads of `len`
        // initialised bytes for as long as `self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, mutably.
    ///
    /// # Examples
    /// ```
    /// let mut buf = bytelens::Buffer::new(2)?;
    /// buf.as_bytes_mut()[0] = 1;
    /// assert_eq!(buf.as_bytes(), &[1, 0]);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: by the INVARIANT, `ptr` is valid for reads and writes of
        // `len` bytes, and `&mut self` makes this borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// All bytes as a one-dimensional array of `T` in native byte order,
    /// as `np.frombuffer(buf, dtype)`: the length must divide by `T`'s size.
    ///
    /// # Examples
    /// ```
    /// let buf = bytelens::Buffer::new(8)?;
    /// assert_eq!(buf.view::<u16>()?.len(), 4);
    /// assert!(bytelens::Buffer::new(7)?.view::<u16>().is_err()); // 7 bytes is not a whole number of u16
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn view<T: Element>(&self) -> Result<View<'_, T>, Error> {
        Ok(View::from_bytes(self.as_bytes())?)
    }

    /// Like [`view`](Buffer::view), writable.
    ///
    /// # Examples
    /// ```
    /// let mut buf = bytelens::Buffer::new(8)?;
    /// buf.view_mut::<f64>()?.set(&[0], 0.5)?;
    /// assert_eq!(buf.view::<f64>()?.get(&[0])?, 0.5);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn view_mut<T: Element>(&mut self) -> Result<ViewMut<'_, T>, Error> {
        Ok(ViewMut::from_bytes(self.as_bytes_mut())?)
    }

    /// The elements of `layout`, checked against this buffer: in bounds,
    /// aligned (unless the layout opts out), dtype equal to `T`'s.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{Buffer, DType, Layout};
    /// let buf = Buffer::new(3)?;
    /// let err = buf.view_as::<i16>(Layout::new(DType::I16, 1, &[1], &[2])?).unwrap_err();
    /// assert_eq!(err.to_string(), "offset 1 is not a multiple of 2, the alignment of int16");
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn view_as<T: Element>(&self, layout: Layout) -> Result<View<'_, T>, Error> {
        Ok(View::new(self.as_bytes(), layout)?)
    }

    /// Like [`view_as`](Buffer::view_as), writable (refuses read-only layouts).
    ///
    /// # Examples
    /// ```
    /// use bytelens::{Buffer, DType, Layout};
    /// let mut buf = Buffer::new(8)?;
    /// let every_other = Layout::new(DType::U16, 0, &[2], &[4])?;
    /// buf.view_as_mut::<u16>(every_other)?.fill(0xffff);
    /// assert_eq!(buf.as_bytes(), &[0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0]);
    /// # Ok::<(), bytelens::Error>(())
    /// ```
    pub fn view_as_mut<T: Element>(&mut self, layout: Layout) -> Result<ViewMut<'_, T>, Error> {
        Ok(ViewMut::new(self.as_bytes_mut(), layout)?)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: by the INVARIANT, `ptr` came from `alloc_zeroed` with this
        // exact size and alignment (already validated then), and is freed once.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                AllocLayout::from_size_align_unchecked(self.len, self.align),
            )
        }
    }
}

impl AsRef<[u8]> for Buffer {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsMut<[u8]> for Buffer {
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_bytes_mut()
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("len", &self.len)
            .field("align", &self.align)
            .field("address", &self.ptr)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytelens_core::DType;

    #[test]
    fn zero_length_buffers_are_aligned_and_viewable() {
        let buf = Buffer::with_align(0, 256).unwrap();
        assert_eq!(buf.as_ptr() as usize % 256, 0);
        assert!(buf.view::<f64>().unwrap().is_empty());
    }

    #[test]
    fn views_share_the_bytes() {
        let mut buf = Buffer::new(8).unwrap();
        buf.view_mut::<f32>().unwrap().set(&[1], 1.0).unwrap();
        assert_eq!(&buf.as_bytes()[4..], &[0x00, 0x00, 0x80, 0x3f]);
        let words = buf.view::<u32>().unwrap();
        assert_eq!(words.as_slice(), Some(&[0, 0x3f80_0000][..]));
    }

    #[test]
    fn layout_errors_pass_through() {
        let mut buf = Buffer::new(8).unwrap();
        let l = Layout::new(DType::I32, 4, &[2], &[4]).unwrap();
        assert!(matches!(
            buf.view_as::<i32>(l),
            Err(Error::Layout(crate::LayoutError::OutOfBounds {
                start: 4,
                end: 12,
                len: 8
            }))
        ));
        let grid = Layout::contiguous(DType::I32, &[2])
            .unwrap()
            .broadcast_to(&[3, 2])
            .unwrap();
        assert!(matches!(
            buf.view_as_mut::<i32>(grid),
            Err(Error::Layout(crate::LayoutError::ReadOnly))
        ));
        assert!(buf.view_as::<i32>(grid).is_ok());
    }

    #[test]
    fn resize_keeps_zeroes_and_aligns() {
        let mut buf = Buffer::with_align(0, 128).unwrap();
        buf.resize(3).unwrap();
        buf.as_bytes_mut().copy_from_slice(&[7, 8, 9]);
        buf.resize(1000).unwrap();
        assert_eq!(&buf.as_bytes()[..4], &[7, 8, 9, 0]);
        assert!(buf.as_bytes()[3..].iter().all(|&b| b == 0));
        assert_eq!((buf.as_ptr() as usize % 128, buf.align()), (0, 128));
        buf.resize(2).unwrap();
        assert_eq!(buf.as_bytes(), &[7, 8]);
        buf.resize(0).unwrap();
        assert!(buf.is_empty());
        assert!(matches!(buf.resize(usize::MAX), Err(Error::Alloc { .. })));
        let mut buf = Buffer::from_bytes(&[1, 2]).unwrap();
        assert!(matches!(
            buf.resize(usize::MAX - 64),
            Err(Error::Alloc { .. })
        ));
        assert_eq!(buf.as_bytes(), &[1, 2]);
    }

    #[test]
    fn from_bytes_copies() {
        let buf = Buffer::from_bytes(&[1, 2, 3]).unwrap();
        assert_eq!(buf.as_bytes(), &[1, 2, 3]);
        assert_eq!(buf.align(), 64);
    }
}
