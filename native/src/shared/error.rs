//! [`SharedError`]: what can go wrong with shared memory and mapped
//! files, and how its messages quote a segment's name.

use std::time::Duration;

use super::{AT_PLAN, DATA_OFFSET, LockKind, sys};
use crate::{ErrorKind, LayoutError, QuoteStyle, Quoted};

/// What can go wrong with shared memory and mapped files.
#[derive(Debug)]
#[non_exhaustive]
pub enum SharedError {
    /// A segment name this OS does not take: empty, longer than
    /// [`MAX_NAME`](crate::MAX_NAME), or holding a character the OS keeps
    /// for itself (`/` and NUL on Unix, `\\` and NUL on Windows).
    BadName {
        /// The name given.
        name: String,
    },
    /// No segment has this name.
    Missing {
        /// The name given.
        name: String,
    },
    /// A segment with this name already exists.
    Exists {
        /// The name given.
        name: String,
    },
    /// The segment is not a bytelens segment, or a newer version of one.
    WrongFormat {
        /// The name given.
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The segment is smaller than its header says.
    TooSmall {
        /// The name given.
        name: String,
        /// Its size in bytes.
        size: u64,
        /// The size it must have.
        needed: u64,
    },
    /// More bytes than a mapping can hold.
    TooLarge {
        /// Bytes asked for.
        nbytes: usize,
    },
    /// The calling thread already holds the lock (it is not recursive).
    AlreadyHeld,
    /// The calling thread does not hold the lock it is releasing.
    NotHeld,
    /// The plan does not fit in the header page.
    PlanTooLarge {
        /// The plan's text length.
        len: usize,
    },
    /// The plan's arrays need more bytes than the segment's data holds.
    PlanDoesNotFit {
        /// The bytes the plan needs.
        plan: usize,
        /// The bytes of data the segment holds.
        nbytes: usize,
    },
    /// The name now names another segment: this one's name was unlinked
    /// and the name given to a new segment since.
    Replaced {
        /// The name.
        name: String,
    },
    /// The system has no room for the segment's memory (a full /dev/shm):
    /// found at `create`, where every page is allocated, instead of a
    /// SIGBUS at the first write past the free space.
    NoRoom {
        /// The name given.
        name: String,
        /// Bytes the segment needs.
        nbytes: usize,
        /// Bytes free where segments live, where the system said.
        free: Option<u64>,
        /// The system's error.
        err: std::io::Error,
    },
    /// The stored plan is not valid.
    BadPlan(LayoutError),
    /// A lock this OS does not have: asked for at `create`, or the kind of
    /// a segment made with it.
    LockUnavailable {
        /// The kind.
        kind: LockKind,
    },
    /// The lock was not free within the timeout.
    Timeout {
        /// How long was waited.
        waited: Duration,
    },
    /// An operating-system call failed.
    Os {
        /// What was being done.
        what: &'static str,
        /// The error.
        err: std::io::Error,
    },
}

impl SharedError {
    /// Whether attaching may have met a segment another process is still
    /// creating: no bytes yet (made, not sized) or no header yet (sized,
    /// header not written).
    pub(crate) fn maybe_being_created(&self) -> bool {
        match self {
            SharedError::TooSmall { size, .. } => *size == 0,
            SharedError::WrongFormat { why, .. } => *why == super::NO_HEADER_YET,
            _ => false,
        }
    }
}

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SharedError::BadName { name } => write!(
                f,
                "{} is not a usable shared-memory name {}",
                quoted(name),
                sys::NAME_RULE
            ),
            SharedError::Missing { name } => write!(f, "no shared memory named {}", quoted(name)),
            SharedError::Exists { name } => {
                write!(f, "shared memory named {} already exists", quoted(name))?;
                f.write_str(sys::EXISTS_NOTE)
            }
            SharedError::WrongFormat { name, why } => {
                write!(f, "shared memory {} is not a bytelens buffer: {why}", quoted(name))
            }
            SharedError::TooSmall { name, size, needed } => write!(
                f,
                "shared memory {} holds {size} bytes, but its header needs {needed}",
                quoted(name)
            ),
            SharedError::TooLarge { nbytes } => {
                write!(f, "{nbytes} bytes is more than a shared segment can hold")
            }
            SharedError::AlreadyHeld => f.write_str(
                "this thread already holds the lock (it is not recursive: nesting it would deadlock)",
            ),
            SharedError::NotHeld => f.write_str("this thread does not hold the lock it is releasing"),
            SharedError::PlanTooLarge { len } => write!(
                f,
                "the plan takes {len} bytes as text, more than the {} the header holds",
                DATA_OFFSET - AT_PLAN
            ),
            SharedError::PlanDoesNotFit { plan, nbytes } => write!(
                f,
                "the plan needs {plan} bytes, more than the {nbytes} bytes of data the segment holds"
            ),
            SharedError::Replaced { name } => write!(
                f,
                "the name {} now belongs to another shared-memory segment (this one's name \
                 was unlinked and taken again), so it was not unlinked; to remove that segment, \
                 attach to it and unlink that, or unlink by name",
                quoted(name)
            ),
            SharedError::NoRoom {
                name,
                nbytes,
                free,
                err,
            } => {
                write!(
                    f,
                    "shared memory {} needs {nbytes} bytes, ",
                    quoted(name)
                )?;
                if let Some(free) = free {
                    write!(f, "and {} has {free} bytes free", sys::SEGMENT_ROOT)?;
                } else {
                    write!(f, "more than {} has free", sys::SEGMENT_ROOT)?;
                }
                write!(f, " ({err}): free some, or make a smaller buffer")
            }
            SharedError::BadPlan(err) => write!(f, "the stored plan is not valid: {err}"),
            SharedError::Timeout { waited } => {
                write!(
                    f,
                    "the lock was not free within {:.3} s",
                    waited.as_secs_f64()
                )
            }
            SharedError::LockUnavailable { kind } => write!(
                f,
                "this OS has no {} lock (it has: {})",
                kind.name(),
                LockKind::available()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            SharedError::Os { what, err } => write!(f, "{what}: {err}"),
        }
    }
}

impl SharedError {
    /// The error's kind: the system's for an `Os` error (`NotFound`,
    /// `PermissionDenied`, ..., else `Os`), the core's for a bad stored plan.
    ///
    /// # Examples
    /// ```
    /// use bytelens::{ErrorKind, SharedError};
    /// let err = SharedError::Missing { name: "weights".into() };
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            SharedError::Missing { .. } => ErrorKind::NotFound,
            SharedError::Exists { .. } => ErrorKind::AlreadyExists,
            SharedError::Timeout { .. } => ErrorKind::Timeout,
            SharedError::AlreadyHeld | SharedError::NotHeld => ErrorKind::LockState,
            SharedError::Os { err, .. } => crate::io_kind(err),
            SharedError::BadPlan(err) => err.kind(),
            SharedError::NoRoom { .. } => ErrorKind::OutOfMemory,
            SharedError::BadName { .. }
            | SharedError::WrongFormat { .. }
            | SharedError::TooSmall { .. }
            | SharedError::TooLarge { .. }
            | SharedError::PlanTooLarge { .. }
            | SharedError::PlanDoesNotFit { .. }
            | SharedError::Replaced { .. }
            | SharedError::LockUnavailable { .. } => ErrorKind::BadSegment,
        }
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SharedError::BadPlan(err) => Some(err),
            SharedError::Os { err, .. } | SharedError::NoRoom { err, .. } => Some(err),
            _ => None,
        }
    }
}

/// A name as a message quotes it ([`QuoteStyle::Name`]): in double
/// quotes, escaped as the core's [`Escaped`](crate::Escaped) does (control
/// characters, quotes and backslashes), and cut after 64 characters of
/// that, saying how many bytes the whole name has, so that no name (a
/// 10,000-byte one refused as too long, or 254 control characters) makes a
/// message long.
fn quoted(name: &str) -> Quoted<'_> {
    Quoted::new(name, 64, QuoteStyle::Name)
}
