//! Element types, byte orders and numpy's type strings.
#![forbid(unsafe_code)]

use core::fmt;
use core::str::FromStr;

use crate::{Error, FloatFormat, ShortStr};

/// The type of one element, as numpy names it.
///
/// Everything a binding needs to know about a dtype is a column of the one
/// dtype table, [`DType::info`]: names, numpy's and ml_dtypes' spellings, the
/// safetensors code, DLPack's code, the JavaScript array `read` returns, and
/// the float format. Bindings ask it and keep no per-dtype rule of their own.
///
/// # Examples
/// ```
/// use bytelens_core::DType;
/// assert_eq!(DType::I32.size(), 4);
/// assert_eq!(DType::BF16.align(), 2);
/// assert_eq!(DType::F16.to_string(), "float16");
/// assert_eq!("int16".parse::<DType>(), Ok(DType::I16));
/// assert_eq!("F8_E4M3".parse::<DType>(), Err(bytelens_core::Error::BadDType { text: bytelens_core::ShortStr::new("F8_E4M3") }));
/// assert_eq!(DType::from_safetensors("F8_E4M3"), Some(DType::F8E4M3FN));
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
    /// `float8_e4m3fn`: 4 exponent bits, 3 mantissa bits, no infinity (OCP FP8 E4M3)
    F8E4M3FN,
    /// `float8_e5m2`: binary16's top byte (OCP FP8 E5M2)
    F8E5M2,
    /// `float8_e8m0fnu`: an unsigned power of two (OCP MX scale, E8M0)
    F8E8M0FNU,
}

/// The JavaScript typed array the wasm package's `read` returns for a dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // one variant per JS class, named after it
pub enum JsArray {
    Uint8Array,
    Int8Array,
    Uint16Array,
    Int16Array,
    Uint32Array,
    Int32Array,
    BigUint64Array,
    BigInt64Array,
    Float32Array,
    Float64Array,
}

impl JsArray {
    /// The class's name, as JavaScript spells it.
    pub const fn name(self) -> &'static str {
        match self {
            JsArray::Uint8Array => "Uint8Array",
            JsArray::Int8Array => "Int8Array",
            JsArray::Uint16Array => "Uint16Array",
            JsArray::Int16Array => "Int16Array",
            JsArray::Uint32Array => "Uint32Array",
            JsArray::Int32Array => "Int32Array",
            JsArray::BigUint64Array => "BigUint64Array",
            JsArray::BigInt64Array => "BigInt64Array",
            JsArray::Float32Array => "Float32Array",
            JsArray::Float64Array => "Float64Array",
        }
    }
}

/// DLPack's `DLDataTypeCode` values bytelens uses (dlpack.h, v1.1).
pub mod dlpack_code {
    /// `kDLInt`
    pub const INT: u8 = 0;
    /// `kDLUInt`
    pub const UINT: u8 = 1;
    /// `kDLFloat`
    pub const FLOAT: u8 = 2;
    /// `kDLBfloat`
    pub const BFLOAT: u8 = 4;
    /// `kDLBool`
    pub const BOOL: u8 = 6;
    /// `kDLFloat8_e4m3fn`
    pub const FLOAT8_E4M3FN: u8 = 10;
    /// `kDLFloat8_e5m2`
    pub const FLOAT8_E5M2: u8 = 12;
    /// `kDLFloat8_e8m0fnu`
    pub const FLOAT8_E8M0FNU: u8 = 14;
}

/// One row of the dtype table: everything about a dtype that a binding or a
/// file format needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DTypeInfo {
    /// The dtype the row describes.
    pub dtype: DType,
    /// Every spelling [`parse`](str::parse) accepts (without a byte order):
    /// the name first, numpy's type code second (the name again where numpy
    /// has no code), then numpy's other names and one-character codes.
    pub spellings: &'static [&'static str],
    /// Bytes per element, which is also the alignment an element needs.
    pub size: usize,
    /// numpy's kind character (`b`, `u`, `i`, `f`; `V` for ml_dtypes' bfloat16
    /// and float8_e4m3fn/e8m0fnu, `f` for its float8_e5m2).
    pub kind: char,
    /// The ml_dtypes type numpy arrays of it use, where numpy has none.
    pub ml_dtypes: Option<&'static str>,
    /// The safetensors `dtype` code.
    pub safetensors: &'static str,
    /// Whether an `.npy` header can say it: numpy's own dtypes only (numpy
    /// writes ml_dtypes' types as raw `|V2`, losing what they were).
    pub npy: bool,
    /// DLPack's type code and width in bits.
    pub dlpack: (u8, u8),
    /// The typed array the wasm package's `read` returns.
    pub js_array: JsArray,
    /// The bit layout of a float dtype.
    pub float: Option<FloatFormat>,
}

const fn row(
    dtype: DType,
    spellings: &'static [&'static str],
    size: usize,
    kind: char,
    safetensors: &'static str,
    dlpack: (u8, u8),
    js_array: JsArray,
) -> DTypeInfo {
    DTypeInfo {
        dtype,
        spellings,
        size,
        kind,
        ml_dtypes: None,
        safetensors,
        npy: true,
        dlpack,
        js_array,
        float: None,
    }
}

const fn float(
    mut info: DTypeInfo,
    format: FloatFormat,
    ml_dtypes: Option<&'static str>,
) -> DTypeInfo {
    info.float = Some(format);
    info.ml_dtypes = ml_dtypes;
    info.npy = ml_dtypes.is_none();
    info
}

use JsArray as Js;
use dlpack_code as dl;

/// The dtype table, in the enum's order.
static TABLE: [DTypeInfo; 16] = [
    row(
        DType::Bool,
        &["bool", "b1", "bool_", "?"],
        1,
        'b',
        "BOOL",
        (dl::BOOL, 8),
        Js::Uint8Array,
    ),
    row(
        DType::U8,
        &["uint8", "u1", "ubyte", "B"],
        1,
        'u',
        "U8",
        (dl::UINT, 8),
        Js::Uint8Array,
    ),
    row(
        DType::I8,
        &["int8", "i1", "byte", "b"],
        1,
        'i',
        "I8",
        (dl::INT, 8),
        Js::Int8Array,
    ),
    row(
        DType::U16,
        &["uint16", "u2", "ushort", "H"],
        2,
        'u',
        "U16",
        (dl::UINT, 16),
        Js::Uint16Array,
    ),
    row(
        DType::I16,
        &["int16", "i2", "short", "h"],
        2,
        'i',
        "I16",
        (dl::INT, 16),
        Js::Int16Array,
    ),
    row(
        DType::U32,
        &["uint32", "u4", "uintc", "I"],
        4,
        'u',
        "U32",
        (dl::UINT, 32),
        Js::Uint32Array,
    ),
    row(
        DType::I32,
        &["int32", "i4", "intc", "i"],
        4,
        'i',
        "I32",
        (dl::INT, 32),
        Js::Int32Array,
    ),
    // numpy 2: `int` and `uint` are the pointer-sized integers.
    row(
        DType::U64,
        &["uint64", "u8", "ulonglong", "uint", "Q"],
        8,
        'u',
        "U64",
        (dl::UINT, 64),
        Js::BigUint64Array,
    ),
    row(
        DType::I64,
        &["int64", "i8", "longlong", "int", "q"],
        8,
        'i',
        "I64",
        (dl::INT, 64),
        Js::BigInt64Array,
    ),
    float(
        row(
            DType::F16,
            &["float16", "f2", "half", "e"],
            2,
            'f',
            "F16",
            (dl::FLOAT, 16),
            Js::Float32Array,
        ),
        FloatFormat::F16,
        None,
    ),
    float(
        row(
            DType::BF16,
            &["bfloat16", "bfloat16", "bf16"],
            2,
            'V',
            "BF16",
            (dl::BFLOAT, 16),
            Js::Float32Array,
        ),
        FloatFormat::BF16,
        Some("bfloat16"),
    ),
    float(
        row(
            DType::F32,
            &["float32", "f4", "single", "f"],
            4,
            'f',
            "F32",
            (dl::FLOAT, 32),
            Js::Float32Array,
        ),
        FloatFormat::F32,
        None,
    ),
    float(
        row(
            DType::F64,
            &["float64", "f8", "double", "float", "d"],
            8,
            'f',
            "F64",
            (dl::FLOAT, 64),
            Js::Float64Array,
        ),
        FloatFormat::F64,
        None,
    ),
    float(
        row(
            DType::F8E4M3FN,
            &["float8_e4m3fn", "float8_e4m3fn", "f8e4m3fn", "e4m3fn"],
            1,
            'V',
            "F8_E4M3",
            (dl::FLOAT8_E4M3FN, 8),
            Js::Float32Array,
        ),
        FloatFormat::F8E4M3FN,
        Some("float8_e4m3fn"),
    ),
    float(
        row(
            DType::F8E5M2,
            &["float8_e5m2", "float8_e5m2", "f8e5m2", "e5m2"],
            1,
            'f',
            "F8_E5M2",
            (dl::FLOAT8_E5M2, 8),
            Js::Float32Array,
        ),
        FloatFormat::F8E5M2,
        Some("float8_e5m2"),
    ),
    float(
        row(
            DType::F8E8M0FNU,
            &["float8_e8m0fnu", "float8_e8m0fnu", "f8e8m0fnu", "e8m0fnu"],
            1,
            'V',
            "F8_E8M0",
            (dl::FLOAT8_E8M0FNU, 8),
            Js::Float32Array,
        ),
        FloatFormat::F8E8M0FNU,
        Some("float8_e8m0fnu"),
    ),
];

// The table is in the enum's order, and `ALL` lists the enum, so
// `TABLE[dtype as usize]` is that dtype's row.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].dtype as usize == i && DType::ALL[i] as usize == i);
        assert!(TABLE[i].dlpack.1 as usize == 8 * TABLE[i].size);
        i += 1;
    }
};

impl DType {
    /// Every dtype, in the order of the enum.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(bytelens_core::DType::ALL.len(), 16);
    /// ```
    pub const ALL: [DType; 16] = [
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
        DType::F8E4M3FN,
        DType::F8E5M2,
        DType::F8E8M0FNU,
    ];

    /// The dtype's row of the dtype table.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// let info = DType::F8E5M2.info();
    /// assert_eq!((info.safetensors, info.ml_dtypes, info.dlpack), ("F8_E5M2", Some("float8_e5m2"), (12, 8)));
    /// assert_eq!(DType::I64.info().js_array.name(), "BigInt64Array");
    /// ```
    pub const fn info(self) -> &'static DTypeInfo {
        &TABLE[self as usize]
    }

    /// Size of one element in bytes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::Bool.size(), DType::F16.size(), DType::U64.size()), (1, 2, 8));
    /// ```
    pub const fn size(self) -> usize {
        self.info().size
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
    /// `"f2"`, `"b1"`), and the name for the ml_dtypes types (`"bfloat16"`),
    /// which numpy has no code for. A byte order prefix makes it a
    /// [`Descr`]'s text.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::I32.code(), DType::Bool.code(), DType::BF16.code()), ("i4", "b1", "bfloat16"));
    /// ```
    pub const fn code(self) -> &'static str {
        self.spellings()[1]
    }

    /// numpy's kind character: `b` bool, `u` unsigned, `i` signed, `f` float,
    /// and what ml_dtypes reports for its types (`V` for bfloat16).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!((DType::I8.kind(), DType::U8.kind(), DType::F32.kind()), ('i', 'u', 'f'));
    /// ```
    pub const fn kind(self) -> char {
        self.info().kind
    }

    /// True for the floating-point dtypes.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert!(DType::BF16.is_float() && !DType::I32.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        self.info().float.is_some()
    }

    /// The bit layout of a float dtype.
    pub const fn float_format(self) -> Option<FloatFormat> {
        self.info().float
    }

    /// Every spelling [`parse`](str::parse) accepts for this dtype (without
    /// a byte order): the [`name`](DType::name), the [`code`](DType::code),
    /// then numpy's other names and its one-character codes.
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
        self.info().spellings
    }

    /// The dtype a safetensors header's `dtype` code names, if bytelens has it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::DType;
    /// assert_eq!(DType::from_safetensors("BF16"), Some(DType::BF16));
    /// assert_eq!(DType::from_safetensors("C64"), None);
    /// ```
    pub fn from_safetensors(code: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|row| row.safetensors == code)
            .map(|row| row.dtype)
    }

    /// The dtype whose ml_dtypes type has this name (`"bfloat16"`, `"float8_e5m2"`).
    pub fn from_ml_dtypes(name: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|row| row.ml_dtypes == Some(name))
            .map(|row| row.dtype)
    }

    fn from_spelling(text: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|row| row.spellings.contains(&text))
            .map(|row| row.dtype)
    }
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
