//! numpy's `.npy` header: the magic, the version, the header length and a
//! Python dict literal.
#![forbid(unsafe_code)]

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::{
    FileArray, FileError, FileHeader, Format, MAX_HEADER, Metadata, NPY_MAGIC, bad, quoted,
    size_of, take,
};
use crate::{ByteOrder, DType, Descr, MAX_NDIM};

/// Reads an `.npy` header: the magic, the version, the header length (2
/// bytes in 1.0, 4 in 2.0 and 3.0) and the header, a Python dict literal
/// with exactly the keys `descr`, `fortran_order` and `shape`.
///
/// `descr` is a type string as numpy writes it (`<f4`, `|u1`, `>i8`), a
/// byte order and a type code as numpy also reads it (`<f`, `|i2`), or a
/// dtype name without a byte order (`int16`, `float32`, `bool`), which
/// numpy reads in the byte order of the machine reading the file; that is
/// little-endian on every target bytelens supports, so bytelens reads it
/// little-endian everywhere (numpy itself always writes the order).
pub fn read_npy(bytes: &[u8], len: u64) -> Result<FileHeader, FileError> {
    let lead = take(bytes, 0, 8, len, "the npy magic and version")?;
    if &lead[..6] != NPY_MAGIC {
        return Err(FileError::Unrecognised);
    }
    let (major, minor) = (lead[6], lead[7]);
    let width = match (major, minor) {
        (1, 0) => 2,
        (2 | 3, 0) => 4,
        _ => return Err(FileError::Version { major, minor }),
    };
    let field = take(bytes, 8, width, len, "the npy header length")?;
    let header_len = field
        .iter()
        .rev()
        .fold(0u64, |n, &b| (n << 8) | u64::from(b));
    if header_len > MAX_HEADER as u64 {
        return Err(FileError::HeaderTooLarge { len: header_len });
    }
    let at = 8 + width as usize;
    let text = take(bytes, at, header_len, len, "the npy header")?;
    let data_start = (at + text.len()) as u64;
    // Versions 1 and 2 are latin-1, 3 is UTF-8; either way the keys and
    // values numpy writes are ASCII.
    let text = core::str::from_utf8(text).map_err(|e| FileError::Syntax {
        detail: alloc::format!("byte {} is not UTF-8", at + e.valid_up_to()),
    })?;
    let dict = PyLiteral::parse(text)?;
    let (dtype, descr) = match dict.descr {
        Some(Py::Str(s)) => {
            let descr = npy_descr(&s);
            (s, descr)
        }
        Some(Py::List) => ("structured".to_owned(), None),
        Some(_) => return Err(bad("", "'descr' is not a string")),
        None => return Err(bad("", "has no 'descr'")),
    };
    let fortran = match dict.fortran_order {
        Some(Py::Bool(b)) => b,
        Some(_) => return Err(bad("", "'fortran_order' is not True or False")),
        None => return Err(bad("", "has no 'fortran_order'")),
    };
    let shape = match dict.shape {
        Some(Py::Tuple(shape)) => shape,
        Some(_) => return Err(bad("", "'shape' is not a tuple of lengths")),
        None => return Err(bad("", "has no 'shape'")),
    };
    if let Some(key) = dict.unknown {
        return Err(bad(
            "",
            alloc::format!("has the key {}, which npy headers do not", quoted(&key)),
        ));
    }
    let itemsize = match descr {
        Some(d) => d.dtype.size(),
        None => npy_itemsize(&dtype).unwrap_or(1),
    };
    let name = "array";
    let nbytes = size_of(name, &shape, itemsize)?;
    let end = data_start + nbytes;
    if end > len {
        return Err(FileError::OutsideFile {
            array: name.to_owned(),
            start: data_start,
            end,
            len,
        });
    }
    Ok(FileHeader {
        format: Format::Npy,
        version: (major, minor),
        data_start,
        arrays: alloc::vec![FileArray {
            name: name.to_owned(),
            dtype,
            descr,
            shape,
            fortran,
            offset: data_start,
            nbytes,
            ggml: None,
        }],
        metadata: Metadata::default(),
        gguf: Default::default(),
    })
}

/// A dtype bytelens has, spelled as numpy reads it in an npy header:
/// a byte order and a type code (`<f4`, `|u1`, `>i8`, `<f`, `=h`), or a
/// name or code alone (`int16`, `float32`, `bool`, `f4`), read
/// little-endian (see [`read_npy`]). Only the dtypes the table says an
/// npy header can name (numpy's own: not ml_dtypes' bfloat16 and float8,
/// which `np.save` writes as raw bytes, `<V2` and `|V1`); numpy reads no
/// name after a byte order (`<int16`).
fn npy_descr(text: &str) -> Option<Descr> {
    let (order, rest) = match text.as_bytes().first()? {
        b'<' => (Some(ByteOrder::Little), &text[1..]),
        b'>' => (Some(ByteOrder::Big), &text[1..]),
        b'|' | b'=' => (Some(ByteOrder::Little), &text[1..]),
        _ => (None, text),
    };
    let dtype: DType = rest.parse().ok()?;
    // After an order mark, only type codes (`f4`, `f`), which are the
    // spellings of at most two characters.
    let ok = dtype.info().npy && (order.is_none() || rest.len() <= 2);
    ok.then(|| Descr::new(dtype, order.unwrap_or(ByteOrder::Little)))
}

/// The itemsize of a numpy type string bytelens lacks (`<c8`, `|S5`), so
/// that its byte range can still be reported.
fn npy_itemsize(text: &str) -> Option<usize> {
    let digits = text.get(2..)?;
    let n: usize = digits.parse().ok()?;
    match text.as_bytes().get(1)? {
        b'U' => n.checked_mul(4),
        b'c' | b'S' | b'V' | b'f' | b'i' | b'u' | b'b' | b'a' => Some(n),
        _ => None,
    }
}

/// The values an npy header holds.
#[derive(Debug)]
enum Py {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    /// A list: a structured dtype's fields (not read further).
    List,
}

/// A Python dict literal of the kind numpy writes:
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`: the
/// three keys an npy header has, and the first other key, if any (not
/// kept, so that a header of many keys takes no memory and no time to
/// check for repeats).
struct PyLiteral {
    descr: Option<Py>,
    fortran_order: Option<Py>,
    shape: Option<Py>,
    unknown: Option<String>,
}

struct Cursor<'t> {
    text: &'t [u8],
    at: usize,
}

impl Cursor<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, FileError> {
        Err(FileError::Syntax {
            detail: alloc::format!("expected {what} at character {}", self.at),
        })
    }

    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Skips spaces; true (and consumes it) if the next byte is `byte`.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn string(&mut self) -> Result<String, FileError> {
        self.skip_space();
        let Some(&quote @ (b'\'' | b'"')) = self.text.get(self.at) else {
            return self.fail("a quoted string");
        };
        let start = self.at + 1;
        let Some(end) = self.text[start..].iter().position(|&b| b == quote) else {
            return self.fail("the end of a string");
        };
        let s = &self.text[start..start + end];
        if s.contains(&b'\\') {
            return self.fail("a string without escapes");
        }
        self.at = start + end + 1;
        // Cut from a `str` at ASCII quotes: still UTF-8.
        Ok(String::from_utf8_lossy(s).into_owned())
    }

    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(u8::is_ascii_alphanumeric)
        {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    fn value(&mut self) -> Result<Py, FileError> {
        self.skip_space();
        match self.text.get(self.at) {
            Some(b'\'' | b'"') => Ok(Py::Str(self.string()?)),
            Some(b'(') => {
                self.at += 1;
                let mut items = Vec::new();
                while !self.eat(b')') {
                    let start = self.at;
                    // Python 2's numpy wrote longs as `3L`.
                    let word = self.word();
                    let word = word.strip_suffix(b"L").unwrap_or(word);
                    let n = core::str::from_utf8(word)
                        .ok()
                        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|w| w.parse::<u64>().ok());
                    match n {
                        Some(_) if items.len() == MAX_NDIM => {
                            return self.fail("at most 32 lengths");
                        }
                        Some(n) => items.push(n),
                        None => {
                            self.at = start;
                            return self.fail("a length (a whole number)");
                        }
                    }
                    if !self.eat(b',') {
                        if self.eat(b')') {
                            break;
                        }
                        return self.fail("',' or ')'");
                    }
                }
                Ok(Py::Tuple(items))
            }
            Some(b'[') => {
                // A structured dtype: skip to the matching bracket.
                let mut depth = 0usize;
                while let Some(&b) = self.text.get(self.at) {
                    self.at += 1;
                    match b {
                        b'[' | b'(' => depth += 1,
                        b']' | b')' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(Py::List);
                            }
                        }
                        _ => {}
                    }
                }
                self.fail("the end of a list")
            }
            _ => {
                let start = self.at;
                match self.word() {
                    b"True" => Ok(Py::Bool(true)),
                    b"False" => Ok(Py::Bool(false)),
                    _ => {
                        self.at = start;
                        self.fail("a string, True, False or a tuple")
                    }
                }
            }
        }
    }
}

impl PyLiteral {
    fn parse(text: &str) -> Result<PyLiteral, FileError> {
        let mut cursor = Cursor {
            text: text.as_bytes(),
            at: 0,
        };
        if !cursor.eat(b'{') {
            return cursor.fail("'{'");
        }
        let mut dict = PyLiteral {
            descr: None,
            fortran_order: None,
            shape: None,
            unknown: None,
        };
        while !cursor.eat(b'}') {
            let key = cursor.string()?;
            if !cursor.eat(b':') {
                return cursor.fail("':'");
            }
            let value = cursor.value()?;
            let slot = match key.as_str() {
                "descr" => Some(&mut dict.descr),
                "fortran_order" => Some(&mut dict.fortran_order),
                "shape" => Some(&mut dict.shape),
                _ => None,
            };
            match slot {
                Some(slot) if slot.is_some() => return Err(FileError::DuplicateKey { key }),
                Some(slot) => *slot = Some(value),
                None => {
                    dict.unknown.get_or_insert(key);
                }
            }
            if !cursor.eat(b',') {
                if cursor.eat(b'}') {
                    break;
                }
                return cursor.fail("',' or '}'");
            }
        }
        // numpy pads with spaces and ends with a newline.
        cursor.skip_space();
        if cursor.at != cursor.text.len() {
            return cursor.fail("only spaces after the dict");
        }
        Ok(dict)
    }
}
