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
//! [`MAX_HEAD`] bytes and judged by [`parse_head`] (in [`http`]), a pure
//! function (the tests drive it with random and mutated requests); a path is resolved and
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

mod http;

use http::{
    MAX_HEAD, Method, Range, Reject, Request, addressed_here, byte_range, misdirected, parse_head,
    phrase, reject,
};

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
