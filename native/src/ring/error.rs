//! [`RingError`]: what can go wrong with a ring, each message naming the
//! ring (and the slot, where one is concerned).

use crate::shared::SharedError;
use crate::{ErrorKind, LayoutError, QuoteStyle, Quoted};

/// What can go wrong with a [`Ring`](crate::Ring).
#[derive(Debug)]
#[non_exhaustive]
pub enum RingError {
    /// The segment: its name, making, mapping or header.
    Shared(SharedError),
    /// A segment that is not a ring bytelens can use, or a ring asked for
    /// with sizes it cannot have.
    BadRing {
        /// The ring's name.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// The system had no memory for the ring's segment (on Linux, /dev/shm
    /// is full: in containers it is often 64 MiB unless raised).
    NoRoom {
        /// The ring's name.
        name: String,
        /// The bytes asked for.
        nbytes: usize,
        /// What the system said.
        err: std::io::Error,
    },
    /// The ring is closed: no slot can be claimed or published, or (for a
    /// consumer) nothing published is left.
    Closed {
        /// The ring's name.
        name: String,
    },
    /// Nothing came within the timeout.
    Timeout {
        /// The ring's name.
        name: String,
        /// What was waited for: "a free slot", "a published batch", "its lock".
        what: &'static str,
        /// How long.
        waited: std::time::Duration,
    },
    /// The interrupt check said to stop waiting.
    Interrupted {
        /// The ring's name.
        name: String,
    },
    /// A slot this process held was taken back by another, which found no
    /// process of this one's id and start time alive.
    SlotLost {
        /// The ring's name.
        name: String,
        /// The slot.
        slot: usize,
    },
    /// The plan stored with the ring cannot be read back (something other
    /// than bytelens wrote into the segment's header).
    BadPlan {
        /// The ring's name.
        name: String,
        /// What is wrong with the plan's text.
        err: LayoutError,
    },
    /// A slot's state word holds a value bytelens never writes.
    Corrupt {
        /// The ring's name.
        name: String,
        /// The slot.
        slot: usize,
        /// The word.
        word: u64,
    },
}

/// A ring's name as messages quote it (as shared memory's names are).
fn quoted(name: &str) -> Quoted<'_> {
    Quoted::new(name, 64, QuoteStyle::Name)
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::Shared(err) => err.fmt(f),
            RingError::BadRing { name, why } => {
                write!(f, "ring {} cannot be used: {why}", quoted(name))
            }
            RingError::NoRoom { name, nbytes, err } => write!(
                f,
                "ring {}: no room for its {nbytes} bytes of shared memory ({err}); on Linux \
                 /dev/shm is full, or small (containers often give it 64 MiB: raise it, with \
                 docker's --shm-size for one)",
                quoted(name)
            ),
            RingError::Closed { name } => write!(
                f,
                "ring {} is closed (producers can no longer publish; consumers get what was \
                 published, then this)",
                quoted(name)
            ),
            RingError::Timeout { name, what, waited } => write!(
                f,
                "ring {}: waited {:.3} s for {what}, in vain",
                quoted(name),
                waited.as_secs_f64()
            ),
            RingError::Interrupted { name } => {
                write!(f, "ring {}: the wait was interrupted", quoted(name))
            }
            RingError::SlotLost { name, slot } => write!(
                f,
                "ring {}: slot {slot} is no longer this process's: another process took it \
                 back, finding no process with this one's id and start time",
                quoted(name)
            ),
            RingError::BadPlan { name, err } => {
                write!(
                    f,
                    "ring {}: its stored plan cannot be read: {err}",
                    quoted(name)
                )
            }
            RingError::Corrupt { name, slot, word } => write!(
                f,
                "ring {}: slot {slot}'s state word is {word:#018x}, which bytelens never writes \
                 (the segment was written by something else)",
                quoted(name)
            ),
        }
    }
}

impl RingError {
    /// The error's kind.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{ErrorKind, RingError};
    /// let err = RingError::Closed { name: "batches".into() };
    /// assert_eq!(err.kind(), ErrorKind::RingClosed);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            RingError::Shared(err) => err.kind(),
            RingError::BadRing { .. } => ErrorKind::BadSegment,
            RingError::NoRoom { .. } => ErrorKind::OutOfMemory,
            RingError::Closed { .. } => ErrorKind::RingClosed,
            RingError::Timeout { .. } => ErrorKind::Timeout,
            RingError::Interrupted { .. } => ErrorKind::Interrupted,
            RingError::BadPlan { err, .. } => err.kind(),
            RingError::SlotLost { .. } | RingError::Corrupt { .. } => ErrorKind::RingState,
        }
    }
}

impl std::error::Error for RingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RingError::Shared(err) => Some(err),
            RingError::NoRoom { err, .. } => Some(err),
            RingError::BadPlan { err, .. } => Some(err),
            _ => None,
        }
    }
}

impl RingError {
    /// `err`, met in the segment of the ring `name`: a stored plan that
    /// cannot be read names the ring ([`BadPlan`](RingError::BadPlan)).
    pub(crate) fn of_segment(name: &str, err: SharedError) -> RingError {
        match err {
            SharedError::BadPlan(err) => RingError::BadPlan {
                name: name.to_owned(),
                err,
            },
            other => RingError::Shared(other),
        }
    }
}

impl From<SharedError> for RingError {
    fn from(err: SharedError) -> RingError {
        RingError::Shared(err)
    }
}
