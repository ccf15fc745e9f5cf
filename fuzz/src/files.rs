//! The `files` target: any bytes as the start of an `.npy`, safetensors
//! or GGUF file (`bytelens_core::files::read_header`). A header that reads
//! must describe arrays inside the file, over no shared bytes, whose layouts
//! the core accepts; one that does not must say why in a short message.
//! Reading from a prefix and then from the `need` bytes it asks for, as
//! often as it asks, gives what reading the whole file gives (how bindings
//! read a header); GGUF's reader asks each time for at least twice what it
//! was given.
//!
//! A GGUF header that reads must also be what the format lays out: each
//! metadata value right after its key, type (and an array's element type
//! and count), decoding from the file's bytes (an array of strings into
//! exactly its count of strings); the keys and tensor names unique; the
//! tensor infos right after the metadata; the data at the first multiple
//! of the alignment (32, or `general.alignment`) after them; each tensor
//! at a multiple of it, as many bytes as its ggml type's blocks take. A
//! quantised tensor whose bytes the input holds is dequantised
//! (`bytelens::dequantize_into`) into float32, through an unaligned
//! output, and into float16 and bfloat16, which must be the float32
//! values rounded.
//!
//! An input that starts with [`BIG`] is expanded instead into a header of
//! up to 100 MB (the most each format allows), its entries repeated from
//! the rest of the input: the header readers' time and memory are then
//! what libFuzzer's `-timeout` and `-rss_limit_mb` (set for this target in
//! `cargo xtask fuzz`) hold to, and what was quadratic or sixteen times
//! the header's size fails as a timeout or an out-of-memory crash.
//!
//! Seeds: `cargo xtask fuzz` writes `.npy` and safetensors ones; the GGUF
//! ones are committed under `fuzz/inputs/files/` ([`gguf_seeds`] writes
//! them, but for one gguf-py wrote).

use std::collections::HashSet;

use bytelens::{can_dequantize, dequantize_into};
use bytelens_core::files::{
    Access, DEFAULT_ALIGNMENT, FileArray, FileError, FileHeader, Format, GGUF_MAGIC, GgmlType,
    GgufValue, MAX_GGUF_DIMS, MAX_HEADER, ValueType, read_header,
};
use bytelens_core::{ByteOrder, DType, Descr, bf16, f16};

use crate::MAX_MESSAGE;

/// The first bytes of an input to expand into a large header: then a byte
/// for the kind of header, a byte for its size (in 256ths of
/// [`MAX_HEADER`]), and the bytes each entry is made of.
pub const BIG: &[u8; 4] = b"BIG!";

/// The kinds of large header [`expand`] makes (the kind byte modulo this).
pub const BIG_KINDS: u8 = 6;

/// The most bytes of blocks a check dequantises (each type's output is at
/// most 19 times its blocks: 1 MiB here, kept short under AddressSanitizer).
const MAX_DEQUANTISED: u64 = 1 << 16;

pub fn run(data: &[u8]) {
    if let Some(rest) = data.strip_prefix(BIG) {
        return run_large(rest);
    }
    check(data, data.len() as u64);
}

/// A header of `size / 256` of [`MAX_HEADER`] (at least 1 MB): `kind`
/// picks safetensors metadata pairs, safetensors tensors, an npy dict of
/// many keys, a GGUF vocabulary (one array of strings), GGUF metadata keys
/// of every kind of value, or GGUF tensor infos; each entry is built from
/// `seed` and its number.
pub fn expand(kind: u8, size: u8, seed: &[u8]) -> Vec<u8> {
    // Short of the limit by more than an entry and the end, so that the
    // largest is still a header the readers take.
    let target = (MAX_HEADER / 256 * (usize::from(size) + 1)).clamp(1_000_000, MAX_HEADER - 4096);
    let seed = String::from_utf8_lossy(seed);
    match kind % BIG_KINDS {
        kind @ 0..=2 => expand_text(kind, target, &seed),
        kind => expand_gguf(kind, target, &seed),
    }
}

fn expand_text(kind: u8, target: usize, seed: &str) -> Vec<u8> {
    use std::io::Write;
    let npy = kind == 2;
    // The lead (magic and length, patched at the end), then the header.
    let lead = if npy { 12 } else { 8 };
    let mut file = Vec::with_capacity(lead + target + 256);
    file.resize(lead, 0);
    file.extend_from_slice(match kind {
        0 => br#"{"__metadata__":{"#.as_slice(),
        1 => b"{",
        _ => b"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), ",
    });
    let mut i = 0u64;
    while file.len() < lead + target {
        let _ = match kind {
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
    file.extend_from_slice(match kind {
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

/// A GGUF string: its length, then its bytes.
fn gguf_string(file: &mut Vec<u8>, text: &[u8]) {
    file.extend((text.len() as u64).to_le_bytes());
    file.extend(text);
}

/// A GGUF header of about `target` bytes, its counts patched at the end:
/// kind 3, one array of strings `{seed}{i}` (a vocabulary); kind 4, keys
/// `{seed}{i}` of each value type in turn (arrays among them); kind 5,
/// tensors `{seed}{i}` of one float32 each, 32 bytes apart.
fn expand_gguf(kind: u8, target: usize, seed: &str) -> Vec<u8> {
    let mut file = Vec::with_capacity(target + 256);
    file.extend(GGUF_MAGIC);
    file.extend(3u32.to_le_bytes());
    file.resize(24, 0); // the tensor and key counts, patched below
    let (mut tensors, mut keys) = (0u64, 0u64);
    match kind {
        3 => {
            gguf_string(&mut file, b"tokenizer.ggml.tokens");
            file.extend(9u32.to_le_bytes());
            file.extend(8u32.to_le_bytes());
            let count_at = file.len();
            file.extend(0u64.to_le_bytes());
            let mut i = 0u64;
            while file.len() < target {
                gguf_string(&mut file, format!("{seed}{i}").as_bytes());
                i += 1;
            }
            file[count_at..count_at + 8].copy_from_slice(&i.to_le_bytes());
            keys = 1;
        }
        4 => {
            gguf_string(&mut file, b"general.alignment");
            file.extend(4u32.to_le_bytes());
            file.extend(64u32.to_le_bytes());
            keys = 1;
            while file.len() < target {
                let i = keys;
                gguf_string(&mut file, format!("{seed}{i}").as_bytes());
                let code = (i % 13) as u32;
                file.extend(code.to_le_bytes());
                match ValueType::from_code(code).and_then(ValueType::size) {
                    Some(size) => file.extend(std::iter::repeat_n(i as u8, size)),
                    None if code == 8 => gguf_string(&mut file, seed.as_bytes()),
                    None => {
                        // An array of two uint16s.
                        file.extend(2u32.to_le_bytes());
                        file.extend(2u64.to_le_bytes());
                        file.extend([1, 2, 3, 4]);
                    }
                }
                keys += 1;
            }
        }
        _ => {
            while file.len() < target {
                let i = tensors;
                gguf_string(&mut file, format!("{seed}{i}").as_bytes());
                file.extend(1u32.to_le_bytes());
                file.extend(1u64.to_le_bytes());
                file.extend(0u32.to_le_bytes()); // F32
                file.extend((32 * i).to_le_bytes());
                tensors += 1;
            }
        }
    }
    file[8..16].copy_from_slice(&tensors.to_le_bytes());
    file[16..24].copy_from_slice(&keys.to_le_bytes());
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
        Ok(header) => check_header(&header, &file, len),
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
        Ok(header) => check_header(header, data, len),
        Err(err) => check_message(err),
    }
    // As a binding reads it: a first few bytes, then what they ask for,
    // as often as they ask (9 bytes: the least that tells safetensors).
    for first in [64, 9] {
        let mut have = data.len().min(first);
        let from_head = loop {
            let read = read_header(&data[..have], len);
            let need = match &read {
                Err(FileError::Truncated { need, .. }) if *need > have as u64 => *need,
                _ => break read,
            };
            if data.starts_with(GGUF_MAGIC) && have >= GGUF_MAGIC.len() {
                let twice = (2 * have as u64).min(len);
                assert!(need >= twice, "asked for {need} bytes after {have}");
            }
            match usize::try_from(need).ok().and_then(|n| data.get(..n)) {
                Some(prefix) => have = prefix.len(),
                None => return, // the file itself is too short: `whole` said so
            }
        };
        assert_eq!(from_head, whole, "read from {first} bytes");
    }
}

/// The checks of a header read from `file` (at least its header's bytes)
/// of a file of `len` bytes.
fn check_header(header: &FileHeader, file: &[u8], len: u64) {
    // A GGUF file of no tensors may end inside the padding before its
    // (empty) data, as llama.cpp allows: `check_gguf` holds it to that.
    assert!(
        header.data_start <= len || (header.format == Format::Gguf && header.arrays.is_empty()),
        "data at {} of {len} bytes",
        header.data_start
    );
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
    if header.format == Format::Gguf {
        check_gguf(header, file);
    } else {
        assert!(header.gguf.is_empty());
        assert!(header.arrays.iter().all(|a| a.ggml.is_none()));
    }
}

/// What a GGUF header that reads must be (see the module's text).
fn check_gguf(header: &FileHeader, file: &[u8]) {
    assert!(matches!(header.version, (2 | 3, 0)), "{:?}", header.version);
    assert!(header.metadata.is_empty());
    // The metadata: each value right after its key and type, in order.
    let mut end = 24; // the magic, version and two counts
    let mut keys = HashSet::new();
    for entry in header.gguf.iter() {
        assert!(keys.insert(entry.key), "the key {:?} twice", entry.key);
        assert_ne!(entry.kind, ValueType::Array);
        let lead = match (entry.array, entry.kind) {
            (true, _) => 4 + 8,
            (false, ValueType::String) => 8,
            (false, _) => 0,
        };
        assert_eq!(entry.offset, end + 8 + entry.key.len() as u64 + 4 + lead);
        end = entry.offset + entry.nbytes;
        let value = entry
            .value(file)
            .unwrap_or_else(|| panic!("the value of {:?} does not decode", entry.key));
        match (value, entry.kind.size()) {
            (GgufValue::Array { kind, count, bytes }, size) => {
                assert!(entry.array);
                assert_eq!((kind, count), (entry.kind, entry.count));
                assert_eq!(bytes.len() as u64, entry.nbytes);
                match size {
                    Some(size) => assert_eq!(entry.nbytes, count * size as u64),
                    None => {
                        let mut n = 0;
                        let mut total = 0;
                        for text in value.strings() {
                            n += 1;
                            total += 8 + text.len() as u64;
                        }
                        assert_eq!((n, total), (count, entry.nbytes), "{:?}", entry.key);
                    }
                }
            }
            (value, size) => {
                assert!(!entry.array);
                assert_eq!(entry.count, 1);
                assert_eq!(entry.nbytes, size.map_or(entry.nbytes, |s| s as u64));
                use ValueType::*;
                let fits = match (entry.kind, value) {
                    (U8 | U16 | U32 | U64, GgufValue::UInt(_)) => true,
                    (I8 | I16 | I32 | I64, GgufValue::Int(_)) => true,
                    (F32 | F64, GgufValue::Float(_)) => true,
                    (Bool, GgufValue::Bool(_)) => true,
                    (String, GgufValue::Str(text)) => text.len() as u64 == entry.nbytes,
                    _ => false,
                };
                assert!(fits, "{:?}: {} as {value:?}", entry.key, entry.kind);
            }
        }
    }
    assert_eq!(keys.len(), header.gguf.len());
    let alignment = match header.gguf.find("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(entry) => {
            let n = entry.value(file).and_then(|v| v.as_int());
            let n = n.expect("general.alignment is an integer");
            assert!(
                n > 0 && (n as u128).is_power_of_two() && n <= 1 << 32,
                "{n}"
            );
            n as u64
        }
    };
    // The tensor infos right after the metadata; the data at the first
    // multiple of the alignment after them.
    let infos: u64 = header
        .arrays
        .iter()
        .map(|a| 8 + a.name.len() as u64 + 4 + 8 * a.shape.len() as u64 + 4 + 8)
        .sum();
    assert_eq!(header.data_start, (end + infos).next_multiple_of(alignment));
    let mut names = HashSet::new();
    for array in &header.arrays {
        assert!(names.insert(array.name.as_str()), "{:?} twice", array.name);
        check_tensor(array, header.data_start, alignment);
        if let Some(ggml) = array.ggml.filter(|&t| can_dequantize(t))
            && array.nbytes <= MAX_DEQUANTISED
            && array.offset + array.nbytes <= file.len() as u64
        {
            let blocks = &file[array.offset as usize..(array.offset + array.nbytes) as usize];
            check_dequantised(ggml, blocks);
        }
    }
}

/// A tensor of a GGUF header whose data starts at `data_start`.
fn check_tensor(array: &FileArray, data_start: u64, alignment: u64) {
    assert!(array.shape.len() <= MAX_GGUF_DIMS && !array.fortran);
    assert!((array.offset - data_start).is_multiple_of(alignment));
    let Some(ggml) = array.ggml else {
        // A type bytelens lacks: named, never viewed.
        assert!(array.descr.is_none());
        assert!(matches!(array.access(0), Access::NoDType { .. }));
        return;
    };
    let info = ggml.info();
    assert_eq!(GgmlType::from_code(info.code), Some(ggml));
    assert_eq!(array.dtype, info.name);
    assert_eq!(
        array.descr,
        info.dtype.map(|d| Descr::new(d, ByteOrder::Little))
    );
    let elements: u128 = array.shape.iter().map(|&n| u128::from(n)).product();
    let row = array.shape.last().copied().unwrap_or(1);
    assert!(row.is_multiple_of(info.block.into()), "{row} in {ggml}");
    assert_eq!(
        u128::from(array.nbytes),
        elements / u128::from(info.block) * u128::from(info.bytes),
        "{:?} of {ggml}",
        array.shape
    );
    let access = array.access(0);
    if ggml.is_quantized() {
        assert_eq!(access, Access::Blocks { ggml });
    } else {
        assert!(matches!(access, Access::View | Access::Misaligned { .. }));
    }
}

/// Dequantises `blocks` into each output type, aligned and not: each call
/// succeeds, the same float32s either way, float16 and bfloat16 those
/// rounded.
fn check_dequantised(ggml: GgmlType, blocks: &[u8]) {
    let info = ggml.info();
    let n = blocks.len() / info.bytes as usize * info.block as usize;
    let mut floats = vec![0f32; n];
    let out: &mut [u8] = bytemuck::cast_slice_mut(&mut floats);
    dequantize_into(ggml, blocks, out, Descr::native(DType::F32))
        .unwrap_or_else(|e| panic!("{ggml}: {e}"));
    // One byte in: not aligned for float32, so through scratch blocks.
    let mut unaligned = vec![0u8; 4 * n + 1];
    dequantize_into(ggml, blocks, &mut unaligned[1..], Descr::native(DType::F32))
        .unwrap_or_else(|e| panic!("{ggml}, unaligned: {e}"));
    assert!(
        unaligned[1..] == *bytemuck::cast_slice::<f32, u8>(&floats),
        "{ggml}: unaligned output differs"
    );
    let mut halves = vec![0u16; n];
    for (dtype, round) in [
        (
            DType::F16,
            (|x| f16::from_f32(x).to_bits()) as fn(f32) -> u16,
        ),
        (DType::BF16, |x| bf16::from_f32(x).to_bits()),
    ] {
        dequantize_into(
            ggml,
            blocks,
            bytemuck::cast_slice_mut(&mut halves),
            Descr::native(dtype),
        )
        .unwrap_or_else(|e| panic!("{ggml} to {dtype}: {e}"));
        for (i, (&x, &h)) in floats.iter().zip(&halves).enumerate() {
            if !x.is_nan() {
                assert_eq!(h, round(x), "{ggml} to {dtype}: element {i}, {x}");
            }
        }
    }
}

/// A GGUF file, written field by field, for the seeds.
struct Gguf {
    version: u32,
    alignment: usize,
    keys: Vec<u8>,
    n_keys: u64,
    infos: Vec<u8>,
    n_tensors: u64,
    data: Vec<u8>,
}

impl Gguf {
    fn new(version: u32, alignment: usize) -> Gguf {
        Gguf {
            version,
            alignment,
            keys: vec![],
            n_keys: 0,
            infos: vec![],
            n_tensors: 0,
            data: vec![],
        }
    }

    /// A key of type `code` whose value is `value`'s bytes as they are.
    fn key(mut self, key: &str, code: u32, value: &[u8]) -> Gguf {
        gguf_string(&mut self.keys, key.as_bytes());
        self.keys.extend(code.to_le_bytes());
        self.keys.extend(value);
        self.n_keys += 1;
        self
    }

    /// A tensor of ggml type `code` and `dims` (innermost first), its
    /// `data` at the next multiple of the alignment.
    fn tensor(mut self, name: &str, dims: &[u64], code: u32, data: &[u8]) -> Gguf {
        let offset = self.data.len().next_multiple_of(self.alignment);
        self.data.resize(offset, 0);
        self.data.extend(data);
        gguf_string(&mut self.infos, name.as_bytes());
        self.infos.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            self.infos.extend(d.to_le_bytes());
        }
        self.infos.extend(code.to_le_bytes());
        self.infos.extend((offset as u64).to_le_bytes());
        self.n_tensors += 1;
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut file = GGUF_MAGIC.to_vec();
        file.extend(self.version.to_le_bytes());
        file.extend(self.n_tensors.to_le_bytes());
        file.extend(self.n_keys.to_le_bytes());
        file.extend(&self.keys);
        file.extend(&self.infos);
        if self.n_tensors > 0 {
            file.resize(file.len().next_multiple_of(self.alignment), 0);
        }
        file.extend(&self.data);
        file
    }
}

/// `n` bytes of a fixed pseudo-random sequence from `seed`.
fn noise(seed: u32, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// A string value's bytes (its length, then the text).
fn text(s: &str) -> Vec<u8> {
    let mut out = vec![];
    gguf_string(&mut out, s.as_bytes());
    out
}

/// An array value's bytes: the element type, the count, the elements.
fn array(code: u32, count: u64, elements: &[u8]) -> Vec<u8> {
    let mut out = code.to_le_bytes().to_vec();
    out.extend(count.to_le_bytes());
    out.extend(elements);
    out
}

/// The GGUF seeds of the `files` target, by file name: every metadata
/// type; a block of each quantised type (random bytes, each type's scales
/// among them); version 2 with `general.alignment` 1 and tensors at odd
/// offsets; a file of nothing; ggml types bytelens only names, or not at
/// all, and empty tensors. `fuzz/inputs/files/` holds them (the test
/// `gguf_seeds_are_committed` says so, and writes them with
/// `BYTELENS_WRITE_SEEDS=1`).
pub fn gguf_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut tokens = vec![];
    for t in ["<s>", "</s>", "é", "", "▁the"] {
        gguf_string(&mut tokens, t.as_bytes());
    }
    let scores: Vec<u8> = [0.0f32, -1.5, 2.25, -0.0, 7.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let every_type = Gguf::new(3, 32)
        .key("general.architecture", 8, &text("llama"))
        .key("general.alignment", 4, &32u32.to_le_bytes())
        .key("u8", 0, &[200])
        .key("i8", 1, &[0xfe])
        .key("u16", 2, &600u16.to_le_bytes())
        .key("i16", 3, &(-600i16).to_le_bytes())
        .key("i32", 5, &(-70000i32).to_le_bytes())
        .key("f32", 6, &0.25f32.to_le_bytes())
        .key("bool", 7, &[1])
        .key("tokenizer.ggml.tokens", 9, &array(8, 5, &tokens))
        .key("tokenizer.ggml.scores", 9, &array(6, 5, &scores))
        .key("empty", 9, &array(10, 0, &[]))
        .key("u64", 10, &u64::MAX.to_le_bytes())
        .key("i64", 11, &i64::MIN.to_le_bytes())
        .key("f64", 12, &0.1f64.to_le_bytes())
        .tensor("f32", &[3, 2], 0, &noise(1, 24))
        .tensor("f16", &[4], 1, &noise(2, 8))
        .tensor("bf16", &[2, 1, 1], 30, &noise(3, 4))
        .tensor("q8_0", &[32], 8, &noise(4, 34))
        .tensor("q4_k", &[256], 12, &noise(5, 144))
        .bytes();
    let mut quantised = Gguf::new(3, 32).key("general.name", 8, &text("blocks"));
    for (i, ggml) in GgmlType::ALL.into_iter().enumerate() {
        let info = ggml.info();
        if ggml.is_quantized() {
            let name = info.name.to_ascii_lowercase();
            let dims = [u64::from(info.block)];
            quantised =
                quantised.tensor(&name, &dims, info.code, &noise(i as u32, info.bytes as _));
        }
    }
    let quantised = quantised.bytes();
    let odd = Gguf::new(2, 1)
        .key("general.alignment", 4, &1u32.to_le_bytes())
        .tensor("i8", &[3], 24, &[1, 2, 3])
        .tensor("f32", &[1], 0, &noise(6, 4))
        .tensor("i16", &[2], 25, &noise(7, 4))
        .tensor("f64", &[1], 28, &noise(8, 8))
        .tensor("i64", &[1], 27, &noise(9, 8))
        .bytes();
    let nothing = Gguf::new(3, 32).bytes();
    let others = Gguf::new(3, 64)
        .key("general.alignment", 4, &64u32.to_le_bytes())
        .tensor("iq2_xxs", &[256], 16, &noise(10, 66))
        .tensor("unknown", &[8, 8], 99, &[])
        .tensor("empty", &[32, 0], 8, &[])
        .tensor("scalar", &[], 0, &noise(11, 4))
        .tensor("q4_0", &[32, 2], 2, &noise(12, 36))
        .bytes();
    vec![
        ("gguf-every-type", every_type),
        ("gguf-quantised", quantised),
        ("gguf-v2-alignment-1", odd),
        ("gguf-nothing", nothing),
        ("gguf-other-types", others),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

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
        let vocabulary = expand(3, 0, b"tok");
        let header = read_header(&vocabulary, len(&vocabulary)).unwrap();
        let tokens = header.gguf.get(0).unwrap().value(&vocabulary).unwrap();
        assert!(tokens.strings().count() > 50_000);
        let keys = expand(4, 0, b"k");
        let header = read_header(&keys, len(&keys)).unwrap();
        assert!(header.gguf.len() > 20_000, "{}", header.gguf.len());
        let infos = expand(5, 0, b"w");
        let header = read_header(&infos, len(&infos)).unwrap();
        assert!(header.arrays.len() > 20_000, "{}", header.arrays.len());
        let largest = expand(0, 255, &[b'x'; 64]);
        assert!(largest.len() > 99_000_000 && largest.len() <= MAX_HEADER + 8);
        for kind in 0..BIG_KINDS {
            let mut input = BIG.to_vec();
            input.extend([kind, 0, b'a']);
            run(&input);
        }
    }

    fn inputs() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("inputs/files")
    }

    /// `fuzz/inputs/files/` holds what `gguf_seeds` makes (written there
    /// when `BYTELENS_WRITE_SEEDS` is set), and each reads and passes.
    #[test]
    fn gguf_seeds_are_committed() {
        let write = std::env::var_os("BYTELENS_WRITE_SEEDS").is_some();
        for (name, bytes) in gguf_seeds() {
            let path = inputs().join(name);
            if write {
                std::fs::create_dir_all(inputs()).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let committed = std::fs::read(&path).unwrap_or_default();
            assert!(
                committed == bytes,
                "{} is not what gguf_seeds makes: BYTELENS_WRITE_SEEDS=1 cargo test writes it",
                path.display()
            );
        }
    }

    /// Every committed input reads, and passes the target's checks; the
    /// quantised seed holds a block of each type bytelens dequantises.
    #[test]
    fn committed_inputs_read_and_pass() {
        let mut names = vec![];
        for entry in std::fs::read_dir(inputs()).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let header = read_header(&bytes, bytes.len() as u64)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(header.format, Format::Gguf);
            run(&bytes);
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
        assert!(names.len() > gguf_seeds().len(), "{names:?}");
        let (_, quantised) = gguf_seeds().swap_remove(1);
        let header = read_header(&quantised, quantised.len() as u64).unwrap();
        let types: Vec<_> = header.arrays.iter().filter_map(|a| a.ggml).collect();
        let all: Vec<_> = GgmlType::ALL
            .into_iter()
            .filter(|&t| t.is_quantized())
            .collect();
        assert_eq!(types, all);
        assert!(all.iter().all(|&t| can_dequantize(t)));
    }

    /// A GGUF file of no tensors ends where its metadata does, before the
    /// padding: its data starts past its end, by less than the alignment.
    #[test]
    fn a_gguf_file_of_nothing_has_its_data_past_its_end() {
        let file = Gguf::new(3, 32).bytes();
        let header = read_header(&file, file.len() as u64).unwrap();
        assert_eq!((file.len(), header.data_start), (24, 32));
        run(&file);
    }
}
