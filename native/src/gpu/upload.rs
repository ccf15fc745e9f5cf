//! Uploads: a checked view copied in C order (converted on the way when
//! asked) straight into the mapped staging slots of the upload rings, or
//! into the destination's own mapped memory, and from there into a new or
//! existing [`GpuBuffer`]; large views are cut into parts that several
//! threads fill at once.
//!
//! [`GpuContext::upload`] is the one entry point: it names the view, and
//! the [`Upload`] it returns says what to convert to and where it goes.

use std::sync::MutexGuard;

use wgpu::WriteOnly;

use bytelens_core::files::GgmlType;
use bytelens_core::{Descr, Element, Layout, View};

use super::buffer::padded_len;
use super::context::{Inner, UploadPath};
use super::error::Scopes;
use super::ring::{Ring, lock, map_now};
use super::{GpuBuffer, GpuContext, GpuError};
use crate::copy::{Copier, Dequantizer, PARALLEL_MIN, converted_layout, fan_out};

/// A checked view on the host, as an upload reads it: the bytes and the
/// layout over them (checked when the upload starts). Made from a
/// [`View`] (`&view`) or from `(&bytes, &layout)` (any `AsRef<[u8]>`).
#[derive(Clone, Copy, Debug)]
pub struct HostView<'v> {
    bytes: &'v [u8],
    layout: &'v Layout,
    /// Quantised blocks (the layout's bytes) and the layout of the values
    /// they hold ([`HostView::quantized`]).
    quantized: Option<(GgmlType, &'v Layout)>,
}

impl<'v> HostView<'v> {
    /// Quantised blocks of ggml type `ggml`, the bytes `blocks` spans over
    /// `bytes` (a uint8 run), holding values of the shape of `values`: an
    /// upload without [`Upload::to`] copies the blocks as they are into a
    /// buffer that knows its type ([`GpuBuffer::quantized`]); one with
    /// `to` (float32, float16 or bfloat16) dequantises them on the way, in
    /// the same pass as the copy into staging memory.
    pub fn quantized(
        bytes: &'v [u8],
        blocks: &'v Layout,
        ggml: GgmlType,
        values: &'v Layout,
    ) -> HostView<'v> {
        HostView {
            bytes,
            layout: blocks,
            quantized: Some((ggml, values)),
        }
    }

    /// Whether it is quantised blocks ([`HostView::quantized`]).
    pub fn is_quantized(&self) -> bool {
        self.quantized.is_some()
    }

    /// Refuses quantised blocks ([`HostView::quantized`]) whose bytes do
    /// not hold the values' shape as a GGUF tensor's would: whole blocks,
    /// rows of whole blocks, as many values as the blocks hold
    /// ([`GpuError::Blocks`]). Other views pass: the upload checks them.
    pub fn check_blocks(&self) -> Result<(), GpuError> {
        let Some((ggml, values)) = self.quantized else {
            return Ok(());
        };
        let info = ggml.info();
        let (block, size) = (info.block as usize, info.bytes as usize);
        let bytes = self.layout.nbytes();
        let shape = values.shape();
        let whole_rows = shape.last().is_some_and(|row| row.is_multiple_of(block));
        if bytes.is_multiple_of(size) && whole_rows && bytes / size * block == values.size() {
            return Ok(());
        }
        Err(GpuError::Blocks {
            ggml,
            bytes,
            shape: shape.to_vec(),
        })
    }

    /// The bytes the view reads (its layout's byte span), or none where
    /// the layout does not fit them (the upload says why).
    pub(super) fn span(&self) -> &'v [u8] {
        match self.layout.byte_span() {
            Ok(span) if 0 <= span.start && span.start <= span.end => {
                let (start, end) = (span.start as usize, span.end as usize);
                self.bytes.get(start..end).unwrap_or(&[])
            }
            _ => &[],
        }
    }
}

impl<'v, T: Element> From<&'v View<'_, T>> for HostView<'v> {
    fn from(view: &'v View<'_, T>) -> HostView<'v> {
        HostView {
            bytes: view.bytes(),
            layout: view.layout(),
            quantized: None,
        }
    }
}

impl<'v, B: AsRef<[u8]> + ?Sized> From<(&'v B, &'v Layout)> for HostView<'v> {
    fn from((bytes, layout): (&'v B, &'v Layout)) -> HostView<'v> {
        HostView {
            bytes: bytes.as_ref(),
            layout,
            quantized: None,
        }
    }
}

/// An upload of one view, made by [`GpuContext::upload`]: say what the
/// elements become ([`to`](Self::to)), then where they go
/// ([`buffer`](Self::buffer) or [`write_into`](Self::write_into) for a
/// buffer, [`texture`](Self::texture) or [`volume`](Self::volume) for a
/// texture).
#[must_use = "an Upload does nothing until .buffer(), .write_into() or .texture() runs it"]
#[derive(Clone, Copy, Debug)]
pub struct Upload<'g, 'v> {
    gpu: &'g GpuContext,
    src: HostView<'v>,
    to: Option<Descr>,
}

impl GpuContext {
    /// Starts an upload of a checked view (a [`View`], or `(bytes,
    /// &layout)`): its elements in C order (the bytes of
    /// `np.ascontiguousarray(view)`), gathered from whatever strides it has
    /// in one pass on the host.
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{ByteOrder, DType, Descr, Layout, gpu::GpuContext};
    /// let gpu = GpuContext::new()?;
    /// let bytes: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    /// let layout = Layout::contiguous(DType::F64, &[2])?.with_byte_order(ByteOrder::Big);
    /// // As they are, in a new buffer ...
    /// let on_gpu = gpu.upload((&bytes, &layout)).buffer()?;
    /// // ... then again into the same buffer, as little-endian float32 (8 bytes).
    /// let mut half = gpu.upload((&bytes, &layout)).to(Descr::native(DType::F32)).buffer()?;
    /// gpu.upload((&bytes, &layout)).to(Descr::native(DType::F32)).write_into(&mut half)?;
    /// assert_eq!((on_gpu.nbytes(), half.nbytes()), (16, 8));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn upload<'v>(&self, src: impl Into<HostView<'v>>) -> Upload<'_, 'v> {
        Upload {
            gpu: self,
            src: src.into(),
            to: None,
        }
    }
}

impl Upload<'_, '_> {
    /// Converts the elements to `to` on the way: another byte order, or
    /// another dtype that numpy's `same_kind` casting allows (a big-endian
    /// or float64 array arrives as little-endian float32, with no converted
    /// copy on the host). A refused conversion is `GpuError::Host`, before
    /// anything is uploaded. `None` keeps the view's own element.
    pub fn to(self, to: impl Into<Option<Descr>>) -> Self {
        Upload {
            to: to.into(),
            ..self
        }
    }

    /// Uploads into a new GPU buffer, zero-padded to a multiple of 4 bytes
    /// (an empty view gives a 4-byte buffer of zeros).
    pub fn buffer(self) -> Result<GpuBuffer, GpuError> {
        let (source, layout) = self.source()?;
        let mut dst = self.gpu.alloc(&layout)?;
        self.gpu.fill(&source, &dst)?;
        dst.quantized = self.raw_blocks();
        Ok(dst)
    }

    /// Uploads into an existing GPU buffer of the same byte size (streaming
    /// frame after frame into one buffer, with no allocation); the
    /// buffer's dtype and shape become the upload's.
    pub fn write_into(self, dst: &mut GpuBuffer) -> Result<(), GpuError> {
        let (source, layout) = self.source()?;
        if source.out_bytes() != dst.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: dst.nbytes(),
                host: source.out_bytes(),
            });
        }
        self.gpu.fill(&source, dst)?;
        dst.layout = layout;
        dst.quantized = self.raw_blocks();
        Ok(())
    }

    /// What the upload writes, and its result's layout: quantised blocks
    /// dequantised where a `to` is given, else the view's elements.
    fn source(&self) -> Result<(Source<'_>, Layout), GpuError> {
        self.src.check_blocks()?;
        match (self.src.quantized, self.to) {
            (Some((ggml, values)), Some(to)) => {
                let blocks = self.src.span();
                let dequantizer = Dequantizer::new(ggml, blocks, to).map_err(GpuError::Host)?;
                let layout =
                    Layout::contiguous(to.dtype, values.shape())?.with_byte_order(to.order);
                if layout.nbytes() != dequantizer.out_bytes() {
                    return Err(GpuError::SizeMismatch {
                        gpu: layout.nbytes(),
                        host: dequantizer.out_bytes(),
                    });
                }
                Ok((Source::Blocks(dequantizer), layout))
            }
            _ => {
                let (copier, layout) = self.copier()?;
                Ok((Source::Walk(copier), layout))
            }
        }
    }

    /// The type and values' layout of quantised blocks uploaded as they are.
    fn raw_blocks(&self) -> Option<(GgmlType, Layout)> {
        let (ggml, values) = self.src.quantized?;
        self.to.is_none().then_some((ggml, *values))
    }

    /// The context, the view's bytes and layout, and the element asked for.
    pub(super) fn parts(&self) -> (&GpuContext, &[u8], &Layout, Option<Descr>) {
        (self.gpu, self.src.bytes, self.src.layout, self.to)
    }

    /// The copy (the layout checked against the bytes) and its C-ordered result's layout.
    fn copier(&self) -> Result<(Copier<'_>, Layout), GpuError> {
        let HostView { bytes, layout, .. } = self.src;
        let to = self.to.unwrap_or(layout.descr());
        let copier = Copier::new(bytes, layout, to)?;
        Ok((copier, converted_layout(layout, to)?))
    }
}

impl GpuContext {
    /// Refuses `bytes` of buffers or textures that a CPU adapter (whose
    /// memory is the host's) could not hold: Linux overcommits, so they
    /// would be created, and the process killed while the upload fills
    /// them. A GPU says so itself (an out-of-memory error).
    pub(super) fn check_host_memory(&self, bytes: u64) -> Result<(), GpuError> {
        if self.inner.host_memory {
            if let Some(available) = available_host_memory() {
                if bytes > available {
                    return Err(GpuError::OutOfMemory { bytes, available });
                }
            }
        }
        Ok(())
    }

    /// A zeroed GPU buffer (split into segments) for the C-contiguous `layout`.
    pub(super) fn alloc(&self, layout: &Layout) -> Result<GpuBuffer, GpuError> {
        let padded = padded_len(layout.nbytes());
        let inner = &self.inner;
        self.check_host_memory(padded)?;
        let scopes = Scopes::push(&inner.device);
        let mut segments = Vec::new();
        let mut start = 0;
        while start < padded {
            let size = inner.max_segment.min(padded - start);
            segments.push(inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bytelens upload"),
                size,
                usage: inner.usage,
                mapped_at_creation: false,
            }));
            start += size;
        }
        scopes.pop("buffer creation")?;
        Ok(GpuBuffer {
            ctx: self.clone(),
            segments,
            layout: *layout,
            quantized: None,
        })
    }

    /// Fills `dst` with the copy, by the context's [`UploadPath`]: large
    /// copies are cut into consecutive parts, each filled by its own thread
    /// (through its own ring when staged).
    fn fill(&self, copier: &Source<'_>, dst: &GpuBuffer) -> Result<(), GpuError> {
        let inner = &self.inner;
        let scopes = Scopes::push(&inner.device);
        let result = match inner.path {
            UploadPath::InPlace => self.fill_in_place(copier, dst),
            UploadPath::Staged => self.fill_staged(copier, dst),
        };
        // Pop the scopes whatever happened: they are a stack on this thread.
        // wgpu's own error, when there is one, is the cause of any later one.
        scopes.pop("upload").and(result)
    }

    /// Through the upload rings: each thread fills its ring's mapped slots
    /// and copies each into its part of `dst` on the GPU.
    fn fill_staged(&self, copier: &Source<'_>, dst: &GpuBuffer) -> Result<(), GpuError> {
        let inner = &self.inner;
        // Rings are always locked in index order, so concurrent uploads wait
        // for each other instead of deadlocking.
        let mut rings: Vec<MutexGuard<'_, Ring>> = inner.upload.iter().map(lock).collect();
        // A block copy needs fewer threads to reach memory bandwidth than a
        // transposing or converting one: on 2 lavapipe CPUs, a second
        // thread slowed a contiguous upload (52 ms to 62 ms: it competes
        // with the driver's own copy).
        let threads = if copier.is_block_copy() {
            (rings.len() / 2).max(1)
        } else {
            rings.len()
        };
        let cuts = cuts(copier, threads, 0, dst.padded_size());
        let rings = rings.iter_mut().map(|guard| &mut **guard);
        fan_out(&cuts, rings, |ring, range| {
            inner.ready_for_upload(ring);
            // Error scopes are per thread: each part pushes its own.
            let scopes = Scopes::push(&inner.device);
            let mut sink = UploadSink {
                ctx: inner,
                ring,
                dst,
                written: range.start as u64,
                end: range.end as u64,
            };
            let result = sink.fill(copier);
            scopes.pop("upload").and(result)
        })
    }

    /// Unified memory: maps each segment of `dst` for writing (waiting for
    /// the GPU's work on it) and fills it in place, cut between the upload
    /// threads; no staging buffer, no GPU-side copy.
    fn fill_in_place(&self, copier: &Source<'_>, dst: &GpuBuffer) -> Result<(), GpuError> {
        let inner = &self.inner;
        let step = stage_step(copier, inner.chunk);
        let mut start = 0;
        for segment in &dst.segments {
            let end = start + segment.size();
            map_now(segment, wgpu::MapMode::Write, &inner.device, "upload")?;
            let cuts = cuts(copier, inner.upload.len(), start, end);
            // Each thread takes its own range of the mapping (ranges that
            // do not overlap may be held at once).
            let filled = fan_out(&cuts, std::iter::repeat(()), |(), range| {
                let (a, b) = (range.start as u64, range.end as u64);
                let mut view =
                    segment
                        .get_mapped_range_mut(a - start..b - start)
                        .map_err(|err| GpuError::Wgpu {
                            during: "upload",
                            message: err.to_string(),
                        })?;
                let host = inner.writes_in_place;
                write_mapped(copier, view.slice(..), a, step, &mut Vec::new(), host);
                Ok::<(), GpuError>(())
            });
            segment.unmap();
            filled?;
            start = end;
        }
        Ok(())
    }
}

/// How many bytes the walk fills in cache at a time before they are
/// copied into mapped memory: whole rows where they fit, so that
/// transposed tiles stay whole.
fn stage_step(copier: &Source<'_>, chunk: u64) -> u64 {
    let size = copier.out_itemsize() as u64;
    let row = copier.row_len() as u64 * size;
    (STAGE_BLOCK as u64).max(16 * row).min(chunk).max(size) / size * size
}

/// Writes bytes `at..at + mapped.len()` of the copy into mapped memory:
/// the copy's elements, then zeros past its end (the padding to 4 bytes).
///
/// Mapped memory may be write-combined (slow to read, slow to write other
/// than in whole sequential lines), so it is only ever written with
/// sequential block copies: straight from the source for a block copy,
/// else from a block of `step` bytes the walk fills in cache. Where it is
/// known to be plain host memory (`host`: a CPU adapter such as lavapipe,
/// whose buffers are the process's own memory), the walk writes it
/// directly instead.
fn write_mapped(
    copier: &Source<'_>,
    mut mapped: WriteOnly<'_, [u8]>,
    at: u64,
    step: u64,
    block: &mut Vec<u8>,
    host: bool,
) {
    let size = copier.out_itemsize() as u64;
    let len = mapped.len() as u64;
    let data = (copier.out_bytes() as u64).saturating_sub(at).min(len);
    let first = at / size;
    if let Some(src) = copier.contiguous(first as usize, (data / size) as usize) {
        mapped.slice(..data as usize).copy_from_slice(src);
    } else if host {
        // Plain host memory: the walk writes its tiles in place, with no
        // block in between (as `gather_into` does).
        copier.fill(first as usize, host_slice(mapped.slice(..data as usize)));
    } else {
        block.resize(step.min(data) as usize, 0);
        let mut done = 0;
        while done < data {
            let k = step.min(data - done);
            let piece = &mut block[..k as usize];
            copier.fill((first + done / size) as usize, piece);
            mapped
                .slice(done as usize..(done + k) as usize)
                .copy_from_slice(piece);
            done += k;
        }
    }
    mapped.slice(data as usize..).fill(0);
}

/// The mapped bytes as a plain slice, for a walk to write in place: only
/// for a CPU adapter's buffers, which are cached host memory.
#[allow(unsafe_code)]
fn host_slice<'a>(mut mapped: WriteOnly<'a, [u8]>) -> &'a mut [u8] {
    let len = mapped.len();
    let ptr = mapped.as_raw_element_ptr();
    // SAFETY: a `WriteOnly<'a, [u8]>` is an exclusive borrow of `len`
    // mapped bytes at `ptr` for 'a (wgpu hands out non-overlapping mapped
    // ranges only, each alive as long as its view), so no other reference
    // to them exists while the slice does. The bytes are initialized:
    // wgpu-core zeroes every uninitialized part of a buffer when it maps it
    // (WebGPU's "as if initialized with zero"), and `u8` has no invalid
    // values. `WriteOnly` exists because reading write-combined memory is
    // slow, not unsound; callers pass only a CPU adapter's mappings.
    unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) }
}

/// What an upload writes, element after element in C order: a view's
/// elements (the walk, converted on the way), or quantised blocks
/// dequantised.
// One per upload, on the stack: boxing the walk would cost an allocation.
#[allow(clippy::large_enum_variant)]
pub(super) enum Source<'a> {
    Walk(Copier<'a>),
    Blocks(Dequantizer<'a>),
}

impl Source<'_> {
    fn out_itemsize(&self) -> usize {
        match self {
            Source::Walk(c) => c.out_itemsize(),
            Source::Blocks(d) => d.out_itemsize(),
        }
    }

    fn out_bytes(&self) -> usize {
        match self {
            Source::Walk(c) => c.out_bytes(),
            Source::Blocks(d) => d.out_bytes(),
        }
    }

    /// Elements per row of the output (a block's, for blocks).
    fn row_len(&self) -> usize {
        match self {
            Source::Walk(c) => c.row_len(),
            Source::Blocks(d) => d.block(),
        }
    }

    fn is_block_copy(&self) -> bool {
        matches!(self, Source::Walk(c) if c.is_block_copy())
    }

    fn contiguous(&self, first: usize, count: usize) -> Option<&[u8]> {
        match self {
            Source::Walk(c) => c.contiguous(first, count),
            Source::Blocks(_) => None,
        }
    }

    fn fill(&self, first: usize, out: &mut [u8]) {
        match self {
            Source::Walk(c) => c.fill(first, out),
            Source::Blocks(d) => d.fill(first, out),
        }
    }

    fn cuts(
        &self,
        parts: usize,
        align: usize,
        min_bytes: usize,
        range: std::ops::Range<usize>,
    ) -> Vec<usize> {
        match self {
            Source::Walk(c) => c.cuts(parts, align, min_bytes, range),
            Source::Blocks(d) => d.cuts(parts, align, min_bytes, range),
        }
    }
}

/// Bytes the walk fills in cache before they are copied into a staging slot
/// (a buffer's, or a texture's rows).
pub(super) const STAGE_BLOCK: usize = 256 << 10;

/// Where `parts` threads' byte ranges of bytes `start..end` of the
/// destination start and the last ends: [`Copier::cuts`] on multiples of 8
/// bytes (a GPU copy's and a mapped range's alignment); copies under 8 MiB
/// stay whole.
fn cuts(copier: &Source<'_>, parts: usize, start: u64, end: u64) -> Vec<usize> {
    copier.cuts(parts, 8, PARALLEL_MIN, start as usize..end as usize)
}

/// Fills mapped upload slots straight from the copy, copying each into
/// the destination and moving on to the next slot.
struct UploadSink<'a> {
    ctx: &'a Inner,
    ring: &'a mut Ring,
    dst: &'a GpuBuffer,
    /// Where the next chunk goes in the destination.
    written: u64,
    /// Where this sink's part of the destination ends.
    end: u64,
}

impl UploadSink<'_> {
    /// Fills the sink's part, slot after slot.
    fn fill(&mut self, copier: &Source<'_>) -> Result<(), GpuError> {
        let step = stage_step(copier, self.ctx.chunk);
        let mut block = Vec::new();
        while self.written < self.end {
            let i = self.ring.next_for_write(&self.ctx.device)?;
            let (_, _, len) = self.dst.chunk_at(self.written, self.end, self.ctx.chunk);
            let mut view = self.ring.slots[i]
                .buffer
                .get_mapped_range_mut(..len)
                .map_err(|err| GpuError::Wgpu {
                    during: "upload",
                    message: err.to_string(),
                })?;
            let host = self.ctx.writes_in_place;
            write_mapped(copier, view.slice(..), self.written, step, &mut block, host);
            drop(view);
            self.flush(i, len);
        }
        Ok(())
    }

    /// Copies a full slot into the destination and asks for it back mapped.
    fn flush(&mut self, i: usize, len: u64) {
        let slot = &self.ring.slots[i];
        slot.buffer.unmap();
        let (segment, offset, _) = self.dst.chunk_at(self.written, self.end, self.ctx.chunk);
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bytelens upload"),
            });
        encoder.copy_buffer_to_buffer(&slot.buffer, 0, segment, offset, len);
        let index = self.ctx.queue.submit([encoder.finish()]);
        self.written += len;
        self.ring
            .map_after(i, wgpu::MapMode::Write, self.ctx.chunk, Some(index));
    }
}

/// The host memory available for new allocations (`MemAvailable` in
/// /proc/meminfo), where the system says.
fn available_host_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
