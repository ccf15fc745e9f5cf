//! The two leases a process holds on a slot: [`Filling`] (a producer's,
//! given back on drop unless published) and [`Batch`] (a consumer's,
//! released on drop), and where a slot's bytes are.

use super::{Batch, Filling, Inner, RingError, protocol};

impl Filling {
    /// The slot's bytes, to write the batch into.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let (ptr, len) = self.ring.slot_ptr(self.slot);
        // SAFETY: the slot lies inside the mapping (checked at create and
        // attach), which `self.ring` keeps; while this slot is `Filling` and
        // ours, no process reads or writes it (protocol invariant 4), and
        // `&mut self` keeps this process's other uses out.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// The slot's address, for a library that writes the batch itself.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ring.slot_ptr(self.slot).0
    }

    /// Which slot this is.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The name of the ring the slot is of.
    pub fn ring_name(&self) -> String {
        self.ring.name()
    }

    /// Publishes the batch: its sequence number. On a closed ring the slot
    /// is given back unpublished and this is [`Closed`](RingError::Closed).
    pub fn publish(mut self) -> Result<u64, RingError> {
        self.done = true;
        let me = self.me;
        let slot = self.slot;
        if !mine(me) {
            // A forked child's copy of its parent's lease: the slot is the
            // parent's to publish.
            return Err(RingError::SlotLost {
                name: self.ring.name(),
                slot,
            });
        }
        let mut seq = 0;
        let published = self.ring.change(&mut |t| {
            protocol::publish(t, slot, me).map(|(s, stores)| {
                seq = s;
                stores
            })
        });
        if let Err(RingError::Closed { .. }) = published {
            self.ring.change(&mut |t| protocol::abandon(t, slot, me))?;
        }
        published.map(|()| seq)
    }
}

impl Drop for Filling {
    fn drop(&mut self) {
        if !self.done && mine(self.me) {
            let (slot, me) = (self.slot, self.me);
            let _ = self.ring.change(&mut |t| protocol::abandon(t, slot, me));
        }
    }
}

impl Batch {
    /// The batch's bytes.
    pub fn bytes(&self) -> &[u8] {
        let (ptr, len) = self.ring.slot_ptr(self.slot);
        // SAFETY: as in `Filling::bytes_mut`: inside the mapping `self.ring`
        // keeps, and no process writes the slot while it is `Reading` and ours.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }

    /// The batch's bytes, writable: the slot is this consumer's alone until
    /// it is released (what is written is lost then, or seen by the next
    /// consumer if this one dies holding it).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let (ptr, len) = self.ring.slot_ptr(self.slot);
        // SAFETY: as in `bytes`, and `&mut self` keeps this process's other
        // uses out.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// The slot's address.
    pub fn as_ptr(&self) -> *const u8 {
        self.ring.slot_ptr(self.slot).0
    }

    /// The batch's sequence number: 0 for the first published, then 1, 2, ...
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether it was delivered before, to a consumer that died holding it.
    pub fn redelivered(&self) -> bool {
        self.redelivered
    }

    /// Which slot this is.
    pub fn slot(&self) -> usize {
        self.slot
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if !mine(self.me) {
            return;
        }
        let (slot, me) = (self.slot, self.me);
        let _ = self.ring.change(&mut |t| protocol::release(t, slot, me));
    }
}

/// Whether this process is `owner`, the process that took the lease: a
/// child forked while its parent held a lease has a copy of it, which must
/// neither release, publish nor abandon the parent's slot (the parent may
/// still be reading or filling it). In any other process a lease is inert.
fn mine(owner: protocol::Owner) -> bool {
    std::process::id() == owner.pid
}

impl Inner {
    fn slot_ptr(&self, slot: usize) -> (*mut u8, usize) {
        let at = self.first + slot * self.stride;
        (self.base.wrapping_add(at), self.slot_bytes)
    }
}
