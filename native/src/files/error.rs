//! [`Error`]: why a file could not be loaded, saved or inspected, each
//! variant the Python exception `bytelens.load`, `save` and `inspect`
//! raise for it ([`Error::python_exception`]).

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::FileError;
use crate::{ErrorKind, LayoutError, SharedError};

/// Why [`load`](super::load), [`save`](super::save) or
/// [`inspect`](super::inspect) failed. Each message is the one the Python
/// package gives, word for word, and names the file.
///
/// # Examples
/// ```
/// use bytelens::files::{self, Error};
/// let err = files::inspect("/no/such/file.npy").unwrap_err();
/// assert!(matches!(err, Error::Io(ref e) if e.kind() == std::io::ErrorKind::NotFound));
/// assert_eq!(err.to_string(), "/no/such/file.npy: no such file or directory");
/// assert_eq!(err.python_exception(), "FileNotFoundError");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The file is not what its format says, or not a format bytelens
    /// reads: Python's `bytelens.FormatError`.
    Format {
        /// The whole message, the file's path first.
        message: String,
        /// The header reader's own error, where it found the fault.
        header: Option<FileError>,
    },
    /// The system refused (a missing file, a folder, no permission): an
    /// `OSError`, of the subclass [`Error::python_exception`] names from
    /// the error's kind. The message names the file.
    Io(io::Error),
    /// An array that cannot be viewed as asked (misaligned under
    /// `strict`, or a view of another dtype): the `LayoutError` subclass
    /// of `source` (`AlignmentError`, ...), its message after `message`'s
    /// prefix.
    Layout {
        /// The whole message, the file and array first.
        message: String,
        /// The core's error.
        source: LayoutError,
    },
    /// No array of this name: a `KeyError`.
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// An argument no file can take (an alignment that is not a power of
    /// two, a name `__metadata__`, an extension `save` does not write): a
    /// `ValueError`.
    Value {
        /// The message.
        message: String,
    },
    /// A value of a kind the format cannot hold (a dtype an `.npy` header
    /// cannot name, a quantised tensor): a `TypeError`.
    Type {
        /// The message.
        message: String,
    },
}

impl Error {
    pub(crate) fn format(message: impl Into<String>) -> Error {
        Error::Format {
            message: message.into(),
            header: None,
        }
    }

    pub(crate) fn value(message: impl Into<String>) -> Error {
        Error::Value {
            message: message.into(),
        }
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Error {
        Error::Type {
            message: message.into(),
        }
    }

    /// An `io::Error` of `kind` with `message` (which names the file).
    pub(crate) fn io(kind: io::ErrorKind, message: impl Into<String>) -> Error {
        Error::Io(io::Error::new(kind, message.into()))
    }

    /// The error's kind: [`ErrorKind::Format`], the system's (`NotFound`,
    /// `IsADirectory`, ..., else `Os`), the core's for a layout error,
    /// `NoSuchArray`, `BadValue` or `WrongType`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Format {
                header: Some(err), ..
            } => err.kind(),
            Error::Format { .. } => ErrorKind::Format,
            Error::Io(err) => crate::io_kind(err),
            Error::Layout { source, .. } => source.kind(),
            Error::NotFound { .. } => ErrorKind::NoSuchArray,
            Error::Value { .. } => ErrorKind::BadValue,
            Error::Type { .. } => ErrorKind::WrongType,
        }
    }

    /// The Python exception the package raises for this error: its class
    /// name (`"FormatError"`, `"FileNotFoundError"`, `"AlignmentError"`,
    /// `"KeyError"`, ...), its kind's row of the one table
    /// ([`ErrorKind::python_class`]).
    pub fn python_exception(&self) -> &'static str {
        self.kind().python_class()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format { message, .. }
            | Error::Layout { message, .. }
            | Error::Value { message }
            | Error::Type { message } => f.write_str(message),
            Error::Io(err) => err.fmt(f),
            // Python's KeyError shows the key's repr.
            Error::NotFound { name } => f.write_str(&super::text::repr(name)),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Format {
                header: Some(err), ..
            } => Some(err),
            Error::Io(err) => err.get_ref().map(|e| e as _).or(Some(err)),
            Error::Layout { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Error {
        Error::Io(err)
    }
}

impl From<SharedError> for Error {
    /// A mapping that failed: the system's error where there is one (its
    /// message names the file), else a `FormatError`.
    fn from(err: SharedError) -> Error {
        match err {
            SharedError::Os { err, .. } => Error::Io(err),
            other => Error::format(other.to_string()),
        }
    }
}

/// What Python's `OSError` carries besides its message, for an
/// [`Error::Io`] that [`save`](super::save) words itself: the inner error
/// of that `io::Error` (`err.get_ref()`, downcast), so that a binding can
/// raise the exception Python's `bl.save` raised, `errno`, `filename` and
/// `winerror` included. Its `Display` is the message.
///
/// # Examples
/// ```
/// use bytelens::files::{self, Error, OsDetail};
/// let dir = std::env::temp_dir().join(format!("bytelens-detail-doc-{}", std::process::id()));
/// let err = files::write_atomically(dir.join("no/such/folder/a.npy"), &[b"x"]).unwrap_err();
/// let Error::Io(io) = &err else { panic!("{err}") };
/// let detail = io.get_ref().and_then(|e| e.downcast_ref::<OsDetail>()).unwrap();
/// assert!(detail.code.is_some() && detail.message.contains("cannot create"));
/// assert_eq!(err.python_exception(), "FileNotFoundError");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct OsDetail {
    /// The message: the whole of the exception's text where `filename` is
    /// None, else its `strerror` (Python shows `[Errno N] message:
    /// 'filename'`).
    pub message: String,
    /// The system's own code (`raw_os_error`: an errno, or a Win32 error
    /// code on Windows), where the system refused; Python's `errno` is
    /// the errno it stands for.
    pub code: Option<i32>,
    /// Python's `filename` (the path the message is about), if set.
    pub filename: Option<PathBuf>,
    /// Python's `filename2` (a rename's target), if set.
    pub filename2: Option<PathBuf>,
    /// Windows would not replace the file (read-only, mapped or open):
    /// Python raises `PermissionError` with `errno` `EACCES` whatever the
    /// code, and the code as `winerror` where there is one.
    pub windows_refused: bool,
}

impl OsDetail {
    /// `message` about `err`, with its code.
    pub(crate) fn new(err: &io::Error, message: impl Into<String>) -> OsDetail {
        OsDetail {
            message: message.into(),
            code: err.raw_os_error(),
            filename: None,
            filename2: None,
            windows_refused: false,
        }
    }

    /// The error of `kind` this detail is the inner error of.
    pub(crate) fn into_error(self, kind: io::ErrorKind) -> Error {
        Error::Io(io::Error::new(kind, self))
    }
}

/// As Python's `OSError` prints: the message, then the file (and a
/// rename's target) it is about, so that no system error loses its path;
/// a message that names its file already (bytelens' own do) is not
/// followed by it again.
impl fmt::Display for OsDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let named = |path: &std::path::Path| self.message.contains(&*path.to_string_lossy());
        if let Some(path) = self.filename.as_deref().filter(|p| !named(p)) {
            write!(f, ": {}", super::text::repr(&path.to_string_lossy()))?;
            if let Some(to) = &self.filename2 {
                write!(f, " -> {}", super::text::repr(&to.to_string_lossy()))?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for OsDetail {}

/// The system's reason, as Python's `_reason` gives it: the text without
/// the `(os error N)` std adds, its first letter lowercase.
pub(crate) fn reason(err: &io::Error) -> String {
    let text = match err.raw_os_error() {
        Some(code) => {
            let full = io::Error::from_raw_os_error(code).to_string();
            match full.rfind(" (os error ") {
                Some(at) => full[..at].to_owned(),
                None => full,
            }
        }
        None => err.to_string(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}
