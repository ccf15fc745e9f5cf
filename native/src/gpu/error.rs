//! [`GpuError`], and the wgpu error scopes that turn wgpu's errors into it
//! instead of panics.

use std::fmt;

use crate::files::{FileError, GgmlType};
use crate::{ErrorKind, LayoutError};

/// What went wrong on the GPU side, with wgpu's own message where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter on the requested backends (no driver, or no device).
    NoAdapter {
        /// The backends searched, as wgpu names them.
        backends: String,
        /// wgpu's reason.
        reason: String,
    },
    /// The adapter refused to create a device.
    Device(String),
    /// The view does not fit its bytes (the core's error).
    Layout(LayoutError),
    /// wgpu reported a validation, out-of-memory or internal error.
    Wgpu {
        /// What bytelens was doing.
        during: &'static str,
        /// wgpu's message.
        message: String,
    },
    /// Mapping a staging buffer failed (device lost, or destroyed buffer).
    Map {
        /// What bytelens was doing.
        during: &'static str,
    },
    /// A host view or slice whose size differs from the GPU buffer's
    /// (`upload_into`, `download_into`).
    SizeMismatch {
        /// Bytes of data the GPU buffer holds.
        gpu: usize,
        /// Bytes the host side (the view uploaded, or the slice downloaded into) holds.
        host: usize,
    },
    /// Quantised blocks that do not hold the values their upload says
    /// they hold ([`HostView::quantized`](super::HostView::quantized)), as
    /// a GGUF file's tensor would: bytes of whole blocks, rows (the last
    /// axis) of whole blocks, and as many values as the blocks hold.
    Blocks {
        /// The blocks' ggml type.
        ggml: GgmlType,
        /// Bytes of blocks.
        bytes: usize,
        /// The shape of the values they were said to hold.
        shape: Vec<usize>,
    },
    /// The host side refused: memory for a download could not be
    /// allocated, or a conversion that numpy's `same_kind` casting refuses
    /// (`Error::Cast`).
    Host(crate::Error),
    /// A view or format no texture can be made of (its element, channel
    /// count, shape or size), with the reason.
    Texture(String),
    /// A file whose header [`GpuContext::load`](super::GpuContext::load)
    /// cannot read: the core's error.
    File(FileError),
    /// An array of a file that [`GpuContext::load`](super::GpuContext::load)
    /// cannot upload (a dtype bytelens does not have, a layout that does
    /// not fit), with the reason.
    FileArray {
        /// The array's name.
        name: String,
        /// Why not.
        reason: String,
    },
    /// Options that cannot work (a zero-sized ring, say).
    BadOptions(String),
    /// Data larger than one of the device's limits allows where it must
    /// fit in one buffer or one binding (a tensor dequantised on the GPU).
    TooLarge {
        /// What: `values of "blk.0.ffn_up.weight"`, say.
        what: String,
        /// Its bytes.
        bytes: u64,
        /// The limit, as WebGPU names it (`maxBufferSize`).
        limit: &'static str,
        /// The limit's value on this device.
        max: u64,
    },
    /// A GPU buffer that cannot be dequantised: it holds no quantised
    /// blocks, or blocks of a type without a shader, or to a dtype other
    /// than float32, float16 and bfloat16.
    Dequantize(String),
    /// An upload larger than a CPU adapter (lavapipe) can hold: its buffers
    /// are host memory, which the system would overcommit and then kill the
    /// process for touching, where a GPU refuses with an out-of-memory error.
    OutOfMemory {
        /// Bytes the GPU buffer would take.
        bytes: u64,
        /// Host memory available (`MemAvailable`).
        available: u64,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoAdapter { backends, reason } => write!(
                f,
                "no GPU adapter on backends {backends}: {reason} \
                 (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers libvulkan1)"
            ),
            GpuError::Device(message) => write!(f, "the adapter refused a device: {message}"),
            GpuError::Layout(err) => err.fmt(f),
            GpuError::Wgpu { during, message } => {
                write!(f, "wgpu error during {during}: {message}")
            }
            GpuError::Map { during } => {
                write!(f, "mapping a staging buffer failed during {during}")
            }
            GpuError::SizeMismatch { gpu, host } => write!(
                f,
                "the GPU buffer holds {gpu} bytes but the host side holds {host}"
            ),
            GpuError::Blocks { ggml, bytes, shape } => {
                let info = ggml.info();
                let (block, size) = (info.block as usize, info.bytes as usize);
                let text: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
                let comma = if shape.len() == 1 { "," } else { "" };
                write!(
                    f,
                    "{bytes} bytes of {ggml} blocks do not hold values of shape ({}{comma}): ",
                    text.join(", ")
                )?;
                let values = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
                match shape.last() {
                    _ if !bytes.is_multiple_of(size) => {
                        let over = bytes % size;
                        let unit = if over == 1 { "byte" } else { "bytes" };
                        write!(f, "{over} {unit} over whole blocks of {size}")
                    }
                    None => f.write_str("a shape with no axes has no rows of blocks"),
                    Some(row) if !row.is_multiple_of(block) => {
                        write!(f, "its rows of {row} values cut blocks of {block} values")
                    }
                    _ => match values {
                        Some(values) => {
                            let blocks = bytes / size;
                            let hold = if blocks == 1 {
                                "block holds"
                            } else {
                                "blocks hold"
                            };
                            write!(f, "{blocks} {hold} {} values, not {values}", blocks * block)
                        }
                        None => f.write_str("its size overflows usize"),
                    },
                }
            }
            GpuError::Host(err) => err.fmt(f),
            GpuError::Texture(reason) => write!(f, "no texture: {reason}"),
            GpuError::File(err) => write!(f, "cannot load the file: {err}"),
            GpuError::FileArray { name, reason } => {
                write!(f, "cannot load the file: array {name:?}: {reason}")
            }
            GpuError::BadOptions(message) => write!(f, "bad GPU options: {message}"),
            GpuError::TooLarge {
                what,
                bytes,
                limit,
                max,
            } => write!(
                f,
                "{what} take {bytes} bytes, more than this device's {limit} of {max} bytes"
            ),
            GpuError::Dequantize(message) => write!(f, "cannot dequantise on the GPU: {message}"),
            GpuError::OutOfMemory { bytes, available } => write!(
                f,
                "the upload needs {bytes} bytes, and this CPU adapter's buffers and textures are host memory, \
                 of which {available} bytes are available"
            ),
        }
    }
}

impl std::error::Error for GpuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GpuError::Layout(err) => Some(err),
            GpuError::Host(err) => Some(err),
            GpuError::File(err) => Some(err),
            _ => None,
        }
    }
}

impl GpuError {
    /// The error's kind: the core's for a layout error, the host's for a
    /// refused conversion or memory that could not be allocated (so that
    /// Python raises `CastError` and `MemoryError` for them as everywhere
    /// else), and the GPU's own (`NoAdapter`, `Texture`, `Blocks`, else
    /// `Gpu`) for the rest: a file `load` cannot read is the GPU's error
    /// too, as it was before kinds (`GpuError` in Python).
    ///
    /// # Examples
    /// ```
    /// use bytelens::{Error, ErrorKind, gpu::GpuError};
    /// let err = GpuError::Host(Error::Alloc { nbytes: 1 << 40, align: 64 });
    /// assert_eq!(err.kind(), ErrorKind::OutOfMemory);
    /// assert_eq!(err.kind().python_class(), "MemoryError");
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            GpuError::Layout(err) => err.kind(),
            // A file's header that is not valid is a format error in every
            // layer (`bl.FormatError`), and one too large to hold, memory.
            GpuError::File(err) => err.kind(),
            // The host's errors that are no GPU's: a cast numpy refuses,
            // memory, and a dtype no dequantiser writes (the CPU path's
            // error for the same mistake).
            GpuError::Host(
                err @ (crate::Error::Cast { .. }
                | crate::Error::Alloc { .. }
                | crate::Error::Dequantize { .. }),
            ) => err.kind(),
            GpuError::NoAdapter { .. } => ErrorKind::NoAdapter,
            GpuError::Texture(_) => ErrorKind::Texture,
            GpuError::Blocks { .. } => ErrorKind::Blocks,
            GpuError::Device(_)
            | GpuError::Wgpu { .. }
            | GpuError::Map { .. }
            | GpuError::SizeMismatch { .. }
            | GpuError::Host(_)
            | GpuError::FileArray { .. }
            | GpuError::BadOptions(_)
            | GpuError::TooLarge { .. }
            | GpuError::Dequantize(_)
            | GpuError::OutOfMemory { .. } => ErrorKind::Gpu,
        }
    }
}

impl From<FileError> for GpuError {
    fn from(err: FileError) -> GpuError {
        GpuError::File(err)
    }
}

impl From<LayoutError> for GpuError {
    fn from(err: LayoutError) -> GpuError {
        GpuError::Layout(err)
    }
}

/// The host side's errors: a layout error stays `Layout`, the rest (a
/// refused conversion, memory) are `Host`.
impl From<crate::Error> for GpuError {
    fn from(err: crate::Error) -> GpuError {
        match err {
            crate::Error::Layout(err) => GpuError::Layout(err),
            err => GpuError::Host(err),
        }
    }
}

/// Validation, out-of-memory and internal error scopes, popped together.
pub(super) struct Scopes {
    guards: [wgpu::ErrorScopeGuard; 3],
}

impl Scopes {
    pub(super) fn push(device: &wgpu::Device) -> Scopes {
        Scopes {
            guards: [
                device.push_error_scope(wgpu::ErrorFilter::Internal),
                device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
                device.push_error_scope(wgpu::ErrorFilter::Validation),
            ],
        }
    }

    /// Pops the scopes (innermost first) and returns the error that holds
    /// the cause: out of memory first, since an allocation that failed so
    /// leaves an invalid buffer or texture, whose every later use is a
    /// validation error ("... is invalid") that says nothing of why.
    pub(super) fn pop(self, during: &'static str) -> Result<(), GpuError> {
        self.pop_needing(during, None)
    }

    /// [`pop`](Self::pop), an out-of-memory error naming the `bytes` that
    /// were asked for.
    pub(super) fn pop_needing(
        self,
        during: &'static str,
        bytes: Option<u64>,
    ) -> Result<(), GpuError> {
        let [internal, oom, validation] = self.guards;
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        let internal = pollster::block_on(internal.pop());
        if let Some(err) = oom {
            let needs = bytes.map_or(String::new(), |b| format!(" (it needs {b} bytes)"));
            return Err(GpuError::Wgpu {
                during,
                message: format!("out of GPU memory{needs}: {err}"),
            });
        }
        match internal.or(validation) {
            Some(err) => Err(GpuError::Wgpu {
                during,
                message: err.to_string(),
            }),
            None => Ok(()),
        }
    }
}
