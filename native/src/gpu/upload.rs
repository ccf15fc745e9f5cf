//! Uploads: a checked view streamed in C order through the upload rings
//! into a new or existing [`GpuBuffer`], large views cut into parts that
//! several threads stream at once.

use std::sync::MutexGuard;

use bytelens_core::{Element, Layout, View};

use super::buffer::{contiguous_like, padded_len};
use super::context::Inner;
use super::error::Scopes;
use super::ring::{Ring, lock};
use super::{GpuBuffer, GpuContext, GpuError};
use crate::copy::for_each_piece;

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
        layout.check(bytes.len())?;
        let dst = self.alloc(layout)?;
        self.upload_into_unchecked(bytes, layout, &dst)?;
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
        layout.check(bytes.len())?;
        if layout.nbytes() != dst.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: dst.nbytes(),
                host: layout.nbytes(),
            });
        }
        self.upload_into_unchecked(bytes, layout, dst)?;
        dst.layout = contiguous_like(layout)?;
        Ok(())
    }

    /// A zeroed GPU buffer (split into segments) for the view `layout`.
    fn alloc(&self, layout: &Layout) -> Result<GpuBuffer, GpuError> {
        let padded = padded_len(layout.nbytes());
        let inner = &self.inner;
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
            layout: contiguous_like(layout)?,
        })
    }

    /// Fills `dst` with the view: large views are cut into consecutive
    /// parts, each streamed by its own thread through its own ring.
    fn upload_into_unchecked(
        &self,
        bytes: &[u8],
        layout: &Layout,
        dst: &GpuBuffer,
    ) -> Result<(), GpuError> {
        let inner = &self.inner;
        // Rings are always locked in index order, so concurrent uploads wait
        // for each other instead of deadlocking.
        let mut rings: Vec<MutexGuard<'_, Ring>> = inner.upload.iter().map(lock).collect();
        // A copy of contiguous bytes needs fewer threads to reach memory
        // bandwidth than a transposing gather: on 2 lavapipe CPUs, two
        // threads took a transposed upload from 253 ms to 183 ms but a
        // contiguous one from 52 ms to 62 ms (they compete with the driver's
        // own copy).
        let threads = if layout.is_c_contiguous() {
            (rings.len() / 2).max(1)
        } else {
            rings.len()
        };
        let parts = split(layout, threads, PARALLEL_MIN);
        if parts.len() == 1 {
            return self.upload_part(&mut rings[0], bytes, layout, dst, 0..dst.padded_size());
        }
        let ends: Vec<u64> = parts
            .iter()
            .skip(1)
            .map(|(_, start)| *start as u64)
            .chain([dst.padded_size()])
            .collect();
        std::thread::scope(|scope| {
            let workers: Vec<_> = parts
                .iter()
                .zip(&ends)
                .zip(rings.iter_mut().map(|guard| &mut **guard))
                .map(|(((part, start), &end), ring)| {
                    let range = *start as u64..end;
                    scope.spawn(move || self.upload_part(ring, bytes, part, dst, range))
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    /// Streams the view `layout` into bytes `range` of `dst` (the last part
    /// also writes the zero padding) through one ring, inside this thread's
    /// error scopes.
    fn upload_part(
        &self,
        ring: &mut Ring,
        bytes: &[u8],
        layout: &Layout,
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
        let pad = range.end - range.start - layout.nbytes() as u64;
        let scopes = Scopes::push(&inner.device);
        let mut sink = UploadSink {
            ctx: inner,
            ring,
            dst,
            written: range.start,
            end: range.end,
            open: None,
        };
        let mut scratch = Vec::new();
        let zeros = [0u8; 4];
        let result = for_each_piece(bytes, layout, &mut scratch, &mut |piece| sink.write(piece))
            .and_then(|()| sink.write(&zeros[..pad as usize]));
        drop(sink);
        // Pop the scopes whatever happened: they are a stack on this thread.
        let scoped = scopes.pop("upload");
        // wgpu's own error, when there is one, is the cause of any later one.
        scoped.and(result)
    }
}

/// Views smaller than this are uploaded by one thread.
const PARALLEL_MIN: usize = 8 << 20;

/// Cuts a view into at most `parts` consecutive pieces of its C-order byte
/// stream, each a view of its own with its starting byte, by slicing the
/// first axis longer than 1. Cuts fall on multiples of 4 bytes (a copy's
/// alignment). Small views, and views that cannot be cut so, stay whole.
fn split(layout: &Layout, parts: usize, min_bytes: usize) -> Vec<(Layout, usize)> {
    let whole = vec![(*layout, 0)];
    if parts < 2 || layout.nbytes() < min_bytes {
        return whole;
    }
    let Some(axis) = layout.shape().iter().position(|&n| n > 1) else {
        return whole;
    };
    let len = layout.shape()[axis];
    // Bytes per index of `axis`, and how many indices make a multiple of 4.
    let step = layout.nbytes() / len;
    let group = 4 / gcd(step, 4);
    let groups = len / group;
    let parts = parts.min(groups);
    if parts < 2 {
        return whole;
    }
    (0..parts)
        .map(|k| {
            let start = groups * k / parts * group;
            let stop = if k + 1 == parts {
                len
            } else {
                groups * (k + 1) / parts * group
            };
            let part = layout
                .slice(axis, Some(start as isize), Some(stop as isize), 1)
                .expect("a slice within the axis");
            (part, start * step)
        })
        .collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Writes the element stream into mapped upload slots, copying each full
/// chunk into the destination and moving on to the next slot.
struct UploadSink<'a> {
    ctx: &'a Inner,
    ring: &'a mut Ring,
    dst: &'a GpuBuffer,
    /// Where the next chunk goes in the destination.
    written: u64,
    /// Where this sink's part of the destination ends.
    end: u64,
    /// The slot being filled: its index, mapping, length and fill.
    open: Option<(usize, wgpu::BufferViewMut, u64, u64)>,
}

impl UploadSink<'_> {
    fn write(&mut self, mut piece: &[u8]) -> Result<(), GpuError> {
        while !piece.is_empty() {
            let (i, mut view, len, filled) = match self.open.take() {
                Some(open) => open,
                None => self.open_slot()?,
            };
            let n = (piece.len() as u64).min(len - filled);
            view.slice(filled as usize..(filled + n) as usize)
                .copy_from_slice(&piece[..n as usize]);
            piece = &piece[n as usize..];
            if filled + n == len {
                drop(view);
                self.flush(i, len);
            } else {
                self.open = Some((i, view, len, filled + n));
            }
        }
        Ok(())
    }

    /// Takes the next slot, waiting for its last copy to finish.
    fn open_slot(&mut self) -> Result<(usize, wgpu::BufferViewMut, u64, u64), GpuError> {
        let i = self.ring.next_for_write(&self.ctx.device)?;
        let (_, _, len) = self.dst.chunk_at(self.written, self.end, self.ctx.chunk);
        let view = self.ring.slots[i]
            .buffer
            .get_mapped_range_mut(..len)
            .map_err(|err| GpuError::Wgpu {
                during: "upload",
                message: err.to_string(),
            })?;
        Ok((i, view, len, 0))
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytelens_core::DType;

    #[test]
    fn splits_fall_on_multiples_of_four_bytes_and_cover_the_view() {
        let t = Layout::contiguous(DType::F32, &[300, 200])
            .unwrap()
            .transpose();
        let parts = split(&t, 3, 0);
        let starts: Vec<usize> = parts.iter().map(|(_, start)| *start).collect();
        assert_eq!(starts, [0, 66 * 1200, 133 * 1200]);
        let sizes: usize = parts.iter().map(|(part, _)| part.nbytes()).sum();
        assert_eq!(sizes, t.nbytes());
        // A uint8 view with 3-byte rows: cuts every 4 rows (12 bytes).
        let bytes = Layout::contiguous(DType::U8, &[1, 10, 3]).unwrap();
        let parts = split(&bytes, 2, 0);
        assert_eq!(
            parts
                .iter()
                .map(|(p, s)| (p.shape()[1], *s))
                .collect::<Vec<_>>(),
            [(4, 0), (6, 12)]
        );
        // Too small, too short or one part: whole.
        assert_eq!(split(&t, 4, t.nbytes() + 1).len(), 1);
        assert_eq!(
            split(&Layout::contiguous(DType::U8, &[3, 1]).unwrap(), 4, 0).len(),
            1
        );
        assert_eq!(split(&t, 1, 0).len(), 1);
    }
}
