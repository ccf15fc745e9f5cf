#![doc = include_str!("../../README.md")]
#![deny(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks
)]

mod buffer;
mod copy;
#[cfg(feature = "gpu")]
pub mod gpu;
mod mapped;
#[cfg(feature = "python")]
mod python;
mod shared;

use std::fmt;

pub use buffer::Buffer;
/// The core's layout error: what is wrong with a view, with the numbers.
pub use bytelens_core::Error as LayoutError;
pub use copy::{
    can_cast, can_dequantize, copy_into, dequantize_into, dequantize_into_threads, gather_into,
};
pub use mapped::{MapMode, MappedFile};
pub use shared::{DATA_OFFSET, LockGuard, LockKind, MAX_NAME, SharedBuffer, SharedError};
// Everything else of the core (the local `Error` below shadows the core's).
pub use bytelens_core::*;

/// Errors of the native crate: a layout error from the core, or what goes
/// wrong with memory the core never sees.
///
/// # Examples
/// ```
/// use bytelens::{Buffer, Error, LayoutError};
/// let buf = Buffer::new(3)?;
/// let err = buf.view::<i16>().unwrap_err();
/// assert!(matches!(err, Error::Layout(LayoutError::ItemsizeMismatch { nbytes: 3, itemsize: 2, .. })));
/// assert_eq!(err.to_string(), "3 bytes is not a multiple of 2, the size of int16");
/// # Ok::<(), bytelens::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The view does not fit the buffer, or the layout operation is invalid.
    Layout(LayoutError),
    /// The allocator could not provide the memory.
    Alloc {
        /// Bytes asked for.
        nbytes: usize,
        /// Alignment asked for.
        align: usize,
    },
    /// An alignment that is not a power of two.
    BadAlign {
        /// The alignment given.
        align: usize,
    },
    /// A conversion that numpy's `same_kind` casting refuses (a float to
    /// an integer, an integer to bool, ...).
    Cast {
        /// The source element.
        from: Descr,
        /// The element asked for.
        to: Descr,
    },
    /// A destination slice of the wrong length.
    SizeMismatch {
        /// Bytes the view holds.
        expected: usize,
        /// Bytes the destination holds.
        got: usize,
    },
    /// Blocks that cannot be dequantised as asked: a type bytelens has no
    /// kernel for, an output type other than float32, float16 and
    /// bfloat16, or bytes that are not whole blocks.
    Dequantize {
        /// What is wrong, with the numbers.
        detail: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Layout(err) => err.fmt(f),
            Error::Alloc { nbytes, align } => {
                write!(f, "could not allocate {nbytes} bytes aligned to {align}")
            }
            Error::BadAlign { align } => write!(f, "alignment {align} is not a power of two"),
            Error::Cast { from, to } => write!(
                f,
                "cannot convert {from} to {to}: numpy's same_kind casting refuses {} to {}",
                from.dtype, to.dtype
            ),
            Error::SizeMismatch { expected, got } => {
                write!(
                    f,
                    "the view holds {expected} bytes but the destination holds {got}"
                )
            }
            Error::Dequantize { detail } => f.write_str(detail),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Layout(err) => Some(err),
            _ => None,
        }
    }
}

impl From<LayoutError> for Error {
    fn from(err: LayoutError) -> Error {
        Error::Layout(err)
    }
}
