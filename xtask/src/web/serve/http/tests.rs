//! The request parser driven by hand-picked, random and mutated heads.

use super::*;

fn status_of(head: &[u8]) -> u16 {
    match parse_head(head) {
        Err(refusal) => refusal.status,
        Ok(Some(_)) => 200,
        Ok(None) => 0,
    }
}

#[test]
fn the_doc_examples() {
    let request = parse_head(b"GET /a%20b?q HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n");
    let request = request.unwrap().unwrap();
    assert_eq!(request.path, "/a b");
    assert_eq!(request.range.as_deref(), Some("bytes=0-9"));
    assert_eq!(request.method, Method::Get);
    assert_eq!(parse_head(b"GET /a HT").unwrap(), None);
    assert_eq!(parse_head(b"POST / HTTP/1.1\r\n").unwrap_err().status, 405);
}

#[test]
fn whole_heads() {
    let head = b"HEAD /file/m%C3%BCnze.bin HTTP/1.0\nRange:bytes=-5 \n\nextra bytes";
    let request = parse_head(head).unwrap().unwrap();
    assert_eq!(request.method, Method::Head);
    assert_eq!(request.path, "/file/münze.bin");
    assert_eq!(request.range.as_deref(), Some("bytes=-5"));
    assert_eq!(request.head_len, head.len() - b"extra bytes".len());
    // HTTP/1.0 needs no Host; the path is not normalised here (resolve refuses ..).
    let request = parse_head(b"GET /../../dev/zero HTTP/1.1\r\nhost: a\r\n\r\n");
    assert_eq!(request.unwrap().unwrap().path, "/../../dev/zero");
}

#[test]
fn unfinished_heads_wait() {
    for head in [
        &b""[..],
        b"G",
        b"GET / HTTP/1.1",
        b"GET / HTTP/1.1\r",
        b"GET / HTTP/1.1\r\nHost: x\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r",
    ] {
        assert_eq!(
            parse_head(head),
            Ok(None),
            "{:?}",
            String::from_utf8_lossy(head)
        );
    }
}

#[test]
fn each_refusal_has_its_status() {
    let cases: &[(&[u8], u16)] = &[
        (b"\r\n", 400),
        (b"GET  / HTTP/1.1\r\n", 400),
        (b"GET / HTTP/1.1 x\r\n", 400),
        (b"GET /\r\n", 400),
        (b"GET / HTTP/1.1\x00\r\n", 400),
        (b"G(T / HTTP/1.1\r\n", 400),
        (b"GET x HTTP/1.1\r\n", 400),
        (b"GET /%zz HTTP/1.1\r\n", 400),
        (b"GET /%2 HTTP/1.1\r\n", 400),
        (b"GET /%00 HTTP/1.1\r\n", 400),
        (b"GET /%ff HTTP/1.1\r\n", 400),
        (b"GET / HTTX/1.1\r\n", 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400), // no Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\nrange: bytes=2-3\r\n\r\n",
            400,
        ),
        (b"POST / HTTP/1.1\r\n", 405),
        (b"DELETE / HTTP/1.1\r\nHost: a\r\n\r\n", 405),
        (b"get / HTTP/1.1\r\n", 405),
        (b"GET / HTTP/2.0\r\n", 505),
        (b"GET / HTTP/0.9\r\n", 505),
    ];
    for &(head, status) in cases {
        assert_eq!(
            status_of(head),
            status,
            "{:?}",
            String::from_utf8_lossy(head)
        );
    }
    let post = parse_head(b"PROPFIND / HTTP/1.1\r\n").unwrap_err();
    assert_eq!(
        post.reason,
        "method PROPFIND is not served, only GET and HEAD"
    );
}

#[test]
fn the_limits_hold_at_their_edges() {
    let line = |n: usize| {
        let mut head = b"GET /".to_vec();
        head.resize(n - b" HTTP/1.0".len(), b'a');
        head.extend(b" HTTP/1.0");
        head
    };
    // A request line of exactly the limit is served; one byte more is 414,
    // known as soon as it is that long (the rest is never needed).
    let mut head = line(MAX_REQUEST_LINE);
    head.extend(b"\r\n\r\n");
    assert_eq!(status_of(&head), 200);
    let mut head = line(MAX_REQUEST_LINE + 1);
    head.extend(b"\r\n\r\n");
    assert_eq!(status_of(&head), 414);
    assert_eq!(status_of(&vec![b'a'; MAX_REQUEST_LINE]), 0);
    assert_eq!(status_of(&vec![b'a'; MAX_REQUEST_LINE + 1]), 414);
    let refusal = parse_head(&vec![b'a'; 1 << 20]).unwrap_err();
    assert_eq!(refusal.reason, "the request line is longer than 8192 bytes");

    let with = |headers: &[Vec<u8>]| {
        let mut head = b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec();
        for h in headers {
            head.extend(h);
            head.extend(b"\r\n");
        }
        head.extend(b"\r\n");
        head
    };
    let header = |n: usize| {
        let mut h = b"X-A: ".to_vec();
        h.resize(n, b'v');
        h
    };
    assert_eq!(status_of(&with(&[header(MAX_HEADER_LINE)])), 200);
    assert_eq!(status_of(&with(&[header(MAX_HEADER_LINE + 1)])), 431);
    let mut unfinished = b"GET / HTTP/1.1\r\n".to_vec();
    unfinished.extend(header(MAX_HEADER_LINE + 1));
    assert_eq!(status_of(&unfinished), 431);
    // 64 headers, Host among them, are served; 65 are not.
    assert_eq!(
        status_of(&with(&vec![b"X: y".to_vec(); MAX_HEADERS - 1])),
        200
    );
    assert_eq!(status_of(&with(&vec![b"X: y".to_vec(); MAX_HEADERS])), 431);
    // Lines within their limits, too many bytes in all.
    assert_eq!(status_of(&with(&vec![header(300); 60])), 431);
    // A head of exactly MAX_HEAD bytes is served, one more is not.
    let base = with(&[]).len();
    let second = MAX_HEAD - base - (MAX_HEADER_LINE + 2) - 2;
    let edge = with(&[header(MAX_HEADER_LINE), header(second)]);
    assert_eq!((edge.len(), status_of(&edge)), (MAX_HEAD, 200));
    let past = with(&[header(MAX_HEADER_LINE), header(second + 1)]);
    assert_eq!(status_of(&past), 431);
    assert_eq!(status_of(&past[..MAX_HEAD - 1]), 0);
    let refusal = parse_head(&past[..MAX_HEAD]).unwrap_err();
    assert_eq!(
        refusal.reason,
        "the request's head is longer than 16384 bytes"
    );
}

#[test]
fn byte_ranges() {
    use super::Range::{Bytes, Ignored, Unsatisfiable};
    let cases = [
        ("bytes=0-9", 100, Bytes(0, 10)),
        (" bytes = 90 - 200 ", 100, Bytes(90, 100)),
        ("bytes=99-", 100, Bytes(99, 100)),
        ("bytes=-5", 100, Bytes(95, 100)),
        ("bytes=-500", 100, Bytes(0, 100)),
        ("bytes=0-18446744073709551615", 100, Bytes(0, 100)),
        ("bytes=0-99999999999999999999", 100, Bytes(0, 100)),
        (
            "bytes=4294967296-4294967299",
            1 << 33,
            Bytes(1 << 32, (1 << 32) + 4),
        ),
        ("bytes=100-", 100, Unsatisfiable),
        ("bytes=100-200", 100, Unsatisfiable),
        ("bytes=99999999999999999999-", 100, Unsatisfiable),
        ("bytes=-0", 100, Unsatisfiable),
        ("bytes=0-0", 0, Unsatisfiable),
        ("bytes=-1", 0, Unsatisfiable),
        ("bytes=5-4", 100, Ignored),
        ("bytes=0-1,4-5", 100, Ignored),
        ("bytes=-", 100, Ignored),
        ("bytes=a-b", 100, Ignored),
        ("bytes=+1-2", 100, Ignored),
        ("items=0-1", 100, Ignored),
        ("", 100, Ignored),
    ];
    for (header, len, want) in cases {
        assert_eq!(byte_range(header, len), want, "{header:?} of {len} bytes");
    }
}

/// xorshift64*: the same "random" heads every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A valid head, its decoded path and its range.
fn valid_head(rng: &mut Rng) -> (Vec<u8>, String, Option<String>) {
    let segments = ["a", "b%20c", "index.html", "file", "x.wasm", "%C3%A9", ""];
    let mut raw = String::new();
    for _ in 0..rng.below(4) {
        raw.push('/');
        raw.push_str(rng.pick(&segments));
    }
    if raw.is_empty() {
        raw.push('/');
    }
    let path = raw.replace("%20", " ").replace("%C3%A9", "é");
    let method = rng.pick(&["GET", "HEAD"]);
    let query = rng.pick(&["", "?x=1", "?a/../b"]);
    let eol = rng.pick(&["\r\n", "\n"]);
    let mut head = format!("{method} {raw}{query} HTTP/1.1{eol}Host: 127.0.0.1{eol}");
    let range =
        (rng.below(2) == 0).then(|| format!("bytes={}-{}", rng.below(100), rng.below(1000)));
    for _ in 0..rng.below(6) {
        head.push_str(&format!(
            "X-{}: {}{eol}",
            rng.below(1000),
            "v".repeat(rng.below(200))
        ));
    }
    if let Some(range) = &range {
        head.push_str(&format!("Range: {range}{eol}"));
    }
    head.push_str(eol);
    (head.into_bytes(), path, range)
}

/// `head` changed a little, or a lot.
fn mutate(rng: &mut Rng, head: &mut Vec<u8>) {
    let interesting = b"\r\n: %/.\x00\x7f\xffHTTP/1.1";
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(head.len() + 1);
        match rng.below(7) {
            0 if at < head.len() => head[at] ^= 1 << rng.below(8),
            1 => head.insert(at, rng.pick(interesting)),
            2 if at < head.len() => {
                head.remove(at);
            }
            3 => {
                let run = vec![rng.pick(b"a \r\n:"); rng.below(MAX_HEAD + 100)];
                head.splice(at..at, run);
            }
            4 => {
                let end = (at + rng.below(64)).min(head.len());
                let copy = head[at..end].to_vec();
                head.splice(at..at, copy);
            }
            5 => head.truncate(at),
            _ => {
                let text = format!("X-{}: y\r\n", rng.below(10)).repeat(rng.below(80));
                let at = head.iter().position(|&b| b == b'\n').map_or(at, |i| i + 1);
                head.splice(at..at, text.into_bytes());
            }
        }
    }
}

/// The parser's promises, on one input: no panic; an answer it gives for a
/// prefix is the answer (the status) for the whole; waiting means fewer than MAX_HEAD
/// bytes; a refusal has a known status and a short reason.
fn check(rng: &mut Rng, buf: &[u8]) -> Result<Option<Request>, Reject> {
    let whole = parse_head(buf);
    match &whole {
        Ok(None) => assert!(buf.len() < MAX_HEAD, "waits on {} bytes", buf.len()),
        Ok(Some(request)) => {
            assert!(request.head_len <= buf.len().min(MAX_HEAD));
            assert!(request.path.starts_with('/') && !request.path.contains('\0'));
            assert_eq!(parse_head(&buf[..request.head_len]), whole);
        }
        Err(refusal) => {
            assert!(
                [400, 405, 414, 431, 505].contains(&refusal.status),
                "{refusal:?}"
            );
            assert!(refusal.reason.len() <= 100, "{refusal:?}");
        }
    }
    for _ in 0..4 {
        let cut = rng.below(buf.len() + 1);
        let part = parse_head(&buf[..cut]);
        // The status, that is; of two limits a head breaks, which one a
        // prefix is known to break may depend on where it ends.
        match (&part, &whole) {
            (Ok(None), _) => {}
            (Err(p), Err(w)) => assert_eq!(
                p.status,
                w.status,
                "{p:?}, {w:?}, {cut} of {} bytes",
                buf.len()
            ),
            _ => assert_eq!(part, whole, "{cut} of {} bytes", buf.len()),
        }
    }
    whole
}

#[test]
fn random_and_mutated_heads() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..4000 {
        let (mut head, path, range) = valid_head(&mut rng);
        let result = match i % 4 {
            0 => {
                let result = check(&mut rng, &head);
                let request = result.clone().unwrap().unwrap();
                assert_eq!((request.path, request.range), (path, range));
                result
            }
            1 | 2 => {
                mutate(&mut rng, &mut head);
                check(&mut rng, &head)
            }
            _ => {
                let noise: Vec<u8> = (0..rng.below(300))
                    .map(|_| rng.pick(b"GET /HTP1.\r\n: \x00\xc3abc"))
                    .collect();
                check(&mut rng, &noise)
            }
        };
        let status = result.map_or_else(|r| r.status, |r| if r.is_some() { 200 } else { 0 });
        *statuses.entry(status).or_insert(0) += 1;
    }
    // The inputs reach every answer.
    for status in [0, 200, 400, 405, 414, 431, 505] {
        assert!(
            statuses.contains_key(&status),
            "no {status} in {statuses:?}"
        );
    }
}
