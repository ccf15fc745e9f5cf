//! GPU upload and download of checked views through wgpu (feature `gpu`).
//!
//! [`GpuContext`] owns a wgpu device with the adapter's real limits and two
//! rings of staging buffers that are mapped once and reused: one
//! `MAP_WRITE` ring for uploads, one `MAP_READ` ring for downloads.
//! [`GpuContext::upload`], the one upload entry point, copies any checked
//! view in C order with the crate's copy kernel (the one behind
//! [`copy_into`](crate::copy_into)), converted on the way when asked
//! ([`Upload::to`]), into a new buffer ([`Upload::buffer`]) or an existing
//! one ([`Upload::write_into`]): one host pass and never "make contiguous,
//! then copy again". Its [`UploadPath`], chosen once per context:
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
//! use bytelens::{Buffer, DType, Descr, Layout, gpu::GpuContext};
//! let gpu = GpuContext::new()?;
//! let buf = Buffer::new(64 * 48 * 8)?;
//! let t = Layout::contiguous(DType::F64, &[64, 48])?.transpose();
//! let f32s = Descr::native(DType::F32);
//! let mut on_gpu = gpu.upload((buf.as_bytes(), &t)).to(f32s).buffer()?; // transposed, float64 -> float32
//! gpu.upload((buf.as_bytes(), &t)).to(f32s).write_into(&mut on_gpu)?;  // the next frame, same buffer
//! // An RGB image crop, flipped: to an rgba8unorm texture, rows padded, alpha added, one pass.
//! let rgb = Layout::contiguous(DType::U8, &[16, 24, 3])?.slice(0, None, None, -1)?;
//! let texture = gpu.upload((buf.as_bytes(), &rgb)).texture(None)?;
//! assert_eq!((texture.format_name(), texture.size().width), ("rgba8unorm", 24));
//! assert_eq!(texture.download()?.len(), 16 * 24 * 3); // RGB again
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One concern per file: `options` ([`GpuOptions`]), `error` ([`GpuError`],
//! and the wgpu error scopes that produce it), `context` ([`GpuContext`]:
//! adapter, device, limits), `ring` (the staging rings and their mapping
//! states), `upload` (copying a view into a [`GpuBuffer`], staged or in
//! place, cut into parts for several threads), `texture` ([`GpuTexture`]:
//! images and volumes, rows padded and RGB widened in the gather pass),
//! `buffer` ([`GpuBuffer`] and its chunk arithmetic) and `download`
//! (reading it back).
// One unsafe function: upload.rs's `host_slice`, for a CPU adapter's
// mapped memory, with its proof.
#![deny(unsafe_code)]

mod buffer;
mod context;
mod dequant;
mod download;
mod error;
mod load;
mod options;
mod ring;
mod texture;
mod upload;

pub use buffer::GpuBuffer;
pub use context::{GpuContext, UploadPath};
pub use error::GpuError;
pub use load::Dequantize;
pub use options::GpuOptions;
pub use texture::{GpuTexture, texture_format, texture_format_name};
pub use upload::{HostView, Upload};
pub use wgpu;
