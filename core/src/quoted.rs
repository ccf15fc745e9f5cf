//! The one helper that puts text into a message: [`Quoted`], the text, how
//! much of it a message keeps and a [`QuoteStyle`], which says how it is
//! escaped, cut and quoted. Every layer quotes through it (the core's and
//! the native crate's messages, the Python extension's, the Python
//! package's through `_native.quoted`), so that no name, key or argument
//! (10,000 bytes long, or ESC sequences, or a bidirectional override) can
//! make a message long, break its line or drive a terminal.
//!
//! Text is UTF-8, or bytes as Python's `surrogatepass` writes a `str` and
//! Rust's `OsStr::as_encoded_bytes` holds a path (UTF-8 in which the
//! surrogates U+D800 to U+DFFF may appear): [`Quoted::from_bytes`]. A byte
//! that is not part of such a sequence reads as Python's `surrogateescape`
//! decodes it (byte `0x80 + k` as U+DC80 + k), so that every byte of a
//! file name is shown.
//!
//! `Display` writes straight to the formatter: no allocation.
#![forbid(unsafe_code)]

use core::fmt::{self, Write};

use crate::error::{ShortStr, invisible};

/// How [`Quoted`] escapes, cuts and quotes its text: one style for each
/// way a layer quoted text before there was one helper, each writing
/// exactly what that layer wrote (the messages are asserted by tests).
///
/// Two escapings are used. *Rust escaping* ([`Escaped`](crate::Escaped)):
/// `\0`, `\t`, `\r`, `\n`, other control characters as `\u{1b}`, `"` and
/// `\` with a backslash, the invisible characters (format characters,
/// separators, private use, noncharacters) and surrogates as `\u{202e}`,
/// the rest as it is. *Python escaping* (the `unicode_escape` codec): `\\`,
/// `\t`, `\n`, `\r`, printable ASCII as it is, everything else as `\xhh`,
/// `\uhhhh` or `\Uhhhhhhhh`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuoteStyle {
    /// Rust escaping in double quotes, cut before the escape that would
    /// make more than `keep` characters of it, then `... (N bytes)` with
    /// the whole text's length: names of shared memory.
    Name,
    /// Rust escaping in double quotes, cut after `keep` bytes of it (at a
    /// character of the escaped text, which may be inside an escape), then
    /// `…` after the closing quote: keys and names in a file's header.
    Header,
    /// The first `keep` characters of the text, with Rust escaping, in
    /// double quotes, then `... (N characters)` with the whole text's count
    /// when it had more: arguments quoted by the Python extension.
    Argument,
    /// Python escaping, cut after `keep` characters of it (then `...`), no
    /// quotes: the Python package's `_short(text, keep)`.
    PyShort,
    /// [`PyShort`](Self::PyShort) as Python's `repr` writes that string: in
    /// single quotes, unless it holds one and no double quote, with
    /// backslashes and the quote escaped: `repr(_short(text, keep))`.
    PyShortRepr,
    /// Python escaping with `'` escaped too, cut after `keep` characters of
    /// that (then `...`), in single quotes: the Python package's
    /// `_quote(text, keep)`.
    PyQuote,
    /// The characters Python counts unprintable (categories Cc, Cf, Cs, Co,
    /// Cn, Zl, Zp) with Python escaping, the rest as it is, never cut
    /// (`keep` is not read): the Python package's `_printable(text)`. The
    /// core has no Unicode database: Cn is the noncharacters and the planes
    /// with nothing assigned (4 to 13, and 14 but for its tags and
    /// variation selectors), Cf the list of Unicode 15.
    PyPrintable,
    /// Python's `repr` of the whole text (`keep` is not read): quoted as
    /// [`PyShortRepr`](Self::PyShortRepr) quotes, controls as `\xhh`, the
    /// characters [`PyPrintable`](Self::PyPrintable) escapes as `\uhhhh`
    /// or `\Uhhhhhhhh`, the rest as it is.
    PyRepr,
}

impl QuoteStyle {
    /// Every style, in the order they are declared.
    pub const ALL: [QuoteStyle; 8] = [
        QuoteStyle::Name,
        QuoteStyle::Header,
        QuoteStyle::Argument,
        QuoteStyle::PyShort,
        QuoteStyle::PyShortRepr,
        QuoteStyle::PyQuote,
        QuoteStyle::PyPrintable,
        QuoteStyle::PyRepr,
    ];

    /// The style's name for the bindings: `"name"`, `"header"`,
    /// `"argument"`, `"py_short"`, `"py_short_repr"`, `"py_quote"`,
    /// `"py_printable"`, `"py_repr"`.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::QuoteStyle;
    /// assert_eq!(QuoteStyle::PyShort.name(), "py_short");
    /// assert_eq!(QuoteStyle::from_name("py_short"), Some(QuoteStyle::PyShort));
    /// assert_eq!(QuoteStyle::from_name("short"), None);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            QuoteStyle::Name => "name",
            QuoteStyle::Header => "header",
            QuoteStyle::Argument => "argument",
            QuoteStyle::PyShort => "py_short",
            QuoteStyle::PyShortRepr => "py_short_repr",
            QuoteStyle::PyQuote => "py_quote",
            QuoteStyle::PyPrintable => "py_printable",
            QuoteStyle::PyRepr => "py_repr",
        }
    }

    /// The style of that [`name`](Self::name), if one has it.
    pub fn from_name(name: &str) -> Option<QuoteStyle> {
        QuoteStyle::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Text as a message quotes it: escaped, cut and quoted as its
/// [`QuoteStyle`] says.
///
/// # Examples
/// ```
/// use bytelens_core::{QuoteStyle, Quoted};
/// let name = "x\u{1b}[2J";
/// assert_eq!(Quoted::new(name, 64, QuoteStyle::Name).to_string(), "\"x\\u{1b}[2J\"");
/// assert_eq!(Quoted::new(name, 64, QuoteStyle::PyShort).to_string(), "x\\x1b[2J");
/// assert_eq!(Quoted::new("abcdef", 3, QuoteStyle::PyQuote).to_string(), "'abc...'");
/// assert_eq!(
///     Quoted::new(&"é".repeat(70), 64, QuoteStyle::Argument).to_string(),
///     format!("\"{}\"... (70 characters)", "é".repeat(64)),
/// );
/// // A Python str with a surrogate, as `surrogatepass` encodes it.
/// assert_eq!(Quoted::from_bytes(b"a\xed\xb2\x80", 64, QuoteStyle::PyPrintable).to_string(), "a\\udc80");
/// ```
#[derive(Clone, Copy)]
pub struct Quoted<'a> {
    text: &'a [u8],
    keep: usize,
    style: QuoteStyle,
    write: Writer,
}

impl<'a> Quoted<'a> {
    /// `text`, of which a message keeps about `keep` characters (what is
    /// counted depends on `style`).
    #[inline(always)]
    pub fn new(text: &'a str, keep: usize, style: QuoteStyle) -> Quoted<'a> {
        Quoted::from_bytes(text.as_bytes(), keep, style)
    }

    /// Like [`new`](Self::new), for text that may hold surrogates or bytes
    /// that are not UTF-8 (as `surrogateescape` decodes them: each such byte a lone surrogate).
    // Inlined, so that a caller's constant style links that style's writer
    // alone (the wasm package has a size budget).
    #[inline(always)]
    pub fn from_bytes(text: &'a [u8], keep: usize, style: QuoteStyle) -> Quoted<'a> {
        let write: Writer = match style {
            QuoteStyle::Name => name,
            QuoteStyle::Header => header,
            QuoteStyle::Argument => argument,
            QuoteStyle::PyShort => py_short,
            QuoteStyle::PyShortRepr => py_short_repr,
            QuoteStyle::PyQuote => py_quote,
            QuoteStyle::PyPrintable => py_printable,
            QuoteStyle::PyRepr => py_repr_text,
        };
        Quoted {
            text,
            keep,
            style,
            write,
        }
    }

    /// The style it is written in.
    ///
    /// # Examples
    /// ```
    /// use bytelens_core::{QuoteStyle, Quoted};
    /// assert_eq!(Quoted::new("x", 1, QuoteStyle::PyRepr).style(), QuoteStyle::PyRepr);
    /// ```
    pub fn style(&self) -> QuoteStyle {
        self.style
    }

    fn points(&self) -> Points<'a> {
        Points(self.text)
    }
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.write)(self, f)
    }
}

impl fmt::Debug for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quoted")
            .field("text", &self.text)
            .field("keep", &self.keep)
            .field("style", &self.style)
            .finish()
    }
}

/// How one style writes a [`Quoted`].
type Writer = fn(&Quoted<'_>, &mut fmt::Formatter<'_>) -> fmt::Result;

fn name(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_char('"')?;
    let cut = write_cut(
        q.points(),
        rust_piece,
        Cut::WholeEscapes,
        q.keep,
        &mut |c| f.write_char(c),
    )?;
    f.write_char('"')?;
    if cut {
        write!(f, "... ({} bytes)", q.text.len())?;
    }
    Ok(())
}

fn header(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_char('"')?;
    let cut = write_cut(q.points(), rust_piece, Cut::Bytes, q.keep, &mut |c| {
        f.write_char(c)
    })?;
    f.write_str(if cut { "\"…" } else { "\"" })
}

fn argument(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_char('"')?;
    let cut = write_cut(q.points(), rust_piece, Cut::TextChars, q.keep, &mut |c| {
        f.write_char(c)
    })?;
    f.write_char('"')?;
    if cut {
        write!(f, "... ({} characters)", q.points().count())?;
    }
    Ok(())
}

fn py_short(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if write_cut(q.points(), python_piece, Cut::Chars, q.keep, &mut |c| {
        f.write_char(c)
    })? {
        f.write_str("...")?;
    }
    Ok(())
}

fn py_quote(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_char('\'')?;
    if write_cut(q.points(), py_quote_piece, Cut::Chars, q.keep, &mut |c| {
        f.write_char(c)
    })? {
        f.write_str("...")?;
    }
    f.write_char('\'')
}

fn py_short_repr(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // The quote `repr` picks depends on what the kept text holds.
    let (mut single, mut double) = (false, false);
    write_cut(q.points(), python_piece, Cut::Chars, q.keep, &mut |c| {
        single |= c == '\'';
        double |= c == '"';
        Ok(())
    })?;
    let quote = if single && !double { '"' } else { '\'' };
    f.write_char(quote)?;
    let cut = write_cut(q.points(), python_piece, Cut::Chars, q.keep, &mut |c| {
        if c == '\\' || c == quote {
            f.write_char('\\')?;
        }
        f.write_char(c)
    })?;
    if cut {
        f.write_str("...")?;
    }
    f.write_char(quote)
}

fn py_printable(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let all = usize::MAX;
    write_cut(q.points(), py_printable_piece, Cut::Chars, all, &mut |c| {
        f.write_char(c)
    })?;
    Ok(())
}

fn py_repr_text(q: &Quoted<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let single = q.points().any(|n| n == u32::from('\''));
    let double = q.points().any(|n| n == u32::from('"'));
    let (quote, piece): (char, Escape) = if single && !double {
        ('"', |n| py_repr_piece(n, '"'))
    } else {
        ('\'', |n| py_repr_piece(n, '\''))
    };
    f.write_char(quote)?;
    write_cut(q.points(), piece, Cut::Chars, usize::MAX, &mut |c| {
        f.write_char(c)
    })?;
    f.write_char(quote)
}

/// What a style's `keep` counts.
#[derive(Clone, Copy)]
enum Cut {
    /// Characters of the escaped text.
    Chars,
    /// Bytes of the escaped text, cut at a character.
    Bytes,
    /// Characters of the escaped text, cut before a whole escape.
    WholeEscapes,
    /// Characters of the text itself.
    TextChars,
}

/// Writes the escaped text of `points` through `out`, at most `keep` of
/// what `cut` counts; whether some was left out.
fn write_cut(
    points: Points<'_>,
    escape: Escape,
    cut: Cut,
    keep: usize,
    // `dyn`: one copy of this loop, not one for each caller.
    out: &mut dyn FnMut(char) -> fmt::Result,
) -> Result<bool, fmt::Error> {
    let mut used = 0usize;
    for (i, n) in points.enumerate() {
        let piece = escape(n);
        match cut {
            Cut::TextChars if i >= keep => return Ok(true),
            Cut::WholeEscapes => {
                used += piece.as_str().chars().count();
                if used > keep {
                    return Ok(true);
                }
            }
            _ => {}
        }
        for c in piece.as_str().chars() {
            used += match cut {
                Cut::Chars => 1,
                Cut::Bytes => c.len_utf8(),
                Cut::WholeEscapes | Cut::TextChars => 0,
            };
            if used > keep {
                return Ok(true);
            }
            out(c)?;
        }
    }
    Ok(false)
}

/// How one code point is written (a piece holds every escape, 10 bytes
/// at most, and every character).
type Escape = fn(u32) -> ShortStr;

fn piece(write: impl FnOnce(&mut ShortStr) -> fmt::Result) -> ShortStr {
    let mut piece = ShortStr::default();
    let _ = write(&mut piece);
    piece
}

/// As [`Escaped`](crate::Escaped) writes it.
fn rust_piece(n: u32) -> ShortStr {
    piece(|p| rust(p, n, char::from_u32(n)))
}

/// As Python's `unicode_escape` codec writes it.
fn python_piece(n: u32) -> ShortStr {
    piece(|p| python(p, n))
}

/// [`python_piece`], and `'` as `\'`.
fn py_quote_piece(n: u32) -> ShortStr {
    match n {
        0x27 => piece(|p| p.write_str("\\'")),
        _ => python_piece(n),
    }
}

/// [`python_piece`] where [`py_unprintable`], else as it is.
fn py_printable_piece(n: u32) -> ShortStr {
    match char::from_u32(n) {
        Some(c) if !py_unprintable(n) => piece(|p| p.write_char(c)),
        _ => python_piece(n),
    }
}

/// As Python's `repr` writes it inside that quote.
fn py_repr_piece(n: u32, quote: char) -> ShortStr {
    piece(|p| py_repr(p, n, char::from_u32(n), quote))
}

/// `n` (the character `c`, unless a surrogate) as [`Escaped`](crate::Escaped) writes it.
pub(crate) fn rust(out: &mut impl Write, n: u32, c: Option<char>) -> fmt::Result {
    match c {
        Some('\0') => out.write_str("\\0"),
        Some(c) if c.is_control() || c == '"' || c == '\\' => write!(out, "{}", c.escape_default()),
        Some(c) if !invisible(c) => out.write_char(c),
        _ => write!(out, "\\u{{{n:x}}}"),
    }
}

/// `n` as Python's `unicode_escape` codec writes it.
fn python(out: &mut impl Write, n: u32) -> fmt::Result {
    match n {
        0x5c => out.write_str("\\\\"),
        0x09 => out.write_str("\\t"),
        0x0a => out.write_str("\\n"),
        0x0d => out.write_str("\\r"),
        0x20..=0x7e => out.write_char(char::from(n as u8)),
        0..=0xff => write!(out, "\\x{n:02x}"),
        0x100..=0xffff => write!(out, "\\u{n:04x}"),
        _ => write!(out, "\\U{n:08x}"),
    }
}

/// `n` as Python's `repr` of a `str` in `quote`s writes it (controls as
/// `\xhh`, other [`py_unprintable`] characters as `\uhhhh`).
fn py_repr(out: &mut impl Write, n: u32, c: Option<char>, quote: char) -> fmt::Result {
    match c {
        Some('\\' | '\t' | '\n' | '\r') => python(out, n),
        Some(c) if c == quote => write!(out, "\\{c}"),
        Some(c) if c.is_control() => write!(out, "\\x{n:02x}"),
        Some(c) if !py_unprintable(n) => out.write_char(c),
        _ if n < 0x10000 => write!(out, "\\u{n:04x}"),
        _ => write!(out, "\\U{n:08x}"),
    }
}

/// Whether Python counts `n` unprintable, as far as the core can tell
/// without a Unicode database (see [`QuoteStyle::PyPrintable`]).
fn py_unprintable(n: u32) -> bool {
    match char::from_u32(n) {
        None => true, // a surrogate
        Some(c) => {
            c.is_control()
                || invisible(c)
                || (0x40000..=0xdffff).contains(&n)
                || (0xe0080..=0xe00ff).contains(&n)
                || (0xe01f0..=0xeffff).contains(&n)
        }
    }
}

/// The code points of text as [`Quoted::from_bytes`] reads it: UTF-8 with
/// surrogates allowed, any other byte as `surrogateescape` decodes it.
#[derive(Clone)]
struct Points<'a>(&'a [u8]);

impl Iterator for Points<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let (n, len) = decode(self.0)?;
        self.0 = self.0.get(len..).unwrap_or(&[]);
        Some(n)
    }
}

/// The first code point of `bytes` and its length in bytes.
fn decode(bytes: &[u8]) -> Option<(u32, usize)> {
    let first = *bytes.first()?;
    let lead = u32::from(first);
    let tail = |i: usize| {
        bytes
            .get(i)
            .filter(|&&b| b & 0xc0 == 0x80)
            .map(|&b| u32::from(b & 0x3f))
    };
    let decoded = match first {
        0..=0x7f => Some((lead, 1)),
        0xc2..=0xdf => tail(1).map(|a| ((lead & 0x1f) << 6 | a, 2)),
        0xe0..=0xef => match (tail(1), tail(2)) {
            (Some(a), Some(b)) => Some(((lead & 0x0f) << 12 | a << 6 | b, 3)),
            _ => None,
        }
        .filter(|&(n, _)| n >= 0x800),
        0xf0..=0xf4 => match (tail(1), tail(2), tail(3)) {
            (Some(a), Some(b), Some(c)) => Some(((lead & 0x07) << 18 | a << 12 | b << 6 | c, 4)),
            _ => None,
        }
        .filter(|&(n, _)| (0x10000..=0x10ffff).contains(&n)),
        _ => None,
    };
    // Not UTF-8: the byte as `surrogateescape` reads it.
    Some(decoded.unwrap_or((0xdc00 + lead, 1)))
}

#[cfg(test)]
mod tests;
