//! Text from files in messages and reports, escaped as the Python layer
//! escapes it: [`short`] (`_short`), [`printable`] (`_printable`),
//! [`repr`] (a Python `str`'s `repr`), and numbers as Python prints them
//! ([`py_float`], [`thousands`]).

use std::fmt::Write;

use crate::{QuoteStyle, Quoted};

/// `text` on one line of at most `keep` characters (then `...`), every
/// control and non-ASCII character escaped: Python's `_short`
/// ([`QuoteStyle::PyShort`]).
pub(crate) fn short(text: &str, keep: usize) -> String {
    Quoted::new(text, keep, QuoteStyle::PyShort).to_string()
}

/// [`short`] to 64 characters, the Python default.
pub(crate) fn short64(text: &str) -> String {
    short(text, 64)
}

/// Python's `repr` of a `str` ([`QuoteStyle::PyRepr`]).
pub(crate) fn repr(text: &str) -> String {
    Quoted::new(text, 0, QuoteStyle::PyRepr).to_string()
}

/// `repr(short(text, keep))`: how the Python layer quotes a name in a
/// message (`{_short(name)!r}`, [`QuoteStyle::PyShortRepr`]).
pub(crate) fn quoted(text: &str, keep: usize) -> String {
    Quoted::new(text, keep, QuoteStyle::PyShortRepr).to_string()
}

/// A name from a file or a caller as the file layer's messages quote it:
/// Python's `repr` of the name cut to 64 characters, every control and
/// non-ASCII character escaped (`{_short(name)!r}` in the Python package).
///
/// # Examples
/// ```
/// // Python: repr(_short("wé\n")), the escapes' backslashes doubled.
/// assert_eq!(bytelens::files::quoted64("w\u{e9}\n"), r"'w\\xe9\\n'");
/// ```
pub fn quoted64(text: &str) -> String {
    quoted(text, 64)
}

/// `text` in single quotes for a message, on one line and short: control
/// and non-ASCII characters (and quotes) escaped, cut after `keep`
/// characters (Python's `_quote`, [`QuoteStyle::PyQuote`]).
pub(crate) fn quote(text: &str, keep: usize) -> String {
    Quoted::new(text, keep, QuoteStyle::PyQuote).to_string()
}

/// `text` with the characters Python counts unprintable escaped and the
/// rest kept: Python's `_printable`, for paths and reasons
/// ([`QuoteStyle::PyPrintable`]).
pub(crate) fn printable(text: &str) -> String {
    Quoted::new(text, 0, QuoteStyle::PyPrintable).to_string()
}

/// `n` with commas between thousands, as Python's `f"{n:,}"`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A float as Python's `repr` (and numpy's scalar `str`) writes it, from
/// the shortest digits that read back as it (`sci`, Rust's `{:e}` of the
/// value at its own width): positional from 1e-4 up to 1e16 (`0.0001`,
/// `10.0`), else scientific with a signed exponent of two digits or more
/// (`1e-05`, `1.5e+16`); `inf`, `-inf`, `nan`.
pub(crate) fn py_float(sci: &str) -> String {
    let exp = sci
        .split_once('e')
        .map_or(0, |(_, e)| e.parse().unwrap_or(0));
    float_text(sci, (-4..16).contains(&exp))
}

/// A float32 as numpy's scalar `str` writes it, from `sci` as
/// [`py_float`] takes it: numpy chooses positional by the value, from
/// 1e-4 (as a float64) up, where Python's `repr` goes by the shortest
/// digits; the float32 nearest 1e-4 lies below it, and is `1e-04`.
/// (numpy 1's rule; numpy 2.3 and later write float32s from 1e6 up in
/// scientific too, `1e+06`.)
pub(crate) fn np_float32(x: f32) -> String {
    let wide = f64::from(x).abs();
    float_text(
        &format!("{x:e}"),
        wide == 0.0 || (1e-4..1e16).contains(&wide),
    )
}

/// `sci` (as [`py_float`] takes it) written positional or scientific.
fn float_text(sci: &str, positional: bool) -> String {
    match sci {
        "inf" | "-inf" | "NaN" => return sci.replace("NaN", "nan"),
        _ => {}
    }
    let (negative, body) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci),
    };
    let (mantissa, exp) = body.split_once('e').unwrap_or((body, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if negative { "-" } else { "" };
    if digits.bytes().all(|b| b == b'0') {
        return format!("{sign}0.0");
    }
    if positional {
        let point = exp + 1; // digits before the point
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        return format!("{sign}{text}");
    }
    let rest = if digits.len() > 1 {
        format!(".{}", &digits[1..])
    } else {
        String::new()
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{}{rest}e{esign}{:02}", &digits[..1], exp.abs())
}

/// `text` as a JSON string, as Python's `json.dumps` writes it (ASCII
/// only: the rest as `\uXXXX`, astral characters as surrogate pairs).
pub(crate) fn json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_python_does() {
        assert_eq!(short("a\x1b[2J\né", 64), "a\\x1b[2J\\n\\xe9");
        assert_eq!(short(&"x".repeat(70), 64), format!("{}...", "x".repeat(64)));
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a\\b"), "'a\\\\b'");
        assert_eq!(quoted64("\u{202e}"), "'\\\\u202e'");
        assert_eq!(printable("caf\u{e9}\u{202e}\n"), "caf\u{e9}\\u202e\\n");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn floats_read_as_python_prints_them() {
        let cases: [(f64, &str); 9] = [
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (10.0, "10.0"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (-0.0, "-0.0"),
            (123.25, "123.25"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float(&format!("{x:e}")), want, "{x}");
        }
        assert_eq!(py_float(&format!("{:e}", 0.1f32)), "0.1");
        assert_eq!(py_float(&format!("{:e}", 123456789.0f32)), "123456790.0");
    }

    #[test]
    fn float32s_read_as_numpy_1_prints_them() {
        // The float32 nearest 1e-4 lies below it: numpy writes it `1e-04`.
        let cases: [(f32, &str); 6] = [
            (1e-4, "1e-04"),
            (1.0001e-4, "0.00010001"),
            (0.1, "0.1"),
            (123456789.0, "123456790.0"),
            (0.0, "0.0"),
            (f32::NEG_INFINITY, "-inf"),
        ];
        for (x, want) in cases {
            assert_eq!(np_float32(x), want, "{x}");
        }
    }
}
