//! The one error type of the core, with the numbers a user needs in every message.
#![forbid(unsafe_code)]

use core::fmt;

use crate::{ByteOrder, DType, Descr, ErrorKind};

/// Everything that can go wrong when describing or checking a view.
///
/// Every variant carries the numbers behind the failure, and its
/// [`Display`](fmt::Display) message says what to change.
///
/// # Examples
/// ```
/// use bytelens_core::{DType, Layout};
/// let layout = Layout::contiguous(DType::I16, &[1]).unwrap().with_offset(3).unwrap();
/// let err = layout.check(8).unwrap_err();
/// assert_eq!(err.to_string(), "offset 3 is not a multiple of 2, the alignment of int16");
/// assert_eq!(err.kind(), "Misaligned");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An element would start at a byte offset that is not a multiple of the
    /// dtype's alignment.
    Misaligned {
        /// The offending byte offset (or address, for a buffer's base).
        offset: usize,
        /// The alignment the dtype needs.
        align: usize,
        /// The element type.
        dtype: DType,
    },
    /// The buffer itself starts at an address that is not a multiple of the
    /// dtype's alignment.
    MisalignedBuffer {
        /// The buffer's address.
        address: usize,
        /// The alignment the dtype needs.
        align: usize,
        /// The element type.
        dtype: DType,
    },
    /// A stride is not a multiple of the dtype's alignment, so some element
    /// would be misaligned.
    MisalignedStride {
        /// The axis whose stride is at fault.
        axis: usize,
        /// The stride in bytes.
        stride: isize,
        /// The alignment the dtype needs.
        align: usize,
        /// The element type.
        dtype: DType,
    },
    /// The view reaches bytes outside the buffer.
    OutOfBounds {
        /// First byte the view touches (negative: before the buffer).
        start: isize,
        /// One past the last byte the view touches.
        end: isize,
        /// The buffer's length in bytes.
        len: usize,
    },
    /// Size or offset arithmetic does not fit in the address space.
    Overflow {
        /// What was being computed.
        what: &'static str,
    },
    /// A byte length does not divide by an itemsize (numpy: "size must be a divisor").
    ItemsizeMismatch {
        /// The byte length that had to divide.
        nbytes: usize,
        /// The itemsize it had to divide by.
        itemsize: usize,
        /// The element type with that itemsize.
        dtype: DType,
    },
    /// `reinterpret` to a dtype of another size needs a contiguous last axis.
    NotContiguous {
        /// The last axis.
        axis: usize,
        /// Its stride in bytes.
        stride: isize,
        /// The current itemsize, the stride it would need.
        itemsize: usize,
    },
    /// A reshape cannot be expressed with strides over the same bytes.
    NeedsCopy {
        /// The old axis that cannot be merged with the next one.
        axis: usize,
        /// Its stride in bytes.
        stride: isize,
        /// The stride it would need to merge.
        needed: isize,
    },
    /// More dimensions than [`MAX_NDIM`](crate::MAX_NDIM).
    TooManyDims {
        /// The requested number of dimensions.
        ndim: usize,
        /// The limit.
        max: usize,
    },
    /// An axis number that the layout does not have.
    BadAxis {
        /// The axis asked for.
        axis: usize,
        /// How many axes the layout has.
        ndim: usize,
    },
    /// A permutation that names an axis twice.
    RepeatedAxis {
        /// The axis named twice.
        axis: usize,
    },
    /// A dtype string that is not understood, or an element type that does
    /// not match the layout's dtype.
    BadDType {
        /// The text that was not understood (truncated to 24 bytes).
        text: ShortStr,
    },
    /// Writing through a view that cannot be written (broadcast, or read-only memory).
    ReadOnly,
    /// A list that needs one entry per dimension (strides, an index, a
    /// permutation) with another number of entries.
    LengthMismatch {
        /// What the list is: `"strides"`, `"indices"` or `"axes"`.
        what: &'static str,
        /// Expected length (the number of dimensions).
        expected: usize,
        /// Given length.
        got: usize,
    },
    /// A reshape to a shape with a different number of elements.
    SizeMismatch {
        /// Elements in the layout.
        from: usize,
        /// Elements in the requested shape.
        to: usize,
    },
    /// Values to write whose number differs from the view's elements.
    CountMismatch {
        /// Elements in the view.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A view's byte offset outside its buffer (negative, or past the end).
    OffsetOutside {
        /// The offset given.
        offset: isize,
        /// The buffer's length, when there is a buffer.
        len: Option<usize>,
    },
    /// Strides without a shape, or a layout without a buffer to take its
    /// length from and no shape.
    MissingShape {
        /// How many strides were given (0: none).
        strides: usize,
    },
    /// An index outside an axis.
    IndexOutOfRange {
        /// The index asked for (negative counts from the end).
        index: isize,
        /// The axis.
        axis: usize,
        /// The axis length.
        len: usize,
    },
    /// A slice step of zero.
    ZeroStep {
        /// The axis being sliced.
        axis: usize,
    },
    /// `broadcast_to` a shape with fewer dimensions than the layout.
    BroadcastRank {
        /// The layout's dimensions.
        ndim: usize,
        /// The target shape's dimensions.
        to: usize,
    },
    /// `broadcast_to` with a shape the layout cannot stretch to.
    NotBroadcastable {
        /// The axis of the target shape at fault.
        axis: usize,
        /// The layout's length on that axis.
        from: usize,
        /// The requested length.
        to: usize,
    },
    /// A typed view whose Rust element type is not the layout's dtype.
    WrongElement {
        /// The dtype of the layout.
        layout: DType,
        /// The dtype of the Rust element type.
        element: DType,
    },
    /// A plan field name that is empty, repeated, or not an identifier.
    BadName {
        /// The name (truncated to 24 bytes).
        name: ShortStr,
    },
    /// A plan with more fields or alternatives than fit inline.
    PlanFull {
        /// What there would be too many of: `"fields"` or `"alternatives"`.
        what: &'static str,
        /// The limit that was reached.
        max: usize,
    },
    /// A plan field with no elements, where one is needed (WGSL arrays).
    EmptyField {
        /// The field.
        name: ShortStr,
    },
    /// An alternative number past a plan's last alternative.
    NoAlternative {
        /// The alternative asked for.
        alternative: usize,
        /// How many the plan has.
        alternatives: usize,
    },
    /// A plan with no fields, where one is needed (WGSL structs).
    EmptyPlan,
    /// A plan field that WGSL cannot share with the host.
    NotWgslShareable {
        /// The field.
        name: ShortStr,
        /// Its dtype and byte order.
        descr: Descr,
    },
    /// A plan whose name, with an alternative's number appended (`f3` and
    /// 2 make `f32`), is a word WGSL reserves, so its WGSL struct cannot
    /// take it.
    WgslStructName {
        /// The struct name that alternative would get (truncated to 24 bytes).
        name: ShortStr,
        /// The alternative.
        alternative: usize,
    },
    /// A plan field placed at an explicit offset where it would share bytes
    /// with another field of the same alternative.
    FieldsOverlap {
        /// The field being placed.
        name: ShortStr,
        /// The field it would overlap.
        other: ShortStr,
    },
    /// A plan field at an explicit offset that WGSL cannot place there (a
    /// struct's first member starts at 0, and members go up in offset).
    NotWgslPlaceable {
        /// The field.
        name: ShortStr,
        /// Its offset.
        offset: usize,
    },
    /// A line of a plan's text (`PlanSpec::from_text`) that is not
    /// `name dtype length… [@offset]` or `union`.
    BadPlanLine {
        /// The line (truncated to 24 bytes).
        line: ShortStr,
    },
    /// A plan field with an axis longer, or an end further, than WGSL's
    /// 32-bit array counts and struct offsets reach.
    WgslTooLarge {
        /// The field.
        name: ShortStr,
        /// What is too large: `"an axis of"` (a count) or `"its end at byte"`.
        what: &'static str,
        /// The number.
        value: usize,
    },
    /// A line of plan text that does not read as a field's and has a
    /// character that is not ASCII (a no-break or zero-width space, which
    /// echoed as it is would make the line look valid): named by its code.
    PlanLineInvisible {
        /// The line (truncated to 24 bytes).
        line: ShortStr,
        /// The character.
        character: char,
        /// Its byte offset in the line.
        at: usize,
    },
    /// numpy: "Changing the dtype of a 0d array is only supported if the
    /// itemsize is unchanged".
    ScalarItemsize {
        /// The 0-d view's dtype.
        from: DType,
        /// The dtype of another size it was to become.
        to: DType,
    },
}

impl Error {
    /// The error's kind, whose name the conformance vectors and other
    /// languages spell (several variants share one).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{Error, ErrorKind};
    /// assert_eq!(Error::ReadOnly.kind(), ErrorKind::ReadOnly);
    /// assert_eq!(Error::ReadOnly.kind().name(), "ReadOnly");
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Misaligned { .. }
            | Error::MisalignedBuffer { .. }
            | Error::MisalignedStride { .. } => ErrorKind::Misaligned,
            Error::OutOfBounds { .. } | Error::OffsetOutside { .. } => ErrorKind::OutOfBounds,
            Error::Overflow { .. } => ErrorKind::Overflow,
            Error::ItemsizeMismatch { .. } | Error::ScalarItemsize { .. } => {
                ErrorKind::ItemsizeMismatch
            }
            Error::NotContiguous { .. } => ErrorKind::NotContiguous,
            Error::NeedsCopy { .. } => ErrorKind::NeedsCopy,
            Error::TooManyDims { .. } => ErrorKind::TooManyDims,
            Error::BadAxis { .. } | Error::RepeatedAxis { .. } => ErrorKind::BadAxis,
            Error::BadDType { .. } | Error::WrongElement { .. } => ErrorKind::BadDType,
            Error::ReadOnly => ErrorKind::ReadOnly,
            Error::LengthMismatch { .. } => ErrorKind::LengthMismatch,
            Error::SizeMismatch { .. } => ErrorKind::SizeMismatch,
            Error::CountMismatch { .. } => ErrorKind::CountMismatch,
            Error::MissingShape { .. } => ErrorKind::MissingShape,
            Error::IndexOutOfRange { .. } => ErrorKind::IndexOutOfRange,
            Error::ZeroStep { .. } => ErrorKind::ZeroStep,
            Error::NotBroadcastable { .. } | Error::BroadcastRank { .. } => {
                ErrorKind::NotBroadcastable
            }
            Error::BadName { .. } | Error::WgslStructName { .. } => ErrorKind::BadName,
            Error::PlanFull { .. } => ErrorKind::PlanFull,
            Error::NotWgslShareable { .. } => ErrorKind::NotWgslShareable,
            Error::EmptyField { .. } => ErrorKind::EmptyField,
            Error::EmptyPlan => ErrorKind::EmptyPlan,
            Error::NoAlternative { .. } => ErrorKind::NoAlternative,
            Error::BadPlanLine { .. } => ErrorKind::BadPlanLine,
            Error::FieldsOverlap { .. } => ErrorKind::FieldsOverlap,
            Error::NotWgslPlaceable { .. } | Error::WgslTooLarge { .. } => {
                ErrorKind::NotWgslShareable
            }
            Error::PlanLineInvisible { .. } => ErrorKind::BadPlanLine,
        }
    }

    /// True for the errors that mean "misaligned" (offset or stride).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let err = Layout::contiguous(DType::U32, &[1])?.with_offset(2)?.check(8).unwrap_err();
    /// assert!(err.is_alignment() && !err.is_bounds());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_alignment(&self) -> bool {
        matches!(
            self,
            Error::Misaligned { .. }
                | Error::MisalignedBuffer { .. }
                | Error::MisalignedStride { .. }
        )
    }

    /// True for the errors that mean "reaches outside the buffer" (an index
    /// past the end of an axis is not one: that is `IndexOutOfRange`).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Layout};
    /// let err = Layout::contiguous(DType::U32, &[3])?.check(8).unwrap_err();
    /// assert!(err.is_bounds());
    /// let err = Layout::contiguous(DType::U32, &[3])?.index(0, 3).unwrap_err();
    /// assert!(!err.is_bounds());
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn is_bounds(&self) -> bool {
        matches!(
            self,
            Error::OutOfBounds { .. } | Error::OffsetOutside { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Misaligned {
                offset,
                align,
                dtype,
            } => write!(
                f,
                "offset {offset} is not a multiple of {align}, the alignment of {dtype}"
            ),
            Error::MisalignedBuffer {
                address,
                align,
                dtype,
            } => write!(
                f,
                "the buffer starts at address {address:#x}, which is not a multiple of {align}, \
                 the alignment of {dtype}"
            ),
            Error::MisalignedStride {
                axis,
                stride,
                align,
                dtype,
            } => write!(
                f,
                "stride {stride} of axis {axis} is not a multiple of {align}, the alignment of {dtype}"
            ),
            Error::OutOfBounds { start, end, len } => write!(
                f,
                "the view reaches bytes {start}..{end} but the buffer holds {len} bytes"
            ),
            Error::Overflow { what } => {
                write!(f, "{what} overflows the address space")
            }
            Error::ItemsizeMismatch {
                nbytes,
                itemsize,
                dtype,
            } => write!(
                f,
                "{nbytes} bytes is not a multiple of {itemsize}, the size of {dtype}"
            ),
            Error::NotContiguous {
                axis,
                stride,
                itemsize,
            } => write!(
                f,
                "to change to a dtype of a different size the last axis must be contiguous, \
                 but axis {axis} has stride {stride} instead of {itemsize}"
            ),
            Error::NeedsCopy {
                axis,
                stride,
                needed,
            } => write!(
                f,
                "this reshape needs a copy: axis {axis} has stride {stride} but merging it \
                 with the next axis needs stride {needed}"
            ),
            Error::TooManyDims { ndim, max } => {
                write!(f, "{ndim} dimensions is more than the limit of {max}")
            }
            Error::BadAxis { axis, ndim } => write!(
                f,
                "axis {axis} is out of range for a layout with {ndim} dimensions"
            ),
            Error::RepeatedAxis { axis } => {
                write!(f, "axis {axis} appears twice in the permutation")
            }
            Error::BadDType { text } => write!(f, "unknown dtype \"{text}\""),
            Error::ReadOnly => f.write_str("this view is read-only"),
            Error::LengthMismatch {
                what,
                expected,
                got,
            } => write!(
                f,
                "{got} {what} given for {expected} dimensions: give one per dimension"
            ),
            Error::SizeMismatch { from, to } => write!(
                f,
                "cannot reshape {from} elements into a shape of {to} elements"
            ),
            Error::CountMismatch { expected, got } => write!(
                f,
                "the view holds {expected} elements but {got} values were given"
            ),
            Error::OffsetOutside {
                offset,
                len: Some(len),
            } => write!(
                f,
                "offset {offset} is outside the buffer of {len} bytes (offsets go from 0 to {len})"
            ),
            Error::OffsetOutside { offset, len: None } => {
                write!(f, "offset {offset} is negative")
            }
            Error::MissingShape { strides: 0 } => {
                f.write_str("a layout without a buffer needs a shape")
            }
            Error::MissingShape { .. } => {
                f.write_str("strides were given without a shape: give the shape too")
            }
            Error::IndexOutOfRange { index, axis, len } => write!(
                f,
                "index {index} is out of range for axis {axis} of length {len}"
            ),
            Error::ZeroStep { axis } => write!(f, "slice step of axis {axis} cannot be zero"),
            Error::BroadcastRank { ndim, to } => write!(
                f,
                "cannot broadcast {ndim} dimensions to a shape of {to}: the shape needs at least \
                 as many dimensions"
            ),
            Error::NotBroadcastable { axis, from, to } => write!(
                f,
                "cannot broadcast axis {axis} from length {from} to {to}: only length 1 stretches"
            ),
            Error::WrongElement { layout, element } => write!(
                f,
                "the layout holds {layout} but the view was asked for {element}"
            ),
            Error::BadName { name } => write!(
                f,
                "\"{name}\" is not a usable name: plan and field names must be identifiers \
                 (letters, digits, '_', not starting with a digit), and field names unique"
            ),
            Error::PlanFull { what, max } => write!(f, "a plan holds at most {max} {what}"),
            Error::WgslStructName { name, alternative } => write!(
                f,
                "alternative {alternative}'s WGSL struct would be called \"{name}\", which WGSL \
                 reserves; give the plan a name that stays usable with a number appended"
            ),
            Error::EmptyField { name } => write!(
                f,
                "field \"{name}\" has no elements, and WGSL arrays need at least one"
            ),
            Error::NoAlternative {
                alternative,
                alternatives,
            } => write!(
                f,
                "alternative {alternative} does not exist; the plan has {alternatives}"
            ),
            Error::EmptyPlan => {
                f.write_str("the plan has no fields, and WGSL structs need at least one")
            }
            Error::NotWgslShareable { name, descr } if descr.order == ByteOrder::Big => write!(
                f,
                "field \"{name}\" is big-endian ({descr}), and WGSL reads host data \
                 little-endian"
            ),
            Error::NotWgslShareable { name, descr } => write!(
                f,
                "field \"{name}\" is {}, which WGSL cannot share with the host \
                 (use u32, i32, f32 or f16)",
                descr.dtype
            ),
            Error::BadPlanLine { line } => write!(
                f,
                "the plan's line \"{line}\" does not read as `name dtype length... [@offset]` or `union`"
            ),
            Error::PlanLineInvisible {
                line,
                character,
                at,
            } => write!(
                f,
                "the plan's line \"{line}\" has {} at byte {at}; plan text is ASCII",
                character.escape_default()
            ),
            Error::WgslTooLarge { name, what, value } => write!(
                f,
                "field \"{name}\" has {what} {value}; WGSL's limit is 4294967295"
            ),
            Error::FieldsOverlap { name, other } => {
                write!(f, "field \"{name}\" would overlap field \"{other}\"")
            }
            Error::NotWgslPlaceable { name, offset } => write!(
                f,
                "field \"{name}\" at offset {offset}: WGSL members start at 0 and go up in offset, \
                 in the order the plan adds them"
            ),
            Error::ScalarItemsize { from, to } => write!(
                f,
                "a 0-d view of {from} can only be reinterpreted as a dtype of the same size \
                 ({} bytes), not as {to}",
                from.size()
            ),
        }
    }
}

impl core::error::Error for Error {}

/// A short string stored inline (at most 24 bytes), so that errors can name
/// what they are about without allocating. Longer text is cut at a character
/// boundary, and shown with `...` after it, so that a message never passes
/// off the start of a name as the whole of it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShortStr {
    bytes: [u8; 24],
    len: u8,
    cut: bool,
}

impl ShortStr {
    /// Copies up to 24 bytes of `s`, cutting at a character boundary.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ShortStr;
    /// assert_eq!(ShortStr::new("float33").as_str(), "float33");
    /// let long = ShortStr::new(&"x".repeat(40));
    /// assert_eq!((long.as_str().len(), long.is_cut()), (24, true));
    /// assert_eq!(long.to_string(), format!("{}...", "x".repeat(24)));
    /// ```
    pub fn new(s: &str) -> ShortStr {
        let mut len = s.len().min(24);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; 24];
        bytes[..len].copy_from_slice(&s.as_bytes()[..len]);
        ShortStr {
            bytes,
            len: len as u8,
            cut: len < s.len(),
        }
    }

    /// Whether the text was longer than what is stored.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ShortStr;
    /// assert!(!ShortStr::new(&"x".repeat(24)).is_cut());
    /// assert!(ShortStr::new(&"é".repeat(13)).is_cut());
    /// ```
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// The stored text.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens_core::ShortStr::new("A").as_str(), "A");
    /// ```
    pub fn as_str(&self) -> &str {
        // The stored bytes are a prefix of a `str` cut at a char boundary.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

/// The text as a message quotes it (see [`Escaped`]).
///
/// # Examples
/// ```
/// use bytelens_core::ShortStr;
/// assert_eq!(ShortStr::new("P\r\n").to_string(), "P\\r\\n");
/// assert_eq!(ShortStr::new("a\0\"b").to_string(), "a\\0\\\"b");
/// assert_eq!(ShortStr::new("zählt").to_string(), "zählt");
/// ```
impl fmt::Display for ShortStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Escaped(self.as_str()), f)?;
        if self.cut { f.write_str("...") } else { Ok(()) }
    }
}

impl Default for ShortStr {
    /// The empty string, to be written into ([`fmt::Write`]).
    fn default() -> ShortStr {
        ShortStr::new("")
    }
}

/// Appends text whole: text that does not fit in the 24 bytes is refused
/// (`fmt::Error`), and what was written before stays, so that a short
/// number or escape is formatted without allocating.
///
/// # Examples
/// ```
/// use bytelens_core::ShortStr;
/// use core::fmt::Write;
/// let mut text = ShortStr::default();
/// write!(text, "\\u{:04x}", 0x1b).unwrap();
/// assert_eq!(text.as_str(), "\\u001b");
/// assert!(text.write_str(&"x".repeat(19)).is_err());
/// assert_eq!(text.as_str(), "\\u001b");
/// ```
impl fmt::Write for ShortStr {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let start = usize::from(self.len);
        let end = start + s.len();
        self.bytes
            .get_mut(start..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end as u8;
        Ok(())
    }
}

/// Text as a message quotes it: control characters escaped (`\r`, `\n`,
/// `\0`, `\u{1b}`), and `"` and `\` too, so that a name can neither break
/// the line nor end its quotes early; and the invisible characters that
/// change how a line reads (Unicode's format characters: bidirectional
/// overrides and isolates such as U+202E, zero-width ones, the byte order
/// mark U+FEFF, tags; the line and paragraph separators U+2028 and U+2029;
/// private-use characters and noncharacters) as `\u{202e}`, as inspect
/// escapes them. Every other character is kept as it is. (A table of
/// ranges, not `escape_debug`, whose Unicode tables would cost the wasm
/// package 2 KB.)
///
/// # Examples
/// ```
/// use bytelens_core::Escaped;
/// assert_eq!(Escaped("x\u{1b}[2J\t\"ü\"").to_string(), "x\\u{1b}[2J\\t\\\"ü\\\"");
/// assert_eq!(Escaped("a\u{202e}b\u{2028}\u{feff}é").to_string(), "a\\u{202e}b\\u{2028}\\u{feff}é");
/// ```
pub struct Escaped<'a>(pub &'a str);

/// The ranges of Unicode's format characters (general category Cf), line
/// and paragraph separators (Zl, Zp) and private-use characters (Co), as
/// of Unicode 15, in order.
const INVISIBLE: [(u32, u32); 24] = [
    (0xad, 0xad),
    (0x600, 0x605),
    (0x61c, 0x61c),
    (0x6dd, 0x6dd),
    (0x70f, 0x70f),
    (0x890, 0x891),
    (0x8e2, 0x8e2),
    (0x180e, 0x180e),
    (0x200b, 0x200f),
    (0x2028, 0x202e),
    (0x2060, 0x2064),
    (0x2066, 0x206f),
    (0xe000, 0xf8ff),
    (0xfeff, 0xfeff),
    (0xfff9, 0xfffb),
    (0x110bd, 0x110bd),
    (0x110cd, 0x110cd),
    (0x13430, 0x1343f),
    (0x1bca0, 0x1bca3),
    (0x1d173, 0x1d17a),
    (0xe0001, 0xe0001),
    (0xe0020, 0xe007f),
    (0xf0000, 0x10ffff),
    (u32::MAX, u32::MAX),
];

/// Whether `c` is escaped although it is not a control character: a
/// format character, a separator, a private-use character or a
/// noncharacter (U+FDD0 to U+FDEF, and the last two of every plane).
pub(crate) fn invisible(c: char) -> bool {
    let n = c as u32;
    if (0xfdd0..=0xfdef).contains(&n) || n & 0xfffe == 0xfffe {
        return true;
    }
    let at = INVISIBLE.partition_point(|&(_, last)| last < n);
    INVISIBLE[at].0 <= n
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The one escaping table, the quoting helper's (`crate::quoted`).
        for c in self.0.chars() {
            crate::quoted::rust(f, u32::from(c), Some(c))?;
        }
        Ok(())
    }
}

impl fmt::Debug for ShortStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
