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
/** One dtype of the core's table, as `dtypes()` lists them. */
export interface DTypeInfo {
  /** numpy's name: "int32", "float16", "bfloat16", "bool". */
  name: string;
  /** The type code without a byte order: "i4", "f2", "b1", "bfloat16". */
  code: string;
  /** Every spelling accepted without a byte order, the name first, the code second. */
  spellings: string[];
  /** Bytes per element. */
  size: number;
  /** The alignment an element needs, in bytes. */
  align: number;
  /** numpy's kind character: "b" bool, "u" unsigned, "i" signed, "f" float; "V" for bfloat16. */
  kind: string;
  /** True for float16, bfloat16, float32, float64. */
  float: boolean;
  /** The type string in each byte order: "<i4" and ">i4"; "|u1" for one byte. */
  typeStrings: { little: string; big: string };
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
