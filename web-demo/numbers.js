// Parsing and formatting for the demo: what a person types into a cell and
// how a value read through bytelens is shown. Pure functions, no DOM and no
// wasm: what they need of the dtype table (the wasm package's `dtypes()`) is
// passed in, so `node --test tests/` checks them without a browser.

/**
 * The typed readings drawn over the byte grid, top to bottom, from the wasm
 * package's dtype table (`dtypes()`): every dtype but bool, integers by
 * size with each signed type above its unsigned twin, then floats by size
 * (in the table's order within a size). Each reading is its table row with
 * `family`, "int" or "float", for the drawing.
 */
export function readingsOf(table) {
  const rank = (d) => [d.float ? 1 : 0, d.size, d.kind === "u" ? 1 : 0];
  const before = (a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  };
  return table
    .filter((d) => d.kind !== "b")
    .sort(before)
    .map((d) => ({ ...d, family: d.float ? "float" : "int" }));
}

/**
 * The largest finite value of a float format (a `format` of the package's
 * dtype table): the all-ones exponent is infinity and NaN in IEEE formats;
 * in "NanOnly" ones only the all-ones pattern is NaN, so the largest has
 * the all-ones exponent and the mantissa one below all ones.
 */
function largest(format) {
  const { exponentBits, mantissaBits, bias } = format;
  const top = 2 ** exponentBits - 1 - bias; // the all-ones exponent
  if (format.specials === "Ieee") return (2 - 2 ** -mantissaBits) * 2 ** (top - 1);
  if (mantissaBits === 0) return 2 ** (top - 1);
  return (2 - 2 ** (1 - mantissaBits)) * 2 ** top;
}

/**
 * Rounds a JS number to the nearest value of a float format, a `format` of
 * the package's dtype table (`null`, or float64's, leaves it as it is), as
 * a store into that format would: ties to even, or away from zero for
 * "NearestAway"; past the largest value to infinity, or to NaN where the
 * format has no infinity ("NanOnly"); gradual underflow where it has
 * subnormals, else up to its smallest value; NaN for zero and negative
 * numbers in an unsigned format.
 */
export function roundToFormat(x, format) {
  if (!format || Number.isNaN(x)) return x;
  if (!format.signed && !(x > 0)) return NaN;
  if (x === 0) return x;
  const overflow = format.specials === "Ieee" ? Math.sign(x) * Infinity : NaN;
  if (!Number.isFinite(x)) return overflow;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  else if (2 ** (e + 1) <= a) e += 1;
  const lowest = (format.subnormals ? 1 : 0) - format.bias;
  if (e < lowest) e = lowest;
  const ulp = 2 ** (e - format.mantissaBits);
  const q = a / ulp; // exact: ulp is a power of two
  let r = Math.floor(q);
  const frac = q - r;
  const up = format.rounding === "NearestAway" ? frac >= 0.5 : frac > 0.5 || (frac === 0.5 && r % 2 === 1);
  if (up) r += 1;
  // Below the smallest value: zero, or the smallest where there is no zero.
  const y = r === 0 && !format.subnormals ? 2 ** lowest : r * ulp;
  return y > largest(format) ? overflow : Math.sign(x) * y;
}

/**
 * The shortest decimal text that reads back as the same value of the given
 * float format, a `format` of the dtype table (numpy's repr rule), e.g.
 * float32 1.1 → "1.1", not "1.100000023841858". Without a format (or for
 * float64) it is JS's own shortest text.
 */
export function formatFloat(v, format) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (Object.is(v, -0)) return "-0";
  if (!format) return String(v);
  for (let p = 1; p <= 17; p++) {
    const shown = Number(v.toPrecision(p));
    if (roundToFormat(shown, format) === v) return String(shown);
  }
  return String(v);
}

/**
 * Text for one value read through bytelens, by its dtype's row of the
 * package's table (`dtypes()` or `describeDType()`). `read` gives bool
 * elements as 0 and 1 (a Uint8Array); they show as false and true.
 */
export function formatValue(v, dtype) {
  if (typeof v === "boolean" || dtype.kind === "b") return v ? "true" : "false";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number" && dtype.format) return formatFloat(v, dtype.format);
  return String(v);
}

/**
 * "0x…" of the `size` bytes at `start`, most significant byte first for the
 * given byte order: the bits of the element, whatever its type.
 */
export function hexOf(bytes, start, size, order) {
  let out = "0x";
  for (let i = 0; i < size; i++) {
    const b = bytes[order === "big" ? start + i : start + size - 1 - i];
    out += b.toString(16).padStart(2, "0");
  }
  return out;
}

/**
 * The byte strides of a contiguous array of `shape` and `itemsize`, as
 * the core's `Layout` gives them: C order (the last axis fastest) or
 * Fortran order (the first fastest), a 1-long or 0-long axis's stride as
 * the next one's. Worked out here rather than by a `Layout` of the whole
 * array, which cannot exist in wasm32 past 2 GiB: each stride is a
 * product of whole numbers no larger than the array's byte count, exact
 * while that is at most 2^53 (JS numbers; the file view's offsets are).
 */
export function stridesFor(shape, itemsize, fortran = false) {
  const strides = shape.map(() => 0);
  let step = itemsize;
  const axes = shape.map((_, d) => d);
  if (!fortran) axes.reverse();
  for (const d of axes) {
    strides[d] = step;
    step *= Math.max(1, Number(shape[d]));
  }
  return strides;
}

/**
 * The multi-index of the element `rel` bytes from element [0, …, 0] of an
 * array of `shape` whose `strides` (in bytes: `stridesFor`, or the core's
 * `Layout`) are positive and lay the elements out without gaps or
 * overlaps, as C- and Fortran-order arrays are: each axis's index, from
 * the largest stride down, is how many of its strides fit in what is
 * left. In BigInt arithmetic, so exact for every offset up to 2^53 (a
 * float64 quotient can round up to the next whole number past 2^40 or so).
 */
export function indexAt(rel, shape, strides) {
  const axes = shape.map((_, d) => d).sort((x, y) => strides[y] - strides[x]);
  const index = shape.map(() => 0);
  let rest = BigInt(rel);
  for (const d of axes) {
    if (shape[d] < 2) continue; // the stride of a 1-long axis says nothing
    const stride = BigInt(strides[d]);
    const i = rest / stride;
    index[d] = Number(i);
    rest -= i * stride;
  }
  return index;
}

/** The C-order place of multi-index `index` in `shape` (exact up to 2^53 elements). */
export function flatOf(index, shape) {
  return Number(index.reduce((f, i, d) => f * BigInt(shape[d]) + BigInt(i), 0n));
}

/** The C-order multi-index of flat element `k` of `shape` (exact up to 2^53 elements). */
export function unravel(k, shape) {
  const index = shape.map(() => 0);
  let rest = BigInt(k);
  for (let d = shape.length - 1; d >= 0; d--) {
    if (!shape[d]) continue;
    const n = BigInt(shape[d]);
    index[d] = Number(rest % n);
    rest /= n;
  }
  return index;
}

/**
 * `text` cut to at most `most` characters (code points) for the page, its
 * start and end kept (names differ at either: `blk.0.attn_q.weight`) and
 * an ellipsis between; the whole text is the element's title.
 */
export function cutText(text, most = 64) {
  const chars = [...String(text)];
  if (chars.length <= most) return String(text);
  const tail = Math.floor((most - 1) / 3);
  return `${chars.slice(0, most - 1 - tail).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

/** A printable ASCII character for a byte, or a middle dot. */
export function asciiOf(b) {
  return b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : "·";
}

/**
 * A whole number typed by a person: decimal ("-42", "+7", "1_000") or hex,
 * octal, binary with a prefix ("0x2a", "-0x10", "0b101", "0o17").
 * Returns a bigint; throws an Error with a message to show otherwise.
 */
export function parseInteger(text) {
  let s = String(text).trim().replace(/_/g, "");
  if (s === "") throw new Error("enter a whole number: decimal (-42) or hex (0x2a)");
  let negative = false;
  if (s[0] === "-" || s[0] === "+") {
    negative = s[0] === "-";
    s = s.slice(1);
  }
  if (!/^(0x[0-9a-f]+|0o[0-7]+|0b[01]+|[0-9]+)$/i.test(s)) {
    throw new Error(`"${String(text).trim()}" is not a whole number: use decimal (-42) or hex (0x2a)`);
  }
  const magnitude = BigInt(s.replace(/^0([XOB])/, (_, p) => `0${p.toLowerCase()}`));
  return negative ? -magnitude : magnitude;
}

/**
 * A float typed by a person: anything JS's Number() reads ("1.5", "-2e-3",
 * "0x10"), plus "inf", "-inf", "nan" in any case.
 */
export function parseFloatText(text) {
  const s = String(text).trim();
  const lower = s.toLowerCase().replace(/_/g, "");
  if (lower === "") throw new Error("enter a number, e.g. 1.5, -2e-3, inf or nan");
  const special = {
    inf: Infinity, "+inf": Infinity, infinity: Infinity, "+infinity": Infinity,
    "-inf": -Infinity, "-infinity": -Infinity, nan: NaN, "+nan": NaN, "-nan": NaN,
  };
  if (lower in special) return special[lower];
  const v = Number(lower);
  if (Number.isNaN(v)) throw new Error(`"${s}" is not a number`);
  return v;
}

/** One byte typed in the hex grid: one or two hex digits, "0x" allowed. */
export function parseByte(text) {
  const s = String(text).trim().replace(/^0x/i, "");
  if (!/^[0-9a-f]{1,2}$/i.test(s)) {
    throw new Error(`"${String(text).trim()}" is not a byte: type one or two hex digits, 00 to ff`);
  }
  return parseInt(s, 16);
}

/**
 * Bytes from pasted hex: "de ad be ef", "deadbeef", "0xde, 0xad", one byte
 * per line, … Tokens are split on whitespace, commas and semicolons; a token
 * of one or two digits is one byte, a longer one needs an even count.
 */
export function parseHexBytes(text) {
  const out = [];
  for (const raw of String(text).split(/[\s,;]+/)) {
    if (raw === "") continue;
    const token = raw.replace(/^0x/i, "").replace(/^\\x/i, "");
    if (!/^[0-9a-f]+$/i.test(token)) {
      throw new Error(`"${raw}" is not hex: use the digits 0-9 and a-f, e.g. "de ad be ef"`);
    }
    if (token.length > 2 && token.length % 2 !== 0) {
      throw new Error(`"${raw}" has an odd number of hex digits`);
    }
    if (token.length <= 2) {
      out.push(parseInt(token, 16));
    } else {
      for (let i = 0; i < token.length; i += 2) out.push(parseInt(token.slice(i, i + 2), 16));
    }
  }
  return Uint8Array.from(out);
}

/** The bytes as hex text, 16 to a line. */
export function formatHexBytes(bytes) {
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    lines.push(Array.from(bytes.subarray(i, i + 16), (b) => b.toString(16).padStart(2, "0")).join(" "));
  }
  return lines.join("\n");
}

/**
 * A list of whole numbers typed in a shape or strides box: "3, 4", "3 4",
 * "(3, 4)", "[3,4]", "3x4". Blank text gives undefined (the core's default);
 * "()" or "[]" gives [] (zero dimensions). Whether the numbers make a view
 * is the core's to say.
 */
export function parseIntList(text, what) {
  const s = String(text).trim();
  if (s === "") return undefined;
  const inner = s.replace(/^[([]\s*/, "").replace(/\s*[)\]]$/, "").trim();
  if (inner === "") {
    if (s !== inner) return [];
    return undefined;
  }
  const parts = inner.split(/\s*[,x×]\s*|\s+/).filter((p) => p !== "");
  return parts.map((p) => {
    if (!/^[+-]?\d+$/.test(p) || !Number.isSafeInteger(Number(p))) {
      throw new Error(`${what}: "${p}" is not a whole number`);
    }
    return Number(p);
  });
}

/**
 * A numpy-style nested repr of C-order values for a shape: `texts` an
 * array of each element's text, or a function of its C-order place. With
 * `edge`, an axis longer than twice that shows its first and last `edge`
 * entries and "..." between, as numpy prints an array of more than 1000
 * elements (`edgeitems`): only the elements shown are asked for.
 */
export function nestedRepr(texts, shape, edge = Infinity) {
  const at = typeof texts === "function" ? texts : (k) => texts[k];
  if (shape.length === 0) return typeof texts === "function" ? at(0) : texts.length ? texts[0] : "";
  const strides = shape.map(() => 1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = strides[d + 1] * shape[d + 1];
  const shown = (n) => (n > 2 * edge
    ? [...Array.from({ length: edge }, (_, i) => i), null, ...Array.from({ length: edge }, (_, i) => n - edge + i)]
    : Array.from({ length: n }, (_, i) => i));
  // The texts shown, first, for their common width.
  const leaves = new Map();
  const collect = (dim, base) => {
    for (const i of shown(shape[dim])) {
      if (i === null) continue;
      if (dim === shape.length - 1) leaves.set(base + i, at(base + i));
      else collect(dim + 1, base + i * strides[dim]);
    }
  };
  collect(0, 0);
  let width = 0;
  for (const t of leaves.values()) width = Math.max(width, t.length);
  const pad = (t) => t.padStart(width, " ");
  function level(dim, base, indent) {
    const items = shown(shape[dim]);
    if (dim === shape.length - 1) return `[${items.map((i) => (i === null ? "..." : pad(leaves.get(base + i)))).join(", ")}]`;
    const sep = `,${"\n".repeat(shape.length - 1 - dim)}${" ".repeat(indent + 1)}`;
    return `[${items.map((i) => (i === null ? "..." : level(dim + 1, base + i * strides[dim], indent + 1))).join(sep)}]`;
  }
  return level(0, 0, 0);
}
