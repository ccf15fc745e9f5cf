//! ggml's tensor types, as GGUF files name them: one table row per type,
//! with its code, its name, the elements and bytes of one block and the
//! block's fields, so that a reader sizes a tensor, a binding views its
//! blocks as records and a kernel knows what it decodes. A new type is a
//! row here (and, to dequantise it, a kernel beside the others).
#![forbid(unsafe_code)]

use core::fmt;

use crate::{DType, Error, Plan};

/// One field of a quantised block: `count` values of `dtype` (little
/// endian) at byte `offset` of the block, named as ggml's C struct names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockField {
    /// ggml's name for it (`d`, `dmin`, `scales`, `qs`, ...).
    pub name: &'static str,
    /// The type of each value.
    pub dtype: DType,
    /// How many values (1 for a scalar).
    pub count: u16,
    /// Its first byte in the block.
    pub offset: u16,
}

/// A row of the ggml type table ([`GgmlType::info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlInfo {
    /// The type the row describes.
    pub ggml: GgmlType,
    /// ggml's code for it, as a GGUF tensor info stores it.
    pub code: u32,
    /// ggml's name (`"Q4_K"`); Python's `qtype` is it in lower case.
    pub name: &'static str,
    /// Elements per block (1 for an unquantised type).
    pub block: u32,
    /// Bytes per block.
    pub bytes: u32,
    /// The dtype of an unquantised type, whose tensors are plain arrays.
    pub dtype: Option<DType>,
    /// A quantised block's fields, in offset order (empty for an
    /// unquantised type).
    pub fields: &'static [BlockField],
}

macro_rules! fields {
    ($($name:literal: $dtype:ident $(* $count:literal)? @ $offset:literal),* $(,)?) => {
        &[$(BlockField {
            name: $name,
            dtype: DType::$dtype,
            count: fields!(@count $($count)?),
            offset: $offset,
        }),*]
    };
    (@count) => { 1 };
    (@count $count:literal) => { $count };
}

/// The ggml tensor types bytelens reads: the unquantised ones as arrays,
/// the quantised ones as blocks it can dequantise. Other ggml types
/// (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, NVFP4, Q1_0,
/// Q8_1, Q8_K) are sized by [`other_ggml_type`] and stay unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)] // ggml's names, as files and users spell them
#[non_exhaustive]
pub enum GgmlType {
    /// `float32`
    F32,
    /// `float16`
    F16,
    /// `bfloat16`
    BF16,
    /// `float64`
    F64,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// 32 four-bit values and a float16 scale: `d * (q - 8)`.
    Q4_0,
    /// 32 four-bit values, a float16 scale and minimum: `d * q + m`.
    Q4_1,
    /// 32 five-bit values and a float16 scale: `d * (q - 16)`.
    Q5_0,
    /// 32 five-bit values, a float16 scale and minimum: `d * q + m`.
    Q5_1,
    /// 32 int8 values and a float16 scale: `d * q`.
    Q8_0,
    /// 256 two-bit values in 16 groups with four-bit scales and minimums.
    Q2_K,
    /// 256 three-bit values in 16 groups with six-bit scales.
    Q3_K,
    /// 256 four-bit values in 8 groups with six-bit scales and minimums.
    Q4_K,
    /// 256 five-bit values in 8 groups with six-bit scales and minimums.
    Q5_K,
    /// 256 six-bit values in 16 groups with int8 scales.
    Q6_K,
    /// 32 four-bit indices into a fixed non-linear table, and a scale.
    IQ4_NL,
    /// 256 four-bit indices into IQ4_NL's table, 8 groups with six-bit scales.
    IQ4_XS,
    /// 32 float4 (E2M1) values and a shared power-of-two (E8M0) scale.
    MXFP4,
    /// 256 ternary values (-1, 0, 1), five to a byte, and a scale.
    TQ1_0,
    /// 256 ternary values (-1, 0, 1), four to a byte, and a scale.
    TQ2_0,
}

impl GgmlType {
    /// Every type, in code order.
    pub const ALL: [GgmlType; 23] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::IQ4_NL,
        GgmlType::IQ4_XS,
        GgmlType::I8,
        GgmlType::I16,
        GgmlType::I32,
        GgmlType::I64,
        GgmlType::F64,
        GgmlType::BF16,
        GgmlType::TQ1_0,
        GgmlType::TQ2_0,
        GgmlType::MXFP4,
    ];

    /// The type's row of the table.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::GgmlType;
    /// let q8 = GgmlType::Q8_0.info();
    /// assert_eq!((q8.code, q8.name, q8.block, q8.bytes), (8, "Q8_0", 32, 34));
    /// let fields: Vec<_> = q8.fields.iter().map(|f| (f.name, f.dtype.name(), f.count, f.offset)).collect();
    /// assert_eq!(fields, [("d", "float16", 1, 0), ("qs", "int8", 32, 2)]);
    /// ```
    pub fn info(self) -> GgmlInfo {
        use GgmlType::*;
        let (code, name, block, bytes, dtype, fields): (_, _, _, _, _, &'static [BlockField]) =
            match self {
                F32 => (0, "F32", 1, 4, Some(DType::F32), &[]),
                F16 => (1, "F16", 1, 2, Some(DType::F16), &[]),
                Q4_0 => (
                    2,
                    "Q4_0",
                    32,
                    18,
                    None,
                    fields!["d": F16 @ 0, "qs": U8 * 16 @ 2],
                ),
                Q4_1 => (
                    3,
                    "Q4_1",
                    32,
                    20,
                    None,
                    fields!["d": F16 @ 0, "m": F16 @ 2, "qs": U8 * 16 @ 4],
                ),
                Q5_0 => (
                    6,
                    "Q5_0",
                    32,
                    22,
                    None,
                    fields!["d": F16 @ 0, "qh": U8 * 4 @ 2, "qs": U8 * 16 @ 6],
                ),
                Q5_1 => (
                    7,
                    "Q5_1",
                    32,
                    24,
                    None,
                    fields!["d": F16 @ 0, "m": F16 @ 2, "qh": U8 * 4 @ 4, "qs": U8 * 16 @ 8],
                ),
                Q8_0 => (
                    8,
                    "Q8_0",
                    32,
                    34,
                    None,
                    fields!["d": F16 @ 0, "qs": I8 * 32 @ 2],
                ),
                Q2_K => (
                    10,
                    "Q2_K",
                    256,
                    84,
                    None,
                    fields![
                        "scales": U8 * 16 @ 0,
                        "qs": U8 * 64 @ 16,
                        "d": F16 @ 80,
                        "dmin": F16 @ 82,
                    ],
                ),
                Q3_K => (
                    11,
                    "Q3_K",
                    256,
                    110,
                    None,
                    fields![
                        "hmask": U8 * 32 @ 0,
                        "qs": U8 * 64 @ 32,
                        "scales": U8 * 12 @ 96,
                        "d": F16 @ 108,
                    ],
                ),
                Q4_K => (
                    12,
                    "Q4_K",
                    256,
                    144,
                    None,
                    fields![
                        "d": F16 @ 0,
                        "dmin": F16 @ 2,
                        "scales": U8 * 12 @ 4,
                        "qs": U8 * 128 @ 16,
                    ],
                ),
                Q5_K => (
                    13,
                    "Q5_K",
                    256,
                    176,
                    None,
                    fields![
                        "d": F16 @ 0,
                        "dmin": F16 @ 2,
                        "scales": U8 * 12 @ 4,
                        "qh": U8 * 32 @ 16,
                        "qs": U8 * 128 @ 48,
                    ],
                ),
                Q6_K => (
                    14,
                    "Q6_K",
                    256,
                    210,
                    None,
                    fields![
                        "ql": U8 * 128 @ 0,
                        "qh": U8 * 64 @ 128,
                        "scales": I8 * 16 @ 192,
                        "d": F16 @ 208,
                    ],
                ),
                IQ4_NL => (
                    20,
                    "IQ4_NL",
                    32,
                    18,
                    None,
                    fields!["d": F16 @ 0, "qs": U8 * 16 @ 2],
                ),
                IQ4_XS => (
                    23,
                    "IQ4_XS",
                    256,
                    136,
                    None,
                    fields![
                        "d": F16 @ 0,
                        "scales_h": U16 @ 2,
                        "scales_l": U8 * 4 @ 4,
                        "qs": U8 * 128 @ 8,
                    ],
                ),
                I8 => (24, "I8", 1, 1, Some(DType::I8), &[]),
                I16 => (25, "I16", 1, 2, Some(DType::I16), &[]),
                I32 => (26, "I32", 1, 4, Some(DType::I32), &[]),
                I64 => (27, "I64", 1, 8, Some(DType::I64), &[]),
                F64 => (28, "F64", 1, 8, Some(DType::F64), &[]),
                BF16 => (30, "BF16", 1, 2, Some(DType::BF16), &[]),
                TQ1_0 => (
                    34,
                    "TQ1_0",
                    256,
                    54,
                    None,
                    fields!["qs": U8 * 48 @ 0, "qh": U8 * 4 @ 48, "d": F16 @ 52],
                ),
                TQ2_0 => (
                    35,
                    "TQ2_0",
                    256,
                    66,
                    None,
                    fields!["qs": U8 * 64 @ 0, "d": F16 @ 64],
                ),
                MXFP4 => (
                    39,
                    "MXFP4",
                    32,
                    17,
                    None,
                    fields!["e": U8 @ 0, "qs": U8 * 16 @ 1],
                ),
            };
        GgmlInfo {
            ggml: self,
            code,
            name,
            block,
            bytes,
            dtype,
            fields,
        }
    }

    /// The type with ggml code `code`, if bytelens reads it.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::GgmlType;
    /// assert_eq!(GgmlType::from_code(12), Some(GgmlType::Q4_K));
    /// assert_eq!(GgmlType::from_code(16), None); // IQ2_XXS
    /// ```
    pub fn from_code(code: u32) -> Option<GgmlType> {
        GgmlType::ALL.into_iter().find(|t| t.info().code == code)
    }

    /// The type ggml names `name` (any case: `"q4_k"`, `"Q4_K"`).
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::GgmlType;
    /// assert_eq!(GgmlType::from_name("q6_k"), Some(GgmlType::Q6_K));
    /// ```
    pub fn from_name(name: &str) -> Option<GgmlType> {
        GgmlType::ALL
            .into_iter()
            .find(|t| t.info().name.eq_ignore_ascii_case(name))
    }

    /// ggml's name for it.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether its tensors are blocks to dequantise rather than arrays.
    pub fn is_quantized(self) -> bool {
        self.info().dtype.is_none()
    }

    /// Its block's fields as a [`Plan`] (each at its offset, packed), for
    /// a binding to view a tensor's blocks as records. An unquantised type
    /// is one field, `value`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::files::GgmlType;
    /// let plan = GgmlType::Q4_K.plan()?;
    /// assert_eq!((plan.nbytes(), plan.get("qs").unwrap().offset()), (144, 16));
    /// # Ok::<(), bytelens_core::Error>(())
    /// ```
    pub fn plan(self) -> Result<Plan<'static>, Error> {
        let info = self.info();
        let mut plan = Plan::new();
        if let Some(dtype) = info.dtype {
            plan.field("value", dtype, &[])?;
        }
        for field in info.fields {
            let count = usize::from(field.count);
            let shape: &[usize] = if count == 1 { &[] } else { &[count] };
            plan.field_at(field.name, field.dtype, shape, usize::from(field.offset))?;
        }
        Ok(plan)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ggml types bytelens does not read, by code: name, elements and bytes per
/// block, so that a file holding them is still checked (each tensor's size
/// is known) and their tensors are reported by name.
const OTHER_TYPES: [(u32, &str, u32, u32); 11] = [
    (9, "Q8_1", 32, 40),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (29, "IQ1_M", 256, 56),
    (40, "NVFP4", 64, 36),
    (41, "Q1_0", 128, 18),
];

/// A ggml type bytelens does not read: its name, elements and bytes per
/// block, where the code is one ggml has.
///
/// # Examples
/// ```
/// use bytelens_core::files::other_ggml_type;
/// assert_eq!(other_ggml_type(16), Some(("IQ2_XXS", 256, 66)));
/// assert_eq!(other_ggml_type(12), None); // Q4_K, which bytelens reads
/// ```
pub fn other_ggml_type(code: u32) -> Option<(&'static str, u32, u32)> {
    OTHER_TYPES
        .iter()
        .find(|row| row.0 == code)
        .map(|&(_, name, block, bytes)| (name, block, bytes))
}
