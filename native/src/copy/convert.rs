//! Converting contiguous runs of elements from one dtype and byte order to
//! another, with numpy's `same_kind` casting rule.
//!
//! SKELETON (to be replaced by the real kernels): a per-element scalar
//! path through [`Scalar`].

use bytelens_core::{DType, Descr, Scalar};

use crate::Error;

/// Whether numpy's `same_kind` casting allows `from` → `to`
/// (`np.can_cast(from, to, "same_kind")`).
pub fn can_cast(from: DType, to: DType) -> bool {
    let kind = |d: DType| if d.is_float() { 'f' } else { d.kind() };
    match (kind(from), kind(to)) {
        ('b', _) | (_, 'f') => true,
        // A signed integer never becomes an unsigned one; every other pair
        // of integers converts (wrapping, as C does).
        ('u', 'u' | 'i') | ('i', 'i') => true,
        _ => from == to,
    }
}

/// A conversion of runs of `from` elements into runs of `to` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Convert {
    from: Descr,
    to: Descr,
}

impl Convert {
    /// The conversion `from` → `to`, or `Error::Cast` when `same_kind`
    /// casting refuses it.
    pub(crate) fn new(from: Descr, to: Descr) -> Result<Convert, Error> {
        if !can_cast(from.dtype, to.dtype) {
            return Err(Error::Cast { from, to });
        }
        Ok(Convert { from, to })
    }

    /// The source element.
    pub(crate) fn from(&self) -> Descr {
        self.from
    }

    /// The destination element.
    pub(crate) fn to(&self) -> Descr {
        self.to
    }

    /// Whether the bytes are copied unchanged.
    pub(crate) fn is_identity(&self) -> bool {
        self.from.dtype == self.to.dtype
            && (self.from.order == self.to.order || self.from.dtype.size() == 1)
    }

    /// Converts the `n` elements of `src` (`n * from.size()` bytes) into
    /// `dst` (`n * to.size()` bytes).
    pub(crate) fn run(&self, src: &[u8], dst: &mut [u8]) {
        let (a, b) = (self.from.dtype.size(), self.to.dtype.size());
        debug_assert_eq!(src.len() / a, dst.len() / b);
        for (s, d) in src.chunks_exact(a).zip(dst.chunks_exact_mut(b)) {
            let v = Scalar::read(self.from, s).expect("one element");
            let out = if self.to.dtype.is_float() {
                Scalar::float(self.to.dtype, v.to_f64()).expect("a float type")
            } else {
                let i = v.to_i128().expect("same_kind: an integer source");
                match self.to.dtype {
                    DType::Bool => Scalar::Bool(i != 0),
                    DType::U8 => Scalar::U8(i as u8),
                    DType::I8 => Scalar::I8(i as i8),
                    DType::U16 => Scalar::U16(i as u16),
                    DType::I16 => Scalar::I16(i as i16),
                    DType::U32 => Scalar::U32(i as u32),
                    DType::I32 => Scalar::I32(i as i32),
                    DType::U64 => Scalar::U64(i as u64),
                    _ => Scalar::I64(i as i64),
                }
            };
            out.write(self.to.order, d).expect("one element");
        }
    }
}
