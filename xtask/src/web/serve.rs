//! The demo's file server, on 127.0.0.1 only: the static files of one
//! folder (web-demo/) and a few named files (`cargo xtask demo FILE`) at
//! `/file/NAME`, each in byte ranges (`Range: bytes=a-b`), one request per
//! connection.
//!
//! It answers only requests addressed to it: a `Host` header other than
//! `127.0.0.1` or `localhost` (with the server's port, or without a port)
//! is refused with 421, so that a page of another site whose name an
//! attacker points at 127.0.0.1 (DNS rebinding) cannot read what is served.
//! The named files must be regular files when the server starts
//! ([`Site::new`]), and are checked again at each request.
//!
//! Whatever a client sends, the server holds a bounded amount of it and
//! for a bounded time: the request's head is read into at most
//! [`MAX_HEAD`] bytes and judged by [`parse_head`], a pure function (the
//! tests drive it with random and mutated requests); a path is resolved and
//! checked before anything is opened (inside the served folder after
//! symbolic links are followed, a regular file, no `..`), so a FIFO or
//! `/dev/zero` is refused, never read; files are streamed in chunks, only
//! the range asked for; every connection has a deadline for its head and a
//! timeout on each write, and at most [`Limits::connections`] are served at
//! once (the next waits in the listen queue until one ends).
#![forbid(unsafe_code)]

use std::fs::{self, File};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The longest request line, without its line ending (longer: 414).
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// The longest header line, without its line ending (longer: 431).
pub const MAX_HEADER_LINE: usize = 8 * 1024;
/// The most header lines a request may have (more: 431).
pub const MAX_HEADERS: usize = 64;
/// The longest head, request line, headers and the empty line that ends
/// them included (longer: 431).
pub const MAX_HEAD: usize = 16 * 1024;

/// After an answer, the most bytes read and dropped while waiting for the
/// client to see it and hang up (so that closing with unread bytes, which
/// sends a reset, does not destroy the answer first).
const LINGER_BYTES: usize = 256 * 1024;
/// ... and the longest that wait lasts.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// The chunk a served file is sent in.
const CHUNK: usize = 64 * 1024;

/// How long and how many connections the server gives its clients.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The time a client has to send its request's head, and for each
    /// write of the answer to go through.
    pub timeout: Duration,
    /// The most connections served at once.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            connections: 32,
        }
    }
}

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

fn reject(status: u16, reason: impl Into<String>) -> Reject {
    Reject {
        status,
        reason: reason.into(),
    }
}

/// HTTP's name for `status`.
fn phrase(status: u16) -> &'static str {
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
fn misdirected(port: u16) -> Reject {
    reject(
        421,
        format!("this server answers only to Host 127.0.0.1:{port} or localhost:{port}"),
    )
}

/// What a `Range` header asks of a file of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Range {
    /// Bytes `start..end` (`end` exclusive, past `start`, at most `len`).
    Bytes(u64, u64),
    /// A range that starts past the end (or the last 0 bytes): 416.
    Unsatisfiable,
    /// Not one range of bytes (another unit, several ranges, bad syntax):
    /// ignored, as RFC 9110 allows, so the whole file is sent.
    Ignored,
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n`, clamped to a file of `len` bytes.
fn byte_range(header: &str, len: u64) -> Range {
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

/// What is served: the static files under `root` and each of `files` at
/// `/file/NAME`.
#[derive(Clone, Debug)]
pub struct Site {
    /// Canonical (symbolic links resolved), so that a resolved path can be
    /// checked to lie under it.
    root: PathBuf,
    files: Vec<PathBuf>,
}

impl Site {
    /// The folder `root` (which must exist) and `files`, each a regular
    /// file ([`served_file`]): a device or a FIFO is refused here, before
    /// any page asks for it (and again at each request, in case it was
    /// swapped since).
    pub fn new(root: &Path, files: Vec<PathBuf>) -> Result<Self, String> {
        for file in &files {
            served_file(file)?;
        }
        Ok(Self {
            root: root
                .canonicalize()
                .map_err(|e| format!("{}: {e}", root.display()))?,
            files,
        })
    }

    /// The file `path` names, checked and opened: the open file, its
    /// length and its content type. Nothing is opened before the path is
    /// known to be a regular file inside what is served.
    fn resolve(&self, path: &str) -> Result<(File, u64, &'static str), Reject> {
        if let Some(name) = path.strip_prefix("/file/") {
            let file = self
                .files
                .iter()
                .find(|f| f.file_name().is_some_and(|n| n.to_str() == Some(name)));
            return match file {
                Some(file) => {
                    let (open, len) = open_regular(file)?;
                    Ok((open, len, "application/octet-stream"))
                }
                None => Err(reject(404, "no such file is served")),
            };
        }
        let mut file = self.root.clone();
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            if segment == "." || segment == ".." {
                return Err(reject(403, "a path with a . or .. segment"));
            }
            file.push(segment);
        }
        if file.is_dir() {
            file.push("index.html");
        }
        let file = file.canonicalize().map_err(|_| reject(404, "not found"))?;
        if !file.starts_with(&self.root) {
            return Err(reject(403, "a link to outside the served folder"));
        }
        let (open, len) = open_regular(&file)?;
        Ok((open, len, content_type(&file)))
    }
}

/// Checks that `path` (symbolic links followed) is a file the server can
/// serve in byte ranges: a regular file, not a folder, a device such as
/// `/dev/zero` or a FIFO, which would be endless or block. The error names
/// the file and what it is.
pub fn served_file(path: &Path) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(format!(
        "{}: not a regular file ({what}), so it cannot be served in byte ranges",
        path.display()
    ))
}

/// `path` opened if it is a regular file (checked before opening it, so a
/// FIFO is never opened, and again on the open file, in case it was
/// swapped in between).
fn open_regular(path: &Path) -> Result<(File, u64), Reject> {
    let before = fs::metadata(path).map_err(|_| reject(404, "not found"))?;
    if !before.is_file() {
        return Err(reject(403, "not a regular file"));
    }
    let file = File::open(path).map_err(|e| match e.kind() {
        ErrorKind::PermissionDenied => reject(403, "not readable"),
        _ => reject(404, "not found"),
    })?;
    let meta = file.metadata().map_err(|_| reject(404, "not found"))?;
    if !meta.is_file() || meta.dev() != before.dev() || meta.ino() != before.ino() {
        return Err(reject(403, "the file changed while being opened"));
    }
    Ok((file, meta.len()))
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        _ => "text/plain; charset=utf-8",
    }
}

/// The connections being served, at most `max`.
struct Slots {
    /// Connections served now, and the most there have been at once.
    count: Mutex<(usize, usize)>,
    freed: Condvar,
    max: usize,
}

impl Slots {
    fn lock(&self) -> MutexGuard<'_, (usize, usize)> {
        // A panic elsewhere leaves the counts whole (each change is one statement).
        self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until fewer than `max` connections are served, then takes a place.
    fn take(self: &Arc<Self>) -> Slot {
        let mut count = self.lock();
        while count.0 >= self.max {
            count = self.freed.wait(count).unwrap_or_else(|e| e.into_inner());
        }
        count.0 += 1;
        count.1 = count.1.max(count.0);
        Slot(Arc::clone(self))
    }
}

/// One connection's place, given back when dropped.
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.lock().0 -= 1;
        self.0.freed.notify_one();
    }
}

/// A running server; it serves until the process exits.
pub struct Server {
    addr: SocketAddr,
    #[cfg_attr(not(test), allow(dead_code))]
    slots: Arc<Slots>,
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port) and serves `site`
    /// from threads of this process, at most `limits.connections` at once.
    pub fn start(port: u16, site: Site, limits: Limits) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let slots = Arc::new(Slots {
            count: Mutex::new((0, 0)),
            freed: Condvar::new(),
            max: limits.connections.max(1),
        });
        let site = Arc::new(site);
        let accepting = Arc::clone(&slots);
        thread::Builder::new()
            .name("demo-server".into())
            .spawn(move || {
                loop {
                    let slot = accepting.take();
                    let stream = match listener.accept() {
                        Ok((stream, _)) => stream,
                        Err(_) => {
                            // Out of file descriptors, or the client gave
                            // up first: the slot is given back; a pause
                            // keeps a lasting error from spinning.
                            drop(slot);
                            thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                    };
                    let site = Arc::clone(&site);
                    // If no thread can be made, the closure (slot and
                    // stream with it) is dropped: the connection closes.
                    let _ = thread::Builder::new().spawn(move || {
                        let _slot = slot;
                        // A client that hangs up or stalls is no concern of the server's.
                        let _ = connection(stream, &site, limits, addr.port());
                    });
                }
            })?;
        Ok(Self { addr, slots })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The most connections it has served at once.
    #[cfg(test)]
    fn peak(&self) -> usize {
        self.slots.lock().1
    }
}

/// One connection to the server on `port`: its head read (within
/// `limits.timeout`, at most [`MAX_HEAD`] bytes), its answer, a lingering
/// close.
fn connection(mut stream: TcpStream, site: &Site, limits: Limits, port: u16) -> io::Result<()> {
    stream.set_write_timeout(Some(limits.timeout))?;
    let deadline = Instant::now() + limits.timeout;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0; 4096];
    let parsed = loop {
        match parse_head(&buf) {
            Ok(Some(request)) => break Ok(request),
            Err(refusal) => break Err(refusal),
            Ok(None) => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Err(reject(
                408,
                format!("no whole request in {:?}", limits.timeout),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        // parse_head refuses a head of MAX_HEAD bytes: there is room.
        let room = (MAX_HEAD - buf.len()).min(chunk.len());
        match stream.read(&mut chunk[..room]) {
            Ok(0) => return Ok(()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if buf.is_empty() {
                    // Opened and never used (browsers open spare connections).
                    return Ok(());
                }
                break Err(reject(
                    408,
                    format!("no whole request in {:?}", limits.timeout),
                ));
            }
            Err(e) => return Err(e),
        }
    };
    let answered = match parsed {
        Ok(request) if !addressed_here(request.host.as_deref(), port) => {
            let body = request.method == Method::Get;
            refuse(&mut stream, &misdirected(port), body, "")
        }
        Ok(request) => answer(&mut stream, site, &request),
        Err(refusal) => refuse(&mut stream, &refusal, true, ""),
    };
    linger(stream, limits);
    answered
}

/// Sends the file `request` asks for, or why not.
fn answer(stream: &mut TcpStream, site: &Site, request: &Request) -> io::Result<()> {
    let body = request.method == Method::Get;
    let (mut file, len, kind) = match site.resolve(&request.path) {
        Ok(found) => found,
        Err(refusal) => return refuse(stream, &refusal, body, ""),
    };
    let range = request
        .range
        .as_deref()
        .map_or(Range::Ignored, |h| byte_range(h, len));
    let (status, start, end) = match range {
        Range::Bytes(start, end) => (206, start, end),
        Range::Ignored => (200, 0, len),
        Range::Unsatisfiable => {
            let refusal = reject(416, format!("the file has {len} bytes"));
            return refuse(
                stream,
                &refusal,
                body,
                &format!("Content-Range: bytes */{len}\r\n"),
            );
        }
    };
    let content_range = if status == 206 {
        format!("Content-Range: bytes {start}-{}/{len}\r\n", end - 1)
    } else {
        String::new()
    };
    write!(
        stream,
        "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Accept-Ranges: bytes\r\n{content_range}Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        phrase(status),
        end - start
    )?;
    if !body {
        return stream.flush();
    }
    file.seek(SeekFrom::Start(start))?;
    let mut left = end - start;
    let mut chunk = vec![0; CHUNK];
    while left > 0 {
        let want = left.min(CHUNK as u64) as usize;
        let n = match file.read(&mut chunk[..want]) {
            // The file shrank since its length was taken: the answer ends
            // short, and the client sees fewer bytes than it was promised.
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        stream.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    stream.flush()
}

/// A refusal: its status, `extra` header lines and (if `body`) its reason.
fn refuse(stream: &mut TcpStream, refusal: &Reject, body: bool, extra: &str) -> io::Result<()> {
    let text = format!("{}\n", refusal.reason);
    let allow = if refusal.status == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    write!(
        stream,
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         {allow}{extra}Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        refusal.status,
        phrase(refusal.status),
        text.len()
    )?;
    if body {
        stream.write_all(text.as_bytes())?;
    }
    stream.flush()
}

/// Closes `stream` once the client has had the answer: no more is sent,
/// and what it still sends is read and dropped (at most [`LINGER_BYTES`],
/// for at most [`LINGER_TIME`]) until it hangs up, since closing with
/// unread bytes resets the connection, which can destroy an answer the
/// client has not read yet.
fn linger(mut stream: TcpStream, limits: Limits) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER_TIME.min(limits.timeout);
    let mut dropped = 0;
    let mut chunk = [0; 4096];
    while dropped < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => dropped += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests;
