//! Element types, byte orders and numpy's type strings.
#![forbid(unsafe_code)]

use core::fmt;
use core::str::FromStr;

use crate::{Error, ShortStr};

/// The type of one element, as numpy names it.
///
/// # Examples
/// ```
/// use bytelens_core::DType;
/// assert_eq!(DType::I32.size(), 4);
/// assert_eq!(DType::BF16.align(), 2);
/// assert_eq!(DType::F16.to_string(), "float16");
/// assert_eq!("int16".parse::<DType>(), Ok(DType::I16));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `bool`, one byte; any non-zero byte reads as true.
    Bool,
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `uint32`
    U32,
    /// `int32`
    I32,
    /// `uint64`
    U64,
    /// `int64`
    I64,
    /// `float16` (IEEE 754 binary16)
    F16,
    /// `bfloat16` (the top half of a float32)
    BF16,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

impl DType {
    /// Every dtype, in the order of the enum.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens_core::DType::ALL.len(), 13);
    /// ```
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::Bool.size(), DType::F16.size(), DType::U64.size()), (1, 2, 8));
    /// ```
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// Alignment of one element in bytes (equal to its size for every dtype
    /// here, as on every supported target and in numpy's aligned arrays).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!(DType::F64.align(), 8);
    /// ```
    pub const fn align(self) -> usize {
        self.size()
    }

    /// numpy's name: `"int32"`, `"float16"`, `"bfloat16"` (ml_dtypes' name), `"bool"`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!(DType::U16.name(), "uint16");
    /// ```
    pub const fn name(self) -> &'static str {
        self.spellings()[0]
    }

    /// The type code without a byte order: numpy's kind and size (`"i4"`,
    /// `"f2"`, `"b1"`), and `"bfloat16"` for bfloat16, which numpy has no
    /// code for. A byte order prefix makes it a [`Descr`]'s text.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::I32.code(), DType::Bool.code(), DType::BF16.code()), ("i4", "b1", "bfloat16"));
    /// ```
    pub const fn code(self) -> &'static str {
        self.spellings()[1]
    }

    /// numpy's kind character: `b` bool, `u` unsigned, `i` signed, `f` float.
    /// bfloat16 has no numpy kind of its own and reports `V` (raw), as
    /// `ml_dtypes.bfloat16` does.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::I8.kind(), DType::U8.kind(), DType::F32.kind()), ('i', 'u', 'f'));
    /// ```
    pub const fn kind(self) -> char {
        match self {
            DType::Bool => 'b',
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => 'u',
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => 'i',
            DType::F16 | DType::F32 | DType::F64 => 'f',
            DType::BF16 => 'V',
        }
    }

    /// True for the floating-point dtypes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert!(DType::BF16.is_float() && !DType::I32.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
}

/// The dtype table: every spelling each dtype answers to, the name first
/// and the type code second. [`DType::spellings`], parsing and the
/// bindings' tables (Python, the wasm package's `dtypes()`, the web demo)
/// all come from this one list.
macro_rules! dtype_table {
    ($($dtype:ident => [$($spelling:literal),+ $(,)?],)+) => {
        impl DType {
            /// Every spelling [`parse`](str::parse) accepts for this dtype
            /// (without a byte order): the [`name`](DType::name), the
            /// [`code`](DType::code), then numpy's other names and its
            /// one-character codes.
            ///
            /// # Examples
            /// ```
            /// use bytelens_core::DType;
            /// assert_eq!(DType::BF16.spellings(), ["bfloat16", "bfloat16", "bf16"]);
            /// for dtype in DType::ALL {
            ///     for spelling in dtype.spellings() {
            ///         assert_eq!(spelling.parse::<DType>(), Ok(dtype));
            ///     }
            /// }
            /// ```
            pub const fn spellings(self) -> &'static [&'static str] {
                match self {
                    $(DType::$dtype => &[$($spelling),+],)+
                }
            }

            fn from_spelling(text: &str) -> Option<DType> {
                // bfloat16's name is also its code: its second pattern never matches.
                #[allow(unreachable_patterns)]
                match text {
                    $($($spelling)|+ => Some(DType::$dtype),)+
                    _ => None,
                }
            }
        }
    };
}

dtype_table! {
    Bool => ["bool", "b1", "bool_", "?"],
    U8 => ["uint8", "u1", "ubyte", "B"],
    I8 => ["int8", "i1", "byte", "b"],
    U16 => ["uint16", "u2", "ushort", "H"],
    I16 => ["int16", "i2", "short", "h"],
    U32 => ["uint32", "u4", "uintc", "I"],
    I32 => ["int32", "i4", "intc", "i"],
    // numpy 2: `int` and `uint` are the pointer-sized integers.
    U64 => ["uint64", "u8", "ulonglong", "uint", "Q"],
    I64 => ["int64", "i8", "longlong", "int", "q"],
    F16 => ["float16", "f2", "half", "e"],
    BF16 => ["bfloat16", "bfloat16", "bf16"],
    F32 => ["float32", "f4", "single", "f"],
    F64 => ["float64", "f8", "double", "float", "d"],
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses a numpy name (`"int32"`) or type code (`"i4"`, `"f"`), without a byte order.
    fn from_str(s: &str) -> Result<DType, Error> {
        DType::from_spelling(s).ok_or(Error::BadDType {
            text: ShortStr::new(s),
        })
    }
}

/// The order of an element's bytes in memory.
///
/// Native order is little-endian on every target bytelens supports
/// (x86-64, AArch64, wasm32, Cortex-M); big-endian views are read and
/// written with a byte swap.
///
/// # Examples
/// ```
/// use bytelens_core::ByteOrder;
/// assert_eq!(ByteOrder::NATIVE, ByteOrder::Little);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ByteOrder {
    /// Least significant byte first (`<`).
    #[default]
    Little,
    /// Most significant byte first (`>`).
    Big,
}

impl ByteOrder {
    /// The byte order of the machine this code was compiled for.
    #[cfg(target_endian = "little")]
    pub const NATIVE: ByteOrder = ByteOrder::Little;
    /// The byte order of the machine this code was compiled for.
    #[cfg(target_endian = "big")]
    pub const NATIVE: ByteOrder = ByteOrder::Big;

    /// numpy's prefix character: `<` or `>`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::ByteOrder;
    /// assert_eq!(ByteOrder::Big.prefix(), '>');
    /// ```
    pub const fn prefix(self) -> char {
        match self {
            ByteOrder::Little => '<',
            ByteOrder::Big => '>',
        }
    }
}

/// A dtype with its byte order: what a numpy type string such as `"<i4"`,
/// `">f2"` or `"|u1"` says.
///
/// Parsing accepts an optional order prefix (`<` little, `>` or `!` big,
/// `=` or `|` native) followed by a type code (`i4`, `f2`, `u1`, `b1`, or a
/// one-letter code such as `f`, `h`, `?`) or a name (`int32`, `float32`,
/// `bfloat16`). Display writes numpy's `dtype.str` (`"<i4"`, `"|u1"`);
/// bfloat16, which numpy has no code for, is written `"<bfloat16"`.
///
/// # Examples
/// ```
/// use bytelens_core::{ByteOrder, DType, Descr};
/// let d: Descr = ">f2".parse().unwrap();
/// assert_eq!((d.dtype, d.order), (DType::F16, ByteOrder::Big));
/// assert_eq!("float32".parse::<Descr>().unwrap().to_string(), "<f4");
/// assert_eq!("|u1".parse::<Descr>().unwrap().to_string(), "|u1");
/// assert!("<i3".parse::<Descr>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Descr {
    /// The element type.
    pub dtype: DType,
    /// The byte order (irrelevant, and printed `|`, for one-byte types).
    pub order: ByteOrder,
}

impl Descr {
    /// A dtype in the given byte order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{ByteOrder, DType, Descr};
    /// assert_eq!(Descr::new(DType::I16, ByteOrder::Big).to_string(), ">i2");
    /// ```
    pub const fn new(dtype: DType, order: ByteOrder) -> Descr {
        Descr { dtype, order }
    }

    /// A dtype in native byte order.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{DType, Descr};
    /// assert_eq!(Descr::native(DType::F64).to_string(), "<f8");
    /// ```
    pub const fn native(dtype: DType) -> Descr {
        Descr {
            dtype,
            order: ByteOrder::NATIVE,
        }
    }
}

impl From<DType> for Descr {
    fn from(dtype: DType) -> Descr {
        Descr::native(dtype)
    }
}

impl FromStr for Descr {
    type Err = Error;

    fn from_str(s: &str) -> Result<Descr, Error> {
        let bad = || Error::BadDType {
            text: ShortStr::new(s),
        };
        // `get`, not `&s[1..]`: no panic path (it costs the wasm package ~7 KB).
        let rest = s.get(1..).unwrap_or("");
        let (order, rest) = match s.as_bytes().first() {
            Some(b'<') => (ByteOrder::Little, rest),
            Some(b'>' | b'!') => (ByteOrder::Big, rest),
            Some(b'=' | b'|') => (ByteOrder::NATIVE, rest),
            _ => (ByteOrder::NATIVE, s),
        };
        let dtype = rest.parse::<DType>().map_err(|_| bad())?;
        Ok(Descr { dtype, order })
    }
}

impl fmt::Display for Descr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = if self.dtype.size() == 1 {
            '|'
        } else {
            self.order.prefix()
        };
        write!(f, "{prefix}{}", self.dtype.code())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn every_dtype_round_trips_through_its_name_and_type_string() {
        for dtype in DType::ALL {
            assert_eq!(dtype.name().parse::<DType>(), Ok(dtype));
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let text = Descr::new(dtype, order).to_string();
                let back: Descr = text.parse().unwrap();
                assert_eq!(back.dtype, dtype, "{text}");
                if dtype.size() > 1 {
                    assert_eq!(back.order, order, "{text}");
                }
            }
        }
    }

    #[test]
    fn numpy_type_strings_parse() {
        let cases = [
            ("<i4", DType::I32, ByteOrder::Little),
            (">i4", DType::I32, ByteOrder::Big),
            ("!u2", DType::U16, ByteOrder::Big),
            ("|b1", DType::Bool, ByteOrder::NATIVE),
            ("?", DType::Bool, ByteOrder::NATIVE),
            ("=f8", DType::F64, ByteOrder::NATIVE),
            ("e", DType::F16, ByteOrder::NATIVE),
            (">bfloat16", DType::BF16, ByteOrder::Big),
        ];
        for (text, dtype, order) in cases {
            assert_eq!(
                text.parse::<Descr>(),
                Ok(Descr::new(dtype, order)),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_type_strings_name_themselves() {
        for text in [
            "", "<", "i3", "<f16", "integer", "float128", "<<i4", "complex",
        ] {
            let err = text.parse::<Descr>().unwrap_err();
            assert_eq!(
                err,
                Error::BadDType {
                    text: ShortStr::new(text)
                }
            );
            assert!(err.to_string().contains(text));
        }
    }
}
