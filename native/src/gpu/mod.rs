//! GPU upload and download of checked views through wgpu (feature `gpu`).
//!
//! [`GpuContext`] owns a wgpu device with the adapter's real limits and two
//! rings of staging buffers that are mapped once and reused: one
//! `MAP_WRITE` ring for uploads, one `MAP_READ` ring for downloads.
//! [`GpuContext::upload`] copies any checked view in C order with the
//! crate's copy kernel (the one behind [`copy_into`](crate::copy_into)),
//! converted on the way when asked ([`GpuContext::upload_layout_as`]), one
//! host pass and never "make contiguous, then copy again":
//!
//! - on a discrete GPU, into the upload ring, each chunk copied into the
//!   destination on the GPU while the next is written;
//! - on unified memory with `MAPPABLE_PRIMARY_BUFFERS` (lavapipe, integrated
//!   GPUs), straight into the destination buffer, mapped
//!   ([`GpuOptions::direct_upload`]).
//!
//! Mapped memory is only written in sequential block copies: a contiguous
//! view from its own bytes, anything else from a block the kernel fills in
//! cache. Uploads larger than the ring are chunked; uploads larger than the
//! device's `max_buffer_size` become several wgpu buffers
//! ([`GpuBuffer::buffers`]).
//!
//! Every wgpu call runs inside validation and out-of-memory error scopes, so
//! a wgpu error comes back as a [`GpuError`], never as a panic.
//!
//! # Examples
//! ```no_run
//! use bytelens::{Buffer, Layout, DType};
//! use bytelens::gpu::GpuContext;
//!
//! let gpu = GpuContext::new()?;
//! let mut buf = Buffer::new(16 * 1024)?;
//! buf.view_mut::<f32>()?.fill(1.5);
//! // A transposed 64×64 float32 view, gathered on the way in one pass.
//! let t = Layout::contiguous(DType::F32, &[64, 64])?.transpose();
//! let on_gpu = gpu.upload(&buf.view_as::<f32>(t)?)?;
//! let back = on_gpu.download()?;
//! assert!(back.view::<f32>()?.iter().all(|x| x == 1.5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One concern per file: `options` ([`GpuOptions`]), `error` ([`GpuError`],
//! and the wgpu error scopes that produce it), `context` ([`GpuContext`]:
//! adapter, device, limits), `ring` (the staging rings and their mapping
//! states), `upload` (copying a view into a [`GpuBuffer`], staged or in
//! place, cut into parts for several threads), `buffer` ([`GpuBuffer`] and its chunk arithmetic)
//! and `download` (reading it back).
#![forbid(unsafe_code)]

mod buffer;
mod context;
mod download;
mod error;
mod options;
mod ring;
mod upload;

pub use buffer::GpuBuffer;
pub use context::GpuContext;
pub use error::GpuError;
pub use options::GpuOptions;
pub use wgpu;
