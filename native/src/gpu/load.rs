//! Many arrays at once: [`GpuContext::upload_all`], which brings the pages
//! of the views still to come into memory while the current one is
//! copied, and [`GpuContext::load`], every array of an `.npy` or
//! safetensors file's bytes (a mapped file's, say) to the GPU through it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytelens_core::files::{Access, read_header};
use bytelens_core::{DType, Descr, Layout};

use super::upload::HostView;
use super::{GpuBuffer, GpuContext, GpuError};

/// Where [`GpuContext::load_with`] dequantises quantised tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dequantize {
    /// On the CPU, in the pass that copies them into staging memory (the
    /// SIMD kernels of [`dequantize_into`](crate::dequantize_into)).
    #[default]
    Cpu,
    /// On the GPU, by the core's WGSL shaders, after their blocks go up.
    Gpu,
}
use crate::Buffer;
use crate::mapped::prefetch;

/// Bytes brought in by one request of the prefetching thread.
const PREFETCH_WINDOW: usize = 16 << 20;
/// How far past what the copies have finished the prefetching thread may
/// go: the pages it brings in stay in memory until they are read, so this
/// bounds what it holds on to (a checkpoint larger than memory streams).
const PREFETCH_AHEAD: usize = 256 << 20;

impl GpuContext {
    /// Uploads each view into a new GPU buffer, in order, converted to `to`
    /// where given ([`Upload::to`](super::Upload::to)), while a second
    /// thread asks the system for the pages of the views that come next
    /// (`MADV_POPULATE_READ` on Linux, `MADV_WILLNEED` on other Unix
    /// systems; 16 MiB at a time, at most 256 MiB ahead of the copies).
    /// Over a mapped file, whose pages would otherwise be faulted in one at
    /// a time as the copy first touches each, the two overlap. On Windows
    /// the views are uploaded one after another with no prefetching.
    ///
    /// The first error stops it and is returned; buffers already made are
    /// dropped.
    pub fn upload_all(
        &self,
        views: &[HostView<'_>],
        to: Option<Descr>,
    ) -> Result<Vec<GpuBuffer>, GpuError> {
        // A dtype no dequantiser writes: the CPU's one error for it, before
        // anything is uploaded (not a cast error of some other tensor).
        if let Some(to) = to.filter(|_| views.iter().any(HostView::is_quantized)) {
            crate::check_dequantize_to(to).map_err(GpuError::Host)?;
        }
        let spans: Vec<&[u8]> = views.iter().map(HostView::span).collect();
        let finished = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let prefetcher = scope.spawn(|| {
                let mut asked = 0;
                for window in spans.iter().flat_map(|span| span.chunks(PREFETCH_WINDOW)) {
                    while asked > finished.load(Ordering::Acquire) + PREFETCH_AHEAD {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        std::thread::park_timeout(Duration::from_millis(10));
                    }
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    prefetch(window);
                    asked += window.len();
                }
            });
            let mut out = Vec::with_capacity(views.len());
            let mut result = Ok(());
            for (view, span) in views.iter().zip(&spans) {
                match self.upload(*view).to(to).buffer() {
                    Ok(buffer) => out.push(buffer),
                    Err(err) => {
                        result = Err(err);
                        break;
                    }
                }
                finished.fetch_add(span.len(), Ordering::Release);
                prefetcher.thread().unpark();
            }
            stop.store(true, Ordering::Release);
            prefetcher.thread().unpark();
            result.map(|()| out)
        })
    }

    /// [`upload_all`](Self::upload_all), with quantised views
    /// ([`HostView::quantized`]) dequantised where `dequantize` says: on
    /// the CPU in the copy, or, with [`Dequantize::Gpu`] and a `to`
    /// (float32, float16 or bfloat16, native order), uploaded as blocks and
    /// dequantised by the core's WGSL shaders ([`dequantize`](Self::dequantize)),
    /// the blocks' buffers dropped after. `names` (one per view, or empty)
    /// name a tensor too large for the device in the error.
    pub fn upload_all_with(
        &self,
        views: &[HostView<'_>],
        to: Option<Descr>,
        dequantize: Dequantize,
        names: &[String],
    ) -> Result<Vec<GpuBuffer>, GpuError> {
        let on_gpu = match (dequantize, to) {
            (Dequantize::Gpu, Some(to)) if views.iter().any(HostView::is_quantized) => {
                // The CPU's error for a dtype no dequantiser writes.
                crate::check_dequantize_to(to).map_err(GpuError::Host)?;
                to.dtype
            }
            _ => return self.upload_all(views, to),
        };
        // Blocks go up as they are, the rest converted; then the blocks are
        // dequantised on the GPU, in the views' order.
        let (blocks, plain): (Vec<_>, Vec<_>) =
            (0..views.len()).partition(|&i| views[i].is_quantized());
        let pick = |which: &[usize]| which.iter().map(|&i| views[i]).collect::<Vec<_>>();
        let mut uploaded: Vec<Option<GpuBuffer>> = (0..views.len()).map(|_| None).collect();
        for (&i, buffer) in plain.iter().zip(self.upload_all(&pick(&plain), to)?) {
            uploaded[i] = Some(buffer);
        }
        for (&i, buffer) in blocks.iter().zip(self.upload_all(&pick(&blocks), None)?) {
            let values = self.dequantize(&buffer, on_gpu).map_err(|err| match err {
                GpuError::TooLarge {
                    what: _,
                    bytes,
                    limit,
                    max,
                } => GpuError::TooLarge {
                    what: match names.get(i) {
                        Some(name) => format!("tensor {name:?}'s values or blocks"),
                        None => format!("array {i}'s values or blocks"),
                    },
                    bytes,
                    limit,
                    max,
                },
                err => err,
            })?;
            uploaded[i] = Some(values);
        }
        Ok(uploaded.into_iter().flatten().collect())
    }

    /// Every array of an `.npy`, safetensors or GGUF file, given its bytes (a
    /// [`MappedFile`](crate::MappedFile)'s, so that nothing is read before
    /// it is copied), as GPU buffers in the file's order, named as the file
    /// names them (an `.npy` file's one array `"array"`), converted to `to`
    /// where given. The arrays go up through
    /// [`upload_all`](Self::upload_all), straight from `bytes`; one whose
    /// offset is not a multiple of its dtype's alignment is first copied
    /// into aligned memory.
    ///
    /// A GGUF file's quantised tensors go up as their blocks, in buffers
    /// that know their type ([`GpuBuffer::quantized`]) where `to` is None,
    /// and dequantised on the way to `to` (float32, float16 or bfloat16)
    /// otherwise, in the same pass as the copy into staging memory.
    ///
    /// A header that is not valid, or an array of a dtype bytelens does not
    /// have, is [`GpuError::File`] or [`GpuError::FileArray`], before anything is uploaded.
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{MapMode, MappedFile, gpu::GpuContext};
    /// let gpu = GpuContext::new()?;
    /// // SAFETY: nothing shrinks the file while it is mapped.
    /// let file = unsafe { MappedFile::open("model.safetensors".as_ref(), MapMode::Read) }?;
    /// for (name, buffer) in gpu.load(file.as_bytes(), None)? {
    ///     println!("{name}: {:?} {:?}", buffer.layout().descr(), buffer.layout().shape());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(
        &self,
        bytes: &[u8],
        to: Option<Descr>,
    ) -> Result<Vec<(String, GpuBuffer)>, GpuError> {
        self.load_with(bytes, to, Dequantize::Cpu)
    }

    /// [`load`](Self::load), with a GGUF file's quantised tensors
    /// dequantised where `dequantize` says: on the CPU as they are copied,
    /// or on the GPU ([`Dequantize::Gpu`]): uploaded as their blocks (a
    /// fraction of the values' bytes), then dequantised into `to` by the
    /// core's WGSL shaders ([`dequantize`](Self::dequantize)), the blocks'
    /// buffers dropped after. Without a `to`, blocks stay blocks either way.
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{DType, Descr, MapMode, MappedFile, gpu::{Dequantize, GpuContext}};
    /// let gpu = GpuContext::new()?;
    /// // SAFETY: nothing shrinks the file while it is mapped.
    /// let file = unsafe { MappedFile::open("model.gguf".as_ref(), MapMode::Read) }?;
    /// let f16 = Some(Descr::native(DType::F16));
    /// for (name, buffer) in gpu.load_with(file.as_bytes(), f16, Dequantize::Gpu)? {
    ///     println!("{name}: {:?}", buffer.layout().shape());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_with(
        &self,
        bytes: &[u8],
        to: Option<Descr>,
        dequantize: Dequantize,
    ) -> Result<Vec<(String, GpuBuffer)>, GpuError> {
        let header = read_header(bytes, bytes.len() as u64)?;
        let name = |array: &bytelens_core::files::FileArray| match header.format {
            bytelens_core::files::Format::Npy => "array".to_owned(),
            _ => array.name.clone(),
        };
        // Misaligned arrays, copied into aligned memory, and their layouts;
        // quantised blocks, with the layout of the values they hold.
        let mut copies = Vec::new();
        let mut layouts = Vec::with_capacity(header.arrays.len());
        let mut values = vec![None; header.arrays.len()];
        for (i, array) in header.arrays.iter().enumerate() {
            let refuse = |reason: String| GpuError::FileArray {
                name: name(array),
                reason,
            };
            match array.access(0) {
                Access::View => {
                    let layout = array.layout().map_err(|err| refuse(err.to_string()))?;
                    layouts.push((layout, None));
                }
                Access::Blocks { ggml } => {
                    let nbytes =
                        usize::try_from(array.nbytes).map_err(|err| refuse(err.to_string()))?;
                    let offset =
                        usize::try_from(array.offset).map_err(|err| refuse(err.to_string()))?;
                    let blocks = Layout::contiguous(DType::U8, &[nbytes])?.with_offset(offset)?;
                    let shape: Vec<usize> = array.shape.iter().map(|&n| n as usize).collect();
                    values[i] = Some((ggml, Layout::contiguous(DType::F32, &shape)?));
                    layouts.push((blocks, None));
                }
                Access::Misaligned { .. } => {
                    let start = array.offset as usize;
                    let mut copy = Buffer::new(array.nbytes as usize).map_err(GpuError::Host)?;
                    copy.as_bytes_mut()
                        .copy_from_slice(&bytes[start..start + array.nbytes as usize]);
                    let at_zero = bytelens_core::files::FileArray {
                        offset: 0,
                        ..array.clone()
                    };
                    let layout = at_zero.layout().map_err(|err| refuse(err.to_string()))?;
                    layouts.push((layout, Some(copies.len())));
                    copies.push(copy);
                }
                why => return Err(refuse(why.to_string())),
            }
        }
        let views: Vec<HostView<'_>> = layouts
            .iter()
            .zip(&values)
            .map(|((layout, copy), values)| {
                let from = copy.map_or(bytes, |i| copies[i].as_bytes());
                match values {
                    Some((ggml, values)) => HostView::quantized(from, layout, *ggml, values),
                    None => HostView::from((from, layout)),
                }
            })
            .collect();
        let names: Vec<String> = header.arrays.iter().map(name).collect();
        let buffers = self.upload_all_with(&views, to, dequantize, &names)?;
        Ok(names.into_iter().zip(buffers).collect())
    }
}
