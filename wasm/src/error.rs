//! The one way an error reaches JavaScript: every exported function returns
//! `Result<_, BindingError>`, and `From<BindingError> for JsValue` makes the
//! thrown object.
//!
//! Every error has a kind ([`BindingError::kind`]), which is the thrown
//! object's `kind` property and picks its class from the core's one table
//! ([`ErrorKind::js_class`]):
//!
//! - The core's errors become a `RangeError` with the core's message and its
//!   kind (`"Misaligned"`, `"OutOfBounds"`, …), as typed arrays throw
//!   `RangeError`s.
//! - A number or value an argument cannot take (`1.5` as an offset, `300`
//!   for uint8) is a `RangeError` of kind `"BadValue"`: the core never saw it.
//! - An argument of the wrong JS type (a dtype that is not a string) is a
//!   `TypeError` of kind `"WrongType"`.
//! - A view of more elements than one call gathers, returns or takes
//!   ([`MAX_ELEMENTS`]) is a `RangeError` of kind `"TooManyElements"`,
//!   thrown before anything is allocated for it.
//! - Whatever JS threw while an argument was read (a getter, a proxy) is
//!   rethrown as it is.
//!
//! Every message passes through one helper, `makeError` in `js/arrays.js`:
//! control characters escaped, and at most 300 characters, whatever text
//! it quotes.
#![forbid(unsafe_code)]

use bytelens_core::{DType, Error, ErrorKind};
use wasm_bindgen::prelude::*;

use crate::js::{self, make_error};

/// The most elements `read`, `write` and `offsets` handle in one call:
/// 2^26. Stride 0 lets a view of a few bytes have any number of elements,
/// and each becomes a JS value (a typed array's, or a number in an `Array`
/// for `offsets`). V8 aborts the whole process, uncatchably, when an
/// `Array` of numbers grows past 2^27 - 2 elements, which one grown element
/// by element overshoots already at 1.2e8 (Node 20); 2^26 float64s are
/// already 512 MiB gathered in wasm memory and 512 MiB more in JS.
pub(crate) const MAX_ELEMENTS: usize = 1 << 26;

/// A JS value as a person would write it, for error messages: at most
/// about 60 characters of it, with the type and length of a longer string,
/// array or typed array (`js/arrays.js`, where JS prints its numbers, which
/// keeps Rust's float formatting out of the .wasm).
fn describe(value: &JsValue) -> String {
    js::describe(value).unwrap_or_else(|_| {
        let kind = value.js_typeof().as_string().unwrap_or_default();
        format!("a value of type {kind}")
    })
}

/// Why a call failed, until it is thrown (the `error` module's docs say how).
/// Messages are written here, from the parts each variant keeps.
#[derive(Debug)]
#[non_exhaustive]
pub enum BindingError {
    /// The core refused: a `RangeError` with its message and `kind`.
    Core(Error),
    /// A byte offset past what wasm32's `isize` holds, so past every buffer:
    /// a `RangeError` of kind `"OutOfBounds"`, like the core's own.
    OffsetBeyondMemory(f64),
    /// An argument that is not what it must be: "`what` must be
    /// `expected`, not `got`", a `TypeError` when `got` is of the wrong JS
    /// type, else a `RangeError`.
    Argument {
        /// The argument: `"offset"`, `"shape"`, `"a dtype"`.
        what: &'static str,
        /// What it must be: `"an integer"`, `"an array"`.
        expected: &'static str,
        /// What was given.
        got: JsValue,
        /// Whether `got` is of the wrong JS type.
        type_error: bool,
    },
    /// A value that is not an element of `dtype` ("1.5 is not a value of
    /// int16"): a `TypeError` when of the wrong JS type, else a `RangeError`.
    Element {
        /// The element type.
        dtype: DType,
        /// What was given.
        got: JsValue,
        /// Whether `got` is of the wrong JS type.
        type_error: bool,
    },
    /// A view of `count` elements, more than 2^26 (`MAX_ELEMENTS`), for `call`
    /// (`"read() returns"`, `"write() takes"`): a `RangeError`.
    TooManyElements {
        /// The view's elements.
        count: usize,
        /// The call, and what it does with them.
        call: &'static str,
    },
    /// A call made out of its order (`pushRest` before `addTally`): a
    /// `RangeError` saying `call` and why it cannot be made now.
    Order {
        /// The call, as JS names it.
        call: &'static str,
        /// Why not now, and what comes first.
        why: &'static str,
    },
    /// What JS threw while reading an argument, rethrown unchanged.
    Thrown(JsValue),
    /// `bytes` bytes for `what` that wasm memory cannot hold (its 4 GiB
    /// are taken, or would be): a `RangeError` of kind `"OutOfMemory"`,
    /// where an allocation would otherwise abort the instance.
    #[cfg(feature = "files")]
    OutOfMemory {
        /// What they were for: `"bytes"`, `"a Tally's counts"`.
        what: &'static str,
        /// How many.
        bytes: u64,
    },
    /// More elements pushed into a `Heatmap` than its array has left: a
    /// `RangeError` of kind `"CountMismatch"` with the true numbers (the
    /// core's own message counts in `usize`, 32 bits here).
    #[cfg(feature = "files")]
    PastTheEnd {
        /// The elements given.
        given: u64,
        /// The elements the array has left.
        left: u64,
        /// The array's rows and columns.
        rows: u64,
        cols: u64,
    },
    /// A file header that is not valid (`readHeader`): the core's error,
    /// a `RangeError` of its kind (`"FormatError"`, or `"OutOfMemory"`)
    /// with its message.
    #[cfg(feature = "files")]
    Format(bytelens_core::files::FileError),
    /// The error of one plan field, its message prefixed with the field's name.
    InField {
        /// The field's name.
        name: String,
        /// What was wrong with it.
        error: Box<BindingError>,
    },
}

impl BindingError {
    /// `what` of the wrong JS type: a `TypeError`.
    pub(crate) fn wrong_type(what: &'static str, expected: &'static str, got: &JsValue) -> Self {
        BindingError::Argument {
            what,
            expected,
            got: got.clone(),
            type_error: true,
        }
    }

    /// `what` of the right type but out of its range: a `RangeError`.
    pub(crate) fn bad_value(what: &'static str, expected: &'static str, got: f64) -> Self {
        BindingError::Argument {
            what,
            expected,
            got: got.into(),
            type_error: false,
        }
    }
}

/// Refuses a view of `count` elements for `call` (see
/// [`BindingError::TooManyElements`]) when there are more than [`MAX_ELEMENTS`].
pub(crate) fn at_most(count: usize, call: &'static str) -> Result<(), BindingError> {
    if count > MAX_ELEMENTS {
        return Err(BindingError::TooManyElements { count, call });
    }
    Ok(())
}

impl From<Error> for BindingError {
    fn from(err: Error) -> BindingError {
        BindingError::Core(err)
    }
}

impl From<JsValue> for BindingError {
    fn from(thrown: JsValue) -> BindingError {
        BindingError::Thrown(thrown)
    }
}

impl BindingError {
    /// The error's kind, from which the thrown object takes its class
    /// ([`ErrorKind::js_class`]) and its `kind` property; `None` for what
    /// JS threw, which is rethrown as it is.
    pub fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            BindingError::Core(err) => err.kind(),
            BindingError::OffsetBeyondMemory(_) => ErrorKind::OutOfBounds,
            BindingError::Argument { type_error, .. }
            | BindingError::Element { type_error, .. } => {
                if *type_error {
                    ErrorKind::WrongType
                } else {
                    ErrorKind::BadValue
                }
            }
            BindingError::TooManyElements { .. } => ErrorKind::TooManyElements,
            BindingError::Order { .. } => ErrorKind::OutOfOrder,
            BindingError::Thrown(_) => return None,
            #[cfg(feature = "files")]
            BindingError::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            #[cfg(feature = "files")]
            BindingError::PastTheEnd { .. } => ErrorKind::CountMismatch,
            #[cfg(feature = "files")]
            BindingError::Format(err) => err.kind(),
            BindingError::InField { error, .. } => return error.kind(),
        })
    }
}

/// The JS error's message; `Err` for a value JS threw, to rethrow as it is.
fn message(err: BindingError) -> Result<String, JsValue> {
    Ok(match err {
        BindingError::Core(err) => err.to_string(),
        BindingError::OffsetBeyondMemory(offset) => format!(
            "offset {} lies outside every buffer: wasm32 addresses at most {} bytes",
            describe(&offset.into()),
            isize::MAX
        ),
        BindingError::Argument {
            what,
            expected,
            got,
            ..
        } => format!("{what} must be {expected}, not {}", describe(&got)),
        BindingError::Element { dtype, got, .. } => {
            format!("{} is not a value of {dtype}", describe(&got))
        }
        BindingError::TooManyElements { count, call } => format!(
            "a view of {count} elements is more than {call} at once \
             (limit {MAX_ELEMENTS}); take it in parts"
        ),
        BindingError::Order { call, why } => format!("{call}() cannot be called now: {why}"),
        BindingError::Thrown(thrown) => return Err(thrown),
        #[cfg(feature = "files")]
        BindingError::OutOfMemory { what, bytes } => {
            format!("{what}: {bytes} bytes do not fit in wasm memory (4 GiB in all)")
        }
        #[cfg(feature = "files")]
        BindingError::PastTheEnd {
            given,
            left,
            rows,
            cols,
        } => format!("{given} elements given, but the {rows} × {cols} array has {left} left"),
        #[cfg(feature = "files")]
        BindingError::Format(err) => err.to_string(),
        BindingError::InField { name, error } => format!("field {name}: {}", message(*error)?),
    })
}

impl From<BindingError> for JsValue {
    fn from(err: BindingError) -> JsValue {
        // No kind only for what JS threw, which `message` hands back.
        let kind = err.kind().unwrap_or(ErrorKind::BadValue);
        match message(err) {
            Ok(message) => make_error(&message, kind.js_class(), kind.name()),
            Err(thrown) => thrown,
        }
    }
}
