//! Plans that own their names (feature `alloc`): [`PlanSpec`], the fields
//! as given, with the plan's text form (a shared segment's header stores
//! it), and [`OwnedPlan`], a spec checked and placed once, which the Python
//! and JS `Plan` objects hold.
#![forbid(unsafe_code)]

use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use core::ops::Range;

use crate::{Descr, Error, Layout, Plan, ShortStr};

/// One field of a [`PlanSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The field's name (an identifier, unique in the plan).
    pub name: String,
    /// Its element type and byte order.
    pub descr: Descr,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its byte offset, where it is placed explicitly ([`Plan::field_at`]);
    /// `None` places it after the field before it.
    pub offset: Option<usize>,
}

/// The fields of a [`Plan`], owned: a name and, per alternative, its fields
/// in order. [`build`](PlanSpec::build) makes (and so checks) the plan.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Descr, FieldSpec, PlanSpec};
/// let mut spec = PlanSpec::new("Work");
/// spec.push(FieldSpec { name: "A".into(), descr: Descr::native(DType::F32), shape: vec![4], offset: None });
/// spec.start_alternative();
/// spec.push(FieldSpec { name: "D".into(), descr: Descr::native(DType::I32), shape: vec![6], offset: None });
/// spec.push(FieldSpec { name: "E".into(), descr: Descr::native(DType::U8), shape: vec![], offset: Some(32) });
/// let plan = spec.build()?;
/// assert_eq!((plan.nbytes(), plan.alternatives()), (36, 2));
/// assert_eq!(spec.to_text(), "Work\nA <f4 4\nunion\nD <i4 6\nE |u1 @32");
/// assert_eq!(PlanSpec::from_text(&spec.to_text())?, spec);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanSpec {
    /// The plan's name (names its WGSL structs).
    pub name: String,
    /// Fields of each alternative, in order; never empty.
    pub alternatives: Vec<Vec<FieldSpec>>,
}

impl PlanSpec {
    /// A plan with no fields.
    pub fn new(name: &str) -> PlanSpec {
        PlanSpec {
            name: name.to_owned(),
            alternatives: vec![Vec::new()],
        }
    }

    /// Appends `field` to the current (last) alternative.
    pub fn push(&mut self, field: FieldSpec) {
        match self.alternatives.last_mut() {
            Some(last) => last.push(field),
            None => self.alternatives.push(vec![field]),
        }
    }

    /// Starts another alternative, unless the current one is still empty
    /// (as [`Plan::union`] does).
    pub fn start_alternative(&mut self) {
        if self
            .alternatives
            .last()
            .is_some_and(|last| !last.is_empty())
        {
            self.alternatives.push(Vec::new());
        }
    }

    /// The core's plan, borrowing the names: fails as [`Plan::named`],
    /// [`Plan::field`] and [`Plan::union`] do.
    pub fn build(&self) -> Result<Plan<'_>, Error> {
        let mut plan = Plan::named(&self.name)?;
        for (i, fields) in self.alternatives.iter().enumerate() {
            if i > 0 {
                plan.union()?;
            }
            for field in fields {
                match field.offset {
                    None => plan.field(&field.name, field.descr, &field.shape)?,
                    Some(at) => plan.field_at(&field.name, field.descr, &field.shape, at)?,
                };
            }
        }
        Ok(plan)
    }

    /// The plan as text: its name on the first line, then a line per field
    /// (`name dtype length…`, and `@offset` for a field placed at one), and
    /// `union` between alternatives.
    pub fn to_text(&self) -> String {
        let mut text = self.name.clone();
        for (i, fields) in self.alternatives.iter().enumerate() {
            if i > 0 {
                text.push_str("\nunion");
            }
            for field in fields {
                let _ = write!(text, "\n{} {}", field.name, field.descr);
                for n in &field.shape {
                    let _ = write!(text, " {n}");
                }
                if let Some(at) = field.offset {
                    let _ = write!(text, " @{at}");
                }
            }
        }
        text
    }

    /// Reads what [`to_text`](PlanSpec::to_text) wrote, or what a person
    /// typed in that form: blank lines, surrounding spaces and runs of
    /// spaces between words are allowed. `BadPlanLine` names the first line
    /// that is not `name dtype length… [@offset]` or `union`
    /// (`PlanLineInvisible` where it has a character that is not ASCII, a
    /// no-break space say, which the message names by its code). Whether
    /// the plan is valid (its names ASCII identifiers, among other rules)
    /// is [`build`](PlanSpec::build)'s to say.
    pub fn from_text(text: &str) -> Result<PlanSpec, Error> {
        // ASCII whitespace only: Unicode's tables would cost the wasm package.
        let mut lines = text
            .lines()
            .map(|l| l.trim_ascii())
            .filter(|l| !l.is_empty());
        let mut spec = PlanSpec::new(lines.next().unwrap_or("Plan"));
        for line in lines {
            if line == "union" {
                spec.alternatives.push(Vec::new());
                continue;
            }
            let field = FieldSpec::from_line(line).ok_or_else(|| bad_line(line))?;
            spec.push(field);
        }
        Ok(spec)
    }
}

/// Why `line` is not a field's line: `PlanLineInvisible` at its first
/// character that is not ASCII, or `BadPlanLine`. Plan text is ASCII
/// (names are ASCII identifiers, dtypes and numbers ASCII words), and a
/// line with a no-break space or a zero-width space pasted into it,
/// echoed in a message, looks like a valid line: the message names the
/// character by its code instead.
fn bad_line(line: &str) -> Error {
    let shown = ShortStr::new(line);
    match line.char_indices().find(|(_, c)| !c.is_ascii()) {
        Some((at, character)) => Error::PlanLineInvisible {
            line: shown,
            character,
            at,
        },
        None => Error::BadPlanLine { line: shown },
    }
}

impl FieldSpec {
    /// A field from its line of plan text, `name dtype length… [@offset]`
    /// (words separated by any whitespace); `None` if it does not read so.
    fn from_line(line: &str) -> Option<FieldSpec> {
        let mut words = line.split_ascii_whitespace();
        let (name, dtype) = (words.next()?, words.next()?);
        let mut shape = Vec::new();
        let mut offset = None;
        for word in words {
            match (offset, word.strip_prefix('@')) {
                (None, None) => shape.push(word.parse().ok()?),
                (None, Some(at)) => offset = Some(at.parse().ok()?),
                (Some(_), _) => return None, // the offset comes last
            }
        }
        Some(FieldSpec {
            name: name.to_owned(),
            descr: dtype.parse().ok()?,
            shape,
            offset,
        })
    }
}

impl<'n> From<&Plan<'n>> for PlanSpec {
    fn from(plan: &Plan<'n>) -> PlanSpec {
        let mut spec = PlanSpec::new(plan.name());
        spec.alternatives = vec![Vec::new(); plan.alternatives()];
        for field in plan.fields() {
            spec.alternatives[field.alternative()].push(FieldSpec {
                name: field.name().to_owned(),
                descr: field.descr(),
                shape: field.shape().to_vec(),
                offset: field.is_explicit().then_some(field.offset()),
            });
        }
        spec
    }
}

/// A field of an [`OwnedPlan`]: its spec and where the plan placed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedField {
    /// The field's name.
    pub name: String,
    /// Its element type and byte order.
    pub descr: Descr,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Byte offset of its first element.
    pub offset: usize,
    /// Its size in bytes.
    pub nbytes: usize,
    /// The alternative (union member) it belongs to.
    pub alternative: usize,
}

impl PlacedField {
    /// The bytes the field covers.
    pub fn byte_range(&self) -> Range<usize> {
        // Fits: the plan's size was checked when it was placed.
        self.offset..self.offset + self.nbytes
    }

    /// The field's layout: C-contiguous at its offset, in its byte order.
    pub fn layout(&self) -> Result<Layout, Error> {
        Ok(Layout::contiguous(self.descr.dtype, &self.shape)?
            .with_offset(self.offset)?
            .with_byte_order(self.descr.order))
    }
}

/// A [`PlanSpec`] checked and placed once: the plan type the Python and JS
/// bindings hold, so their getters read numbers instead of rebuilding the
/// core's [`Plan`] each time.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Descr, FieldSpec, OwnedPlan};
/// let f32s = |name: &str, n| FieldSpec { name: name.into(), descr: Descr::native(DType::F32), shape: vec![n], offset: None };
/// let i32s = |name: &str, n| FieldSpec { name: name.into(), descr: Descr::native(DType::I32), shape: vec![n], offset: None };
/// let plan = OwnedPlan::new("Work")?
///     .extended([f32s("A", 3), f32s("B", 1)], false)?
///     .extended([i32s("D", 2)], true)?;
/// assert_eq!((plan.nbytes(), plan.align(), plan.alternatives()), (16, 4, 2));
/// assert_eq!(plan.get("B").map(|f| f.offset), Some(12));
/// assert_eq!(plan.padding(1)?, [8..16]);
/// assert!(plan.wgsl()?.contains("struct Work1"));
/// assert_eq!(OwnedPlan::from_text(&plan.to_text())?, plan);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedPlan {
    spec: PlanSpec,
    // INVARIANT: what `spec.build()` placed, which succeeded.
    fields: Vec<PlacedField>,
    padding: Vec<Vec<Range<usize>>>,
    nbytes: usize,
    align: usize,
}

impl OwnedPlan {
    /// An empty plan named `name` (the name of its WGSL structs); `BadName`
    /// unless it is an identifier.
    pub fn new(name: &str) -> Result<OwnedPlan, Error> {
        OwnedPlan::from_spec(PlanSpec::new(name))
    }

    /// Checks and places `spec`, failing as [`PlanSpec::build`] does.
    pub fn from_spec(spec: PlanSpec) -> Result<OwnedPlan, Error> {
        let plan = spec.build()?;
        let fields = plan
            .fields()
            .iter()
            .map(|f| PlacedField {
                name: f.name().to_owned(),
                descr: f.descr(),
                shape: f.shape().to_vec(),
                offset: f.offset(),
                nbytes: f.nbytes(),
                alternative: f.alternative(),
            })
            .collect();
        let padding = (0..plan.alternatives())
            .map(|a| plan.padding(a).collect())
            .collect();
        let (nbytes, align) = (plan.nbytes(), plan.align());
        Ok(OwnedPlan {
            spec,
            fields,
            padding,
            nbytes,
            align,
        })
    }

    /// Reads a plan's text form ([`PlanSpec::from_text`]) and checks it.
    pub fn from_text(text: &str) -> Result<OwnedPlan, Error> {
        OwnedPlan::from_spec(PlanSpec::from_text(text)?)
    }

    /// This plan with `fields` appended to its last alternative, or to a
    /// new one when `new_alternative` (as [`Plan::union`] starts one).
    pub fn extended(
        &self,
        fields: impl IntoIterator<Item = FieldSpec>,
        new_alternative: bool,
    ) -> Result<OwnedPlan, Error> {
        let mut spec = self.spec.clone();
        if new_alternative {
            spec.start_alternative();
        }
        for field in fields {
            spec.push(field);
        }
        OwnedPlan::from_spec(spec)
    }

    /// The fields as given.
    pub fn spec(&self) -> &PlanSpec {
        &self.spec
    }

    /// The plan's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The plan's text form ([`PlanSpec::to_text`]).
    pub fn to_text(&self) -> String {
        self.spec.to_text()
    }

    /// Every field, in the order they were added.
    pub fn fields(&self) -> &[PlacedField] {
        &self.fields
    }

    /// The field called `name`.
    pub fn get(&self, name: &str) -> Option<&PlacedField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Bytes a buffer needs ([`Plan::nbytes`]).
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// The largest alignment of any field ([`Plan::align`]).
    pub fn align(&self) -> usize {
        self.align
    }

    /// Number of alternatives ([`Plan::alternatives`]).
    pub fn alternatives(&self) -> usize {
        self.padding.len()
    }

    /// The byte ranges of `alternative` that no field covers
    /// ([`Plan::padding`]); `NoAlternative` past the last one.
    pub fn padding(&self, alternative: usize) -> Result<&[Range<usize>], Error> {
        self.padding
            .get(alternative)
            .map(Vec::as_slice)
            .ok_or(Error::NoAlternative {
                alternative,
                alternatives: self.alternatives(),
            })
    }

    /// The matching WGSL ([`Plan::wgsl`]).
    pub fn wgsl(&self) -> Result<String, Error> {
        Ok(self.spec.build()?.wgsl()?.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ByteOrder, DType};

    #[test]
    fn text_round_trips_every_dtype_and_order() {
        let mut spec = PlanSpec::new("All");
        for (i, dtype) in DType::ALL.iter().enumerate() {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                spec.push(FieldSpec {
                    name: alloc::format!("f{i}{}", order.prefix() == '>'),
                    descr: Descr::new(*dtype, order),
                    shape: vec![i + 1, 2],
                    // Every third field at an offset of its own, past the rest.
                    offset: (i % 3 == 2)
                        .then_some(4096 * (i + 1) + 2048 * usize::from(order == ByteOrder::Big)),
                });
            }
            if i % 4 == 3 && i + 1 < DType::ALL.len() {
                spec.start_alternative();
            }
        }
        let again = PlanSpec::from_text(&spec.to_text()).unwrap();
        // One-byte types print '|' and read back in native order, as numpy's do.
        assert_eq!(
            again.build().unwrap().nbytes(),
            spec.build().unwrap().nbytes()
        );
        assert_eq!(again.alternatives.len(), spec.alternatives.len());
        assert_eq!(
            PlanSpec::from(&spec.build().unwrap()).to_text(),
            spec.to_text()
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for bad in [
            "P\na",
            "P\na <i4 2.5",
            "P\na <i4 x",
            "P\na <i9 2",
            "P\na <i4 @8 2",
            "P\na <i4 @8 @16",
            "P\na <i4 @-8",
            "P\na <i4 @",
        ] {
            assert!(
                matches!(PlanSpec::from_text(bad), Err(Error::BadPlanLine { .. })),
                "{bad}"
            );
        }
        let nbsp = PlanSpec::from_text("P\na\u{a0}<i4 2").unwrap_err();
        assert_eq!(
            nbsp.to_string(),
            "the plan's line \"a\u{a0}<i4 2\" has \\u{a0} at byte 1; plan text is ASCII"
        );
        assert_eq!(nbsp.kind(), "BadPlanLine");
        for (text, at, character) in [
            ("P\na <i4\u{a0}2", 5, '\u{a0}'),
            ("P\na <i4 2 \u{200b}@8", 8, '\u{200b}'),
            ("P\na <i4 2\u{3000}", 7, '\u{3000}'),
        ] {
            assert!(
                matches!(
                    PlanSpec::from_text(text),
                    Err(Error::PlanLineInvisible { at: a, character: c, .. }) if (a, c) == (at, character)
                ),
                "{text:?}"
            );
        }
        let spec = PlanSpec::from_text("P\nunion\nunion\na <i4 2").unwrap();
        assert_eq!(
            spec.build().unwrap().alternatives(),
            1,
            "empty alternatives fold, as Plan::union does"
        );
        let typed = PlanSpec::from_text("\n  P \r\n\na   <i4  2 3\n\n union \nb f4\n").unwrap();
        assert_eq!(typed.to_text(), "P\na <i4 2 3\nunion\nb <f4");
    }

    #[test]
    fn explicit_offsets_are_checked_when_built() {
        let spec = PlanSpec::from_text("H\nmagic |u1 8 @0\ndata <f4 4 @64\nnext <u2").unwrap();
        let plan = OwnedPlan::from_spec(spec.clone()).unwrap();
        assert_eq!(plan.get("next").map(|f| f.offset), Some(80));
        assert_eq!(plan.padding(0).unwrap(), [8..64, 82..84]);
        assert_eq!(OwnedPlan::from_text(&plan.to_text()).unwrap(), plan);
        let misaligned = PlanSpec::from_text("H\nx <f4 @2").unwrap();
        assert_eq!(
            misaligned.build().unwrap_err().to_string(),
            "offset 2 is not a multiple of 4, the alignment of float32"
        );
        let overlapping = PlanSpec::from_text("H\nx <f4 4 @16\ny <f8 @24").unwrap();
        assert_eq!(
            overlapping.build().unwrap_err().to_string(),
            "field \"y\" would overlap field \"x\""
        );
        // Another alternative may use the same bytes.
        let union = PlanSpec::from_text("H\nx <f4 4 @16\nunion\ny <f8 @24").unwrap();
        assert_eq!(union.build().unwrap().nbytes(), 32);
        let huge = PlanSpec::from_text(&alloc::format!("H\nx <f4 @{}", usize::MAX - 3)).unwrap();
        assert!(matches!(huge.build(), Err(Error::Overflow { .. })));
    }
}
