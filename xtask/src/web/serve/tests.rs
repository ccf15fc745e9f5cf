//! The server on 127.0.0.1 (port 0, in this process) driven by hostile
//! clients (the request parser's own tests are in http/tests.rs).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::http::MAX_HEADERS;
use super::*;

// The server, driven over TCP.

/// A folder of files to serve, removed when dropped.
struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("xtask-serve-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("root/sub")).unwrap();
        fs::write(dir.join("root/index.html"), "<p>hello</p>").unwrap();
        fs::write(dir.join("root/sub/index.html"), "sub").unwrap();
        fs::write(dir.join("root/app.js"), "export {};").unwrap();
        fs::write(dir.join("root/data.bin"), pattern(100_000)).unwrap();
        fs::write(dir.join("secret.txt"), "outside").unwrap();
        mkfifo(&dir.join("root/pipe"));
        mkfifo(&dir.join("outside.fifo"));
        symlink(dir.join("outside.fifo"), dir.join("root/to-fifo")).unwrap();
        symlink(dir.join("secret.txt"), dir.join("root/to-secret")).unwrap();
        fs::write(dir.join("served.bin"), pattern(1000)).unwrap();
        fs::write(dir.join("swapped.bin"), pattern(10)).unwrap();
        Self { dir }
    }

    fn start(&self, limits: Limits) -> Server {
        // swapped.bin: a FIFO once the server runs (`fifos_are_refused_without_blocking`).
        let files = vec![self.dir.join("served.bin"), self.dir.join("swapped.bin")];
        let site = Site::new(&self.dir.join("root"), files).unwrap();
        Server::start(0, site, limits).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

fn quick() -> Limits {
    Limits {
        timeout: Duration::from_millis(300),
        connections: 4,
    }
}

/// An answer: its status, head and body, and how long it took to come and the connection to close.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
    took: Duration,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Reads an answer until the server closes; fails after 5 s rather than hanging.
fn read_answer(stream: &mut TcpStream, start: Instant) -> Answer {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut all = vec![];
    let mut chunk = [0; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("no whole answer in 5 s ({e}); {} bytes came", all.len()),
        }
        assert!(all.len() < 1 << 24, "an answer of 16 MiB and more");
    }
    let took = start.elapsed();
    if all.is_empty() {
        return Answer {
            status: 0,
            head: String::new(),
            body: all,
            took,
        };
    }
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head")
        + 4;
    let head = String::from_utf8(all[..end].to_vec()).unwrap();
    let status = head[9..12].parse().unwrap();
    Answer {
        status,
        head,
        body: all[end..].to_vec(),
        took,
    }
}

fn ask(server: &Server, request: &[u8]) -> Answer {
    let start = Instant::now();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.write_all(request).unwrap();
    read_answer(&mut stream, start)
}

fn get(server: &Server, path: &str, range: Option<&str>) -> Answer {
    let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
    ask(
        server,
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{range}\r\n").as_bytes(),
    )
}

/// Runs the test `name` (of this module) alone in a child process, this
/// test binary again, under a 2 GiB address-space limit (`ulimit -v`) and a
/// 30 s time limit, so that a server that reads without bound fails the test
/// instead of exhausting the machine's memory; `body` is the test, run in
/// the child.
fn in_bounded_child(name: &str, body: impl FnOnce()) {
    const CHILD: &str = "XTASK_SERVE_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return body();
    }
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -v 2097152 && exec \"$@\"", "sh"])
        .arg(exe)
        .args(["--exact", &format!("{module}::{name}"), "--test-threads=1"])
        .env(CHILD, "1")
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} ran past 30 s");
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "{name}, under a 2 GiB address-space limit: {status}"
    );
}

#[test]
fn paths_out_of_the_folder_and_devices_are_refused_at_once() {
    in_bounded_child(
        "paths_out_of_the_folder_and_devices_are_refused_at_once",
        paths_and_devices,
    );
}

fn paths_and_devices() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    for path in [
        "/../../../../dev/zero",
        "/%2e%2e/%2E%2E/%2e%2e/%2e%2e/dev/zero",
        "/sub/../../secret.txt",
        "/./index.html",
    ] {
        let answer = get(&server, path, None);
        assert_eq!(answer.status, 403, "{path}");
        assert_eq!(answer.body, b"a path with a . or .. segment\n", "{path}");
        assert!(
            answer.took < Duration::from_secs(2),
            "{path}: {:?}",
            answer.took
        );
    }
    let answer = get(&server, "/to-secret", None);
    assert_eq!(
        (answer.status, &answer.body[..]),
        (403, &b"a link to outside the served folder\n"[..])
    );
    for path in [
        "/file/../../../../dev/zero",
        "/file/secret.txt",
        "/nothere",
        "/file/",
    ] {
        assert_eq!(get(&server, path, None).status, 404, "{path}");
    }
}

#[test]
fn fifos_are_refused_without_blocking() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    // A served file made a FIFO after the server started.
    fs::remove_file(fixture.dir.join("swapped.bin")).unwrap();
    mkfifo(&fixture.dir.join("swapped.bin"));
    // In the folder, linked from it to outside, and given as a served file.
    for (path, status, reason) in [
        ("/pipe", 403, "not a regular file\n"),
        ("/to-fifo", 403, "a link to outside the served folder\n"),
        ("/file/swapped.bin", 403, "not a regular file\n"),
    ] {
        let answer = get(&server, path, None);
        assert_eq!(
            (answer.status, &answer.body[..]),
            (status, reason.as_bytes()),
            "{path}"
        );
        assert!(
            answer.took < Duration::from_secs(2),
            "{path}: {:?}",
            answer.took
        );
    }
}

#[test]
fn static_files_ranges_and_head() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    let data = pattern(100_000);

    let index = get(&server, "/", None);
    assert_eq!((index.status, &index.body[..]), (200, &b"<p>hello</p>"[..]));
    assert_eq!(
        index.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(get(&server, "/sub/", None).body, b"sub");
    assert_eq!(get(&server, "/sub", None).body, b"sub");
    assert_eq!(
        get(&server, "/app.js?v=1", None).header("content-type"),
        Some("text/javascript; charset=utf-8")
    );

    let whole = get(&server, "/data.bin", None);
    assert_eq!((whole.status, whole.body == data), (200, true));
    assert_eq!(whole.header("content-range"), None);
    for (range, start, end) in [
        ("bytes=10-19", 10, 20),
        ("bytes=-5", 99_995, 100_000),
        ("bytes=99990-", 99_990, 100_000),
        ("bytes=99999-200000", 99_999, 100_000),
        ("bytes=0-70000", 0, 70_001),
    ] {
        let answer = get(&server, "/data.bin", Some(range));
        assert_eq!(answer.status, 206, "{range}");
        assert!(
            answer.body == data[start..end],
            "{range}: {} bytes",
            answer.body.len()
        );
        let content_range = format!("bytes {start}-{}/100000", end - 1);
        assert_eq!(answer.header("content-range"), Some(content_range.as_str()));
        assert_eq!(
            answer.header("content-length"),
            Some((end - start).to_string().as_str())
        );
    }
    let past = get(&server, "/data.bin", Some("bytes=100000-"));
    assert_eq!(
        (past.status, past.header("content-range")),
        (416, Some("bytes */100000"))
    );
    // Several ranges: ignored, the whole file.
    assert_eq!(
        get(&server, "/data.bin", Some("bytes=0-1,5-6")).body.len(),
        100_000
    );
    let served = get(&server, "/file/served.bin", Some("bytes=500-509"));
    assert_eq!(served.body, &pattern(1000)[500..510]);

    let head = ask(
        &server,
        b"HEAD /data.bin HTTP/1.1\r\nHost: LocalHost\r\nRange: bytes=10-19\r\n\r\n",
    );
    assert_eq!(
        (head.status, head.header("content-length"), head.body.len()),
        (206, Some("10"), 0)
    );
    let head = ask(&server, b"HEAD / HTTP/1.0\r\n\r\n");
    assert_eq!(
        (head.status, head.header("content-length"), head.body.len()),
        (200, Some("12"), 0)
    );
    let head = ask(&server, b"HEAD /nothere HTTP/1.0\r\n\r\n");
    assert_eq!((head.status, head.body.len()), (404, 0));
}

#[test]
fn bad_methods_and_malformed_requests() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    let post = ask(
        &server,
        b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(
        (post.status, post.header("allow")),
        (405, Some("GET, HEAD"))
    );
    for (request, status) in [
        (&b"GARBAGE\r\n\r\n"[..], 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\n\r\n", 505),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n", 400), // TLS, by mistake
    ] {
        let answer = ask(&server, request);
        assert_eq!(
            answer.status,
            status,
            "{:?}",
            String::from_utf8_lossy(request)
        );
        assert!(answer.body.len() < 120);
    }
    let headers = "X: y\r\n".repeat(MAX_HEADERS + 1);
    let many = ask(
        &server,
        format!("GET / HTTP/1.1\r\n{headers}\r\n").as_bytes(),
    );
    assert_eq!(many.status, 431);
    // Byte by byte, a request is still whole.
    let start = Instant::now();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_nodelay(true).unwrap();
    for b in b"GET /sub/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" {
        stream.write_all(&[*b]).unwrap();
    }
    assert_eq!(read_answer(&mut stream, start).body, b"sub");
}

#[test]
fn a_long_request_line_is_refused_without_reading_it() {
    in_bounded_child(
        "a_long_request_line_is_refused_without_reading_it",
        long_line,
    );
}

fn long_line() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    let start = Instant::now();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    writer
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // 64 MiB, more than the socket buffers hold: if the server read it all,
    // every write would go through.
    let sending = thread::spawn(move || {
        let mut sent = 0usize;
        let line = [&b"GET /"[..], &[b'a'; (1 << 20) - 5]].concat();
        for _ in 0..64 {
            match writer.write_all(&line) {
                Ok(()) => sent += line.len(),
                Err(_) => break,
            }
        }
        sent
    });
    let answer = read_answer(&mut stream, start);
    assert_eq!(answer.status, 414);
    assert_eq!(answer.body, b"the request line is longer than 8192 bytes\n");
    assert!(answer.took < Duration::from_secs(3), "{:?}", answer.took);
    drop(stream);
    let sent = sending.join().unwrap();
    assert!(sent < 64 << 20, "the server took all {sent} bytes");
}

#[test]
fn idle_and_half_sent_connections_are_closed_after_the_timeout() {
    let fixture = Fixture::new();
    let server = fixture.start(quick());
    let timeout = quick().timeout;
    // Nothing sent: closed, without an answer.
    let start = Instant::now();
    let mut idle = TcpStream::connect(server.addr()).unwrap();
    let answer = read_answer(&mut idle, start);
    assert_eq!(answer.status, 0);
    assert!(
        answer.took >= timeout - Duration::from_millis(50),
        "{:?}",
        answer.took
    );
    assert!(answer.took < timeout * 5, "{:?}", answer.took);
    // Half a request: 408.
    let half = ask(&server, b"GET / HTTP/1.1\r\nHo");
    assert_eq!(half.status, 408);
    assert!(half.took >= timeout - Duration::from_millis(50) && half.took < timeout * 5);
    // A byte every 50 ms keeps no connection past the deadline for its head.
    let start = Instant::now();
    let mut slow = TcpStream::connect(server.addr()).unwrap();
    let mut writer = slow.try_clone().unwrap();
    let dripping = thread::spawn(move || {
        for b in b"GET / HTTP/1.1\r\nX-Slow: "
            .iter()
            .chain([b'a'; 200].iter())
        {
            if writer.write_all(&[*b]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    let answer = read_answer(&mut slow, start);
    assert_eq!(answer.status, 408);
    assert!(answer.took < timeout * 5, "{:?}", answer.took);
    dripping.join().unwrap();
}

#[test]
fn idle_connections_past_the_cap_use_no_more_threads() {
    let fixture = Fixture::new();
    let limits = quick();
    let server = fixture.start(limits);
    let idle: Vec<TcpStream> = (0..12)
        .map(|_| TcpStream::connect(server.addr()).unwrap())
        .collect();
    // Answered once the idle ones ahead of it time out, four at a time.
    let answer = get(&server, "/sub/", None);
    assert_eq!((answer.status, &answer.body[..]), (200, &b"sub"[..]));
    assert!(answer.took < limits.timeout * 10, "{:?}", answer.took);
    assert!(
        server.peak() <= limits.connections,
        "{} at once",
        server.peak()
    );
    assert!(server.peak() >= 2, "{} at once", server.peak());
    drop(idle);
}

#[test]
fn a_sparse_file_past_4_gib_is_served_in_ranges() {
    let fixture = Fixture::new();
    let path = fixture.dir.join("huge.bin");
    let len = 5u64 << 30;
    let at = (1u64 << 32) + 7;
    let mut file = File::create(&path).unwrap();
    file.set_len(len).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(b"past 4 GiB").unwrap();
    drop(file);
    let site = Site::new(&fixture.dir.join("root"), vec![path]).unwrap();
    let server = Server::start(0, site, quick()).unwrap();
    let range = format!("bytes={}-{}", at - 2, at + 11);
    let answer = get(&server, "/file/huge.bin", Some(&range));
    assert_eq!(answer.status, 206);
    assert_eq!(answer.body, b"\0\0past 4 GiB\0\0");
    let content_range = format!("bytes {}-{}/{len}", at - 2, at + 11);
    assert_eq!(answer.header("content-range"), Some(content_range.as_str()));
    let head = ask(&server, b"HEAD /file/huge.bin HTTP/1.0\r\n\r\n");
    assert_eq!(
        head.header("content-length"),
        Some(len.to_string().as_str())
    );
    let tail = get(&server, "/file/huge.bin", Some("bytes=-3"));
    assert_eq!(
        tail.header("content-range"),
        Some(format!("bytes {}-{}/{len}", len - 3, len - 1).as_str())
    );
}

#[test]
fn only_requests_addressed_to_127_0_0_1_or_localhost_are_served() {
    for (host, port, here) in [
        (Some("127.0.0.1"), 8000, true),
        (Some("127.0.0.1:8000"), 8000, true),
        (Some("localhost:8000"), 8000, true),
        (Some("LOCALHOST"), 8000, true),
        (None, 8000, true), // HTTP/1.0 without a Host header
        (Some("attacker.example"), 8000, false),
        (Some("attacker.example:8000"), 8000, false),
        (Some("127.0.0.1:8001"), 8000, false),
        (Some("localhost:08000"), 8000, false),
        (Some("localhost:"), 8000, false),
        (Some("127.0.0.1.attacker.example"), 8000, false),
        (Some("localhost.:8000"), 8000, false),
        (Some("[::1]:8000"), 8000, false),
        (Some("127.0.0.2:8000"), 8000, false),
        (Some(""), 8000, false),
    ] {
        assert_eq!(addressed_here(host, port), here, "{host:?} on {port}");
    }

    let fixture = Fixture::new();
    let server = fixture.start(quick());
    let port = server.addr().port();
    let reason = format!("this server answers only to Host 127.0.0.1:{port} or localhost:{port}\n");
    for host in [
        "attacker.example".to_owned(),
        format!("attacker.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        for (path, range) in [("/", ""), ("/file/served.bin", "Range: bytes=0-9\r\n")] {
            let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{range}\r\n");
            let answer = ask(&server, request.as_bytes());
            assert_eq!(
                (
                    answer.status,
                    String::from_utf8_lossy(&answer.body).as_ref()
                ),
                (421, reason.as_str()),
                "{host} {path}"
            );
        }
        let head = ask(
            &server,
            format!("HEAD / HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes(),
        );
        assert_eq!((head.status, head.body.len()), (421, 0), "{host}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_owned(),
    ] {
        let request =
            format!("GET /file/served.bin HTTP/1.1\r\nHost: {host}\r\nRange: bytes=0-9\r\n\r\n");
        let answer = ask(&server, request.as_bytes());
        assert_eq!((answer.status, answer.body), (206, pattern(10)), "{host}");
    }
}

#[test]
fn a_file_to_serve_that_is_not_a_regular_file_is_refused_before_serving() {
    let fixture = Fixture::new();
    let root = fixture.dir.join("root");
    for (file, what) in [
        (PathBuf::from("/dev/zero"), "a character device"),
        (fixture.dir.join("outside.fifo"), "a FIFO"),
        (fixture.dir.join("root"), "a folder"),
    ] {
        let err = Site::new(&root, vec![fixture.dir.join("served.bin"), file.clone()]).unwrap_err();
        assert_eq!(
            err,
            format!(
                "{}: not a regular file ({what}), so it cannot be served in byte ranges",
                file.display()
            )
        );
        assert_eq!(served_file(&file), Err(err));
    }
    let missing = fixture.dir.join("missing.bin");
    let err = Site::new(&root, vec![missing.clone()]).unwrap_err();
    assert!(
        err.starts_with(&format!("{}: ", missing.display())),
        "{err}"
    );
    assert_eq!(served_file(&fixture.dir.join("served.bin")), Ok(()));
}
