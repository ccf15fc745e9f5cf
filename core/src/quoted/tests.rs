//! Each style against the helper it replaced (kept here as a plain
//! reference, over `std`'s `String`), on chosen cases (multibyte,
//! unprintable, cut inside an escape, surrogates and bytes that are not
//! UTF-8) and on random text.
extern crate std;

use std::format;
use std::string::{String, ToString};

use proptest::prelude::*;

use super::*;
use crate::Escaped;

fn q(text: &str, keep: usize, style: QuoteStyle) -> String {
    Quoted::new(text, keep, style).to_string()
}

fn qb(text: &[u8], keep: usize, style: QuoteStyle) -> String {
    Quoted::from_bytes(text, keep, style).to_string()
}

/// The shared-memory messages' `Quoted`, as it was.
fn name_reference(text: &str, keep: usize) -> String {
    let mut out = String::from("\"");
    let mut kept = 0;
    let mut cut = false;
    for c in text.chars() {
        let escaped = Escaped(c.encode_utf8(&mut [0; 4])).to_string();
        kept += escaped.chars().count();
        if kept > keep {
            cut = true;
            break;
        }
        out.push_str(&escaped);
    }
    out.push('"');
    if cut {
        out.push_str(&format!("... ({} bytes)", text.len()));
    }
    out
}

/// The core's files' `quoted`, as it was.
fn header_reference(text: &str, keep: usize) -> String {
    let escaped = Escaped(text).to_string();
    if escaped.len() <= keep {
        return format!("\"{escaped}\"");
    }
    let mut cut = keep;
    while !escaped.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("\"{}\"…", &escaped[..cut])
}

/// The Python extension's `excerpt`, as it was.
fn argument_reference(text: &str, keep: usize) -> String {
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let mut out = format!("\"{}\"", Escaped(&text[..end]));
    let chars = text.chars().count();
    if chars > keep {
        out.push_str(&format!("... ({chars} characters)"));
    }
    out
}

/// Python's `unicode_escape`, one character at a time.
fn unicode_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let n = c as u32;
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            _ if n < 0x100 => out.push_str(&format!("\\x{n:02x}")),
            _ if n < 0x10000 => out.push_str(&format!("\\u{n:04x}")),
            _ => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}

/// `_short`.
fn short_reference(text: &str, keep: usize) -> String {
    let mut out = unicode_escape(text);
    if out.len() > keep {
        out.truncate(keep);
        out.push_str("...");
    }
    out
}

/// `_quote`.
fn quote_reference(text: &str, keep: usize) -> String {
    let mut out = unicode_escape(text).replace('\'', "\\'");
    if out.len() > keep {
        out.truncate(keep);
        out.push_str("...");
    }
    format!("'{out}'")
}

/// `repr` of text that is printable ASCII (what `_short` gives).
fn ascii_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        if c == '\\' || c == quote {
            out.push('\\');
        }
        out.push(c);
    }
    out.push(quote);
    out
}

/// The native files' `is_unprintable`, as it was but for plane 14's
/// variation selectors.
fn unprintable_reference(c: char) -> bool {
    let n = c as u32;
    let control = n < 0x20 || (0x7f..0xa0).contains(&n);
    let format = matches!(
        n,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private = matches!(n, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let separator = n == 0x2028 || n == 0x2029;
    let unassigned = (n & 0xFFFE) == 0xFFFE
        || (0xFDD0..=0xFDEF).contains(&n)
        || (0x40000..=0xDFFFF).contains(&n)
        // Not the variation selectors U+E0100 to U+E01EF (category Mn),
        // which the native files' helper escaped, unlike Python.
        || (0xE0080..=0xE00FF).contains(&n)
        || (0xE01F0..=0xEFFFF).contains(&n);
    control || format || private || separator || unassigned
}

/// The native files' `printable`, as it was.
fn printable_reference(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if unprintable_reference(c) {
            out.push_str(&unicode_escape(c.encode_utf8(&mut [0; 4])));
        } else {
            out.push(c);
        }
    }
    out
}

/// The native files' `repr`, as it was.
fn repr_reference(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        let n = c as u32;
        match c {
            '\\' | '\t' | '\n' | '\r' => out.push_str(&unicode_escape(c.encode_utf8(&mut [0; 4]))),
            _ if c == quote => {
                out.push('\\');
                out.push(c);
            }
            _ if n < 0x20 || (0x7f..0xa0).contains(&n) => out.push_str(&format!("\\x{n:02x}")),
            _ if unprintable_reference(c) && n < 0x10000 => out.push_str(&format!("\\u{n:04x}")),
            _ if unprintable_reference(c) => out.push_str(&format!("\\U{n:08x}")),
            _ => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[test]
fn rust_styles_quote_escape_and_cut() {
    let ansi = "x\u{1b}[2J\t\"ü\"\\";
    let escaped = "x\\u{1b}[2J\\t\\\"ü\\\"\\\\";
    for style in [QuoteStyle::Name, QuoteStyle::Header, QuoteStyle::Argument] {
        assert_eq!(q(ansi, 64, style), format!("\"{escaped}\""), "{style:?}");
        assert_eq!(q("", 0, style), "\"\"", "{style:?}");
    }
    // Name: whole escapes only, then the text's bytes.
    assert_eq!(q("ab\u{1b}", 8, QuoteStyle::Name), "\"ab\\u{1b}\"");
    assert_eq!(q("ab\u{1b}", 7, QuoteStyle::Name), "\"ab\"... (3 bytes)");
    assert_eq!(
        q(&"é".repeat(65), 64, QuoteStyle::Name),
        format!("\"{}\"... (130 bytes)", "é".repeat(64))
    );
    // Header: bytes of the escaped text, which may cut an escape.
    assert_eq!(q("ab\u{1b}", 5, QuoteStyle::Header), "\"ab\\u{\"…");
    assert_eq!(q("aé", 2, QuoteStyle::Header), "\"a\"…");
    assert_eq!(q("aé", 3, QuoteStyle::Header), "\"aé\"");
    // Argument: characters of the text itself, escaped after the cut.
    assert_eq!(
        q("\u{1b}\u{1b}\u{1b}", 2, QuoteStyle::Argument),
        "\"\\u{1b}\\u{1b}\"... (3 characters)"
    );
    assert_eq!(
        q("\u{202e}\u{feff}\u{e000}", 64, QuoteStyle::Argument),
        "\"\\u{202e}\\u{feff}\\u{e000}\""
    );
    assert_eq!(q("\0\r\n", 64, QuoteStyle::Name), "\"\\0\\r\\n\"");
}

#[test]
fn python_styles_escape_as_python_does() {
    assert_eq!(
        q("a\x1b[2J\né", 64, QuoteStyle::PyShort),
        "a\\x1b[2J\\n\\xe9"
    );
    assert_eq!(
        q(&"x".repeat(70), 64, QuoteStyle::PyShort),
        format!("{}...", "x".repeat(64))
    );
    // Cut inside an escape, as Python's slice cuts.
    assert_eq!(q("ab\u{1f600}", 5, QuoteStyle::PyShort), "ab\\U0...");
    assert_eq!(
        q("\u{100}\u{ffff}\u{10ffff}", 64, QuoteStyle::PyShort),
        "\\u0100\\uffff\\U0010ffff"
    );
    assert_eq!(q("it's", 64, QuoteStyle::PyQuote), "'it\\'s'");
    assert_eq!(q("it's", 3, QuoteStyle::PyQuote), "'it\\...'");
    assert_eq!(q("it's", 64, QuoteStyle::PyShortRepr), "\"it's\"");
    assert_eq!(
        q("it's \"x\"", 64, QuoteStyle::PyShortRepr),
        "'it\\'s \"x\"'"
    );
    assert_eq!(q("it's", 2, QuoteStyle::PyShortRepr), "'it...'");
    assert_eq!(q("\u{202e}", 64, QuoteStyle::PyShortRepr), "'\\\\u202e'");
    assert_eq!(q("a\\b", 64, QuoteStyle::PyRepr), "'a\\\\b'");
    assert_eq!(q("it's", 0, QuoteStyle::PyRepr), "\"it's\"");
    assert_eq!(
        q(
            "\x7f\u{85}é\u{ad}\u{10ffff}\u{e0080}",
            0,
            QuoteStyle::PyRepr
        ),
        "'\\x7f\\x85é\\u00ad\\U0010ffff\\U000e0080'"
    );
    assert_eq!(
        q(
            "caf\u{e9}\u{202e}\n\u{2028}\u{50000}",
            0,
            QuoteStyle::PyPrintable
        ),
        "caf\u{e9}\\u202e\\n\\u2028\\U00050000"
    );
    assert_eq!(
        q("日本\u{1f600}", 0, QuoteStyle::PyPrintable),
        "日本\u{1f600}"
    );
}

#[test]
fn surrogates_and_bytes_that_are_not_utf8() {
    // A lone surrogate as `surrogatepass` writes it, and a stray byte.
    let text = b"a\xed\xb2\x80b\xffc\xe2\x82";
    assert_eq!(
        qb(text, 64, QuoteStyle::PyShort),
        "a\\udc80b\\udcffc\\udce2\\udc82"
    );
    assert_eq!(
        qb(text, 64, QuoteStyle::PyPrintable),
        "a\\udc80b\\udcffc\\udce2\\udc82"
    );
    assert_eq!(
        qb(text, 64, QuoteStyle::PyRepr),
        "'a\\udc80b\\udcffc\\udce2\\udc82'"
    );
    assert_eq!(
        qb(text, 64, QuoteStyle::Name),
        "\"a\\u{dc80}b\\u{dcff}c\\u{dce2}\\u{dc82}\""
    );
    assert_eq!(
        qb(text, 2, QuoteStyle::Argument),
        "\"a\\u{dc80}\"... (7 characters)"
    );
    // Overlong and out-of-range sequences are bytes, one at a time.
    assert_eq!(
        qb(b"\xc0\xaf\xf4\x90\x80\x80", 64, QuoteStyle::PyShort),
        "\\udcc0\\udcaf\\udcf4\\udc90\\udc80\\udc80"
    );
    // A surrogate pair stays two surrogates, as in a Python str.
    assert_eq!(
        qb(b"\xed\xa0\xbd\xed\xb8\x80", 64, QuoteStyle::PyShort),
        "\\ud83d\\ude00"
    );
}

#[test]
fn names_round_trip() {
    for style in QuoteStyle::ALL {
        assert_eq!(QuoteStyle::from_name(style.name()), Some(style));
    }
}

fn text() -> impl Strategy<Value = String> {
    // Mostly the characters that are escaped, and some of any kind.
    let chosen = prop::sample::select(std::vec![
        'a',
        ' ',
        '\'',
        '"',
        '\\',
        '\0',
        '\t',
        '\n',
        '\u{1b}',
        '\u{7f}',
        '\u{85}',
        'é',
        '\u{ad}',
        '\u{202e}',
        '\u{2028}',
        '\u{feff}',
        '\u{e000}',
        '\u{fffe}',
        '日',
        '\u{1f600}',
        '\u{50000}',
        '\u{e0080}',
        '\u{10ffff}',
    ]);
    prop::collection::vec(prop_oneof![chosen, any::<char>()], 0..40)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 512 }))]

    #[test]
    fn every_style_writes_what_it_replaced(text in text(), keep in 0usize..48) {
        prop_assert_eq!(q(&text, keep, QuoteStyle::Name), name_reference(&text, keep));
        prop_assert_eq!(q(&text, keep, QuoteStyle::Header), header_reference(&text, keep));
        prop_assert_eq!(q(&text, keep, QuoteStyle::Argument), argument_reference(&text, keep));
        prop_assert_eq!(q(&text, keep, QuoteStyle::PyShort), short_reference(&text, keep));
        prop_assert_eq!(q(&text, keep, QuoteStyle::PyQuote), quote_reference(&text, keep));
        prop_assert_eq!(
            q(&text, keep, QuoteStyle::PyShortRepr),
            ascii_repr(&short_reference(&text, keep))
        );
        prop_assert_eq!(q(&text, keep, QuoteStyle::PyPrintable), printable_reference(&text));
        prop_assert_eq!(q(&text, keep, QuoteStyle::PyRepr), repr_reference(&text));
        prop_assert_eq!(format!("\"{}\"", Escaped(&text)), q(&text, usize::MAX, QuoteStyle::Header));
    }
}
