//! Uploads: a checked view copied in C order (converted on the way when
//! asked) straight into the mapped staging slots of the upload rings, and
//! from there into a new or existing [`GpuBuffer`]; large views are cut
//! into parts that several threads fill at once.

use std::ops::Range;
use std::sync::MutexGuard;

use wgpu::WriteOnly;

use bytelens_core::{Descr, Element, Layout, View};

use super::buffer::padded_len;
use super::context::Inner;
use super::error::Scopes;
use super::ring::{Ring, lock, map_now};
use super::{GpuBuffer, GpuContext, GpuError};
use crate::copy::{Copier, PARALLEL_MIN, converted_layout};

impl GpuContext {
    /// Uploads a checked view into a new GPU buffer, in C order (the bytes
    /// of `np.ascontiguousarray(view)`), zero-padded to a multiple of
    /// 4 bytes. An empty view gives a 4-byte buffer of zeros.
    pub fn upload<T: Element>(&self, view: &View<'_, T>) -> Result<GpuBuffer, GpuError> {
        self.upload_layout(view.bytes(), view.layout())
    }

    /// [`upload`](Self::upload) for an untyped view: `layout` over `bytes`,
    /// checked here.
    pub fn upload_layout(&self, bytes: &[u8], layout: &Layout) -> Result<GpuBuffer, GpuError> {
        self.upload_layout_as(bytes, layout, layout.descr())
    }

    /// Uploads a view converted to `to` on the way (another byte order, or
    /// another dtype that numpy's `same_kind` casting allows): a big-endian
    /// or float64 array arrives as little-endian float32 in one pass through
    /// staging, with no converted copy on the host.
    ///
    /// # Examples
    /// ```no_run
    /// use bytelens::{ByteOrder, DType, Descr, Layout, gpu::GpuContext};
    /// let gpu = GpuContext::new()?;
    /// let bytes: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    /// let layout = Layout::contiguous(DType::F64, &[2])?.with_byte_order(ByteOrder::Big);
    /// let on_gpu = gpu.upload_layout_as(&bytes, &layout, Descr::new(DType::F32, ByteOrder::Little))?;
    /// assert_eq!(on_gpu.nbytes(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn upload_layout_as(
        &self,
        bytes: &[u8],
        layout: &Layout,
        to: Descr,
    ) -> Result<GpuBuffer, GpuError> {
        let copier = Copier::new(bytes, layout, to)?;
        let dst = self.alloc(&converted_layout(layout, to)?)?;
        self.upload_into_unchecked(&copier, &dst)?;
        Ok(dst)
    }

    /// Uploads a view into an existing GPU buffer of the same byte size
    /// (streaming frame after frame into one buffer, with no allocation).
    /// The buffer's dtype and shape become the view's.
    pub fn upload_into<T: Element>(
        &self,
        view: &View<'_, T>,
        dst: &mut GpuBuffer,
    ) -> Result<(), GpuError> {
        self.upload_layout_into(view.bytes(), view.layout(), dst)
    }

    /// [`upload_into`](Self::upload_into) for an untyped view.
    pub fn upload_layout_into(
        &self,
        bytes: &[u8],
        layout: &Layout,
        dst: &mut GpuBuffer,
    ) -> Result<(), GpuError> {
        self.upload_layout_into_as(bytes, layout, layout.descr(), dst)
    }

    /// [`upload_layout_as`](Self::upload_layout_as) into an existing GPU
    /// buffer of the converted view's byte size.
    pub fn upload_layout_into_as(
        &self,
        bytes: &[u8],
        layout: &Layout,
        to: Descr,
        dst: &mut GpuBuffer,
    ) -> Result<(), GpuError> {
        let copier = Copier::new(bytes, layout, to)?;
        if copier.out_bytes() != dst.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: dst.nbytes(),
                host: copier.out_bytes(),
            });
        }
        self.upload_into_unchecked(&copier, dst)?;
        dst.layout = converted_layout(layout, to)?;
        Ok(())
    }

    /// A zeroed GPU buffer (split into segments) for the C-contiguous `layout`.
    fn alloc(&self, layout: &Layout) -> Result<GpuBuffer, GpuError> {
        let padded = padded_len(layout.nbytes());
        let inner = &self.inner;
        if inner.host_memory {
            // Linux overcommits: the buffers would be created, and the
            // process killed while the upload fills them.
            if let Some(available) = available_host_memory() {
                if padded > available {
                    return Err(GpuError::OutOfMemory {
                        bytes: padded,
                        available,
                    });
                }
            }
        }
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
        })
    }

    /// Fills `dst` with the copy: large copies are cut into consecutive
    /// parts, each filled by its own thread through its own ring.
    fn upload_into_unchecked(&self, copier: &Copier<'_>, dst: &GpuBuffer) -> Result<(), GpuError> {
        let inner = &self.inner;
        if inner.direct {
            let scopes = Scopes::push(&inner.device);
            let result = self.upload_direct(copier, dst);
            return scopes.pop("upload").and(result);
        }
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
        let cuts = cuts(copier, threads, 0..dst.padded_size());
        if cuts.len() == 2 {
            return self.upload_part(&mut rings[0], copier, dst, cuts[0]..cuts[1]);
        }
        std::thread::scope(|scope| {
            let workers: Vec<_> = cuts
                .windows(2)
                .zip(rings.iter_mut().map(|guard| &mut **guard))
                .map(|(range, ring)| {
                    let range = range[0]..range[1];
                    scope.spawn(move || self.upload_part(ring, copier, dst, range))
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    /// Fills bytes `range` of `dst` (the last part also writes the zero
    /// padding) through one ring, inside this thread's error scopes.
    fn upload_part(
        &self,
        ring: &mut Ring,
        copier: &Copier<'_>,
        dst: &GpuBuffer,
        range: std::ops::Range<u64>,
    ) -> Result<(), GpuError> {
        let inner = &self.inner;
        ring.ensure(
            &inner.device,
            inner.slots,
            inner.chunk,
            wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        );
        let scopes = Scopes::push(&inner.device);
        let mut sink = UploadSink {
            ctx: inner,
            ring,
            dst,
            written: range.start,
            end: range.end,
        };
        let result = sink.fill(copier);
        // Pop the scopes whatever happened: they are a stack on this thread.
        let scoped = scopes.pop("upload");
        // wgpu's own error, when there is one, is the cause of any later one.
        scoped.and(result)
    }

    /// Unified memory: maps each segment of `dst` for writing (waiting for
    /// the GPU's work on it) and fills it in place, cut between the upload
    /// threads; no staging buffer, no GPU-side copy.
    fn upload_direct(&self, copier: &Copier<'_>, dst: &GpuBuffer) -> Result<(), GpuError> {
        let inner = &self.inner;
        let threads = inner.upload.len();
        let mut start = 0;
        for segment in &dst.segments {
            let end = start + segment.size();
            map_now(segment, wgpu::MapMode::Write, &inner.device, "upload")?;
            let cuts = cuts(copier, threads, start..end);
            let step = stage_step(copier, inner.chunk);
            // Each thread takes its own range of the mapping (ranges that
            // do not overlap may be held at once).
            let fill = |range: &[u64]| {
                let (a, b) = (range[0] - start, range[1] - start);
                let mut view =
                    segment
                        .get_mapped_range_mut(a..b)
                        .map_err(|err| GpuError::Wgpu {
                            during: "upload",
                            message: err.to_string(),
                        })?;
                write_mapped(copier, view.slice(..), range[0], step, &mut Vec::new());
                Ok::<(), GpuError>(())
            };
            let filled = if cuts.len() == 2 {
                fill(&cuts)
            } else {
                std::thread::scope(|scope| {
                    let workers: Vec<_> = cuts
                        .windows(2)
                        .map(|range| scope.spawn(move || fill(range)))
                        .collect();
                    workers.into_iter().try_for_each(|worker| {
                        worker
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                })
            };
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
fn stage_step(copier: &Copier<'_>, chunk: u64) -> u64 {
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
/// else from a block of `step` bytes the walk fills in cache.
fn write_mapped(
    copier: &Copier<'_>,
    mut mapped: WriteOnly<'_, [u8]>,
    at: u64,
    step: u64,
    block: &mut Vec<u8>,
) {
    let size = copier.out_itemsize() as u64;
    let len = mapped.len() as u64;
    let data = (copier.out_bytes() as u64).saturating_sub(at).min(len);
    let first = at / size;
    if let Some(src) = copier.contiguous(first as usize, (data / size) as usize) {
        mapped.slice(..data as usize).copy_from_slice(src);
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

/// Bytes the walk fills in cache before they are copied into a staging slot.
const STAGE_BLOCK: usize = 256 << 10;

/// Where `parts` threads' byte ranges of `range` of `dst` start and the
/// last ends: [`Copier::cuts`] on multiples of 8 bytes (a GPU copy's and a
/// mapped range's alignment); copies under 8 MiB stay whole.
fn cuts(copier: &Copier<'_>, parts: usize, range: Range<u64>) -> Vec<u64> {
    let range = range.start as usize..range.end as usize;
    let cuts = copier.cuts(parts, 8, PARALLEL_MIN, range);
    cuts.into_iter().map(|at| at as u64).collect()
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
    fn fill(&mut self, copier: &Copier<'_>) -> Result<(), GpuError> {
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
            write_mapped(copier, view.slice(..), self.written, step, &mut block);
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
