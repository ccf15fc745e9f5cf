//! Several named arrays in one buffer, arranged like a C `struct` or `union`;
//! `spec` (feature `alloc`) holds the plans that own their names.
#![forbid(unsafe_code)]

use core::ops::Range;

use crate::{DType, Descr, Error, Layout, ShortStr};

#[cfg(feature = "alloc")]
mod spec;
mod wgsl;

#[cfg(feature = "alloc")]
pub use spec::{FieldSpec, OwnedPlan, PlacedField, PlanSpec};
pub use wgsl::Wgsl;
use wgsl::is_wgsl_reserved;

/// The most fields a [`Plan`] holds.
///
/// # Examples
/// ```
/// assert_eq!(bytelens_core::MAX_FIELDS, 32);
/// ```
pub const MAX_FIELDS: usize = 32;
/// The most alternatives (union members) a [`Plan`] holds.
///
/// # Examples
/// ```
/// assert_eq!(bytelens_core::MAX_ALTERNATIVES, 8);
/// ```
pub const MAX_ALTERNATIVES: usize = 8;
/// The most dimensions of one plan field.
///
/// # Examples
/// ```
/// assert_eq!(bytelens_core::MAX_FIELD_DIMS, 4);
/// ```
pub const MAX_FIELD_DIMS: usize = 4;

/// One named array of a [`Plan`]: a dtype and shape at an aligned offset.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Plan};
/// let mut plan = Plan::new();
/// plan.field("tag", DType::U8, &[])?.field("xy", DType::F32, &[2])?;
/// let xy = plan.get("xy").unwrap();
/// assert_eq!((xy.name(), xy.shape(), xy.offset(), xy.nbytes()), ("xy", &[2][..], 4, 8));
/// assert_eq!((xy.byte_range(), xy.alternative(), xy.descr().to_string()), (4..12, 0, "<f4".into()));
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'n> {
    name: &'n str,
    descr: Descr,
    ndim: u8,
    shape: [usize; MAX_FIELD_DIMS],
    offset: usize,
    alternative: usize,
    explicit: bool,
}

impl<'n> Field<'n> {
    const EMPTY: Field<'static> = Field {
        name: "",
        descr: Descr::native(DType::U8),
        ndim: 0,
        shape: [0; MAX_FIELD_DIMS],
        offset: 0,
        alternative: 0,
        explicit: false,
    };

    /// The field's name.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.name(), "xy");
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn name(&self) -> &'n str {
        self.name
    }

    /// Its dtype and byte order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.descr().to_string(), "<f4");
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn descr(&self) -> Descr {
        self.descr
    }

    /// Its shape.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.shape(), &[2]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape[..usize::from(self.ndim)]
    }

    /// Byte offset of its first element in the buffer.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.offset(), 0); // a union member starts at 0
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether it was placed at a given offset ([`Plan::field_at`]) rather
    /// than after the field before it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("a", DType::U8, &[])?.field_at("b", DType::U8, &[], 8)?;
    /// assert_eq!((plan.get("a").unwrap().is_explicit(), plan.get("b").unwrap().is_explicit()), (false, true));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_explicit(&self) -> bool {
        self.explicit
    }

    /// Bytes it occupies (packed, C order).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.nbytes(), 8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn nbytes(&self) -> usize {
        // Checked when the field was added.
        self.shape().iter().product::<usize>() * self.descr.dtype.size()
    }

    /// Bytes `offset()..offset() + nbytes()`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.byte_range(), 0..8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn byte_range(&self) -> Range<usize> {
        self.offset..self.offset + self.nbytes()
    }

    /// Which alternative (union member) it belongs to, counting from 0.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.union()?.field("xy", DType::F32, &[2])?;
    /// let xy = plan.get("xy").unwrap();
    /// assert_eq!(xy.alternative(), 1);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn alternative(&self) -> usize {
        self.alternative
    }

    /// Its layout: C-contiguous at its offset, in its byte order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("flags", DType::U8, &[3])?.field("xy", DType::F32, &[2, 2])?;
    /// let xy = plan.get("xy").unwrap().layout()?;
    /// assert_eq!((xy.offset(), xy.strides()), (4, &[8, 4][..]));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn layout(&self) -> Result<Layout, Error> {
        let offset = self.offset;
        Ok(Layout::contiguous(self.descr.dtype, self.shape())?
            .with_offset(offset)?
            .with_byte_order(self.descr.order))
    }
}

/// A named arrangement of several arrays in one buffer.
///
/// Within one alternative, fields follow one another like the members of a
/// C `struct`, each at the next offset that is a multiple of its dtype's
/// alignment. [`union`](Plan::union) starts another alternative over the
/// same bytes, like a C `union` of structs: "arrays A, B, C as float32 in
/// one phase; D, E as int32 over the same bytes in another". The buffer
/// needs [`nbytes`](Plan::nbytes), the largest alternative rounded up to
/// the largest alignment, as a C compiler rounds a struct's size.
///
/// Stored inline, without allocation: at most [`MAX_FIELDS`] fields,
/// [`MAX_ALTERNATIVES`] alternatives and [`MAX_FIELD_DIMS`] dimensions per field.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Plan};
/// let mut plan = Plan::new();
/// plan.field("A", DType::F32, &[100])?
///     .field("B", DType::F32, &[50])?
///     .field("C", DType::F32, &[25])?
///     .union()?
///     .field("D", DType::I32, &[64])?
///     .field("E", DType::I32, &[111])?;
/// assert_eq!(plan.get("C").unwrap().offset(), 600);
/// assert_eq!(plan.get("D").unwrap().offset(), 0);
/// assert_eq!(plan.nbytes(), 700);
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan<'n> {
    name: &'n str,
    fields: [Field<'n>; MAX_FIELDS],
    len: usize,
    alternatives: usize,
    /// End of the current alternative's last field.
    cursor: usize,
    /// Largest field end over all alternatives.
    end: usize,
    align: usize,
}

impl Default for Plan<'_> {
    fn default() -> Self {
        Plan::new()
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
}

fn round_up(value: usize, align: usize) -> Result<usize, Error> {
    value
        .checked_next_multiple_of(align)
        .ok_or(Error::Overflow {
            what: "the plan size",
        })
}

impl<'n> Plan<'n> {
    /// An empty plan with one (empty) alternative, named `Plan` in WGSL.
    ///
    /// # Examples
    /// ```
    /// let plan = bytelens_core::Plan::new();
    /// assert_eq!((plan.fields().len(), plan.nbytes(), plan.alternatives()), (0, 0, 1));
    /// ```
    pub const fn new() -> Plan<'n> {
        Plan {
            name: "Plan",
            fields: [Field::EMPTY; MAX_FIELDS],
            len: 0,
            alternatives: 1,
            cursor: 0,
            end: 0,
            align: 1,
        }
    }

    /// An empty plan whose WGSL struct is called `name`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::Plan;
    /// assert!(Plan::named("Frame").is_ok());
    /// assert!(Plan::named("2fast").is_err());
    /// ```
    pub fn named(name: &'n str) -> Result<Plan<'n>, Error> {
        if !is_identifier(name) || is_wgsl_reserved(name) {
            return Err(Error::BadName {
                name: ShortStr::new(name),
            });
        }
        Ok(Plan {
            name,
            ..Plan::new()
        })
    }

    /// Appends a field to the current alternative, at the next offset that
    /// is a multiple of its dtype's alignment.
    ///
    /// Fails with `BadName` for an empty, repeated or non-identifier name,
    /// `PlanFull`, `TooManyDims`, `Overflow`, or `FieldsOverlap` where a
    /// field placed with [`field_at`](Plan::field_at) is in the way.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Descr, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("n", DType::U16, &[])?.field("be", Descr::new(DType::F32, ByteOrder::Big), &[2])?;
    /// assert_eq!(plan.get("be").unwrap().offset(), 4);
    /// assert!(plan.field("n", DType::U8, &[]).is_err()); // names are unique
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn field(
        &mut self,
        name: &'n str,
        descr: impl Into<Descr>,
        shape: &[usize],
    ) -> Result<&mut Plan<'n>, Error> {
        self.place(name, descr.into(), shape, None)
    }

    /// Appends a field to the current alternative at byte `offset`, as a
    /// file header places its arrays. The offset must be a multiple of the
    /// dtype's alignment (`Misaligned`), and the field must not share bytes
    /// with another field of its alternative (`FieldsOverlap`); fields
    /// appended after it with [`field`](Plan::field) follow it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field_at("data", DType::F32, &[4], 64)?.field_at("magic", DType::U8, &[8], 0)?;
    /// plan.field("version", DType::U16, &[])?;
    /// assert_eq!(plan.get("version").unwrap().offset(), 8);
    /// assert_eq!((plan.nbytes(), plan.padding(0).collect::<Vec<_>>()), (80, vec![10..64]));
    /// assert!(plan.field_at("late", DType::U32, &[], 66).is_err()); // misaligned
    /// assert!(plan.field_at("clash", DType::U32, &[2], 60).is_err()); // overlaps data
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn field_at(
        &mut self,
        name: &'n str,
        descr: impl Into<Descr>,
        shape: &[usize],
        offset: usize,
    ) -> Result<&mut Plan<'n>, Error> {
        self.place(name, descr.into(), shape, Some(offset))
    }

    fn place(
        &mut self,
        name: &'n str,
        descr: Descr,
        shape: &[usize],
        at: Option<usize>,
    ) -> Result<&mut Plan<'n>, Error> {
        if !is_identifier(name) || self.get(name).is_some() {
            return Err(Error::BadName {
                name: ShortStr::new(name),
            });
        }
        if self.len == MAX_FIELDS {
            return Err(Error::PlanFull {
                what: "fields",
                max: MAX_FIELDS,
            });
        }
        if shape.len() > MAX_FIELD_DIMS {
            return Err(Error::TooManyDims {
                ndim: shape.len(),
                max: MAX_FIELD_DIMS,
            });
        }
        let dtype = descr.dtype;
        // Proves the size fits in isize.
        let nbytes = Layout::contiguous(dtype, shape)?.nbytes();
        let offset = match at {
            None => round_up(self.cursor, dtype.align())?,
            Some(offset) if offset % dtype.align() != 0 => {
                return Err(Error::Misaligned {
                    offset,
                    align: dtype.align(),
                    dtype,
                });
            }
            Some(offset) => offset,
        };
        let end = offset.checked_add(nbytes).ok_or(Error::Overflow {
            what: "the plan size",
        })?;
        // The whole plan, rounded to its new alignment, must fit in isize,
        // so that `nbytes` and every field's layout stay representable.
        let total = round_up(self.end.max(end), self.align.max(dtype.align()))?;
        if isize::try_from(total).is_err() {
            return Err(Error::Overflow {
                what: "the plan size",
            });
        }
        let alternative = self.alternatives - 1;
        let overlapped = self.fields().iter().find(|f| {
            f.alternative == alternative && f.offset < end && offset < f.offset + f.nbytes()
        });
        if let Some(other) = overlapped {
            return Err(Error::FieldsOverlap {
                name: ShortStr::new(name),
                other: ShortStr::new(other.name),
            });
        }
        let mut field = Field {
            name,
            descr,
            offset,
            alternative,
            explicit: at.is_some(),
            ..Field::EMPTY
        };
        field.ndim = shape.len() as u8;
        field.shape[..shape.len()].copy_from_slice(shape);
        self.fields[self.len] = field;
        self.len += 1;
        self.cursor = end;
        self.end = self.end.max(end);
        self.align = self.align.max(dtype.align());
        Ok(self)
    }

    /// Starts a new alternative at offset 0, over the same bytes as the
    /// others. Does nothing while the current alternative has no fields.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("f", DType::F32, &[4])?.union()?.field("i", DType::I16, &[8])?;
    /// assert_eq!((plan.get("i").unwrap().offset(), plan.nbytes()), (0, 16));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn union(&mut self) -> Result<&mut Plan<'n>, Error> {
        if self
            .fields()
            .iter()
            .all(|f| f.alternative != self.alternatives - 1)
        {
            return Ok(self);
        }
        if self.alternatives == MAX_ALTERNATIVES {
            return Err(Error::PlanFull {
                what: "alternatives",
                max: MAX_ALTERNATIVES,
            });
        }
        self.alternatives += 1;
        self.cursor = 0;
        Ok(self)
    }

    /// The WGSL struct name.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens_core::Plan::named("Frame")?.name(), "Frame");
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn name(&self) -> &'n str {
        self.name
    }

    /// All fields, in the order they were added.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("a", DType::U8, &[])?.field("b", DType::U8, &[])?;
    /// let names: Vec<&str> = plan.fields().iter().map(|f| f.name()).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn fields(&self) -> &[Field<'n>] {
        &self.fields[..self.len]
    }

    /// The field called `name`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("a", DType::U8, &[])?;
    /// assert!(plan.get("a").is_some() && plan.get("z").is_none());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<&Field<'n>> {
        self.fields().iter().find(|f| f.name == name)
    }

    /// Number of alternatives with fields (1 for a plain struct or an empty plan).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("a", DType::U8, &[])?.union()?.field("b", DType::U8, &[])?;
    /// assert_eq!(plan.alternatives(), 2);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn alternatives(&self) -> usize {
        // Only the last alternative can be empty (`union` on an empty one
        // does nothing); an empty trailing one is not counted.
        let last_is_empty = self
            .fields()
            .iter()
            .all(|f| f.alternative != self.alternatives - 1);
        if last_is_empty && self.alternatives > 1 {
            self.alternatives - 1
        } else {
            self.alternatives
        }
    }

    /// The largest alignment of any field (1 for an empty plan).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("a", DType::U8, &[])?.field("b", DType::F64, &[])?;
    /// assert_eq!(plan.align(), 8);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn align(&self) -> usize {
        self.align
    }

    /// Bytes the buffer needs: the largest alternative, rounded up to
    /// [`align`](Plan::align).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("b", DType::F64, &[])?.field("a", DType::U8, &[])?;
    /// assert_eq!(plan.nbytes(), 16); // 9 bytes, rounded up to the alignment of f64
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn nbytes(&self) -> usize {
        // Checked in `field`.
        self.end.next_multiple_of(self.align)
    }

    /// The padding of alternative `alternative`: every byte range below
    /// [`nbytes`](Plan::nbytes) that none of its fields covers.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::new();
    /// plan.field("tag", DType::U8, &[])?.field("value", DType::F64, &[])?;
    /// assert_eq!(plan.padding(0).collect::<Vec<_>>(), [1..8]);
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn padding(&self, alternative: usize) -> impl Iterator<Item = Range<usize>> + '_ {
        // Fields given explicit offsets need not be in offset order: each
        // step finds the next non-empty field at or after `at` (fields of
        // one alternative do not overlap, so none starts inside another).
        let mut at = Some(0);
        core::iter::from_fn(move || {
            loop {
                let from = at?;
                let next = self
                    .fields()
                    .iter()
                    .filter(|f| f.alternative == alternative && f.nbytes() > 0)
                    .map(Field::byte_range)
                    .filter(|range| range.start >= from)
                    .min_by_key(|range| range.start);
                let gap = match next {
                    Some(range) => {
                        at = Some(range.end);
                        from..range.start
                    }
                    None => {
                        at = None;
                        from..self.nbytes()
                    }
                };
                if !gap.is_empty() {
                    return Some(gap);
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;
    use std::vec::Vec;

    #[test]
    fn names_are_checked() {
        let mut plan = Plan::new();
        plan.field("a", DType::U8, &[1]).unwrap();
        for bad in ["a", "", "1x", "x-y", "_", "ä"] {
            assert!(
                matches!(plan.field(bad, DType::U8, &[1]), Err(Error::BadName { .. })),
                "{bad}"
            );
        }
        assert_eq!(plan.fields().len(), 1);
    }

    #[test]
    fn limits_are_errors() {
        let names: Vec<std::string::String> =
            (0..=MAX_FIELDS).map(|i| std::format!("f{i}")).collect();
        let mut plan = Plan::new();
        for name in &names[..MAX_FIELDS] {
            plan.field(name, DType::U8, &[1]).unwrap();
        }
        assert_eq!(
            plan.field(&names[MAX_FIELDS], DType::U8, &[1]).unwrap_err(),
            Error::PlanFull {
                what: "fields",
                max: MAX_FIELDS
            }
        );
        let mut plan = Plan::new();
        assert!(matches!(
            plan.field("x", DType::U8, &[1; 5]),
            Err(Error::TooManyDims { .. })
        ));
        assert!(matches!(
            plan.field("x", DType::U64, &[usize::MAX / 8 + 1]),
            Err(Error::Overflow { .. })
        ));
        for name in &names[..MAX_ALTERNATIVES - 1] {
            plan.field(name, DType::U8, &[1]).unwrap().union().unwrap();
        }
        plan.field("last", DType::U8, &[1]).unwrap();
        assert_eq!(
            plan.union().unwrap_err(),
            Error::PlanFull {
                what: "alternatives",
                max: MAX_ALTERNATIVES
            }
        );
        assert_eq!(plan.alternatives(), MAX_ALTERNATIVES);
    }

    #[test]
    fn a_trailing_union_adds_no_struct() {
        let mut plan = Plan::new();
        plan.field("a", DType::F32, &[1]).unwrap().union().unwrap();
        assert_eq!(plan.alternatives(), 1);
        assert_eq!(
            plan.wgsl().unwrap().to_string(),
            "// bytelens plan: 4 bytes, storage address space\nstruct Plan {\n    a: array<f32, 1>, // offset 0, 4 bytes\n}\n"
        );
    }

    #[test]
    fn sizes_that_cannot_be_rounded_are_refused() {
        let huge = isize::MAX as usize;
        let mut plan = Plan::new();
        plan.field("a", DType::U8, &[huge]).unwrap();
        assert!(matches!(
            plan.field("b", DType::U8, &[huge]),
            Err(Error::Overflow { .. })
        ));
        plan.union().unwrap();
        // Rounding the whole plan up to 8 would pass isize::MAX.
        assert!(matches!(
            plan.field("c", DType::F64, &[1]),
            Err(Error::Overflow { .. })
        ));
        assert_eq!(plan.nbytes(), huge);
        assert_eq!(plan.padding(0).count(), 0);
    }

    #[test]
    fn empty_union_is_a_no_op() {
        let mut plan = Plan::new();
        plan.union().unwrap().field("d", DType::I32, &[2]).unwrap();
        assert_eq!(plan.alternatives(), 1);
    }

    #[test]
    fn padding_between_and_after_fields() {
        let mut plan = Plan::new();
        plan.field("a", DType::U8, &[3])
            .unwrap()
            .field("b", DType::U32, &[1])
            .unwrap()
            .union()
            .unwrap()
            .field("c", DType::F64, &[1])
            .unwrap()
            .field("d", DType::U8, &[1])
            .unwrap();
        assert_eq!(plan.nbytes(), 16);
        assert_eq!(plan.padding(0).collect::<Vec<_>>(), [3..4, 8..16]);
        assert_eq!(plan.padding(1).collect::<Vec<_>>(), std::vec![9..16]);
    }
}
