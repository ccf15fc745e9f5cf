//! Typed, aligned, reinterpretable views over one byte buffer: the same
//! bytes seen as `int32`, `int16`, `float32`, … with numpy's `view(dtype)`
//! rules, checked so that no view reads out of bounds or misaligned.
//!
//! `#![no_std]`, no allocation. A [`Layout`] says where an n-d array's
//! elements sit (dtype, byte offset, shape, signed byte strides);
//! [`Layout::check`] proves it fits a buffer; [`View`] and [`ViewMut`] read
//! and write the elements through it in either byte order; [`Plan`] arranges
//! several named arrays in one buffer, struct- or union-like, and writes the
//! matching WGSL.
//!
//! # Examples
//! ```
//! use bytelens_core::{DType, Layout, View, ViewMut};
//! // Any storage aligned for the widest element works; `[u64; N]` is 8-byte aligned.
//! let mut storage = [0u64; 1];
//! let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut storage);
//! ViewMut::<i32>::from_bytes(bytes)?.set(&[0], 0x11223344)?;
//! // The same bytes as int16: the low half comes first on a little-endian layout.
//! let halves = View::<i16>::from_bytes(bytes)?;
//! assert_eq!(halves.iter().collect::<Vec<_>>(), [0x3344, 0x1122, 0, 0]);
//! // A 3-byte buffer cannot be int16; its 2-byte slice can.
//! let three = Layout::contiguous(DType::I8, &[3])?;
//! assert!(three.reinterpret(DType::I16).is_err());
//! assert!(three.slice(0, None, Some(2), 1)?.reinterpret(DType::I16).is_ok());
//! # Ok::<(), bytelens_core::Error>(())
//! ```
#![no_std]
#![deny(
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::undocumented_unsafe_blocks
)]

#[cfg(feature = "alloc")]
extern crate alloc;

mod args;
mod dtype;
mod error;
#[cfg(feature = "files")]
pub mod files;
mod float;
mod kind;
mod layout;
mod overlap;
mod plan;
mod quoted;
mod scalar;
mod stats;
mod view;

pub use args::ViewArgs;
pub use dtype::{ByteOrder, DType, DTypeInfo, Descr, JsArray, dlpack_code};
pub use error::{Error, Escaped, ShortStr};
pub use float::{F8E4M3FN, F8E5M2, F8E8M0FNU, FloatFormat, Rounding, Specials};
pub use kind::ErrorKind;
pub use layout::{Layout, MAX_NDIM, Offsets};
pub use overlap::Overlap;
pub use plan::{Field, MAX_ALTERNATIVES, MAX_FIELD_DIMS, MAX_FIELDS, Plan, Wgsl};
#[cfg(feature = "alloc")]
pub use plan::{FieldSpec, OwnedPlan, PlacedField, PlanSpec};
pub use quoted::{QuoteStyle, Quoted};
pub use scalar::Scalar;
pub use stats::{Counts, Histogram, MAX_BINS, Reduce, Stats};
#[cfg(feature = "alloc")]
pub use stats::{Heatmap, Rest, Tally};
pub use view::{Element, Iter, View, ViewMut};

pub use half::{bf16, f16};
