//! A ring of typed slots in shared memory: producers in any process fill a
//! free slot in place and publish it, consumers in any process take the
//! published batches in order, and a slot goes back to the producers only
//! when its consumer lets go of it. No batch is copied on the way, none is
//! lost when a process dies holding one, and a process that waits sleeps
//! in the kernel (Linux's futex) instead of polling.
//!
//! The segment is a [`SharedBuffer`]: its header page (with the lock that
//! survives a killed holder, and the slot's [`Plan`] as text), then the
//! ring's table (`protocol.rs` says what each word means and the
//! invariants every change keeps), then the slots, each starting on a page.
//!
//! ```text
//! | SharedBuffer header | table: header words, 4 words a slot | slot 0 | slot 1 | ... |
//!                       ^ DATA_OFFSET                         ^ page-aligned, `stride` apart
//! ```
//!
//! Each change to the table is made under the segment's lock; waiting is
//! done outside it, on one of two words the changes bump, in slices after
//! which the waiter looks again (and takes back what dead processes held,
//! `owner.rs`), so no wake is ever needed for progress, only for speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::shared::SharedError;
use crate::{Plan, PlanSpec, SharedBuffer};

mod error;
mod lease;
#[cfg(test)]
mod model;
mod owner;
mod protocol;
#[cfg(test)]
mod tests;
mod wait;

pub use error::RingError;
pub use protocol::Stats as RingStats;
use protocol::{Owner, Refusal, Stores, Table};

#[cfg(not(target_endian = "little"))]
compile_error!("the ring's wait words are read as their low 32 bits, first in memory");

/// Slots start on pages.
const PAGE: usize = 4096;
/// How long one wait lasts before the waiter looks at the table again
/// (and for processes that died), and before an interrupt is checked.
const SLICE: Duration = Duration::from_millis(50);
/// The most slots a ring has.
pub const MAX_SLOTS: usize = 1 << 16;

/// How long `attach` waits for a ring its creator is still making.
const CREATING_WAIT: Duration = Duration::from_secs(10);

/// A ring of `slots` slots of the same size in a named shared-memory
/// segment, for batches between processes: see the module's docs, and the
/// guide's "Pipelines between processes".
///
/// Cloning gives another handle to the same mapping.
///
/// # Examples
/// ```
/// use bytelens::{DType, Plan, Ring};
/// let mut plan = Plan::new();
/// plan.field("x", DType::F32, &[4])?;
/// let name = format!("bytelens-doc-ring-{}", std::process::id());
/// // SAFETY: no process shrinks this example's segment while it is mapped.
/// let ring = unsafe { Ring::create(&name, Some(&plan), plan.nbytes(), 2) }?;
/// let mut slot = ring.produce(None)?; // in a producer process, usually
/// slot.bytes_mut().copy_from_slice(&[1; 16]);
/// assert_eq!(slot.publish()?, 0);
/// let batch = ring.consume(None)?; // in a consumer process
/// assert_eq!((batch.seq(), batch.bytes()), (0, &[1; 16][..]));
/// drop(batch); // the slot is free again
/// ring.close()?;
/// assert!(matches!(ring.consume(None), Err(bytelens::RingError::Closed { .. })));
/// Ring::unlink(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Ring {
    inner: Arc<Inner>,
}

struct Inner {
    shared: SharedBuffer,
    /// The data's first byte (from `SharedBuffer::as_mut_ptr`), where the
    /// table starts; the slots follow at `first`.
    base: *mut u8,
    slots: usize,
    slot_bytes: usize,
    stride: usize,
    first: usize,
}

/// A slot a producer holds to fill: [`publish`](Self::publish) it, or drop
/// it to give it back unpublished.
pub struct Filling {
    ring: Arc<Inner>,
    slot: usize,
    me: Owner,
    done: bool,
}

/// A batch a consumer holds: dropping it (and every view made from its
/// bytes) gives its slot back to the producers.
pub struct Batch {
    ring: Arc<Inner>,
    slot: usize,
    seq: u64,
    redelivered: bool,
    me: Owner,
}

/// What an interrupt check says: go on waiting, or stop
/// ([`RingError::Interrupted`]).
pub type Interrupt<'a> = &'a mut dyn FnMut() -> bool;

/// One try of a change that may find nothing to do yet: the value and the
/// stores, or `None` to wait.
type Attempt<'a, T> = &'a mut dyn FnMut(&Table<'_>) -> Result<Option<(T, Stores)>, Refusal>;

fn never() -> bool {
    false
}

impl Ring {
    /// Creates the ring `name`: `slots` slots of `slot_bytes` bytes each
    /// (at least what `plan` needs, if one is given; attaching processes
    /// read the plan back).
    ///
    /// # Safety
    /// As for [`SharedBuffer::create`]: no process may shrink the segment
    /// while it is mapped.
    pub unsafe fn create(
        name: &str,
        plan: Option<&Plan<'_>>,
        slot_bytes: usize,
        slots: usize,
    ) -> Result<Ring, RingError> {
        let bad = |why: String| RingError::BadRing {
            name: name.to_owned(),
            why,
        };
        if slots == 0 || slots > MAX_SLOTS {
            return Err(bad(format!("{slots} slots: a ring has 1 to {MAX_SLOTS}")));
        }
        if let Some(plan) = plan.filter(|p| p.nbytes() > slot_bytes) {
            return Err(bad(format!(
                "the plan needs {} bytes, more than the slot's {slot_bytes}",
                plan.nbytes()
            )));
        }
        let layout = slot_bytes
            .max(1)
            .checked_next_multiple_of(PAGE)
            .and_then(|stride| {
                let first = (protocol::table_words(slots) * 8).next_multiple_of(PAGE);
                Some((
                    stride,
                    first,
                    first.checked_add(stride.checked_mul(slots)?)?,
                ))
            });
        let Some((stride, first, nbytes)) = layout else {
            // The numbers the caller gave, not the overflowed total.
            return Err(bad(format!(
                "{slots} slots of {slot_bytes} bytes (each on pages of its own) are more than \
                 a shared segment can hold"
            )));
        };
        // SAFETY: the caller's promise, passed on.
        let mut shared = unsafe { SharedBuffer::create(name, nbytes, plan) }?;
        let base = shared.as_mut_ptr();
        // SAFETY: the data (page-aligned) holds the header's words, stored
        // as atomics as every process reads them.
        unsafe { AtomicU64::from_ptr(base.cast::<u64>()) }
            .store(protocol::CREATING, Ordering::Release);
        if let Err(err) = populate(base, nbytes) {
            drop(shared);
            let _ = SharedBuffer::unlink(name);
            return Err(RingError::NoRoom {
                name: name.to_owned(),
                nbytes,
                err,
            });
        }
        let inner = Inner {
            shared,
            base,
            slots,
            slot_bytes,
            stride,
            first,
        };
        inner.table().init(
            slot_bytes as u64,
            stride as u64,
            first as u64,
            owner::pid_namespace(),
        );
        Ok(Ring {
            inner: Arc::new(inner),
        })
    }

    /// Attaches to the ring `name`, checking its table against the segment.
    ///
    /// # Safety
    /// As for [`SharedBuffer::attach`].
    pub unsafe fn attach(name: &str) -> Result<Ring, RingError> {
        let bad = |why: String| RingError::BadRing {
            name: name.to_owned(),
            why,
        };
        let still_creating = || {
            bad(format!(
                "it is still being created after {} s (its creator fills its pages in; \
                 or it died doing so)",
                CREATING_WAIT.as_secs()
            ))
        };
        // A creator between making the segment and writing its header (or,
        // below, its table: seconds for a large ring): wait for it.
        let start = Instant::now();
        let mut shared = loop {
            // SAFETY: the caller's promise, passed on.
            match unsafe { SharedBuffer::attach(name) } {
                Err(err) if err.maybe_being_created() => {
                    if start.elapsed() >= CREATING_WAIT {
                        return Err(still_creating());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                made => break made?,
            }
        };
        let len = shared.len();
        if len < protocol::HEAD_WORDS * 8 {
            return Err(bad(format!(
                "{len} bytes of data, too few for a ring's table"
            )));
        }
        let base = shared.as_mut_ptr();
        let get = |w: usize| {
            // SAFETY: the data (page-aligned) holds the header's words
            // (checked above), read as atomics as every process does.
            unsafe { AtomicU64::from_ptr(base.cast::<u64>().add(w)) }.load(Ordering::Acquire)
        };
        while get(protocol::W_MAGIC) == protocol::CREATING {
            if start.elapsed() >= CREATING_WAIT {
                return Err(still_creating());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if get(protocol::W_MAGIC) != protocol::MAGIC {
            return Err(bad(
                "no ring's table (a shared buffer of another kind?)".into()
            ));
        }
        if get(protocol::W_VERSION) != protocol::FORMAT {
            return Err(bad(format!(
                "its table is of version {}, this bytelens reads version {}",
                get(protocol::W_VERSION),
                protocol::FORMAT
            )));
        }
        let (theirs, ours) = (get(protocol::W_PID_NS), owner::pid_namespace());
        if theirs != 0 && ours != 0 && theirs != ours {
            return Err(bad(format!(
                "it was created in another PID namespace (pid:[{theirs}]; this process is in \
                 pid:[{ours}], a container sharing /dev/shm but not its processes?). The ring \
                 tells a live holder of a slot from a dead one by its process id, and ids of \
                 another namespace are other numbers: its batches would be taken for a dead \
                 process's and overwritten while read. Run both sides in one PID namespace \
                 (docker run --pid=host or --pid=container:NAME)"
            )));
        }
        let (slots, slot_bytes, stride, first) = (
            get(protocol::W_SLOTS),
            get(protocol::W_SLOT_BYTES),
            get(protocol::W_STRIDE),
            get(protocol::W_FIRST),
        );
        let fits = (1..=MAX_SLOTS as u64).contains(&slots)
            && stride % PAGE as u64 == 0
            && (1..=stride).contains(&slot_bytes.max(1))
            && first == ((protocol::table_words(slots as usize) * 8).next_multiple_of(PAGE)) as u64
            && stride.checked_mul(slots).and_then(|s| s.checked_add(first)) == Some(len as u64);
        if !fits {
            return Err(bad(format!(
                "its table says {slots} slots of {slot_bytes} bytes, {stride} apart from byte \
                 {first}, which does not match the segment's {len} bytes of data"
            )));
        }
        // Mapped in advance, as at create (the pages exist already).
        let _ = populate(base, len);
        let plan = shared
            .plan()
            .map_err(|err| RingError::of_segment(name, err))?;
        let need = plan.map(|p| p.build().map(|p| p.nbytes()));
        let need = need.transpose().map_err(|err| RingError::BadPlan {
            name: name.to_owned(),
            err,
        })?;
        if let Some(need) = need {
            if need as u64 > slot_bytes {
                return Err(bad(format!(
                    "its plan needs {need} bytes, more than the slot's {slot_bytes}"
                )));
            }
        }
        let ring = Ring {
            inner: Arc::new(Inner {
                shared,
                base,
                slots: slots as usize,
                slot_bytes: slot_bytes as usize,
                stride: stride as usize,
                first: first as usize,
            }),
        };
        // Every slot's word must read: a corrupted table is refused here
        // rather than at the first change.
        let t = ring.inner.table();
        for slot in 0..ring.inner.slots {
            t.state(slot).map_err(|r| ring.inner.refused(r))?;
        }
        Ok(ring)
    }

    /// Removes the name (processes that have the ring mapped keep it).
    pub fn unlink(name: &str) -> Result<(), RingError> {
        Ok(SharedBuffer::unlink(name)?)
    }

    /// The ring's name.
    pub fn name(&self) -> &str {
        self.inner.shared.name()
    }

    /// How many slots it has.
    pub fn slots(&self) -> usize {
        self.inner.slots
    }

    /// The bytes of one slot.
    pub fn slot_bytes(&self) -> usize {
        self.inner.slot_bytes
    }

    /// The bytes of the whole segment's data (the table and the slots).
    pub fn nbytes(&self) -> usize {
        self.inner.shared.len()
    }

    /// The plan each slot is laid out by, if it was created with one.
    pub fn plan(&self) -> Result<Option<PlanSpec>, RingError> {
        self.inner
            .shared
            .plan()
            .map_err(|err| RingError::of_segment(self.name(), err))
    }

    /// Whether the ring is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.table().closed()
    }

    /// What every process has done with the ring so far.
    pub fn stats(&self) -> RingStats {
        self.inner.table().stats()
    }

    /// Claims a free slot to fill, waiting while none is (at most
    /// `timeout`; forever if `None`).
    pub fn produce(&self, timeout: Option<Duration>) -> Result<Filling, RingError> {
        self.produce_with(timeout, &mut never)
    }

    /// [`produce`](Self::produce), asking `interrupt` between slices of
    /// the wait whether to stop.
    pub fn produce_with(
        &self,
        timeout: Option<Duration>,
        interrupt: Interrupt<'_>,
    ) -> Result<Filling, RingError> {
        let me = owner::me();
        let slot = self
            .inner
            .run(true, timeout, interrupt, &mut |t| protocol::claim(t, me))?;
        Ok(Filling {
            ring: Arc::clone(&self.inner),
            slot,
            me,
            done: false,
        })
    }

    /// Takes the oldest published batch, waiting while there is none (at
    /// most `timeout`; forever if `None`). [`Closed`](RingError::Closed)
    /// once the ring is closed and nothing published is left.
    pub fn consume(&self, timeout: Option<Duration>) -> Result<Batch, RingError> {
        self.consume_with(timeout, &mut never)
    }

    /// [`consume`](Self::consume), asking `interrupt` between slices of
    /// the wait whether to stop.
    pub fn consume_with(
        &self,
        timeout: Option<Duration>,
        interrupt: Interrupt<'_>,
    ) -> Result<Batch, RingError> {
        let me = owner::me();
        let taken = self
            .inner
            .run(false, timeout, interrupt, &mut |t| protocol::take(t, me))?;
        Ok(Batch {
            ring: Arc::clone(&self.inner),
            slot: taken.slot,
            seq: taken.seq,
            redelivered: taken.redelivered,
            me,
        })
    }

    /// Closes the ring for every process: no slot can be claimed or
    /// published any more (waiting producers are woken with
    /// [`Closed`](RingError::Closed)); consumers take what was published,
    /// and then get `Closed`. Closing twice is harmless.
    pub fn close(&self) -> Result<(), RingError> {
        self.inner.change(&mut |t| Ok(protocol::close(t)))
    }

    /// Takes back now what processes that died were holding (the ring does
    /// it itself whenever a wait lasts a slice): how many slots.
    pub fn recover(&self) -> Result<usize, RingError> {
        let _held = self.inner.lock(None, None, &mut never)?;
        self.inner.recover_all()
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("name", &self.name())
            .field("slots", &self.slots())
            .field("slot_bytes", &self.slot_bytes())
            .finish()
    }
}

/// Has Linux allocate and map every page of the `len` bytes at `start`
/// now: the segment's memory is taken from /dev/shm at once (a full
/// /dev/shm is an error here, instead of a SIGBUS at the first write of a
/// slot), and no batch pays for first-touch page faults. Kernels before
/// 5.14 do not know the advice; the pages then come as they are touched.
#[cfg(target_os = "linux")]
fn populate(start: *mut u8, len: usize) -> Result<(), std::io::Error> {
    // SAFETY: the range is the segment's data, mapped read-write by this
    // process; MADV_POPULATE_WRITE faults pages in as writes would without
    // changing a byte, and reports what would have been a SIGBUS (no room
    // in the tmpfs) as EFAULT.
    let rc = unsafe { libc::madvise(start.cast(), len, libc::MADV_POPULATE_WRITE) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) => Ok(()), // an older kernel
        _ => Err(err),
    }
}

#[cfg(not(target_os = "linux"))]
fn populate(_start: *mut u8, _len: usize) -> Result<(), std::io::Error> {
    Ok(())
}

/// Holds the segment's lock; released on drop.
struct Held<'a>(&'a SharedBuffer);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Only fails for a thread that does not hold it, which this one does.
        let _ = self.0.unlock_raw();
    }
}

// SAFETY: `base` is an address into the mapping `shared` owns, which is
// `Send + Sync`; the table is reached only through atomics, and a slot's
// bytes only through a `Filling` or `Batch` holding it (protocol
// invariant 4: one process, one holder at a time).
unsafe impl Send for Inner {}
// SAFETY: as for `Send`.
unsafe impl Sync for Inner {}

impl Inner {
    fn table(&self) -> Table<'_> {
        let n = protocol::table_words(self.slots);
        // SAFETY: the data starts page-aligned and holds the table's `n`
        // words (checked at create and attach), which every process reads
        // and writes as atomics only; the mapping lives as long as `self`.
        Table::new(
            unsafe { std::slice::from_raw_parts(self.base.cast::<AtomicU64>(), n) },
            self.slots,
        )
    }

    fn name(&self) -> String {
        self.shared.name().to_owned()
    }

    fn refused(&self, r: Refusal) -> RingError {
        match r {
            Refusal::Closed => RingError::Closed { name: self.name() },
            Refusal::NotOwner { slot } => RingError::SlotLost {
                name: self.name(),
                slot,
            },
            Refusal::Corrupt { slot, word } => RingError::Corrupt {
                name: self.name(),
                slot,
                word,
            },
        }
    }

    /// Takes the lock, in slices between which `interrupt` is asked.
    fn lock(
        &self,
        deadline: Option<Instant>,
        timeout: Option<Duration>,
        interrupt: Interrupt<'_>,
    ) -> Result<Held<'_>, RingError> {
        loop {
            let slice = deadline.map_or(SLICE, |d| {
                d.saturating_duration_since(Instant::now()).min(SLICE)
            });
            match self.shared.lock_raw(Some(slice)) {
                Ok(_) => return Ok(Held(&self.shared)),
                Err(SharedError::Timeout { .. }) => {
                    if interrupt() {
                        return Err(RingError::Interrupted { name: self.name() });
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(RingError::Timeout {
                            name: self.name(),
                            what: "its lock",
                            waited: timeout.unwrap_or_default(),
                        });
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Applies `stores` and wakes whoever waits on a word they bumped.
    fn apply(&self, t: &Table<'_>, stores: &Stores) -> [bool; 2] {
        let before = [t.get(protocol::W_FREED), t.get(protocol::W_PUBLISHED_GEN)];
        t.apply(stores);
        let after = [t.get(protocol::W_FREED), t.get(protocol::W_PUBLISHED_GEN)];
        [0, 1].map(|i| before[i] as u32 != after[i] as u32 && after[i] >> 32 != 0)
    }

    fn wake(&self, t: &Table<'_>, which: [bool; 2]) {
        for (i, word) in [protocol::W_FREED, protocol::W_PUBLISHED_GEN]
            .into_iter()
            .enumerate()
        {
            if which[i] {
                wait::wake(t.word(word));
            }
        }
    }

    /// One change under the lock (waiting for it as long as it takes).
    fn change(
        &self,
        op: &mut dyn FnMut(&Table<'_>) -> Result<Stores, Refusal>,
    ) -> Result<(), RingError> {
        let t = self.table();
        let woken = {
            let _held = self.lock(None, None, &mut never)?;
            let stores = op(&t).map_err(|r| self.refused(r))?;
            self.apply(&t, &stores)
        };
        self.wake(&t, woken);
        Ok(())
    }

    /// Takes back every slot whose owner died; the lock is held.
    fn recover_all(&self) -> Result<usize, RingError> {
        let t = self.table();
        let mut n = 0;
        let mut woken = [false; 2];
        while let Some((_, stores)) =
            protocol::recover(&t, &mut owner::alive).map_err(|r| self.refused(r))?
        {
            let w = self.apply(&t, &stores);
            woken = [woken[0] | w[0], woken[1] | w[1]];
            n += 1;
        }
        self.wake(&t, woken);
        Ok(n)
    }

    /// Runs `op` under the lock until it gives something, waiting between
    /// tries on the word a producer (or a consumer) waits on.
    fn run<T>(
        &self,
        producer: bool,
        timeout: Option<Duration>,
        interrupt: Interrupt<'_>,
        op: Attempt<'_, T>,
    ) -> Result<T, RingError> {
        // A timeout past what an Instant can hold (Duration::MAX) is no
        // deadline at all: the wait lasts as long as it takes.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let left = || {
            deadline.map_or(SLICE, |d| {
                d.saturating_duration_since(Instant::now()).min(SLICE)
            })
        };
        let t = self.table();
        let word = if producer {
            protocol::W_FREED
        } else {
            protocol::W_PUBLISHED_GEN
        };
        let mut waiting = false;
        let mut stuck = false;
        let mut first = true;
        let mut spin = true;
        loop {
            let held = self.lock(deadline, timeout, interrupt)?;
            if waiting {
                t.apply(&protocol::end_wait(&t, word));
                waiting = false;
            }
            if stuck {
                // A whole slice without a change: look for the dead.
                self.recover_all()?;
            }
            let mut tried = op(&t);
            if matches!(tried, Err(Refusal::Closed)) && !producer && !stuck {
                // Closed and drained: first take back what dead consumers
                // held, so that a consumer still here gets those batches.
                if self.recover_all()? > 0 {
                    tried = op(&t);
                }
            }
            if let Some((value, stores)) = tried.map_err(|r| self.refused(r))? {
                let woken = self.apply(&t, &stores);
                drop(held);
                self.wake(&t, woken);
                return Ok(value);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(RingError::Timeout {
                    name: self.name(),
                    what: if producer {
                        "a free slot"
                    } else {
                        "a published batch"
                    },
                    waited: timeout.unwrap_or_default(),
                });
            }
            if first {
                t.apply(&protocol::count_wait(&t, producer));
                first = false;
            }
            let seen = t.get(word) as u32;
            if spin {
                // First watch the word a few microseconds, unregistered, so
                // that whoever changes it has nobody to wake (no system
                // call on either side when the other process is quick).
                drop(held);
                spin = wait::spin(t.word(word), seen, wait::SPIN.min(left()));
                continue;
            }
            spin = true;
            t.apply(&protocol::start_wait(&t, word));
            waiting = true;
            drop(held);
            let (slice, start) = (left(), Instant::now());
            wait::sleep(t.word(word), seen, slice);
            stuck = start.elapsed() >= slice && t.get(word) as u32 == seen;
            if interrupt() {
                let _held = self.lock(None, None, &mut never)?;
                t.apply(&protocol::end_wait(&t, word));
                return Err(RingError::Interrupted { name: self.name() });
            }
        }
    }
}
