//! [`Plan::wgsl`]: a plan as WGSL structs, checked against WGSL's
//! host-shareable layout rules so that a shader sees the same bytes.
#![forbid(unsafe_code)]

use core::fmt;

use super::{MAX_ALTERNATIVES, Plan};
use crate::{DType, Descr, Error, ShortStr};

/// A plan checked against WGSL's host-shareable layout rules, displayed as
/// WGSL source. Made by [`Plan::wgsl`].
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Plan};
/// let mut plan = Plan::new();
/// plan.field("x", DType::F32, &[4])?;
/// assert!(plan.wgsl()?.to_string().contains("x: array<f32, 4>,"));
/// # Ok::<(), bytelens_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Wgsl<'p, 'n> {
    // INVARIANT: every field is f32, i32, u32 or little-endian f16, has a
    // WGSL identifier for a name and at least one element.
    plan: &'p Plan<'n>,
}

/// WGSL's keywords, its reserved words and the predeclared type names a
/// struct or member must not take (from the WGSL specification's keyword
/// and reserved-word summaries), separated by spaces: one string, not a
/// table of 196 string slices, which would cost the wasm package 1.5 KB.
const WGSL_RESERVED: &str = concat!(
    // keywords
    " alias break case const const_assert continue continuing default diagnostic ",
    " discard else enable false fn for if let loop override requires return struct ",
    " switch true var while ",
    // predeclared types
    " array atomic bool f16 f32 i32 u32 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 ",
    " mat4x2 mat4x3 mat4x4 ptr sampler sampler_comparison vec2 vec3 vec4 bitcast ",
    // reserved words
    " NULL Self abstract active alignas alignof as asm asm_fragment async attribute ",
    " auto await become binding_array cast catch class co_await co_return co_yield ",
    " coherent column_major common compile compile_fragment concept const_cast ",
    " consteval constexpr constinit crate debugger decltype delete demote ",
    " demote_to_helper do dynamic_cast enum explicit export extends extern external ",
    " fallthrough filter final finally friend from fxgroup get goto groupshared highp ",
    " impl implements import inline instanceof interface layout lowp macro macro_rules ",
    " match mediump meta mod module move mut mutable namespace new nil noexcept ",
    " noinline nointerpolation non_coherent noncoherent noperspective null nullptr of ",
    " operator package packoffset partition pass patch pixelfragment precise precision ",
    " premerge priv protected pub public readonly ref regardless register ",
    " reinterpret_cast require resource restrict self set shared sizeof smooth snorm ",
    " static static_assert static_cast std subroutine super target template this ",
    " thread_local throw trait try type typedef typeid typename typeof union unless ",
    " unorm unsafe unsized use using varying virtual volatile wgsl where with ",
    " writeonly yield ",
);

/// True for names WGSL does not let a struct or member take.
pub(super) fn is_wgsl_reserved(name: &str) -> bool {
    WGSL_RESERVED
        .split(' ')
        .any(|word| !word.is_empty() && word == name)
        || name.starts_with("__")
}

/// The struct name of one alternative of several, `{plan}{alternative}`,
/// written into a stack buffer that holds any reserved word (the longest has
/// 24 bytes); a name too long for it is no reserved word.
struct StructName {
    bytes: [u8; 32],
    len: usize,
    fits: bool,
}

impl StructName {
    fn new(plan: &str, alternative: usize) -> StructName {
        let mut name = StructName {
            bytes: [0; 32],
            len: 0,
            fits: true,
        };
        // An error only means the name did not fit, which `fits` records.
        let _ = fmt::Write::write_fmt(&mut name, format_args!("{plan}{alternative}"));
        name
    }

    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }

    fn is_reserved(&self) -> bool {
        self.fits && is_wgsl_reserved(self.as_str())
    }
}

impl fmt::Write for StructName {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let Some(slot) = self.bytes.get_mut(self.len..end) else {
            self.fits = false;
            return Err(fmt::Error);
        };
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn wgsl_scalar(descr: Descr) -> Option<&'static str> {
    if descr.order != crate::ByteOrder::Little {
        return None;
    }
    match descr.dtype {
        DType::F32 => Some("f32"),
        DType::I32 => Some("i32"),
        DType::U32 => Some("u32"),
        DType::F16 => Some("f16"),
        _ => None,
    }
}

impl<'n> Plan<'n> {
    /// Checks that WGSL can share every field with the host and returns the
    /// matching WGSL: one struct per alternative (`Name` for one, `Name0`,
    /// `Name1`, … for several), for the `storage` address space.
    ///
    /// WGSL has no 8-, 16- or 64-bit integers, no f64, no bf16 and no
    /// big-endian data, and its arrays cannot be empty; each of those is
    /// refused with an error naming the field. The plan places fields by the
    /// rule WGSL uses for scalars and arrays of scalars (a member's offset is
    /// the previous end rounded up to its alignment; an array of scalars has
    /// the scalar's alignment and a stride equal to its size), so the WGSL
    /// offsets, written as comments, are the plan's. A field placed with
    /// [`field_at`](Plan::field_at) after a gap gives the member before it
    /// a `@size`; one placed first at a non-zero offset, or before a field
    /// that precedes it, is refused (`NotWgslPlaceable`): a WGSL struct
    /// starts at 0 and its members go up in offset.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Plan};
    /// let mut plan = Plan::named("Particles")?;
    /// plan.field("pos", DType::F32, &[8, 3])?.field("id", DType::U32, &[8])?;
    /// assert_eq!(
    ///     plan.wgsl()?.to_string(),
    ///     "// bytelens plan: 128 bytes, storage address space\n\
    ///      struct Particles {\n    \
    ///          pos: array<array<f32, 3>, 8>, // offset 0, 96 bytes\n    \
    ///          id: array<u32, 8>, // offset 96, 32 bytes\n\
    ///      }\n"
    /// );
    /// let mut bad = Plan::new();
    /// bad.field("counts", DType::I16, &[4])?;
    /// assert_eq!(
    ///     bad.wgsl().unwrap_err().to_string(),
    ///     "field \"counts\" is int16, which WGSL cannot share with the host (use u32, i32, f32 or f16)"
    /// );
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn wgsl(&self) -> Result<Wgsl<'_, 'n>, Error> {
        if self.fields().is_empty() {
            return Err(Error::EmptyPlan);
        }
        if self.alternatives() > 1 {
            // Several alternatives make structs `Name0`, `Name1`, …: a plan
            // named `f3` with three would declare `struct f32`.
            for alternative in 0..self.alternatives() {
                let name = StructName::new(self.name, alternative);
                if name.is_reserved() {
                    return Err(Error::WgslStructName {
                        name: ShortStr::new(name.as_str()),
                        alternative,
                    });
                }
            }
        }
        let mut ends = [None; MAX_ALTERNATIVES];
        for field in self.fields() {
            let name = ShortStr::new(field.name);
            // A struct's first member is at 0 and each next one after the
            // last; a gap between two becomes `@size` on the first.
            let placeable = match ends[field.alternative] {
                None => field.offset == 0,
                Some(end) => field.offset >= end,
            };
            if !placeable {
                return Err(Error::NotWgslPlaceable {
                    name,
                    offset: field.offset,
                });
            }
            ends[field.alternative] = Some(field.offset + field.nbytes());
            if is_wgsl_reserved(field.name) {
                return Err(Error::BadName { name });
            }
            if wgsl_scalar(field.descr).is_none() {
                return Err(Error::NotWgslShareable {
                    name,
                    descr: field.descr,
                });
            }
            if field.nbytes() == 0 {
                return Err(Error::EmptyField { name });
            }
            // WGSL's array counts, offsets and `@size`s are 32-bit: a
            // count or an end past `u32::MAX` cannot be written. (A field
            // ending by then has fewer than 2^31 elements of 2 bytes or
            // more, so every count also fits the i32 an unsuffixed literal
            // becomes.)
            if let Some(&count) = field.shape().iter().find(|&&n| n > u32::MAX as usize) {
                return Err(Error::WgslTooLarge {
                    name,
                    what: "an axis of",
                    value: count,
                });
            }
            let end = field.offset + field.nbytes();
            if end > u32::MAX as usize {
                return Err(Error::WgslTooLarge {
                    name,
                    what: "its end at byte",
                    value: end,
                });
            }
        }
        Ok(Wgsl { plan: self })
    }
}

impl fmt::Display for Wgsl<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = self.plan;
        let fields = plan.fields();
        if fields.iter().any(|field| field.descr.dtype == DType::F16) {
            f.write_str("enable f16;\n")?;
        }
        writeln!(
            f,
            "// bytelens plan: {} bytes, storage address space",
            plan.nbytes()
        )?;
        for alternative in 0..plan.alternatives() {
            if alternative > 0 {
                f.write_str("\n")?;
            }
            if plan.alternatives() == 1 {
                writeln!(f, "struct {} {{", plan.name)?;
            } else {
                writeln!(f, "struct {}{alternative} {{", plan.name)?;
            }
            let mut members = fields
                .iter()
                .filter(|field| field.alternative == alternative)
                .peekable();
            while let Some(field) = members.next() {
                let scalar = wgsl_scalar(field.descr).unwrap_or("u32");
                f.write_str("    ")?;
                if let Some(next) = members.peek() {
                    // Where WGSL would put the next member without help.
                    let natural =
                        (field.offset + field.nbytes()).next_multiple_of(next.descr.dtype.align());
                    if next.offset != natural {
                        write!(f, "@size({}) ", next.offset - field.offset)?;
                    }
                }
                write!(f, "{}: ", field.name)?;
                for _ in field.shape() {
                    f.write_str("array<")?;
                }
                f.write_str(scalar)?;
                for n in field.shape().iter().rev() {
                    write!(f, ", {n}>")?;
                }
                writeln!(f, ", // offset {}, {} bytes", field.offset, field.nbytes())?;
            }
            f.write_str("}\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::ByteOrder;
    use std::string::ToString;

    #[test]
    fn every_reserved_word_is_refused_and_no_other() {
        let words: std::vec::Vec<&str> = WGSL_RESERVED.split_whitespace().collect();
        assert_eq!(words.len(), 196);
        assert!(words.iter().all(|w| is_wgsl_reserved(w)));
        for name in ["", "Work", "alias2", "f64", "ali", "x"] {
            assert!(!is_wgsl_reserved(name), "{name}");
        }
    }

    #[test]
    fn wgsl_refuses_what_it_cannot_share() {
        for (dtype, order) in [
            (DType::I16, ByteOrder::Little),
            (DType::U8, ByteOrder::Little),
            (DType::I64, ByteOrder::Little),
            (DType::F64, ByteOrder::Little),
            (DType::BF16, ByteOrder::Little),
            (DType::Bool, ByteOrder::Little),
            (DType::F32, ByteOrder::Big),
        ] {
            let mut plan = Plan::new();
            plan.field("x", Descr::new(dtype, order), &[2]).unwrap();
            assert_eq!(
                plan.wgsl().unwrap_err(),
                Error::NotWgslShareable {
                    name: ShortStr::new("x"),
                    descr: Descr::new(dtype, order)
                }
            );
        }
        let mut plan = Plan::new();
        plan.field("loop", DType::F32, &[2]).unwrap();
        assert!(matches!(plan.wgsl(), Err(Error::BadName { .. })));
        let mut plan = Plan::new();
        plan.field("none", DType::F32, &[0]).unwrap();
        assert!(matches!(plan.wgsl(), Err(Error::EmptyField { .. })));
        assert_eq!(Plan::new().wgsl().unwrap_err(), Error::EmptyPlan);
        for reserved in [
            "layout", "filter", "union", "type", "self", "Self", "f32", "__x",
        ] {
            let mut plan = Plan::new();
            plan.field(reserved, DType::F32, &[1]).unwrap();
            assert!(
                matches!(plan.wgsl(), Err(Error::BadName { .. })),
                "{reserved}"
            );
            assert!(Plan::named(reserved).is_err(), "{reserved}");
        }
    }

    #[test]
    fn explicit_offsets_become_sizes() {
        let mut plan = Plan::named("Header").unwrap();
        plan.field_at("magic", DType::U32, &[2], 0)
            .unwrap()
            .field_at("data", DType::F32, &[4], 64)
            .unwrap()
            .field("tail", DType::U32, &[])
            .unwrap();
        assert_eq!(
            plan.wgsl().unwrap().to_string(),
            "// bytelens plan: 84 bytes, storage address space\n\
             struct Header {\n    \
             @size(64) magic: array<u32, 2>, // offset 0, 8 bytes\n    \
             data: array<f32, 4>, // offset 64, 16 bytes\n    \
             tail: u32, // offset 80, 4 bytes\n}\n"
        );
        let mut late = Plan::new();
        late.field_at("x", DType::F32, &[], 8).unwrap();
        assert_eq!(
            late.wgsl().unwrap_err(),
            Error::NotWgslPlaceable {
                name: ShortStr::new("x"),
                offset: 8
            }
        );
        let mut backwards = Plan::new();
        backwards.field_at("a", DType::F32, &[], 0).unwrap();
        backwards.field_at("c", DType::F32, &[], 8).unwrap();
        backwards.field_at("b", DType::F32, &[], 4).unwrap();
        assert_eq!(backwards.padding(0).count(), 0);
        assert_eq!(
            backwards.wgsl().unwrap_err().to_string(),
            "field \"b\" at offset 4: WGSL members start at 0 and go up in offset, in the order the plan adds them"
        );
    }

    #[test]
    fn wgsl_refuses_counts_and_sizes_past_32_bits() {
        let mut wide = Plan::new();
        wide.field("x", DType::F32, &[1 << 33]).unwrap();
        let err = wide.wgsl().unwrap_err();
        assert_eq!(
            err.to_string(),
            "field \"x\" has an axis of 8589934592; WGSL's limit is 4294967295"
        );
        assert_eq!(err.kind(), "NotWgslShareable");
        // Every count fits, the size does not.
        let mut big = Plan::new();
        big.field("y", DType::F32, &[1 << 16, 1 << 16]).unwrap();
        assert_eq!(
            big.wgsl().unwrap_err().to_string(),
            "field \"y\" has its end at byte 17179869184; WGSL's limit is 4294967295"
        );
        // A gap that would need a `@size` past 32 bits.
        let mut far = Plan::new();
        far.field("a", DType::U32, &[]).unwrap();
        far.field_at("b", DType::U32, &[], 1 << 40).unwrap();
        assert_eq!(
            far.wgsl().unwrap_err(),
            Error::WgslTooLarge {
                name: ShortStr::new("b"),
                what: "its end at byte",
                value: (1 << 40) + 4
            }
        );
        // The largest that fits is written.
        let mut edge = Plan::new();
        edge.field("z", DType::U32, &[(u32::MAX / 4) as usize])
            .unwrap();
        assert!(
            edge.wgsl()
                .unwrap()
                .to_string()
                .contains("array<u32, 1073741823>")
        );
    }

    #[test]
    fn wgsl_of_a_union_with_f16() {
        let mut plan = Plan::named("Phase").unwrap();
        plan.field("h", DType::F16, &[3])
            .unwrap()
            .field("x", DType::F32, &[])
            .unwrap()
            .union()
            .unwrap()
            .field("d", DType::I32, &[2])
            .unwrap();
        let text = plan.wgsl().unwrap().to_string();
        assert_eq!(
            text,
            "enable f16;\n\
             // bytelens plan: 12 bytes, storage address space\n\
             struct Phase0 {\n    h: array<f16, 3>, // offset 0, 6 bytes\n    x: f32, // offset 8, 4 bytes\n}\n\
             \n\
             struct Phase1 {\n    d: array<i32, 2>, // offset 0, 8 bytes\n}\n"
        );
    }
}
