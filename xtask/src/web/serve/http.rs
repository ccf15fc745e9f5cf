//! The request parser of the demo's file server: a request's head judged
//! by [`parse_head`], a pure function (the tests drive it with random and
//! mutated requests), within the limits below; whether it is addressed to
//! this server ([`addressed_here`]), and the byte range a `Range` header
//! asks for ([`byte_range`]).

/// The longest request line, without its line ending (longer: 414).
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// The longest header line, without its line ending (longer: 431).
pub const MAX_HEADER_LINE: usize = 8 * 1024;
/// The most header lines a request may have (more: 431).
pub const MAX_HEADERS: usize = 64;
/// The longest head, request line, headers and the empty line that ends
/// them included (longer: 431).
pub const MAX_HEAD: usize = 16 * 1024;

/// The methods served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
}

/// A request's head, as [`parse_head`] read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The target's path, percent-decoded, without its query: valid UTF-8
    /// with no NUL, starting with `/`. Not yet checked for `..`.
    pub path: String,
    /// The `Range` header's value, if it has one.
    pub range: Option<String>,
    /// The `Host` header's value (always there in HTTP/1.1; an HTTP/1.0
    /// request may have none).
    pub host: Option<String>,
    /// The head's length in bytes, its final empty line included.
    pub head_len: usize,
}

/// Why a request is refused: its HTTP status and a short reason (no
/// longer than about 100 characters, whatever the request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    pub status: u16,
    pub reason: String,
}

pub fn reject(status: u16, reason: impl Into<String>) -> Reject {
    Reject {
        status,
        reason: reason.into(),
    }
}

/// HTTP's name for `status`.
pub fn phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        421 => "Misdirected Request",
        408 => "Request Timeout",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// A token character (RFC 9110's `tchar`), what methods and header names are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The head of a request from `buf`, the bytes a client sent so far:
/// `Ok(Some(request))` once the head is whole and valid, `Ok(None)` while
/// it may still become so (then `buf` is shorter than [`MAX_HEAD`]), or
/// the status to refuse it with: 400 malformed, 405 a method other than GET
/// and HEAD, 414 a request line past [`MAX_REQUEST_LINE`], 431 a header
/// line past [`MAX_HEADER_LINE`], more than [`MAX_HEADERS`] headers or a
/// head past [`MAX_HEAD`], 505 an HTTP version other than 1.0 and 1.1.
///
/// Only whole lines are judged, so the answer for a prefix of `buf` that is
/// not `Ok(None)` is the answer for `buf` (its status, that is: of two
/// limits a head breaks, which one a prefix shows may depend on where it
/// ends): bytes can be read and this called again until it is not
/// `Ok(None)`. Lines end in CRLF or a bare
/// LF. Bytes after the head are not looked at.
///
/// ```ignore
/// let request = parse_head(b"GET /a%20b?q HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n");
/// assert_eq!(request.unwrap().unwrap().path, "/a b");
/// assert_eq!(parse_head(b"GET /a HT").unwrap(), None);
/// assert_eq!(parse_head(b"POST / HTTP/1.1\r\n").unwrap_err().status, 405);
/// ```
pub fn parse_head(buf: &[u8]) -> Result<Option<Request>, Reject> {
    let mut at = 0;
    let line_end = |at: &mut usize| -> Option<(&[u8], usize)> {
        let nl = buf[*at..].iter().position(|&b| b == b'\n')? + *at;
        let line = &buf[*at..nl];
        *at = nl + 1;
        Some((line.strip_suffix(b"\r").unwrap_or(line), *at))
    };
    // The bytes after the last whole line, less a CR that may start its end.
    let tail = |at: usize| {
        let rest = &buf[at..];
        rest.strip_suffix(b"\r").unwrap_or(rest).len()
    };

    let Some((line, _)) = line_end(&mut at) else {
        return if tail(0) > MAX_REQUEST_LINE {
            Err(too_long_line())
        } else {
            Ok(None)
        };
    };
    let (method, path, http11) = request_line(line)?;

    let (mut headers, mut range, mut host) = (0, None, None);
    loop {
        let Some((line, end)) = line_end(&mut at) else {
            let tail = tail(at);
            return if tail > MAX_HEADER_LINE {
                Err(too_long_header(headers + 1))
            } else if tail > 0 && headers == MAX_HEADERS {
                Err(too_many_headers())
            } else if buf.len() >= MAX_HEAD {
                Err(too_long_head())
            } else {
                Ok(None)
            };
        };
        if line.len() > MAX_HEADER_LINE {
            return Err(too_long_header(headers + 1));
        }
        if end > MAX_HEAD {
            return Err(too_long_head());
        }
        if line.is_empty() {
            if http11 && host.is_none() {
                return Err(reject(400, "an HTTP/1.1 request without a Host header"));
            }
            return Ok(Some(Request {
                method,
                path,
                range,
                host,
                head_len: end,
            }));
        }
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(too_many_headers());
        }
        let (name, value) = header(line, headers)?;
        if name.eq_ignore_ascii_case(b"range") {
            if range.is_some() {
                return Err(reject(400, "two Range headers"));
            }
            range = Some(String::from_utf8_lossy(value).into_owned());
        } else if name.eq_ignore_ascii_case(b"host") {
            if host.is_some() {
                return Err(reject(400, "two Host headers"));
            }
            host = Some(String::from_utf8_lossy(value).into_owned());
        }
    }
}

fn too_long_line() -> Reject {
    reject(
        414,
        format!("the request line is longer than {MAX_REQUEST_LINE} bytes"),
    )
}

fn too_long_header(n: usize) -> Reject {
    reject(
        431,
        format!("header line {n} is longer than {MAX_HEADER_LINE} bytes"),
    )
}

fn too_many_headers() -> Reject {
    reject(431, format!("more than {MAX_HEADERS} header lines"))
}

fn too_long_head() -> Reject {
    reject(
        431,
        format!("the request's head is longer than {MAX_HEAD} bytes"),
    )
}

/// `METHOD /target HTTP/1.x`: the method, the decoded path, and whether
/// the version is 1.1.
fn request_line(line: &[u8]) -> Result<(Method, String, bool), Reject> {
    if line.len() > MAX_REQUEST_LINE {
        return Err(too_long_line());
    }
    if let Some(i) = line.iter().position(|&b| !(b' '..=b'~').contains(&b)) {
        return Err(reject(
            400,
            format!(
                "byte {i} of the request line is {:#04x}, not printable ASCII",
                line[i]
            ),
        ));
    }
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(reject(
            400,
            "the request line is not METHOD, target and version, one space apart",
        ));
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(reject(400, "the request line has no method"));
    }
    let http11 = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(reject(
                505,
                format!(
                    "HTTP/{}.{} is not served, only 1.0 and 1.1",
                    *major as char, *minor as char
                ),
            ));
        }
        _ => return Err(reject(400, "the request line's version is not HTTP/1.x")),
    };
    let method = match method {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        _ => {
            // Token characters only (checked above), so safe to echo; cut short.
            let shown = String::from_utf8_lossy(&method[..method.len().min(24)]);
            let more = if method.len() > 24 { "..." } else { "" };
            return Err(reject(
                405,
                format!("method {shown}{more} is not served, only GET and HEAD"),
            ));
        }
    };
    if target.first() != Some(&b'/') {
        return Err(reject(400, "the request's target does not start with /"));
    }
    let end = target
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(target.len());
    Ok((method, percent_decode(&target[..end])?, http11))
}

/// `%XX` escapes decoded; the result must be UTF-8 without NUL.
fn percent_decode(raw: &[u8]) -> Result<String, Reject> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            match (
                raw.get(i + 1).and_then(|&b| hex(b)),
                raw.get(i + 2).and_then(|&b| hex(b)),
            ) {
                (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                _ => {
                    return Err(reject(
                        400,
                        format!("byte {i} of the path is a % not followed by two hex digits"),
                    ));
                }
            }
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    if out.contains(&0) {
        return Err(reject(400, "the path has a NUL byte"));
    }
    String::from_utf8(out).map_err(|e| {
        reject(
            400,
            format!(
                "the path is not UTF-8 (at byte {} decoded)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// `Name: value` (header number `n`): the name and the value without the
/// spaces around it.
fn header(line: &[u8], n: usize) -> Result<(&[u8], &[u8]), Reject> {
    if line[0] == b' ' || line[0] == b'\t' {
        return Err(reject(
            400,
            format!("header line {n} starts with white space (folded headers are obsolete)"),
        ));
    }
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(reject(400, format!("header line {n} has no colon")));
    };
    let name = &line[..colon];
    if !name.iter().all(|&b| is_tchar(b)) {
        return Err(reject(
            400,
            format!("header {n}'s name is not a token (no spaces before the colon)"),
        ));
    }
    let value = line[colon + 1..].trim_ascii();
    if let Some(i) = value
        .iter()
        .position(|&b| (b < b' ' && b != b'\t') || b == 0x7f)
    {
        return Err(reject(
            400,
            format!(
                "header {n}'s value has control byte {:#04x} at {i}",
                value[i]
            ),
        ));
    }
    Ok((name, value))
}

/// Whether a request whose `Host` header is `host` is addressed to this
/// server, listening on 127.0.0.1:`port`: `127.0.0.1` or `localhost` (in
/// any case), with that port or without one. A request without a `Host`
/// header (HTTP/1.0 allows it) is too: browsers always send one, and it is
/// a browser's page that DNS rebinding turns against the server.
pub fn addressed_here(host: Option<&str>, port: u16) -> bool {
    let Some(host) = host else {
        return true;
    };
    let name = match host.rsplit_once(':') {
        Some((name, p)) if p == port.to_string() => name,
        Some(_) => return false,
        None => host,
    };
    name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost")
}

/// The refusal of a request addressed to another host (see [`addressed_here`]).
pub fn misdirected(port: u16) -> Reject {
    reject(
        421,
        format!("this server answers only to Host 127.0.0.1:{port} or localhost:{port}"),
    )
}

/// What a `Range` header asks of a file of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// Bytes `start..end` (`end` exclusive, past `start`, at most `len`).
    Bytes(u64, u64),
    /// A range that starts past the end (or the last 0 bytes): 416.
    Unsatisfiable,
    /// Not one range of bytes (another unit, several ranges, bad syntax):
    /// ignored, as RFC 9110 allows, so the whole file is sent.
    Ignored,
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n`, clamped to a file of `len` bytes.
pub fn byte_range(header: &str, len: u64) -> Range {
    let Some((unit, spec)) = header.trim().split_once('=') else {
        return Range::Ignored;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return Range::Ignored;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return Range::Ignored;
    };
    let number = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u64>().ok())
    };
    match (number(a), number(b)) {
        // Past u64: necessarily past the end.
        (Some(None), _) => Range::Unsatisfiable,
        (Some(Some(first)), last) => {
            let last = match last {
                Some(Some(last)) if last < first => return Range::Ignored,
                Some(Some(last)) => last,
                Some(None) => u64::MAX,
                None if b.trim().is_empty() => u64::MAX,
                None => return Range::Ignored,
            };
            if first >= len {
                Range::Unsatisfiable
            } else {
                Range::Bytes(first, last.min(len - 1) + 1)
            }
        }
        (None, Some(n)) if a.trim().is_empty() => {
            let n = n.unwrap_or(u64::MAX).min(len);
            if n == 0 {
                Range::Unsatisfiable
            } else {
                Range::Bytes(len - n, len)
            }
        }
        _ => Range::Ignored,
    }
}

#[cfg(test)]
mod tests;
