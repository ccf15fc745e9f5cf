//! The `files` target: any bytes as the start of an `.npy` or safetensors
//! file (`bytelens_core::files::read_header`). A header that reads must
//! describe arrays inside the file, over no shared bytes, whose layouts
//! the core accepts; one that does not must say why in a short message.
//! Reading from a prefix and then from the `need` bytes it asks for gives
//! what reading the whole file gives (how bindings read a header).
//!
//! An input that starts with [`BIG`] is expanded instead into a header of
//! up to 100 MB (the most either format allows), its entries repeated from
//! the rest of the input: the header readers' time and memory are then
//! what libFuzzer's `-timeout` and `-rss_limit_mb` (set for this target in
//! `cargo xtask fuzz`) hold to, and what was quadratic or sixteen times
//! the header's size fails as a timeout or an out-of-memory crash.

use bytelens_core::files::{FileError, FileHeader, Format, MAX_HEADER, read_header};

use crate::MAX_MESSAGE;

/// The first bytes of an input to expand into a large header: then a byte
/// for the kind of header, a byte for its size (in 256ths of
/// [`MAX_HEADER`]), and the bytes each entry is made of.
pub const BIG: &[u8; 4] = b"BIG!";

pub fn run(data: &[u8]) {
    if let Some(rest) = data.strip_prefix(BIG) {
        return run_large(rest);
    }
    check(data, data.len() as u64);
}

/// A header of `size / 256` of [`MAX_HEADER`] (at least 1 MB): `kind`
/// picks safetensors metadata pairs, safetensors tensors, or an npy dict
/// of many keys; each entry is built from `seed` and its number.
pub fn expand(kind: u8, size: u8, seed: &[u8]) -> Vec<u8> {
    use std::io::Write;
    // Short of the limit by more than an entry and the end, so that the
    // largest is still a header the readers take.
    let target = (MAX_HEADER / 256 * (usize::from(size) + 1)).clamp(1_000_000, MAX_HEADER - 4096);
    let seed = String::from_utf8_lossy(seed);
    let npy = kind % 3 == 2;
    // The lead (magic and length, patched at the end), then the header.
    let lead = if npy { 12 } else { 8 };
    let mut file = Vec::with_capacity(lead + target + 256);
    file.resize(lead, 0);
    file.extend_from_slice(match kind % 3 {
        0 => br#"{"__metadata__":{"#.as_slice(),
        1 => b"{",
        _ => b"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), ",
    });
    let mut i = 0u64;
    while file.len() < lead + target {
        let _ = match kind % 3 {
            0 => write!(file, r#""{seed}{i}":"{seed}","#),
            1 => write!(
                file,
                r#""{seed}{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{}]}},"#,
                i + 1
            ),
            _ => write!(file, "'{seed}{i}': ({i},), "),
        };
        i += 1;
    }
    file.extend_from_slice(match kind % 3 {
        0 => br#""end":""}}"#.as_slice(),
        1 => br#""end":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#,
        _ => b"}\n",
    });
    file.truncate(lead + MAX_HEADER);
    let text_len = file.len() - lead;
    if npy {
        file[..8].copy_from_slice(b"\x93NUMPY\x02\x00");
        file[8..12].copy_from_slice(&(text_len as u32).to_le_bytes());
    } else {
        file[..8].copy_from_slice(&(text_len as u64).to_le_bytes());
    }
    file
}

fn run_large(rest: &[u8]) {
    let [kind, size, seed @ ..] = rest else {
        return;
    };
    let seed = &seed[..seed.len().min(64)];
    let file = expand(*kind, *size, seed);
    // The tensors' bytes lie past the header: a length that holds them.
    let len = file.len() as u64 + MAX_HEADER as u64;
    match read_header(&file, len) {
        Ok(header) => check_header(&header, len),
        Err(err) => check_message(&err),
    }
}

fn check_message(err: &FileError) {
    let message = err.to_string();
    assert!(
        !message.is_empty() && message.len() <= MAX_MESSAGE,
        "{} bytes: {message}",
        message.len()
    );
}

fn check(data: &[u8], len: u64) {
    let whole = read_header(data, len);
    match &whole {
        Ok(header) => check_header(header, len),
        Err(err) => check_message(err),
    }
    // As a binding reads it: a first few bytes, then what they ask for.
    let head = &data[..data.len().min(64)];
    let from_head = match read_header(head, len) {
        Err(FileError::Truncated { need, .. }) if need > head.len() as u64 => {
            match usize::try_from(need).ok().and_then(|n| data.get(..n)) {
                Some(prefix) => read_header(prefix, len),
                None => return, // the file itself is too short: `whole` said so
            }
        }
        other => other,
    };
    assert_eq!(from_head, whole);
}

fn check_header(header: &FileHeader, len: u64) {
    assert!(header.data_start <= len);
    if header.format == Format::Npy {
        assert_eq!(header.arrays.len(), 1);
    }
    let mut used = Vec::new();
    for array in &header.arrays {
        assert!(array.offset >= header.data_start && array.offset + array.nbytes <= len);
        if let Some(descr) = array.descr {
            let layout = array.layout().expect("a described array has a layout");
            assert_eq!(layout.descr(), descr);
            assert_eq!(layout.nbytes() as u64, array.nbytes);
            let len = len as usize; // at most a 64-bit host's memory
            layout.unaligned().check(len).expect("inside the file");
            assert_eq!(layout.check(len).is_ok(), array.is_aligned());
            if array.nbytes > 0 {
                let span = layout.byte_span().expect("in range");
                assert_eq!(
                    span,
                    array.offset as isize..(array.offset + array.nbytes) as isize
                );
            }
        }
        if array.nbytes > 0 {
            used.push(array.offset..array.offset + array.nbytes);
        }
    }
    used.sort_by_key(|r| r.start);
    assert!(used.windows(2).all(|w| w[0].end <= w[1].start), "{used:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of large header reads as it should (the fuzz target runs
    /// them up to 100 MB under libFuzzer's time and memory limits; the
    /// core's `header_memory` test measures 100 MB ones).
    #[test]
    fn large_headers_expand_and_read() {
        let len = |file: &[u8]| file.len() as u64 + MAX_HEADER as u64;
        let pairs = expand(0, 0, b"key");
        let header = read_header(&pairs, len(&pairs)).unwrap();
        assert!(header.metadata.len() > 50_000, "{}", header.metadata.len());
        let tensors = expand(1, 0, b"t");
        let header = read_header(&tensors, len(&tensors)).unwrap();
        assert!(header.arrays.len() > 10_000, "{}", header.arrays.len());
        let npy = expand(2, 0, b"k");
        assert_eq!(
            read_header(&npy, len(&npy)).unwrap_err().to_string(),
            "the header has the key \"k0\", which npy headers do not"
        );
        let largest = expand(0, 255, &[b'x'; 64]);
        assert!(largest.len() > 99_000_000 && largest.len() <= MAX_HEADER + 8);
        for kind in 0..3 {
            let mut input = BIG.to_vec();
            input.extend([kind, 0, b'a']);
            run(&input);
        }
    }
}
