//! The ring's protocol: what its words in shared memory mean, and every
//! change a process makes to them. Nothing here touches the OS; `mod.rs`
//! takes the segment's lock around each call and waits between them, and
//! `model.rs` runs every interleaving of these calls (and every crash
//! between their stores) in a small ring.
//!
//! # The words
//!
//! The ring's table is an array of 64-bit words (little-endian, 8-byte
//! aligned, at the start of the segment's data): [`HEAD_WORDS`] words of
//! header, then [`SLOT_WORDS`] words for each slot:
//!
//! | word | holds |
//! |---|---|
//! | `STATE` | the slot's state (bits 0..8: [`State`]), whether it is redelivered (bit 8), and its owner's process id (bits 32..64) while `Filling` or `Reading` |
//! | `SEQ` | the batch's sequence number, while `Published` or `Reading` |
//! | `BORN` | its owner's start time (with the process id, who it is: a process id alone is reused) |
//!
//! The header's `W_PID_NS` word records the creator's PID namespace: process
//! ids are numbers of one namespace, so a process of another one cannot tell
//! a live owner from a dead one, and is refused at attach.
//!
//! # Invariants
//!
//! 1. Every change happens under the segment's lock: one process at a
//!    time reads and writes the table (the words are atomics only because
//!    other processes map the same memory; their order is the lock's).
//! 2. Each change commits with one store: of a slot's `STATE` word (or of
//!    the header's `FLAGS`). What that word refers to (`SEQ`, `BORN`,
//!    `NEXT_SEQ`) is stored before it; after it come only the counters and
//!    the wait words. So a process killed between two of a change's stores
//!    leaves the table as before the change, or with a higher `NEXT_SEQ`
//!    (a gap in the numbers, which nothing relies on), or the change made
//!    with a counter not yet counted or a sleeper not yet woken (it wakes
//!    by itself within a slice). Nothing needs repairing when the lock
//!    reports that its owner died.
//! 3. A slot is `Filling` or `Reading` only with an owner, and only its
//!    owner (same process id, same start time) moves it on. When the owner
//!    is gone, [`recover`] moves it on instead: `Filling` to `Free` (the
//!    batch was never published), `Reading` to `Published` again with its
//!    sequence number, marked redelivered (its consumer may not have
//!    finished with it).
//! 4. A `Published` slot's bytes were written in full by a producer that
//!    then published it, and nobody writes them until a consumer has taken
//!    the batch and released it: a producer only writes a slot it holds as
//!    `Filling`, which it can only claim from `Free`.
//! 5. [`take`] gives the published batch with the smallest sequence
//!    number: batches leave in the order they were published (a
//!    redelivered batch keeps its number, so it goes first).
//! 6. Once `CLOSED` is set it stays set: no claim or publish succeeds
//!    after it, and takes go on until nothing is published. A take never
//!    waits for a batch another process holds: two consumers that each
//!    keep a batch while they take the next would wait for each other for
//!    good. (A batch whose consumer dies is published again, with its
//!    number; a consumer still taking gets it, and one that finished does
//!    not come back for it.)

use std::sync::atomic::{AtomicU64, Ordering};

/// The ring's format version (in `VERSION`), checked when attaching.
pub(crate) const FORMAT: u64 = 1;
/// `"BLRING\0\0"`, the table's first word.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"BLRING\0\0");
/// `W_MAGIC` while the creator fills the segment's pages in, before it
/// writes the table (`MAGIC` last): an attaching process waits for it.
pub(crate) const CREATING: u64 = u64::from_le_bytes(*b"BLRING\0c");

/// Header words.
pub(crate) const W_MAGIC: usize = 0;
pub(crate) const W_VERSION: usize = 1;
pub(crate) const W_SLOTS: usize = 2;
/// Bytes of one slot (the plan's size, or the size asked for).
pub(crate) const W_SLOT_BYTES: usize = 3;
/// Bytes from one slot's start to the next (a multiple of the page).
pub(crate) const W_STRIDE: usize = 4;
/// Where the first slot starts, in bytes from the table's start.
pub(crate) const W_FIRST: usize = 5;
pub(crate) const W_FLAGS: usize = 6;
pub(crate) const W_NEXT_SEQ: usize = 7;
/// Two 32-bit counters the waits sleep on: the low half of `W_FREED` is
/// bumped whenever a slot becomes free, of `W_PUBLISHED_GEN` whenever a
/// batch is published (or the ring closes); the high halves count the
/// processes waiting, so that nobody is woken for nothing.
pub(crate) const W_FREED: usize = 8;
pub(crate) const W_PUBLISHED_GEN: usize = 9;
/// The counters [`Stats`] reads, from here on (7 words).
pub(crate) const W_STATS: usize = 10;
/// The creator's PID namespace (0: none known; see `owner::pid_namespace`).
pub(crate) const W_PID_NS: usize = 17;
/// Words of header before the first slot's words.
pub(crate) const HEAD_WORDS: usize = 32;
/// Words per slot.
pub(crate) const SLOT_WORDS: usize = 4;
const STATE: usize = 0;
const SEQ: usize = 1;
const BORN: usize = 2;

/// `W_FLAGS`: the ring is closed.
pub(crate) const CLOSED: u64 = 1;
/// `STATE`, bit 8: the batch was delivered before, to a consumer that died.
const REDELIVERED: u64 = 1 << 8;

/// The words a table of `slots` slots takes.
pub(crate) const fn table_words(slots: usize) -> usize {
    HEAD_WORDS + slots * SLOT_WORDS
}

/// Where a slot is in its round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Nobody's: a producer may claim it.
    Free,
    /// A producer is writing it.
    Filling,
    /// Written and published, waiting for a consumer.
    Published,
    /// A consumer holds the batch.
    Reading,
}

impl State {
    fn code(self) -> u64 {
        match self {
            State::Free => 0,
            State::Filling => 1,
            State::Published => 2,
            State::Reading => 3,
        }
    }

    fn of(code: u64) -> Option<State> {
        Some(match code {
            0 => State::Free,
            1 => State::Filling,
            2 => State::Published,
            3 => State::Reading,
            _ => return None,
        })
    }
}

/// A process, as the table records an owner: its id and its start time
/// (in the OS's units; 0 where the OS gives none), so that a later process
/// given the same id is not taken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The process id.
    pub pid: u32,
    /// When it started.
    pub born: u64,
}

/// What the counters of a ring say, for every process together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Batches published.
    pub published: u64,
    /// Batches consumed: taken and then released by a live consumer.
    pub consumed: u64,
    /// Batches delivered again because their consumer died holding them.
    pub redelivered: u64,
    /// Slots freed without publishing: abandoned by their producer (an
    /// exception in its block) or recovered from a producer that died.
    pub abandoned: u64,
    /// Times a producer waited for a free slot.
    pub producer_waits: u64,
    /// Times a consumer waited for a batch.
    pub consumer_waits: u64,
    /// Slots taken back from processes that died.
    pub recovered: u64,
}

const S_PUBLISHED: usize = 0;
const S_CONSUMED: usize = 1;
const S_REDELIVERED: usize = 2;
const S_ABANDONED: usize = 3;
const S_PRODUCER_WAITS: usize = 4;
const S_CONSUMER_WAITS: usize = 5;
const S_RECOVERED: usize = 6;

/// What a change found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The ring is closed.
    Closed,
    /// The slot is no longer this process's: another process took it back,
    /// having found this one dead (its id and start time did not match).
    NotOwner {
        /// The slot.
        slot: usize,
    },
    /// A slot's state word holds a value bytelens never writes.
    Corrupt {
        /// The slot.
        slot: usize,
        /// The word.
        word: u64,
    },
}

/// The stores a change makes, in the order it makes them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stores {
    list: [(usize, u64); 6],
    len: usize,
}

impl Stores {
    fn push(&mut self, word: usize, value: u64) {
        self.list[self.len] = (word, value);
        self.len += 1;
    }

    /// The stores, in order.
    pub(crate) fn as_slice(&self) -> &[(usize, u64)] {
        &self.list[..self.len]
    }
}

/// A ring's table, over words that other processes share.
#[derive(Clone, Copy)]
pub(crate) struct Table<'a> {
    words: &'a [AtomicU64],
    slots: usize,
}

impl<'a> Table<'a> {
    /// The table in `words`, which holds [`table_words`]`(slots)` words.
    pub(crate) fn new(words: &'a [AtomicU64], slots: usize) -> Table<'a> {
        assert!(
            words.len() >= table_words(slots),
            "a table of {slots} slots"
        );
        Table { words, slots }
    }

    /// How many slots the table has.
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    /// A word, to wait on or wake.
    pub(crate) fn word(&self, word: usize) -> &'a AtomicU64 {
        &self.words[word]
    }

    pub(crate) fn get(&self, word: usize) -> u64 {
        self.words[word].load(Ordering::Relaxed)
    }

    fn set(&self, word: usize, value: u64) {
        self.words[word].store(value, Ordering::Relaxed);
    }

    /// Makes `stores`, in order.
    pub(crate) fn apply(&self, stores: &Stores) {
        for &(word, value) in stores.as_slice() {
            self.set(word, value);
        }
    }

    /// Writes a new table's header (all slots free).
    pub(crate) fn init(&self, slot_bytes: u64, stride: u64, first: u64, pid_ns: u64) {
        for word in self.words[..table_words(self.slots)].iter() {
            word.store(0, Ordering::Relaxed);
        }
        self.set(W_VERSION, FORMAT);
        self.set(W_SLOTS, self.slots as u64);
        self.set(W_SLOT_BYTES, slot_bytes);
        self.set(W_STRIDE, stride);
        self.set(W_FIRST, first);
        self.set(W_PID_NS, pid_ns);
        // Last: an attacher that sees the magic sees the rest.
        self.words[W_MAGIC].store(MAGIC, Ordering::Release);
    }

    fn at(slot: usize, field: usize) -> usize {
        HEAD_WORDS + slot * SLOT_WORDS + field
    }

    /// A slot's state, redelivered flag, owner's id; `Corrupt` for a word
    /// bytelens never writes.
    pub(crate) fn state(&self, slot: usize) -> Result<(State, bool, u32), Refusal> {
        let word = self.get(Table::at(slot, STATE));
        let bad = Refusal::Corrupt { slot, word };
        let state = State::of(word & 0xff).ok_or(bad)?;
        let redelivered = word & REDELIVERED != 0;
        let pid = (word >> 32) as u32;
        let owned = matches!(state, State::Filling | State::Reading);
        // Bits 9..32 are never set; a free or published slot has no owner,
        // only a published or read one can be redelivered.
        if word & 0xffff_fe00 != 0
            || owned != (pid != 0)
            || (redelivered && !matches!(state, State::Published | State::Reading))
        {
            return Err(bad);
        }
        Ok((state, redelivered, pid))
    }

    /// The slot's owner, if it has one.
    pub(crate) fn owner(&self, slot: usize) -> Result<Option<Owner>, Refusal> {
        let (_, _, pid) = self.state(slot)?;
        Ok((pid != 0).then(|| Owner {
            pid,
            born: self.get(Table::at(slot, BORN)),
        }))
    }

    /// The sequence number of the batch in `slot`.
    pub(crate) fn seq(&self, slot: usize) -> u64 {
        self.get(Table::at(slot, SEQ))
    }

    /// Whether the ring is closed.
    pub(crate) fn closed(&self) -> bool {
        self.get(W_FLAGS) & CLOSED != 0
    }

    /// The counters.
    pub(crate) fn stats(&self) -> Stats {
        let s = |i| self.get(W_STATS + i);
        Stats {
            published: s(S_PUBLISHED),
            consumed: s(S_CONSUMED),
            redelivered: s(S_REDELIVERED),
            abandoned: s(S_ABANDONED),
            producer_waits: s(S_PRODUCER_WAITS),
            consumer_waits: s(S_CONSUMER_WAITS),
            recovered: s(S_RECOVERED),
        }
    }

    fn state_word(state: State, redelivered: bool, pid: u32) -> u64 {
        state.code() | if redelivered { REDELIVERED } else { 0 } | (u64::from(pid) << 32)
    }

    fn count(&self, stores: &mut Stores, stat: usize) {
        stores.push(W_STATS + stat, self.get(W_STATS + stat).wrapping_add(1));
    }

    /// Bumps the low half (the generation) of a wait word.
    fn bump(&self, stores: &mut Stores, word: usize) {
        let w = self.get(word);
        stores.push(
            word,
            (w & !0xffff_ffff) | u64::from((w as u32).wrapping_add(1)),
        );
    }

    /// Checks `slot` is `state` and `me`'s.
    fn mine(&self, slot: usize, state: State, me: Owner) -> Result<bool, Refusal> {
        let (now, redelivered, _) = self.state(slot)?;
        if now != state || self.owner(slot)? != Some(me) {
            return Err(Refusal::NotOwner { slot });
        }
        Ok(redelivered)
    }
}

/// `me` claims a free slot to fill: the slot and the stores, `None` when
/// none is free. Refused once the ring is closed.
pub(crate) fn claim(t: &Table<'_>, me: Owner) -> Result<Option<(usize, Stores)>, Refusal> {
    if t.closed() {
        return Err(Refusal::Closed);
    }
    for slot in 0..t.slots() {
        if t.state(slot)?.0 == State::Free {
            let mut stores = Stores::default();
            stores.push(Table::at(slot, BORN), me.born);
            stores.push(
                Table::at(slot, STATE),
                Table::state_word(State::Filling, false, me.pid),
            );
            return Ok(Some((slot, stores)));
        }
    }
    Ok(None)
}

/// `me` publishes the slot it filled, as the next batch: its sequence
/// number and the stores. A closed ring refuses (the caller then abandons).
pub(crate) fn publish(t: &Table<'_>, slot: usize, me: Owner) -> Result<(u64, Stores), Refusal> {
    t.mine(slot, State::Filling, me)?;
    if t.closed() {
        return Err(Refusal::Closed);
    }
    let seq = t.get(W_NEXT_SEQ);
    let mut stores = Stores::default();
    stores.push(W_NEXT_SEQ, seq + 1);
    stores.push(Table::at(slot, SEQ), seq);
    stores.push(
        Table::at(slot, STATE),
        Table::state_word(State::Published, false, 0),
    );
    t.count(&mut stores, S_PUBLISHED);
    t.bump(&mut stores, W_PUBLISHED_GEN);
    Ok((seq, stores))
}

/// `me` gives back the slot it was filling, unpublished.
pub(crate) fn abandon(t: &Table<'_>, slot: usize, me: Owner) -> Result<Stores, Refusal> {
    t.mine(slot, State::Filling, me)?;
    let mut stores = Stores::default();
    stores.push(Table::at(slot, STATE), 0);
    t.count(&mut stores, S_ABANDONED);
    t.bump(&mut stores, W_FREED);
    Ok(stores)
}

/// A batch `take` gave: its slot, sequence number, and whether it was
/// delivered before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    pub(crate) slot: usize,
    pub(crate) seq: u64,
    pub(crate) redelivered: bool,
}

/// `me` takes the oldest published batch: `None` when there is none and the
/// ring is open, `Closed` when there is none and it is closed (whatever
/// other processes still hold: see invariant 6).
pub(crate) fn take(t: &Table<'_>, me: Owner) -> Result<Option<(Taken, Stores)>, Refusal> {
    let mut oldest: Option<Taken> = None;
    for slot in 0..t.slots() {
        let (state, redelivered, _) = t.state(slot)?;
        if state == State::Published && oldest.is_none_or(|o| t.seq(slot) < o.seq) {
            oldest = Some(Taken {
                slot,
                seq: t.seq(slot),
                redelivered,
            });
        }
    }
    let Some(taken) = oldest else {
        if t.closed() {
            return Err(Refusal::Closed);
        }
        return Ok(None);
    };
    let mut stores = Stores::default();
    stores.push(Table::at(taken.slot, BORN), me.born);
    stores.push(
        Table::at(taken.slot, STATE),
        Table::state_word(State::Reading, taken.redelivered, me.pid),
    );
    Ok(Some((taken, stores)))
}

/// `me` is done with the batch it took: the slot is free again.
pub(crate) fn release(t: &Table<'_>, slot: usize, me: Owner) -> Result<Stores, Refusal> {
    t.mine(slot, State::Reading, me)?;
    let mut stores = Stores::default();
    stores.push(Table::at(slot, STATE), 0);
    t.count(&mut stores, S_CONSUMED);
    t.bump(&mut stores, W_FREED);
    Ok(stores)
}

/// Closes the ring (for good).
pub(crate) fn close(t: &Table<'_>) -> Stores {
    let mut stores = Stores::default();
    stores.push(W_FLAGS, t.get(W_FLAGS) | CLOSED);
    t.bump(&mut stores, W_FREED);
    t.bump(&mut stores, W_PUBLISHED_GEN);
    stores
}

/// Counts a wait of a producer (or a consumer).
pub(crate) fn count_wait(t: &Table<'_>, producer: bool) -> Stores {
    let mut stores = Stores::default();
    let stat = if producer {
        S_PRODUCER_WAITS
    } else {
        S_CONSUMER_WAITS
    };
    t.count(&mut stores, stat);
    stores
}

/// Marks one more process sleeping on `word` (`W_FREED` or
/// `W_PUBLISHED_GEN`), so that changes bumping it wake it.
pub(crate) fn start_wait(t: &Table<'_>, word: usize) -> Stores {
    let mut stores = Stores::default();
    stores.push(word, t.get(word).wrapping_add(1 << 32));
    stores
}

/// Undoes [`start_wait`]'s mark, when the wait is over.
pub(crate) fn end_wait(t: &Table<'_>, word: usize) -> Stores {
    let w = t.get(word);
    let mut stores = Stores::default();
    if w >> 32 != 0 {
        stores.push(word, w - (1 << 32));
    }
    stores
}

/// The slot changes that take back what owners no longer alive held, one
/// slot at a time: the first such slot and its stores, `None` when every
/// owner lives. `alive` says whether an owner still runs.
pub(crate) fn recover(
    t: &Table<'_>,
    alive: &mut dyn FnMut(Owner) -> bool,
) -> Result<Option<(usize, Stores)>, Refusal> {
    for slot in 0..t.slots() {
        let (state, _, _) = t.state(slot)?;
        let Some(owner) = t.owner(slot)? else {
            continue;
        };
        if alive(owner) {
            continue;
        }
        let mut stores = Stores::default();
        match state {
            State::Filling => {
                stores.push(Table::at(slot, STATE), 0);
                t.count(&mut stores, S_ABANDONED);
                t.bump(&mut stores, W_FREED);
            }
            State::Reading => {
                stores.push(
                    Table::at(slot, STATE),
                    Table::state_word(State::Published, true, 0),
                );
                t.count(&mut stores, S_REDELIVERED);
                t.bump(&mut stores, W_PUBLISHED_GEN);
            }
            State::Free | State::Published => unreachable!("only owned slots have an owner"),
        }
        t.count(&mut stores, S_RECOVERED);
        return Ok(Some((slot, stores)));
    }
    Ok(None)
}
