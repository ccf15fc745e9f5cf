// The JavaScript half of bytelens-wasm's reads and writes (src/transfer.rs):
// each function here handles a whole array inside the engine, so no call
// crosses between JavaScript and wasm once per element. src/js.rs declares
// every import from this file.

/** Typed array classes by kind, the numbering src/transfer.rs uses. */
const CLASSES = [
  Uint8Array, Int8Array, Uint16Array, Int16Array, Uint32Array, Int32Array,
  BigUint64Array, BigInt64Array, Float32Array, Float64Array,
];

/** The most characters of a value an error message shows. */
const EXCERPT = 60;

/**
 * A typed array's kind: its class's index in CLASSES; CLASSES.length for
 * another typed array of numbers (Uint8ClampedArray, Float16Array); -1 for
 * anything else, DataView included.
 */
export function typedKind(value) {
  if (!ArrayBuffer.isView(value) || value instanceof DataView) return -1;
  for (let kind = 0; kind < CLASSES.length; kind++) {
    if (value instanceof CLASSES[kind]) return kind;
  }
  return CLASSES.length;
}

/** A new typed array of `kind` holding a copy of `bytes`, a view over wasm memory. */
export function typedCopy(kind, bytes) {
  return new CLASSES[kind](bytes.slice().buffer);
}

/**
 * A typed array of `kind` over `bytes`, a view of wasm memory, with no copy
 * (Buffer.typed's): detached when that memory grows. `bytes` starts at a
 * multiple of the class's element size and holds whole elements.
 */
export function typedView(kind, bytes) {
  const Class = CLASSES[kind];
  return new Class(bytes.buffer, bytes.byteOffset, bytes.length / Class.BYTES_PER_ELEMENT);
}

/**
 * A new typed array of `kind` holding the numbers of `bytes`, float64s in
 * wasm memory, converted by the engine (exactly, where the class holds them).
 */
export function typedFromFloat64(kind, bytes) {
  return new CLASSES[kind](new Float64Array(bytes.slice().buffer));
}

/** A typed array's bytes: a Uint8Array over the same memory. */
export function bytesOf(array) {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/**
 * The bytes of a byte argument (src/convert.rs's `bytes_arg`): a Uint8Array
 * over the memory of a typed array, a DataView, an ArrayBuffer or a
 * SharedArrayBuffer, as they are in memory (a Float32Array's four bytes an
 * element); null for anything else, which the caller refuses with a
 * TypeError.
 */
export function byteView(value) {
  if (ArrayBuffer.isView(value)) return bytesOf(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof SharedArrayBuffer !== "undefined" && value instanceof SharedArrayBuffer) {
    return new Uint8Array(value);
  }
  return null;
}

/** A typed array of numbers as a new Float64Array (exact for every such class). */
export function toFloat64(array) {
  return new Float64Array(array);
}

/**
 * Fills `out`, bytes in wasm memory, with a plain array's elements as typed
 * array `numbers` (Float32Array or Float64Array) holds them when every
 * element is a number (or a boolean, when `booleans`), or as typed array
 * `bigints` (BigInt64Array or BigUint64Array; 0 for none) when every
 * element is a bigint it holds exactly: one loop that checks and converts,
 * little-endian, through a DataView (which needs no alignment). Returns the
 * kind it filled, or -1 for any other array, or one whose length no longer
 * fits `out`, whose values the element-by-element path checks (and whose
 * error names the value).
 */
export function fillFrom(out, array, numbers, booleans, bigints) {
  const n = array.length;
  // Measured before, and changed since (by a getter): not this path's to fill.
  if (n * (numbers === 8 ? 4 : 8) !== out.length) return -1;
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  if (bigints > 0 && n > 0 && typeof array[0] === "bigint") {
    const signed = bigints === 7;
    for (let i = 0; i < n; i++) {
      const v = array[i];
      if (typeof v !== "bigint") return -1;
      if (signed ? BigInt.asIntN(64, v) !== v : BigInt.asUintN(64, v) !== v) return -1;
      view.setBigUint64(8 * i, BigInt.asUintN(64, v), true);
    }
    return bigints;
  }
  // One loop per class, each element read once: checked, then stored;
  // through a typed array where `out` is aligned for one (faster), else
  // through the DataView.
  // Where `out` is aligned for the class and the values are all numbers
  // (a loop that only checks), the engine's own `set` stores them: faster
  // than storing each from the checking loop.
  if (!booleans && out.byteOffset % (numbers === 8 ? 4 : 8) === 0) {
    for (let i = 0; i < n; i++) {
      if (typeof array[i] !== "number") return -1;
    }
    new (numbers === 8 ? Float32Array : Float64Array)(out.buffer, out.byteOffset, n).set(array);
    return numbers;
  }
  if (numbers === 8) {
    for (let i = 0; i < n; i++) {
      const v = array[i];
      if (typeof v !== "number") return -1;
      view.setFloat32(4 * i, v, true);
    }
    return numbers;
  }
  for (let i = 0; i < n; i++) {
    const v = array[i];
    if (typeof v !== "number" && !(booleans && typeof v === "boolean")) return -1;
    view.setFloat64(8 * i, Number(v), true);
  }
  return numbers;
}

/**
 * A value as a person would write it, for an error message: numbers,
 * bigints, short strings and small objects in full; longer strings, arrays
 * and typed arrays as their type, their length and an excerpt of at most
 * about EXCERPT characters.
 */
export function describe(value) {
  switch (typeof value) {
    case "string": {
      // Quotes and backslashes escaped here, control characters by the one
      // helper every message passes through (src/error.rs).
      const quoted = (text) => `"${text.replace(/["\\]/g, "\\$&")}"`;
      if (value.length <= EXCERPT) return quoted(value);
      return `a string of ${value.length} characters, ${quoted(`${value.slice(0, EXCERPT - 20)}…`)}`;
    }
    case "bigint":
      return `${value}n`;
    case "function":
      return "a function";
    case "object":
      break;
    default:
      return String(value);
  }
  if (value === null) return "null";
  if (Array.isArray(value) || typedKind(value) >= 0) {
    const name = Array.isArray(value) ? "Array" : value.constructor.name;
    const items = [];
    let shown = 0;
    for (let i = 0; i < value.length; i++) {
      if (shown > EXCERPT - 20) {
        items.push("…");
        break;
      }
      const text = describe(value[i]);
      items.push(text);
      shown += text.length + 2;
    }
    return `${name}(${value.length}) [${items.join(", ")}]`;
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return `${value.constructor.name}(${value.byteLength} bytes)`;
  }
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT - 20)}… (an object)`;
}

/** The most characters of a thrown message. */
const MAX_MESSAGE = 300;

/**
 * The error src/error.rs throws, its message made safe to show: of the
 * class the core's table gives its kind (RangeError, TypeError or Error),
 * with `kind`. Control
 * characters are escaped (\n, \r, \t, \0, others as \u{1b}), so that no
 * text the message quotes can break its line or hide in it; past
 * MAX_MESSAGE characters it keeps its start and its end, so that none can
 * make it long.
 */
export function makeError(message, errorClass, kind) {
  const escapes = { "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0" };
  let text = message.replace(
    /[\0-\x1f\x7f-\x9f]/g,
    (c) => escapes[c] ?? `\\u{${c.charCodeAt(0).toString(16)}}`,
  );
  if (text.length > MAX_MESSAGE) {
    // Never between the halves of a surrogate pair.
    const at = (i) => (/[\ud800-\udbff]/.test(text[i - 1]) ? i - 1 : i);
    text = `${text.slice(0, at(MAX_MESSAGE - 100))} … ${text.slice(at(text.length - 100))}`;
  }
  const classes = { RangeError, TypeError, Error };
  const error = new classes[errorClass](text);
  error.kind = kind;
  return error;
}

/**
 * Copies a typed array's bytes into `out`, a view over wasm memory, when
 * they are as many; false when not (a view detached since it was measured).
 */
export function copyInto(out, array) {
  const bytes = bytesOf(array);
  if (bytes.length !== out.length) return false;
  out.set(bytes);
  return true;
}

/**
 * One row of the core's dtype table, which src/dtypes.rs writes as a JSON
 * array of its columns in this order (names here, not in the size-budgeted
 * .wasm), as the object the DTypeInfo TypeScript type describes.
 */
function dtypeInfo(row) {
  const [name, code, size, align, kind, float, little, big, safetensors, mlDtypes, npy,
    dlpackCode, dlpackBits, jsArray, format, spellings] = row;
  return {
    name, code, spellings, size, align, kind, float, typeStrings: { little, big },
    safetensors, mlDtypes, npy, dlpack: { code: dlpackCode, bits: dlpackBits }, jsArray,
    format: format && {
      signed: format[0], exponentBits: format[1], mantissaBits: format[2], bias: format[3],
      subnormals: format[4], specials: format[5], rounding: format[6],
    },
  };
}

/** The dtype table from src/dtypes.rs's JSON: an array of rows. */
export function dtypeTable(json) {
  return JSON.parse(json).map(dtypeInfo);
}

/** A type string's description from src/dtypes.rs's JSON: [row, order, typeString]. */
export function dtypeDescription(json) {
  const [row, order, typeString] = JSON.parse(json);
  return { ...dtypeInfo(row), order, typeString };
}
