//! [`ErrorKind`]: the one classification of every error of every layer,
//! and the one table from a kind to the Python exception and the JS error
//! the bindings raise for it.
#![forbid(unsafe_code)]

use core::fmt;

/// Declares [`ErrorKind`] and its table from one list: each kind once,
/// with its name, its Python exception class and its JS error class
/// (pydantic-core's `error_types!` is the model).
macro_rules! error_kinds {
    ($($(#[$doc:meta])* $kind:ident => $name:literal, $python:literal, $js:literal;)*) => {
        /// What kind of error an error is, whatever its layer: the core's
        /// layout errors, file headers, the native crate's memory, shared
        /// memory, files and GPU errors, and what the bindings refuse
        /// before reaching the core. Every error type has a `kind()`
        /// returning one, and the bindings pick the exception they raise
        /// by it ([`python_class`](Self::python_class),
        /// [`js_class`](Self::js_class)).
        ///
        /// # Examples
        /// ```
        /// use bytelens_core::{DType, ErrorKind, Layout};
        /// let err = Layout::contiguous(DType::U32, &[3])?.check(8).unwrap_err();
        /// assert_eq!(err.kind(), ErrorKind::OutOfBounds);
        /// assert_eq!(err.kind(), "OutOfBounds");
        /// assert_eq!(err.kind().python_class(), "BoundsError");
        /// assert_eq!(err.kind().js_class(), "RangeError");
        /// # Ok::<(), bytelens_core::Error>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }

        impl ErrorKind {
            /// Every kind, in the table's order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)*];

            /// The kind's name, as the conformance vectors, the guide and
            /// the `kind` attribute of Python's and JS's errors spell it.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::ErrorKind;
            /// assert_eq!(ErrorKind::Format.name(), "FormatError");
            /// ```
            pub const fn name(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $name,)*
                }
            }

            /// The name of the Python exception class an error of this
            /// kind raises: one of the `bytelens` package's
            /// (`"AlignmentError"`, `"FormatError"`, ...) or a built-in
            /// (`"MemoryError"`, `"FileNotFoundError"`, ...).
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::ErrorKind;
            /// assert_eq!(ErrorKind::OutOfMemory.python_class(), "MemoryError");
            /// ```
            pub const fn python_class(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $python,)*
                }
            }

            /// The name of the JS error class an error of this kind
            /// throws (`"RangeError"`, `"TypeError"` or `"Error"`), with
            /// the kind's [`name`](Self::name) as its `kind` property.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::ErrorKind;
            /// assert_eq!(ErrorKind::WrongType.js_class(), "TypeError");
            /// ```
            pub const fn js_class(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $js,)*
                }
            }

            /// The kind of this name, if one has it.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::ErrorKind;
            /// assert_eq!(ErrorKind::from_name("BadAxis"), Some(ErrorKind::BadAxis));
            /// assert_eq!(ErrorKind::from_name("badaxis"), None);
            /// ```
            pub fn from_name(name: &str) -> Option<ErrorKind> {
                ErrorKind::ALL.iter().copied().find(|k| k.name() == name)
            }
        }
    };
}

error_kinds! {
    // The core's layout errors: `bytelens_core::Error`.
    /// An offset, stride or address that is not a multiple of the dtype's alignment.
    Misaligned => "Misaligned", "AlignmentError", "RangeError";
    /// A view that reaches bytes outside its buffer, or an offset outside it.
    OutOfBounds => "OutOfBounds", "BoundsError", "RangeError";
    /// Size or offset arithmetic that does not fit in the address space.
    Overflow => "Overflow", "LayoutError", "RangeError";
    /// A byte length that does not divide by an itemsize.
    ItemsizeMismatch => "ItemsizeMismatch", "LayoutError", "RangeError";
    /// A reinterpretation that needs a contiguous last axis.
    NotContiguous => "NotContiguous", "LayoutError", "RangeError";
    /// A reshape that cannot be expressed with strides over the same bytes.
    NeedsCopy => "NeedsCopy", "LayoutError", "RangeError";
    /// More dimensions than the limit.
    TooManyDims => "TooManyDims", "LayoutError", "RangeError";
    /// An axis the layout does not have, or one named twice.
    BadAxis => "BadAxis", "LayoutError", "RangeError";
    /// A dtype not understood, or not the layout's.
    BadDType => "BadDType", "LayoutError", "RangeError";
    /// A write through a view that cannot be written.
    ReadOnly => "ReadOnly", "LayoutError", "RangeError";
    /// A list with another length than the number of dimensions.
    LengthMismatch => "LengthMismatch", "LayoutError", "RangeError";
    /// A reshape to another number of elements.
    SizeMismatch => "SizeMismatch", "LayoutError", "RangeError";
    /// Values to write whose number differs from the view's elements.
    CountMismatch => "CountMismatch", "LayoutError", "RangeError";
    /// Strides, or no buffer, without a shape.
    MissingShape => "MissingShape", "LayoutError", "RangeError";
    /// An index outside an axis.
    IndexOutOfRange => "IndexOutOfRange", "LayoutError", "RangeError";
    /// A slice step of zero.
    ZeroStep => "ZeroStep", "LayoutError", "RangeError";
    /// A shape the layout cannot be broadcast to.
    NotBroadcastable => "NotBroadcastable", "LayoutError", "RangeError";
    /// A plan or field name that is not usable.
    BadName => "BadName", "LayoutError", "RangeError";
    /// A plan with more fields or alternatives than fit.
    PlanFull => "PlanFull", "LayoutError", "RangeError";
    /// A plan field WGSL cannot share with the host, place or count.
    NotWgslShareable => "NotWgslShareable", "LayoutError", "RangeError";
    /// A plan field with no elements, where WGSL needs one.
    EmptyField => "EmptyField", "LayoutError", "RangeError";
    /// A plan with no fields, where WGSL needs one.
    EmptyPlan => "EmptyPlan", "LayoutError", "RangeError";
    /// An alternative past a plan's last.
    NoAlternative => "NoAlternative", "LayoutError", "RangeError";
    /// A line of plan text that does not read as a field's.
    BadPlanLine => "BadPlanLine", "LayoutError", "RangeError";
    /// Plan fields at explicit offsets that share bytes.
    FieldsOverlap => "FieldsOverlap", "LayoutError", "RangeError";
    // Files.
    /// A file that is not what its format says (`files::FileError`, and
    /// the native crate's files).
    Format => "FormatError", "FormatError", "RangeError";
    /// No array of the name asked for in a file.
    NoSuchArray => "NoSuchArray", "KeyError", "RangeError";
    // Memory.
    /// Memory that could not be allocated.
    OutOfMemory => "OutOfMemory", "MemoryError", "RangeError";
    /// An alignment that is not a power of two.
    BadAlign => "BadAlign", "ValueError", "RangeError";
    /// A conversion that numpy's `same_kind` casting refuses.
    Cast => "Cast", "CastError", "TypeError";
    /// A destination (a slice, a host buffer) of another size than the view.
    DestinationSize => "DestinationSize", "ValueError", "RangeError";
    /// Blocks that cannot be dequantised as asked.
    Dequantize => "Dequantize", "ValueError", "RangeError";
    // Arguments the bindings or the file layer check.
    /// An argument of the right type with a value it cannot take.
    BadValue => "BadValue", "ValueError", "RangeError";
    /// An argument, or a value, of the wrong type.
    WrongType => "WrongType", "TypeError", "TypeError";
    /// A view of more elements than one call handles.
    TooManyElements => "TooManyElements", "ValueError", "RangeError";
    /// A call made out of its order.
    OutOfOrder => "OutOfOrder", "RuntimeError", "RangeError";
    // The operating system: files, mappings and shared memory.
    /// No file or shared-memory segment of this name.
    NotFound => "NotFound", "FileNotFoundError", "Error";
    /// A file or shared-memory segment of this name already exists.
    AlreadyExists => "AlreadyExists", "FileExistsError", "Error";
    /// A folder where a file was expected.
    IsADirectory => "IsADirectory", "IsADirectoryError", "Error";
    /// The system refused for lack of permission.
    PermissionDenied => "PermissionDenied", "PermissionError", "Error";
    /// Another refusal of the operating system.
    Os => "Os", "OSError", "Error";
    /// A shared-memory segment, or its name, that bytelens cannot use.
    BadSegment => "BadSegment", "ValueError", "Error";
    /// A lock not free within the timeout.
    Timeout => "Timeout", "TimeoutError", "Error";
    /// A lock taken twice by one thread, or released by one not holding it.
    LockState => "LockState", "RuntimeError", "Error";
    // Rings between processes.
    /// A ring that is closed: nothing more can be published, and nothing
    /// published is left to take.
    RingClosed => "RingClosed", "RingClosedError", "Error";
    /// A ring's table in a state bytelens never leaves it in, or a slot
    /// taken back from this process.
    RingState => "RingState", "RuntimeError", "Error";
    /// A wait stopped by its interrupt check (in Python, the signal's own
    /// exception is raised instead: `KeyboardInterrupt` for Ctrl-C).
    Interrupted => "Interrupted", "InterruptedError", "Error";
    /// Memory that arrays, memoryviews or tensors still refer to where
    /// nothing may: a buffer closed, or a producer's slot published, while
    /// they live.
    InUse => "InUse", "BufferError", "Error";
    /// A loader's worker process died, exited, or could not start (in
    /// Python, `bl.LoaderWorkerError`, a `RuntimeError`).
    WorkerDied => "WorkerDied", "RuntimeError", "Error";
    // The GPU.
    /// No GPU adapter.
    NoAdapter => "NoAdapter", "GpuError", "Error";
    /// An error of the GPU or of wgpu (a device refused, validation, a
    /// failed mapping, a size the GPU buffer does not have, GPU memory).
    Gpu => "Gpu", "GpuError", "Error";
    /// A view or format no texture can be made of.
    Texture => "Texture", "GpuError", "Error";
    /// Quantised blocks that do not hold the values their upload says.
    Blocks => "Blocks", "GpuError", "Error";
}

impl fmt::Display for ErrorKind {
    /// The kind's [`name`](ErrorKind::name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kind equals its name, so that `err.kind() == "Misaligned"` reads as
/// it did when kinds were strings.
impl PartialEq<str> for ErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn every_kind_has_one_row_with_a_unique_name() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(ErrorKind::from_name(kind.name()), Some(*kind));
            assert!(!kind.python_class().is_empty() && !kind.js_class().is_empty());
            assert!(
                ["RangeError", "TypeError", "Error"].contains(&kind.js_class()),
                "{kind}: {}",
                kind.js_class()
            );
            for other in &ErrorKind::ALL[i + 1..] {
                assert_ne!(kind.name(), other.name());
            }
        }
    }
}
