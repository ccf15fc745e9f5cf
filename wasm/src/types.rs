//! The TypeScript the package declares beyond what wasm-bindgen generates,
//! and the JS types the exported functions take and return by those names.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** Where a view's elements lie, resolved by the core's one rule (ViewArgs):
 *  - `offset` from 0 to the buffer's length; outside it is "OutOfBounds".
 *  - `shape` with `strides`: as given; `shape` alone: C order from `offset`.
 *  - No shape: one axis of every element from `offset` to the end (whose
 *    bytes must divide by the itemsize), or for `write` of `values.length`.
 *  - `strides` without a `shape` are refused ("MissingShape").
 *  `new Layout` has no buffer: it needs a shape. */
export interface LayoutOptions {
  /** Byte offset of element [0, ..., 0]. */
  offset?: number;
  shape?: number[];
  /** In bytes, one per axis of `shape`; negative and zero allowed. Default: C order. */
  strides?: number[];
  /** Refuse writes (as `Layout.broadcastTo` results are). */
  readonly?: boolean;
  /** Allow offsets and strides that are not multiples of the alignment. */
  unaligned?: boolean;
}
/** An element value `write` takes: bigint or number for integers, boolean or 0/1 for bool, number for floats. */
export type Value = number | bigint | boolean;
/** A plan field: a dtype (a single element) or [dtype, shape]. */
export type FieldSpec = string | [string, number | number[]] | [string, number | number[], number];
export interface PlanField {
  name: string;
  dtype: string;
  shape: number[];
  offset: number;
  nbytes: number;
  alternative: number;
}
/** The bit layout of a float dtype: a value is `1.m × 2^(e − bias)` (or `0.m × 2^(1 − bias)` for exponent 0, where there are subnormals). */
export interface FloatFormat {
  /** Whether the top bit is a sign (false for float8_e8m0fnu). */
  signed: boolean;
  /** Width of the exponent field in bits. */
  exponentBits: number;
  /** Width of the stored mantissa (fraction) in bits. */
  mantissaBits: number;
  /** The exponent bias. */
  bias: number;
  /** Whether exponent 0 holds zero and the subnormals; without them it is the smallest power. */
  subnormals: boolean;
  /** "Ieee": the all-ones exponent is infinity or NaN; "NanOnly": only the all-ones pattern is NaN, no infinity (float8_e4m3fn, float8_e8m0fnu). */
  specials: "Ieee" | "NanOnly";
  /** How ties round: "NearestEven", or "NearestAway" (float8_e8m0fnu). */
  rounding: "NearestEven" | "NearestAway";
}
/** The typed array class `read` returns for a dtype. */
export type JsArrayName = "Uint8Array" | "Int8Array" | "Uint16Array" | "Int16Array" | "Uint32Array" | "Int32Array" | "BigUint64Array" | "BigInt64Array" | "Float32Array" | "Float64Array";
/** One dtype of the core's table (a row of its `DTypeInfo`), as `dtypes()` lists them. */
export interface DTypeInfo {
  /** numpy's name (ml_dtypes' for its types): "int32", "float16", "bfloat16", "float8_e4m3fn", "bool". */
  name: string;
  /** The type code without a byte order: "i4", "f2", "b1"; the name for ml_dtypes' types ("bfloat16"). */
  code: string;
  /** Every spelling accepted without a byte order, the name first, the code second. */
  spellings: string[];
  /** Bytes per element. */
  size: number;
  /** The alignment an element needs, in bytes. */
  align: number;
  /** numpy's kind character: "b" bool, "u" unsigned, "i" signed, "f" float; what ml_dtypes reports for its types ("V" for bfloat16, float8_e4m3fn and float8_e8m0fnu, "f" for float8_e5m2). */
  kind: string;
  /** True for the float dtypes (those with a `format`). */
  float: boolean;
  /** The type string in each byte order: "<i4" and ">i4"; "|u1" for one byte. */
  typeStrings: { little: string; big: string };
  /** The safetensors `dtype` code: "F32", "BF16", "F8_E4M3". */
  safetensors: string;
  /** The ml_dtypes type numpy arrays of it use, where numpy has none: "bfloat16", "float8_e5m2"; else null. */
  mlDtypes: string | null;
  /** Whether an .npy header can say it (numpy's own dtypes only). */
  npy: boolean;
  /** DLPack's type code (dlpack.h's DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 10 float8_e4m3fn, 12 float8_e5m2, 14 float8_e8m0fnu) and width in bits. */
  dlpack: { code: number; bits: number };
  /** The class of the typed array `read` returns: "Float32Array" for float16, bfloat16 and the float8s, which it holds exactly. */
  jsArray: JsArrayName;
  /** The bit layout of a float dtype; null for the others. */
  format: FloatFormat | null;
}
/** What a type string says (`describeDType(">i2")`): its dtype and byte order. */
export interface DTypeDescription extends DTypeInfo {
  order: "little" | "big";
  /** numpy's spelling of it: ">i2", "|u1", "<bfloat16". */
  typeString: string;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `LayoutOptions | undefined` on the JS side.
    #[wasm_bindgen(typescript_type = "LayoutOptions | undefined")]
    pub type LayoutOptions;
    /// `LayoutOptions`, where one is required.
    #[wasm_bindgen(typescript_type = "LayoutOptions")]
    pub type LayoutSpec;
    /// What `write` takes: a plain array of values or a typed array of any class.
    #[wasm_bindgen(
        typescript_type = "Value[] | Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | Float32Array | Float64Array"
    )]
    pub type Values;
    /// `Record<string, FieldSpec>`.
    #[wasm_bindgen(typescript_type = "Record<string, FieldSpec>")]
    pub type FieldSpecs;
    /// `PlanField[]`.
    #[wasm_bindgen(typescript_type = "PlanField[]")]
    pub type PlanFields;
    /// `Array<[number, number]>`.
    #[wasm_bindgen(typescript_type = "Array<[number, number]>")]
    pub type Ranges;
    /// `number[]`.
    #[wasm_bindgen(typescript_type = "number[]")]
    pub type Numbers;
    /// Bytes to copy in: `Uint8Array | number[]`.
    #[wasm_bindgen(typescript_type = "Uint8Array | number[]")]
    pub type ByteSource;
    /// The typed array for a dtype.
    #[wasm_bindgen(
        typescript_type = "Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | Float32Array | Float64Array"
    )]
    pub type TypedArray;
    /// `DTypeInfo[]`.
    #[wasm_bindgen(typescript_type = "DTypeInfo[]")]
    pub type DTypeTable;
    /// `DTypeDescription`.
    #[wasm_bindgen(typescript_type = "DTypeDescription")]
    pub type DTypeDescription;
}
