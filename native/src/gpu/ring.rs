//! The staging rings: wgpu buffers mapped once and reused, each slot's
//! mapping state set by wgpu's callbacks.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::GpuError;

// A slot's mapping state.
pub(super) const UNMAPPED: u8 = 0;
const PENDING: u8 = 1;
const MAPPED: u8 = 2;
const FAILED: u8 = 3;

/// One staging buffer and its mapping state (set by wgpu's callbacks).
pub(super) struct Slot {
    pub(super) buffer: wgpu::Buffer,
    pub(super) state: Arc<AtomicU8>,
    submission: Option<wgpu::SubmissionIndex>,
}

/// Staging buffers used in turn.
#[derive(Default)]
pub(super) struct Ring {
    pub(super) slots: Vec<Slot>,
    next: usize,
}

impl Ring {
    /// Creates the slots on first use, `count` buffers of `size` bytes on
    /// `device`: upload slots start mapped.
    pub(super) fn ensure(
        &mut self,
        device: &wgpu::Device,
        count: usize,
        size: u64,
        usage: wgpu::BufferUsages,
    ) {
        if !self.slots.is_empty() {
            return;
        }
        let mapped = usage.contains(wgpu::BufferUsages::MAP_WRITE);
        self.slots = (0..count)
            .map(|_| Slot {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("bytelens staging"),
                    size,
                    usage,
                    mapped_at_creation: mapped,
                }),
                state: Arc::new(AtomicU8::new(if mapped { MAPPED } else { UNMAPPED })),
                submission: None,
            })
            .collect();
    }

    /// Requests a mapping of the first `len` bytes of slot `i`, answered
    /// once the work submitted on it (up to submission `at`) is done.
    pub(super) fn map_after(
        &mut self,
        i: usize,
        mode: wgpu::MapMode,
        len: u64,
        at: Option<wgpu::SubmissionIndex>,
    ) {
        let slot = &mut self.slots[i];
        slot.state.store(PENDING, Ordering::Release);
        slot.submission = at;
        let state = Arc::clone(&slot.state);
        slot.buffer.map_async(mode, ..len, move |result| {
            let now = if result.is_ok() { MAPPED } else { FAILED };
            state.store(now, Ordering::Release);
        });
    }

    /// Waits until slot `i`'s mapping request has been answered.
    pub(super) fn wait(
        &mut self,
        i: usize,
        device: &wgpu::Device,
        during: &'static str,
    ) -> Result<(), GpuError> {
        let slot = &mut self.slots[i];
        let answered = wait_for(&slot.state, slot.submission.take(), device, during);
        if matches!(answered, Err(GpuError::Map { .. })) {
            slot.state.store(UNMAPPED, Ordering::Release);
        }
        answered
    }

    /// The next upload slot, mapped for writing (waiting for its last copy;
    /// mapping it again if an earlier failure left it unmapped).
    pub(super) fn next_for_write(&mut self, device: &wgpu::Device) -> Result<usize, GpuError> {
        let i = self.advance();
        self.wait(i, device, "upload")?;
        if self.slots[i].state.load(Ordering::Acquire) == UNMAPPED {
            let len = self.slots[i].buffer.size();
            self.map_after(i, wgpu::MapMode::Write, len, None);
            self.wait(i, device, "upload")?;
        }
        Ok(i)
    }

    /// The next readback slot, unmapped (waiting for it, and unmapping what
    /// an earlier failed download left mapped).
    pub(super) fn next_for_read(&mut self, device: &wgpu::Device) -> Result<usize, GpuError> {
        let i = self.advance();
        // A failed mapping leaves the slot unmapped, which is what we want.
        let _ = self.wait(i, device, "download");
        let slot = &self.slots[i];
        if slot.state.load(Ordering::Acquire) == MAPPED {
            slot.buffer.unmap();
            slot.state.store(UNMAPPED, Ordering::Release);
        }
        Ok(i)
    }

    fn advance(&mut self) -> usize {
        let i = self.next;
        self.next = (i + 1) % self.slots.len();
        i
    }
}

/// Asks for `buffer` to be mapped in `mode`, whole, and waits for the answer.
pub(super) fn map_now(
    buffer: &wgpu::Buffer,
    mode: wgpu::MapMode,
    device: &wgpu::Device,
    during: &'static str,
) -> Result<(), GpuError> {
    let state = Arc::new(AtomicU8::new(PENDING));
    let answer = Arc::clone(&state);
    buffer.map_async(mode, .., move |result| {
        let now = if result.is_ok() { MAPPED } else { FAILED };
        answer.store(now, Ordering::Release);
    });
    wait_for(&state, None, device, during)
}

/// Polls `device` (up to submission `at`, or until idle) until a mapping
/// request's `state` is answered: `GpuError::Map` when it failed.
fn wait_for(
    state: &AtomicU8,
    mut at: Option<wgpu::SubmissionIndex>,
    device: &wgpu::Device,
    during: &'static str,
) -> Result<(), GpuError> {
    while state.load(Ordering::Acquire) == PENDING {
        let poll = match at.take() {
            Some(index) => wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            },
            None => wgpu::PollType::wait_indefinitely(),
        };
        device.poll(poll).map_err(|err| GpuError::Wgpu {
            during,
            message: err.to_string(),
        })?;
    }
    if state.load(Ordering::Acquire) == FAILED {
        return Err(GpuError::Map { during });
    }
    Ok(())
}

/// Locks a ring (or the uncaptured-error slot), poisoned or not.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the ring leaves its slots in states `Ring`
    // re-checks, so the ring is still usable.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
