//! The `plan` target: plan text from anywhere (`PlanSpec::from_text`),
//! printed and read again, or a plan built from parts; each placed
//! (`build`, `OwnedPlan`) and checked against a plain placement of C struct
//! fields, then written as WGSL.

use arbitrary::Arbitrary;
use std::ops::Range;

use bytelens_core::{
    FieldSpec, MAX_ALTERNATIVES, MAX_FIELD_DIMS, MAX_FIELDS, OwnedPlan, Plan, PlanSpec,
};

use crate::{DescrIn, Uint, check_error};

#[derive(Arbitrary, Debug)]
pub enum Input {
    /// Any text (the seeds are plans as `to_text` writes them).
    Text(String),
    Spec(SpecIn),
}

#[derive(Arbitrary, Debug)]
pub struct SpecIn {
    name: NameIn,
    alternatives: Vec<Vec<FieldIn>>,
}

#[derive(Arbitrary, Debug)]
pub struct FieldIn {
    name: NameIn,
    descr: DescrIn,
    shape: Vec<Uint>,
    /// An explicit offset (`Plan::field_at`), or none.
    offset: Option<Uint>,
}

#[derive(Arbitrary, Debug)]
pub enum NameIn {
    /// `f` and a number: a valid name, repeated now and then.
    Numbered(u8),
    Any(String),
}

impl SpecIn {
    /// The spec, with a few more fields and alternatives than a plan holds
    /// at most (so that those limits are tried, and no more).
    pub fn spec(&self) -> PlanSpec {
        let mut spec = PlanSpec::new(&self.name.get());
        spec.alternatives = self
            .alternatives
            .iter()
            .take(MAX_ALTERNATIVES + 2)
            .map(|fields| {
                fields
                    .iter()
                    .take(MAX_FIELDS + 2)
                    .map(|f| FieldSpec {
                        name: f.name.get(),
                        descr: f.descr.get(),
                        shape: f.shape.iter().map(|u| u.get()).collect(),
                        offset: f.offset.map(Uint::get),
                    })
                    .collect()
            })
            .collect();
        spec
    }
}

impl NameIn {
    fn get(&self) -> String {
        match self {
            NameIn::Numbered(n) => format!("f{n}"),
            NameIn::Any(s) => s.clone(),
        }
    }
}

pub fn run(input: &Input) {
    match input {
        Input::Text(text) => match PlanSpec::from_text(text) {
            Ok(spec) => {
                check_text_round_trip(&spec);
                check_spec(&spec);
            }
            Err(err) => {
                check_error(&err);
                assert_eq!(err.kind(), "BadPlanLine");
            }
        },
        Input::Spec(parts) => {
            let spec = parts.spec();
            if check_spec(&spec) {
                check_text_round_trip(&spec);
            }
        }
    }
}

/// Text read back is the same plan, and printing is canonical: a second
/// round trip changes nothing.
fn check_text_round_trip(spec: &PlanSpec) {
    let text = spec.to_text();
    let again = PlanSpec::from_text(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(again.to_text(), text);
    assert_eq!(again.name, spec.name);
    // No alternatives at all reads back as one empty one: the same plan.
    let expected = spec.alternatives.len().max(1);
    assert_eq!(again.alternatives.len(), expected, "{text:?}");
    for (x, y) in again.alternatives.iter().zip(&spec.alternatives) {
        assert_eq!(x.len(), y.len());
        for (a, b) in x.iter().zip(y) {
            assert_eq!(
                (&a.name, &a.shape, a.descr.dtype, a.offset),
                (&b.name, &b.shape, b.descr.dtype, b.offset)
            );
            // One-byte types print as `|`, which reads back in native order.
            if a.descr.dtype.size() > 1 {
                assert_eq!(a.descr, b.descr);
            }
        }
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
}

/// Where each field goes, as a C compiler places struct members (each at
/// the next multiple of its alignment, or at its explicit offset, which
/// must be aligned and clear of the alternative's other fields) with the
/// alternatives overlaid; `None` where the plan must be refused.
struct Placement {
    /// Name, offset, byte size and alternative of each field.
    fields: Vec<(String, usize, usize, usize)>,
    nbytes: usize,
    align: usize,
    alternatives: usize,
}

fn place(spec: &PlanSpec) -> Option<Placement> {
    Plan::named(&spec.name).ok()?;
    let mut out = Placement {
        fields: vec![],
        nbytes: 0,
        align: 1,
        alternatives: 1,
    };
    let mut end = 0u128;
    for (i, fields) in spec.alternatives.iter().enumerate() {
        let mut cursor = 0u128;
        // An empty alternative folds into the next.
        if i > 0 && out.fields.iter().any(|f| f.3 == out.alternatives - 1) {
            if out.alternatives == MAX_ALTERNATIVES {
                return None;
            }
            out.alternatives += 1;
        }
        for field in fields {
            let (name, dtype) = (&field.name, field.descr.dtype);
            if !is_identifier(name)
                || out.fields.iter().any(|f| f.0 == *name)
                || out.fields.len() == MAX_FIELDS
                || field.shape.len() > MAX_FIELD_DIMS
            {
                return None;
            }
            let bound = field.shape.iter().fold(dtype.size() as u128, |n, &k| {
                n.saturating_mul(k.max(1) as u128)
            });
            let nbytes = field
                .shape
                .iter()
                .fold(dtype.size() as u128, |n, &k| n.saturating_mul(k as u128));
            let offset = match field.offset {
                None => cursor.next_multiple_of(dtype.align() as u128),
                Some(at) if at % dtype.align() != 0 => return None,
                Some(at) => at as u128,
            };
            cursor = offset.saturating_add(nbytes);
            let alternative = out.alternatives - 1;
            let clash = out.fields.iter().any(|f| {
                f.3 == alternative && (f.1 as u128) < cursor && offset < (f.1 + f.2) as u128
            });
            if clash {
                return None;
            }
            end = end.max(cursor);
            out.align = out.align.max(dtype.align());
            if bound > isize::MAX as u128
                || end.next_multiple_of(out.align as u128) > isize::MAX as u128
            {
                return None;
            }
            out.fields.push((
                name.clone(),
                offset as usize,
                nbytes as usize,
                out.alternatives - 1,
            ));
        }
    }
    out.nbytes = end.next_multiple_of(out.align as u128) as usize;
    // An empty last alternative is not counted.
    if out.alternatives > 1 && out.fields.iter().all(|f| f.3 != out.alternatives - 1) {
        out.alternatives -= 1;
    }
    Some(out)
}

/// Builds the plan and checks it against [`place`]; whether it built.
fn check_spec(spec: &PlanSpec) -> bool {
    let expected = place(spec);
    let plan = match spec.build() {
        Ok(plan) => plan,
        Err(err) => {
            check_error(&err);
            assert!(expected.is_none(), "{spec:?} refused: {err}");
            assert!(OwnedPlan::from_spec(spec.clone()).is_err());
            return false;
        }
    };
    let expected = expected.unwrap_or_else(|| panic!("{spec:?} should be refused"));
    let fields: Vec<_> = plan
        .fields()
        .iter()
        .map(|f| (f.name().to_owned(), f.offset(), f.nbytes(), f.alternative()))
        .collect();
    assert_eq!(fields, expected.fields);
    assert_eq!(
        (plan.nbytes(), plan.align(), plan.alternatives()),
        (expected.nbytes, expected.align, expected.alternatives)
    );
    for field in plan.fields() {
        let layout = field.layout().expect("a placed field has a layout");
        layout.check(plan.nbytes()).expect("inside the plan");
        assert!(layout.is_c_contiguous() && layout.descr() == field.descr());
        if field.nbytes() > 0 {
            let range = field.byte_range();
            assert_eq!(
                layout.byte_span(),
                Ok(range.start as isize..range.end as isize)
            );
        }
    }
    // Padding: sorted, apart, and exactly what the alternative's fields
    // leave of `0..nbytes`.
    for alternative in 0..plan.alternatives() {
        let padding: Vec<Range<usize>> = plan.padding(alternative).collect();
        for (k, gap) in padding.iter().enumerate() {
            assert!(!gap.is_empty() && gap.end <= plan.nbytes());
            assert!(k == 0 || padding[k - 1].end <= gap.start, "{padding:?}");
        }
        let used = plan
            .fields()
            .iter()
            .filter(|f| f.alternative() == alternative)
            .map(|f| f.byte_range());
        assert_eq!(
            merged(padding.iter().cloned()),
            complement(used, plan.nbytes())
        );
    }
    // The owned plan agrees, and so does a spec made back from the plan.
    let owned = OwnedPlan::from_spec(spec.clone()).expect("it built");
    assert_eq!(owned.nbytes(), plan.nbytes());
    assert_eq!(owned.fields().len(), plan.fields().len());
    for (o, f) in owned.fields().iter().zip(plan.fields()) {
        assert_eq!(
            (o.name.as_str(), o.offset, o.byte_range()),
            (f.name(), f.offset(), f.byte_range())
        );
        assert_eq!(o.layout(), f.layout());
    }
    let back = PlanSpec::from(&plan);
    let rebuilt = back.build().expect("a plan's own spec builds");
    assert_eq!(rebuilt.fields(), plan.fields());
    // WGSL: written, or refused with a reason.
    match plan.wgsl() {
        Ok(wgsl) => {
            let text = wgsl.to_string();
            for f in plan.fields() {
                assert!(text.contains(f.name()), "{text}");
            }
            assert_eq!(owned.wgsl().as_deref(), Ok(text.as_str()));
        }
        Err(err) => {
            check_error(&err);
            assert_eq!(owned.wgsl().map_err(|e| e.kind()), Err(err.kind()));
        }
    }
    true
}

/// `ranges` as the fewest ranges that cover the same bytes, in order.
fn merged(ranges: impl Iterator<Item = Range<usize>>) -> Vec<Range<usize>> {
    let mut ranges: Vec<_> = ranges.filter(|r| !r.is_empty()).collect();
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = vec![];
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The bytes of `0..len` that no range in `used` covers.
fn complement(used: impl Iterator<Item = Range<usize>>, len: usize) -> Vec<Range<usize>> {
    let mut out = vec![];
    let mut at = 0;
    for r in merged(used) {
        if at < r.start {
            out.push(at..r.start);
        }
        at = at.max(r.end);
    }
    if at < len {
        out.push(at..len);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytelens_core::{DType, Descr};

    /// A plan with every dtype.
    fn every_dtype() -> PlanSpec {
        let mut spec = PlanSpec::new("All");
        for (i, dtype) in DType::ALL.iter().enumerate() {
            spec.push(FieldSpec {
                name: format!("f{i}"),
                descr: Descr::native(*dtype),
                shape: vec![i % 3, 2],
                offset: (i % 4 == 3).then_some(1024 * i),
            });
            if i % 5 == 4 {
                spec.start_alternative();
            }
        }
        spec
    }

    #[test]
    fn plans_in_text_and_parts() {
        let text = every_dtype().to_text();
        run(&Input::Text(text));
        run(&Input::Text(
            "P\nunion\nunion\na <i4 2\n b >f8 1 2 3 4 5".into(),
        ));
        run(&Input::Text("P\na <i4 x".into()));
        let parts = SpecIn {
            name: NameIn::Any("Frame".into()),
            alternatives: vec![
                vec![FieldIn {
                    name: NameIn::Numbered(1),
                    descr: DescrIn::default(),
                    shape: vec![Uint::Small(3)],
                    offset: Some(Uint::Small(8)),
                }],
                vec![],
            ],
        };
        run(&Input::Spec(parts));
    }

    #[test]
    fn a_plan_too_big_for_isize_is_refused() {
        let mut spec = PlanSpec::new("Big");
        spec.push(FieldSpec {
            name: "a".into(),
            descr: Descr::native(DType::U8),
            shape: vec![isize::MAX as usize],
            offset: None,
        });
        spec.push(FieldSpec {
            name: "b".into(),
            descr: Descr::native(DType::U16),
            shape: vec![],
            offset: None,
        });
        assert!(!check_spec(&spec));
    }
}
