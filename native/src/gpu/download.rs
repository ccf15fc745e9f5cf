//! Downloads: a [`GpuBuffer`] read back chunk by chunk through the readback
//! ring, every slot kept in flight.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::error::Scopes;
use super::ring::{Ring, UNMAPPED, lock};
use super::{GpuBuffer, GpuError};
use crate::Buffer;

impl GpuBuffer {
    /// Reads the data back into a new (64-byte aligned) [`Buffer`].
    pub fn download(&self) -> Result<Buffer, GpuError> {
        let mut out = Buffer::new(self.nbytes()).map_err(GpuError::Host)?;
        self.download_into(out.as_bytes_mut())?;
        Ok(out)
    }

    /// Reads the data back into `out`, which must be `nbytes()` long.
    pub fn download_into(&self, out: &mut [u8]) -> Result<(), GpuError> {
        if out.len() != self.nbytes() {
            return Err(GpuError::SizeMismatch {
                gpu: self.nbytes(),
                host: out.len(),
            });
        }
        let inner = &self.ctx.inner;
        let mut ring = lock(&inner.readback);
        inner.ready_for_readback(&mut ring);
        let scopes = Scopes::push(&inner.device);
        let result = self.read_chunks(&mut ring, out);
        let scoped = scopes.pop("download");
        scoped.and(result)
    }

    /// Copies chunk after chunk into readback slots, keeping every slot in
    /// flight, and copies each out as its mapping arrives.
    fn read_chunks(&self, ring: &mut Ring, out: &mut [u8]) -> Result<(), GpuError> {
        let inner = &self.ctx.inner;
        // (slot, start in the data, length copied)
        let mut in_flight: VecDeque<(usize, u64, u64)> = VecDeque::new();
        let mut start = 0;
        let finish = |ring: &mut Ring, (i, at, len): (usize, u64, u64), out: &mut [u8]| {
            ring.wait(i, &inner.device, "download")?;
            let slot = &ring.slots[i];
            {
                let mapped = slot
                    .buffer
                    .get_mapped_range(..len)
                    .map_err(|err| GpuError::Wgpu {
                        during: "download",
                        message: err.to_string(),
                    })?;
                let keep = (len as usize).min(out.len() - at as usize);
                out[at as usize..at as usize + keep].copy_from_slice(&mapped[..keep]);
            }
            slot.buffer.unmap();
            slot.state.store(UNMAPPED, Ordering::Release);
            Ok::<(), GpuError>(())
        };
        let padded = self.padded_size();
        while start < padded {
            if in_flight.len() == ring.slots.len() {
                let done = in_flight.pop_front().expect("a slot in flight");
                finish(ring, done, out)?;
            }
            let i = ring.next_for_read(&inner.device)?;
            let (segment, offset, len) = self.chunk_at(start, padded, inner.chunk);
            let mut encoder =
                inner
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("bytelens download"),
                    });
            encoder.copy_buffer_to_buffer(segment, offset, &ring.slots[i].buffer, 0, len);
            let index = inner.queue.submit([encoder.finish()]);
            ring.map_after(i, wgpu::MapMode::Read, len, Some(index));
            in_flight.push_back((i, start, len));
            start += len;
        }
        while let Some(done) = in_flight.pop_front() {
            finish(ring, done, out)?;
        }
        Ok(())
    }
}
