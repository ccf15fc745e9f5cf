//! The `header` target: a shared-memory segment's bytes, made from header
//! fields that are mostly right (the magic number, the version, the data
//! length, a plan as text) and then damaged anywhere, or cut short, read by
//! `SharedBuffer::read_header` as an attaching process would. Whatever the
//! bytes, reading gives an error or a header whose data and plan text lie
//! inside them, and whose plan, if it reads, fits its data.

use arbitrary::Arbitrary;
use bytelens::{DATA_OFFSET, SharedBuffer, SharedError};

use crate::check_error;
use crate::plan::SpecIn;

/// The header's layout, as `native/src/shared/mod.rs` writes it.
const MAGIC: &[u8; 8] = b"BYTELENS";
const AT_VERSION: usize = 8;
const AT_NBYTES: usize = 16;
const AT_PLAN_LEN: usize = 24;
const AT_TOKEN: usize = 32;
const AT_PLAN: usize = 256;

#[derive(Arbitrary, Debug)]
pub struct Input {
    magic: Magic,
    /// The version, if not 1.
    version: Option<u32>,
    /// Bytes of data after the header page (kept small: they are allocated).
    data: u16,
    nbytes: Claim,
    plan: Option<PlanIn>,
    plan_len: Claim,
    token: [u8; 16],
    /// Bytes overwritten after the header is written: (offset, value).
    damage: Vec<(u16, u8)>,
    /// The segment cut to this many bytes.
    cut: Option<u16>,
}

#[derive(Arbitrary, Debug)]
enum Magic {
    Right,
    /// A segment still being created.
    Zero,
    Other([u8; 8]),
}

/// A length a header claims, relative to the true one.
#[derive(Arbitrary, Debug)]
enum Claim {
    True,
    Less(u16),
    More(u16),
    Any(u64),
}

impl Claim {
    fn of(&self, truth: u64) -> u64 {
        match *self {
            Claim::True => truth,
            Claim::Less(by) => truth.saturating_sub(u64::from(by)),
            Claim::More(by) => truth.saturating_add(u64::from(by)),
            Claim::Any(n) => n,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum PlanIn {
    Text(String),
    Spec(SpecIn),
}

pub fn run(input: &Input) {
    let data = usize::from(input.data);
    let mut segment = vec![0u8; DATA_OFFSET + data];
    match &input.magic {
        Magic::Right => segment[..8].copy_from_slice(MAGIC),
        Magic::Zero => {}
        Magic::Other(bytes) => segment[..8].copy_from_slice(bytes),
    }
    let version = input.version.unwrap_or(1);
    segment[AT_VERSION..AT_VERSION + 4].copy_from_slice(&version.to_le_bytes());
    let nbytes = input.nbytes.of(data as u64);
    segment[AT_NBYTES..AT_NBYTES + 8].copy_from_slice(&nbytes.to_le_bytes());
    let text = match &input.plan {
        None => String::new(),
        Some(PlanIn::Text(text)) => text.clone(),
        Some(PlanIn::Spec(spec)) => spec.spec().to_text(),
    };
    let text = &text.as_bytes()[..text.len().min(DATA_OFFSET - AT_PLAN)];
    segment[AT_PLAN..AT_PLAN + text.len()].copy_from_slice(text);
    let plan_len = input.plan_len.of(text.len() as u64) as u32;
    segment[AT_PLAN_LEN..AT_PLAN_LEN + 4].copy_from_slice(&plan_len.to_le_bytes());
    segment[AT_TOKEN..AT_TOKEN + 16].copy_from_slice(&input.token);
    for &(at, value) in &input.damage {
        let at = usize::from(at) % segment.len();
        segment[at] = value;
    }
    if let Some(cut) = input.cut {
        segment.truncate(usize::from(cut));
    }
    check(&segment);
}

/// Reads `segment`'s header and checks the answer against the bytes.
pub fn check(segment: &[u8]) {
    let header = match SharedBuffer::read_header("fuzz", segment) {
        Ok(header) => header,
        Err(err) => {
            check_shared_error(&err);
            let expected = if segment.len() < DATA_OFFSET {
                "TooSmall"
            } else if segment[..8] != MAGIC[..] {
                "WrongFormat"
            } else {
                ""
            };
            if !expected.is_empty() {
                assert_eq!(variant(&err), expected, "{err}");
            }
            return;
        }
    };
    let field = |at: usize, n: usize| &segment[at..at + n];
    assert_eq!(field(0, 8), MAGIC);
    assert_eq!(field(AT_VERSION, 4), 1u32.to_le_bytes());
    assert_eq!(field(AT_NBYTES, 8), (header.nbytes as u64).to_le_bytes());
    assert_eq!(field(AT_TOKEN, 16), header.token);
    assert!(DATA_OFFSET + header.nbytes <= segment.len());
    // The plan text is the bytes right after its place in the page.
    let plan_len = u32::from_le_bytes(field(AT_PLAN_LEN, 4).try_into().expect("4 bytes"));
    assert_eq!(header.plan, field(AT_PLAN, plan_len as usize));
    assert!(AT_PLAN + header.plan.len() <= DATA_OFFSET);

    let data = &segment[DATA_OFFSET..DATA_OFFSET + header.nbytes];
    match header.plan() {
        Ok(None) => assert!(header.plan.is_empty()),
        Ok(Some(spec)) => {
            let plan = spec.build().expect("a plan read back builds");
            assert!(plan.nbytes() <= header.nbytes);
            for field in plan.fields() {
                let layout = field.layout().expect("a placed field has a layout");
                layout
                    .check(data.len())
                    .expect("a stored plan's fields are in the data");
                let bytes = &data[field.byte_range()];
                assert_eq!(bytes.len(), field.nbytes());
            }
        }
        Err(err) => {
            check_shared_error(&err);
            assert!(
                ["BadPlan", "PlanDoesNotFit"].contains(&variant(&err)),
                "{err}"
            );
        }
    }
}

fn variant(err: &SharedError) -> &'static str {
    match err {
        SharedError::TooSmall { .. } => "TooSmall",
        SharedError::WrongFormat { .. } => "WrongFormat",
        SharedError::BadPlan(_) => "BadPlan",
        SharedError::PlanDoesNotFit { .. } => "PlanDoesNotFit",
        _ => "other",
    }
}

fn check_shared_error(err: &SharedError) {
    if let SharedError::BadPlan(inner) = err {
        check_error(inner);
    }
    let message = err.to_string();
    assert!(
        !message.is_empty() && message.len() <= 2 * crate::MAX_MESSAGE,
        "{message}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_right_header_and_damaged_ones() {
        run(&right_but());
        for cut in [0, 8, 4095, 4096, 4100] {
            run(&Input {
                cut: Some(cut),
                ..right_but()
            });
        }
        for claim in [Claim::More(1), Claim::Any(u64::MAX), Claim::Less(3)] {
            run(&Input {
                nbytes: claim,
                ..right_but()
            });
        }
        run(&Input {
            plan_len: Claim::Any(u64::from(u32::MAX)),
            ..right_but()
        });
        run(&Input {
            damage: vec![(0, b'X'), (300, 0xff)],
            ..right_but()
        });
    }

    fn right_but() -> Input {
        Input {
            magic: Magic::Right,
            version: None,
            data: 64,
            nbytes: Claim::True,
            plan: Some(PlanIn::Text("P\na <i4 4\nb <f8 2".into())),
            plan_len: Claim::True,
            token: [0; 16],
            damage: vec![],
            cut: None,
        }
    }
}
