//! The one way an error reaches JavaScript: every exported function returns
//! `Result<_, BindingError>`, and `From<BindingError> for JsValue` makes the
//! thrown object.
//!
//! - The core's errors become a `RangeError` with the core's message and its
//!   kind (`"Misaligned"`, `"OutOfBounds"`, …) as the `kind` property, as
//!   typed arrays throw `RangeError`s.
//! - A number or value an argument cannot take (`1.5` as an offset, `300`
//!   for uint8) is a `RangeError` without a kind: the core never saw it.
//! - An argument of the wrong JS type (a dtype that is not a string) is a
//!   `TypeError`.
//! - Whatever JS threw while an argument was read (a getter, a proxy) is
//!   rethrown as it is.
#![forbid(unsafe_code)]

use bytelens_core::{DType, Error};
use js_sys::{RangeError, Reflect, TypeError};
use wasm_bindgen::JsValue;

use crate::convert::describe;

/// Why a call failed, until it is thrown (see the [module docs](self)).
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
    /// What JS threw while reading an argument, rethrown unchanged.
    Thrown(JsValue),
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

/// The JS error's parts: message, kind, and whether it is a `TypeError`;
/// `Err` for a value JS threw, to rethrow as it is.
fn parts(err: BindingError) -> Result<(String, Option<&'static str>, bool), JsValue> {
    Ok(match err {
        BindingError::Core(err) => (err.to_string(), Some(err.kind()), false),
        BindingError::OffsetBeyondMemory(offset) => (
            format!(
                "offset {} lies outside every buffer: wasm32 addresses at most {} bytes",
                describe(&offset.into()),
                isize::MAX
            ),
            Some("OutOfBounds"),
            false,
        ),
        BindingError::Argument {
            what,
            expected,
            got,
            type_error,
        } => (
            format!("{what} must be {expected}, not {}", describe(&got)),
            None,
            type_error,
        ),
        BindingError::Element {
            dtype,
            got,
            type_error,
        } => (
            format!("{} is not a value of {dtype}", describe(&got)),
            None,
            type_error,
        ),
        BindingError::Thrown(thrown) => return Err(thrown),
        BindingError::InField { name, error } => {
            let (message, kind, type_error) = parts(*error)?;
            (format!("field {name}: {message}"), kind, type_error)
        }
    })
}

impl From<BindingError> for JsValue {
    fn from(err: BindingError) -> JsValue {
        let (message, kind, type_error) = match parts(err) {
            Ok(parts) => parts,
            Err(thrown) => return thrown,
        };
        let error: JsValue = if type_error {
            TypeError::new(&message).into()
        } else {
            RangeError::new(&message).into()
        };
        if let Some(kind) = kind {
            // Setting a property on a fresh error object cannot fail; without
            // it the error is still the right one.
            let _ = Reflect::set(&error, &JsValue::from_str("kind"), &kind.into());
        }
        error
    }
}
