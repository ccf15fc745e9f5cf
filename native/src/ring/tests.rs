//! The ring in one process: threads producing and consuming, timeouts,
//! closing, slots held by batches, dead owners taken back, and hostile
//! segments refused. (Processes killed at random points are the Python
//! suite's `test_ring.py`; every interleaving is `model.rs`'s.)

use std::sync::atomic::{AtomicU64 as Word, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::{DType, ErrorKind};

fn name(what: &str) -> String {
    static N: Word = Word::new(0);
    format!(
        "bl-ring-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A ring that unlinks its name when dropped.
struct Made(Ring);

impl Drop for Made {
    fn drop(&mut self) {
        let _ = Ring::unlink(self.0.name());
    }
}

fn make(what: &str, slot_bytes: usize, slots: usize) -> Made {
    // SAFETY: nothing shrinks the tests' segments.
    Made(unsafe { Ring::create(&name(what), None, slot_bytes, slots) }.unwrap())
}

/// A batch's bytes: its number, then bytes derived from it, then a sum.
fn fill(bytes: &mut [u8], n: u64) {
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    let len = bytes.len();
    for (i, b) in bytes[8..len - 8].iter_mut().enumerate() {
        *b = (n as usize * 31 + i * 7) as u8;
    }
    let sum = checksum(&bytes[..len - 8]);
    bytes[len - 8..].copy_from_slice(&sum.to_le_bytes());
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The batch's number, after checking its sum.
fn check(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    let sum = u64::from_le_bytes(bytes[len - 8..].try_into().unwrap());
    assert_eq!(checksum(&bytes[..len - 8]), sum, "a torn batch");
    u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

#[test]
#[cfg_attr(miri, ignore = "shared memory and futexes")]
fn threads_pass_every_batch_once_in_order() {
    let ring = make("threads", 4096 + 24, 3);
    let per = 300u64;
    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let ring = ring.0.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    let mut slot = ring.produce(Some(Duration::from_secs(20))).unwrap();
                    fill(slot.bytes_mut(), p * per + i);
                    slot.publish().unwrap();
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let ring = ring.0.clone();
            std::thread::spawn(move || {
                let mut got = vec![];
                loop {
                    match ring.consume(Some(Duration::from_secs(20))) {
                        Ok(batch) => got.push((batch.seq(), check(batch.bytes()))),
                        Err(RingError::Closed { .. }) => return got,
                        Err(err) => panic!("{err}"),
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    ring.0.close().unwrap();
    let mut all: Vec<(u64, u64)> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    // Each consumer saw increasing sequence numbers; together, each once.
    all.sort();
    assert_eq!(all.len() as u64, 2 * per);
    assert!(all.iter().enumerate().all(|(i, &(seq, _))| seq == i as u64));
    let mut ids: Vec<u64> = all.iter().map(|&(_, id)| id).collect();
    ids.sort();
    assert!(ids.iter().enumerate().all(|(i, &id)| id == i as u64));
    let stats = ring.0.stats();
    assert_eq!((stats.published, stats.consumed), (2 * per, 2 * per));
    assert_eq!((stats.redelivered, stats.abandoned), (0, 0));
}

#[test]
#[cfg_attr(miri, ignore = "shared memory and futexes")]
fn a_held_batch_keeps_its_slot_and_waits_time_out_naming_the_ring() {
    let ring = make("held", 64, 1);
    let r = &ring.0;
    let mut slot = r.produce(None).unwrap();
    slot.bytes_mut()[0] = 9;
    slot.publish().unwrap();
    let batch = r.consume(None).unwrap();
    let start = Instant::now();
    let err = r.produce(Some(Duration::from_millis(120))).err().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(110));
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let text = err.to_string();
    assert!(text.contains(r.name()), "{text}");
    assert!(text.contains("waited 0.120 s for a free slot"), "{text}");
    let err = r.consume(Some(Duration::ZERO)).err().unwrap();
    assert!(err.to_string().contains("published batch"), "{err}");
    assert_eq!(batch.bytes()[0], 9);
    drop(batch);
    let slot = r.produce(Some(Duration::ZERO)).unwrap();
    drop(slot); // abandoned
    let stats = r.stats();
    assert_eq!((stats.abandoned, stats.producer_waits), (1, 1));
    assert_eq!(stats.consumer_waits, 0); // a zero timeout does not wait
}

#[test]
#[cfg_attr(miri, ignore = "shared memory and futexes")]
fn closing_wakes_waiting_producers_and_consumers_drain_first() {
    let ring = make("close", 8, 1);
    let r = ring.0.clone();
    r.produce(None).unwrap().publish().unwrap();
    let waiter = {
        let r = r.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let err = r.produce(Some(Duration::from_secs(30))).err().unwrap();
            (err, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    r.close().unwrap();
    let (err, waited) = waiter.join().unwrap();
    assert!(matches!(err, RingError::Closed { .. }), "{err}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(err.kind(), ErrorKind::RingClosed);
    // The published batch is still delivered, then the ring is done.
    assert_eq!(r.consume(Some(Duration::ZERO)).unwrap().seq(), 0);
    let err = r.consume(None).err().unwrap();
    assert!(err.to_string().contains("is closed"), "{err}");
    assert!(r.is_closed());
    // A slot claimed before the close cannot be published after it.
    let ring2 = make("close2", 8, 2);
    let slot = ring2.0.produce(None).unwrap();
    ring2.0.close().unwrap();
    assert!(matches!(slot.publish(), Err(RingError::Closed { .. })));
    assert_eq!(ring2.0.stats().abandoned, 1);
}

#[test]
#[cfg_attr(miri, ignore = "shared memory and futexes")]
fn the_longest_timeouts_wait_without_overflowing() {
    let ring = make("max", 8, 1);
    let r = &ring.0;
    // Duration::MAX is past any Instant: the waits take it as "for ever".
    r.produce(Some(Duration::MAX)).unwrap().publish().unwrap();
    let batch = r.consume(Some(Duration::MAX)).unwrap();
    assert_eq!(batch.seq(), 0);
    drop(batch);
    let long = Duration::from_secs(u64::MAX / 2);
    r.produce(Some(long)).unwrap().publish().unwrap();
    drop(r.consume(Some(long)).unwrap());
    r.close().unwrap();
    let err = r.consume(Some(Duration::MAX)).err().unwrap();
    assert!(matches!(err, RingError::Closed { .. }), "{err}");
    let err = r.produce(Some(Duration::MAX)).err().unwrap();
    assert!(matches!(err, RingError::Closed { .. }), "{err}");
}

#[test]
#[cfg_attr(miri, ignore = "shared memory")]
fn an_oversized_ring_is_refused_with_the_numbers_given() {
    let what = name("huge");
    // SAFETY: nothing shrinks the tests' segments.
    let err = unsafe { Ring::create(&what, None, usize::MAX - 5, 3) }
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        text.contains(&what) && text.contains(&format!("3 slots of {} bytes", usize::MAX - 5)),
        "{text}"
    );
    assert!(!text.contains(&usize::MAX.to_string()), "{text}");
    assert_eq!(err.kind(), ErrorKind::BadSegment);
}

#[test]
#[cfg_attr(miri, ignore = "shared memory")]
fn attaching_waits_for_a_ring_being_created() {
    let ring = make("creating", 8, 2);
    let name = ring.0.name().to_owned();
    // As the creator leaves the table while it fills the pages in.
    poke(&name, protocol::W_MAGIC, protocol::CREATING);
    let creator = {
        let name = name.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            poke(&name, protocol::W_MAGIC, protocol::MAGIC);
        })
    };
    let start = Instant::now();
    // SAFETY: nothing shrinks the tests' segments.
    let attached = unsafe { Ring::attach(&name) }.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(100));
    creator.join().unwrap();
    assert_eq!(attached.slots(), 2);
}

#[test]
#[cfg(target_os = "linux")]
#[cfg_attr(miri, ignore = "shared memory")]
fn attaching_waits_for_a_segment_not_yet_sized_or_headed() {
    // A segment just made (0 bytes), then sized with no header yet: what
    // another process sees between the creator's shm_open and its header.
    for size in [0, 1 << 16] {
        let name = name("unsized");
        let path = format!("/dev/shm/{name}");
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        let creator = {
            let name = name.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                // The finished ring takes the placeholder's name in one
                // step (a rename), so the name is never missing meanwhile.
                let other = format!("{name}-done");
                // SAFETY: nothing shrinks the tests' segments.
                let ring = unsafe { Ring::create(&other, None, 8, 2) }.unwrap();
                std::fs::rename(format!("/dev/shm/{other}"), format!("/dev/shm/{name}")).unwrap();
                ring
            })
        };
        let start = Instant::now();
        // SAFETY: nothing shrinks the tests' segments.
        let attached = unsafe { Ring::attach(&name) };
        let made = creator.join().unwrap();
        let _ = Ring::unlink(&name);
        let attached = attached.unwrap_or_else(|e| panic!("{size} bytes: {e}"));
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert_eq!((attached.slots(), made.slots()), (2, 2));
    }
}

/// The word `w` of the table of the ring `name`, through a second mapping.
fn poke(name: &str, w: usize, value: u64) {
    // SAFETY: nothing shrinks the tests' segments.
    let mut sh = unsafe { SharedBuffer::attach(name) }.unwrap();
    sh.as_bytes_mut()[w * 8..w * 8 + 8].copy_from_slice(&value.to_le_bytes());
}

fn slot_word(slot: usize, field: usize) -> usize {
    protocol::HEAD_WORDS + slot * protocol::SLOT_WORDS + field
}

#[test]
#[cfg_attr(miri, ignore = "shared memory and processes")]
fn slots_of_dead_processes_come_back() {
    let ring = make("dead", 16, 2);
    let r = &ring.0;
    let mut slot = r.produce(None).unwrap();
    fill(slot.bytes_mut(), 5);
    slot.publish().unwrap();
    // A process that has ended, as the owner of a filling slot and of the
    // batch being read.
    let mut child = if cfg!(windows) {
        std::process::Command::new("cmd")
            .args(["/c", "exit"])
            .spawn()
    } else {
        std::process::Command::new("true").spawn()
    }
    .unwrap();
    let dead = u64::from(child.id());
    child.wait().unwrap();
    poke(r.name(), slot_word(1, 2), 1);
    poke(r.name(), slot_word(1, 0), 1 | dead << 32); // Filling
    poke(r.name(), slot_word(0, 2), 1);
    poke(r.name(), slot_word(0, 0), 3 | dead << 32); // Reading seq 0
    assert!(r.produce(Some(Duration::ZERO)).is_err());
    // A wait that lasts a slice looks for the dead.
    let batch = r.consume(Some(Duration::from_secs(5))).unwrap();
    assert!(batch.redelivered());
    assert_eq!((batch.seq(), check(batch.bytes())), (0, 5));
    let stats = r.stats();
    assert_eq!((stats.redelivered, stats.recovered), (1, 2));
    assert_eq!(stats.abandoned, 1);
    drop(batch);
    assert_eq!(r.recover().unwrap(), 0);
    let _a = r.produce(Some(Duration::ZERO)).unwrap();
    let _b = r.produce(Some(Duration::ZERO)).unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "shared memory")]
fn hostile_segments_are_refused_with_what_is_wrong() {
    let attach = |name: &str| {
        // SAFETY: nothing shrinks the tests' segments.
        unsafe { Ring::attach(name) }
            .err()
            .map(|e| (e.kind(), e.to_string()))
    };
    // A plain shared buffer is not a ring.
    let plain = name("plain");
    // SAFETY: as above.
    let sh = unsafe { SharedBuffer::create(&plain, 1 << 16, None) }.unwrap();
    let (kind, text) = attach(&plain).unwrap();
    assert_eq!(kind, ErrorKind::BadSegment);
    assert!(text.contains("no ring's table"), "{text}");
    // Unlinked while mapped: on Windows the name goes with its last mapping.
    SharedBuffer::unlink(&plain).unwrap();
    drop(sh);
    // Another version, another slot count, a slot too large, a bad state word.
    for (w, value, says) in [
        (protocol::W_VERSION, 2, "version 2"),
        (protocol::W_SLOTS, 3, "3 slots"),
        (protocol::W_SLOTS, 0, "0 slots"),
        (protocol::W_SLOTS, u64::MAX, "slots"),
        (protocol::W_SLOT_BYTES, 8193, "8193 bytes"),
        (protocol::W_STRIDE, 4097, "4097 apart"),
        (protocol::W_FIRST, 0, "from byte 0"),
        (slot_word(1, 0), 7, "0x0000000000000007"),
        (slot_word(0, 0), 1, "0x0000000000000001"),
    ] {
        let ring = make("hostile", 100, 2);
        poke(ring.0.name(), w, value);
        let (kind, text) = attach(ring.0.name()).expect(says);
        assert!(text.contains(says), "{says}: {text}");
        assert!(text.contains(ring.0.name()), "{text}");
        assert!(
            [ErrorKind::BadSegment, ErrorKind::RingState].contains(&kind),
            "{kind}"
        );
    }
    // A name with odd characters is quoted, escaped.
    let err = attach("a\u{1}b\"").unwrap();
    assert!(
        err.1.contains("\\u{1}") || err.1.contains("\\x01"),
        "{}",
        err.1
    );
    // Sizes a ring cannot have.
    // SAFETY: as above.
    let err = unsafe { Ring::create(&name("zero"), None, 8, 0) }.unwrap_err();
    assert!(err.to_string().contains("0 slots"), "{err}");
    let mut plan = crate::Plan::new();
    plan.field("x", DType::F32, &[100]).unwrap();
    // SAFETY: as above.
    let err = unsafe { Ring::create(&name("small"), Some(&plan), 16, 2) }.unwrap_err();
    assert!(err.to_string().contains("needs 400 bytes"), "{err}");
}

#[test]
#[cfg_attr(miri, ignore = "shared memory")]
fn attaching_reads_the_plan_and_sizes() {
    let mut plan = crate::Plan::new();
    plan.field("x", DType::F32, &[3, 5]).unwrap();
    plan.field("y", DType::I64, &[2]).unwrap();
    let n = name("plan");
    // SAFETY: nothing shrinks the tests' segments.
    let ring = Made(unsafe { Ring::create(&n, Some(&plan), plan.nbytes(), 4) }.unwrap());
    // SAFETY: as above.
    let other = unsafe { Ring::attach(&n) }.unwrap();
    assert_eq!((other.slots(), other.slot_bytes()), (4, plan.nbytes()));
    assert_eq!(other.nbytes(), ring.0.nbytes());
    let spec = other.plan().unwrap().unwrap();
    assert_eq!(spec.build().unwrap().nbytes(), plan.nbytes());
    // Slots start on pages.
    let mut a = ring.0.produce(None).unwrap();
    let mut b = ring.0.produce(None).unwrap();
    assert_eq!(a.as_mut_ptr() as usize % 4096, 0);
    assert_eq!(b.as_mut_ptr() as usize - a.as_mut_ptr() as usize, 4096);
}
