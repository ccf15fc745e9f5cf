//! Typed, aligned, reinterpretable views over one byte buffer, checked so
//! that no view reads out of bounds or misaligned: the same bytes seen as
//! `i32`, `i16`, `f32`, … by numpy's `view(dtype)` rules, in either byte
//! order, and moved without copying between processes, files and the GPU.
//!
//! This crate is the native half of bytelens. It re-exports the `no_std`
//! core ([`bytelens_core`]: [`Layout`], [`View`], [`ViewMut`], [`Plan`],
//! [`DType`], [`Descr`], the file headers in [`files`]) and adds what
//! needs an allocator and an operating system:
//!
//! | piece | what it is for |
//! |---|---|
//! | [`Buffer`] | owned, zeroed memory at 64-byte alignment (or [`Buffer::with_align`]), whose views are checked once and then read without bounds checks |
//! | [`SharedBuffer`] | a named shared-memory segment other processes attach to, its [`Plan`] in the header and a lock that survives a killed holder ([`LockGuard::owner_died`]) |
//! | [`Ring`] | a ring of slots in shared memory: batches between processes in place, in order, none lost when a process dies |
//! | [`MappedFile`] | a file mapped read-only, read-write or copy-on-write ([`MapMode`]) |
//! | [`copy_into`], [`gather_into`] | any view into a C-ordered slice, byte order and dtype converted on the way, at memory speed (SIMD register tiles for transposes) |
//! | [`dequantize_into`] | GGUF's quantised blocks (Q4_0 … Q6_K, IQ4, MXFP4, TQ) to float32, float16 or bfloat16 |
//! | [`gpu`] (feature `gpu`) | uploads of any view to wgpu buffers and textures, downloads, model files straight to the GPU |
//!
//! The Python package (`import bytelens`, the `bytelens-python` crate in
//! `native/python/`, built on this one) and the WebAssembly package share
//! the core's arithmetic and its errors.
//!
//! # Views
//!
//! A [`Layout`] is a dtype, a byte offset, a shape and signed byte strides;
//! [`Buffer::view_as`] checks it against the buffer (every element inside,
//! every element aligned) and gives a [`View`] that reads it; transposes,
//! slices and reinterpretations are new layouts over the same bytes.
//!
//! ```
//! use bytelens::{Buffer, DType, Layout};
//!
//! let mut buf = Buffer::new(16)?;
//! buf.view_mut::<i32>()?.set(&[0], 0x11223344)?;
//! // The same bytes as int16: on little-endian bytes the low half comes first.
//! let halves: Vec<i16> = buf.view::<i16>()?.iter().collect();
//! assert_eq!(halves, [0x3344, 0x1122, 0, 0, 0, 0, 0, 0]);
//!
//! // A checked `as_strided`: a 2x2 float32 matrix, transposed, without copying.
//! let m = Layout::contiguous(DType::F32, &[2, 2])?.transpose();
//! assert_eq!(buf.view_as::<f32>(m)?.len(), 4);
//!
//! // A view that would misalign is an error with the numbers in it.
//! let err = buf.view_as::<f32>(Layout::new(DType::F32, 2, &[1], &[4])?).unwrap_err();
//! assert_eq!(err.to_string(), "offset 2 is not a multiple of 4, the alignment of float32");
//! # Ok::<(), bytelens::Error>(())
//! ```
//!
//! # Several arrays in one buffer
//!
//! A [`Plan`] lays out named arrays as a C `struct` (one after another,
//! each aligned) or `union` (alternatives over the same bytes), and writes
//! the WGSL struct a shader declares for them.
//!
//! ```
//! use bytelens::{Buffer, DType, Plan};
//!
//! let mut plan = Plan::new();
//! plan.field("A", DType::F32, &[3])?.field("B", DType::F32, &[1])?
//!     .union()?
//!     .field("D", DType::I32, &[2])?.field("E", DType::I32, &[2])?;
//! let mut buf = Buffer::new(plan.nbytes())?;
//! buf.view_as_mut::<f32>(plan.get("A").unwrap().layout()?)?.set(&[0], 1.0)?;
//! let d = buf.view_as::<i32>(plan.get("D").unwrap().layout()?)?;
//! assert_eq!(d.get(&[0])?, 0x3F80_0000); // the bits of 1.0f
//! # Ok::<(), bytelens::Error>(())
//! ```
//!
//! # Copies and conversions
//!
//! ```
//! use bytelens::{Buffer, DType, Descr, Layout, copy_into};
//!
//! let mut buf = Buffer::new(6 * 8)?;
//! let m = Layout::contiguous(DType::F64, &[2, 3])?;
//! {
//!     let mut w = buf.view_as_mut::<f64>(m)?;
//!     for (k, (i, j)) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)].into_iter().enumerate() {
//!         w.set(&[i, j], k as f64)?;
//!     }
//! }
//! // The transpose, in C order, as float32: one pass, as numpy's
//! // `np.ascontiguousarray(m.T).astype(np.float32)`.
//! let mut out = [0u8; 6 * 4];
//! copy_into(buf.as_bytes(), &m.transpose(), &mut out, Descr::native(DType::F32))?;
//! let got: Vec<f32> = out.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
//! assert_eq!(got, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
//! # Ok::<(), bytelens::Error>(())
//! ```
//!
//! # Errors
//!
//! Every fallible function returns [`Error`] (the core's [`LayoutError`]
//! inside [`Error::Layout`]), [`SharedError`] for shared memory and mapped
//! files, or `gpu::GpuError`; each message carries the numbers a person
//! needs ("offset 2 is not a multiple of 4, the alignment of float32"). No
//! public function panics on bad input.
//!
//! # Features
//!
//! - `gpu`: [`gpu`], on wgpu 30 (Vulkan, Metal, DX12).
//!
//! # The guide
//!
//! `cargo xtask docs` builds the guide (`docs/guide/`), with chapters on
//! views, plans, files, shared memory, copies, the GPU, WebAssembly and
//! every error, beside this reference; its Rust examples run as doctests
//! of this crate.
#![deny(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks
)]

mod buffer;
mod copy;
pub mod files;
#[cfg(feature = "gpu")]
pub mod gpu;
mod mapped;
mod ring;
mod shared;

use std::fmt;

/// The README's and the guide's Rust examples, run as this crate's
/// doctests by the docs suite of `cargo xtask test`:
/// `RUSTDOCFLAGS="--cfg bytelens_guide" cargo test -p bytelens --features gpu --doc guide`.
#[cfg(all(doctest, bytelens_guide))]
mod guide {
    macro_rules! chapters {
        ($($name:ident => $file:literal),* $(,)?) => {
            $(
                #[doc = include_str!(concat!("../../", $file))]
                mod $name {}
            )*
        };
    }
    chapters! {
        readme => "README.md",
        getting_started => "docs/guide/getting-started.md",
        views => "docs/guide/views.md",
        plans => "docs/guide/plans.md",
        numpy => "docs/guide/numpy.md",
        files => "docs/guide/files.md",
        gguf => "docs/guide/gguf.md",
        shared_memory => "docs/guide/shared-memory.md",
        pipelines => "docs/guide/pipelines.md",
        copying => "docs/guide/copying.md",
        wasm => "docs/guide/wasm.md",
        scale_out => "docs/guide/scale-out.md",
        questions => "docs/guide/questions.md",
        errors => "docs/guide/errors.md",
        platforms => "docs/guide/platforms.md",
        performance => "docs/guide/performance.md",
        testing => "docs/guide/testing.md",
    }
    #[cfg(feature = "gpu")]
    chapters! { gpu => "docs/guide/gpu.md" }
}

pub use buffer::Buffer;
/// The core's layout error: what is wrong with a view, with the numbers.
pub use bytelens_core::Error as LayoutError;
pub use copy::{
    PARALLEL_MIN, can_cast, can_dequantize, check_dequantize_to, converted_layout, copy_into,
    dequantize_into, dequantize_into_threads, gather_into, is_copy, is_parallel,
};
pub use mapped::{MapMode, MappedFile};
pub use ring::{Batch, Filling, Interrupt, MAX_SLOTS, Ring, RingError, RingStats};
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

/// The kind of a system error: the ones Python raises a subclass of
/// `OSError` for have their own, the rest are [`ErrorKind::Os`].
pub(crate) fn io_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::AlreadyExists => ErrorKind::AlreadyExists,
        std::io::ErrorKind::IsADirectory => ErrorKind::IsADirectory,
        std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
        // ENOMEM, and std's failed reservations (`read_to_end`'s).
        std::io::ErrorKind::OutOfMemory => ErrorKind::OutOfMemory,
        _ => ErrorKind::Os,
    }
}

impl Error {
    /// The error's kind: the core's for a layout error.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{Error, ErrorKind};
    /// assert_eq!(Error::BadAlign { align: 3 }.kind(), ErrorKind::BadAlign);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Layout(err) => err.kind(),
            Error::Alloc { .. } => ErrorKind::OutOfMemory,
            Error::BadAlign { .. } => ErrorKind::BadAlign,
            Error::Cast { .. } => ErrorKind::Cast,
            Error::SizeMismatch { .. } => ErrorKind::DestinationSize,
            Error::Dequantize { .. } => ErrorKind::Dequantize,
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
