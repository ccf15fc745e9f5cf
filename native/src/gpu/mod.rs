//! GPU upload and download of checked views through wgpu (feature `gpu`).
//!
//! [`GpuContext`] owns a wgpu device with the adapter's real limits and two
//! rings of staging buffers that are mapped once and reused: one
//! `MAP_WRITE` ring for uploads, one `MAP_READ` ring for downloads.
//! [`GpuContext::upload`] streams any checked view into the upload ring in C
//! order — a contiguous view is one `memcpy` per chunk, a strided, transposed
//! or reversed view is gathered straight into the mapped memory (one host
//! copy, not "make contiguous, then copy again") — and copies each chunk into
//! the destination while the next is being written. Uploads larger than the
//! ring are chunked; uploads larger than the device's `max_buffer_size`
//! become several wgpu buffers ([`GpuBuffer::buffers`]).
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
//! // A transposed 64×64 float32 view, gathered into staging in one pass.
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
//! states), `upload` (streaming a view into a [`GpuBuffer`], cut into parts
//! for several threads), `buffer` ([`GpuBuffer`] and its chunk arithmetic)
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
