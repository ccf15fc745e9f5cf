//! The header readers' memory: generated headers of about 100 MB (the
//! largest either format allows) read within a small multiple of their
//! size, measured by a global allocator that counts live bytes. The tests
//! are in a binary of their own, so that nothing else allocates while they
//! measure, and take turns ([`one_at_a_time`]), as each counts all the
//! process' allocations.
#![cfg(feature = "files")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use bytelens_core::files::{FileError, read_header};

/// The system allocator, counting the bytes live now and the most live
/// since [`Counting::reset`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    fn add(n: usize) {
        let live = LIVE.fetch_add(n, Relaxed) + n;
        PEAK.fetch_max(live, Relaxed);
    }

    /// Starts a measurement: the peak from now on, above what is live now.
    fn reset() -> usize {
        let live = LIVE.load(Relaxed);
        PEAK.store(live, Relaxed);
        live
    }
}

// SAFETY: every call is passed to `System` unchanged; the counters only
// observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Counting::add(layout.size());
        // SAFETY: the caller's guarantees for `layout`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Counting::add(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: `ptr` came from `System` with `layout` (the caller's guarantee).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as the allocator may do it: both blocks live at once.
        Counting::add(new_size);
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: as in `dealloc`, and `new_size` is the caller's valid size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Held by a test for as long as it allocates: the test harness runs tests
/// on threads side by side, and another test's allocations would count in
/// this one's peak (a 20 MB JSON string beside a 4 MB GGUF header).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A safetensors file's first bytes: the length, then `json` padded with
/// spaces to `size` bytes, as the format allows.
fn safetensors(mut json: String, size: usize) -> Vec<u8> {
    assert!(json.len() <= size, "{} > {size}", json.len());
    json.extend(std::iter::repeat_n(' ', size - json.len()));
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file
}

/// Reads `file` (a header, its data `data` bytes long past it) and
/// returns the result and the peak of bytes allocated meanwhile.
fn measure(what: &str, file: &[u8], data: u64) -> (Result<usize, FileError>, usize) {
    let base = Counting::reset();
    let started = Instant::now();
    let result = read_header(file, file.len() as u64 + data);
    let elapsed = started.elapsed();
    let peak = PEAK.load(Relaxed) - base;
    let arrays = result
        .as_ref()
        .map(|h| h.arrays.len() + h.metadata.len() + h.gguf.len());
    println!(
        "{what}: {} MB header, {:?} entries, {:.2}x its size at peak, {elapsed:.2?}",
        file.len() / 1_000_000,
        arrays.as_ref().map_err(|e| e.to_string()),
        peak as f64 / file.len() as f64
    );
    (
        result.map(|h| h.arrays.len() + h.metadata.len() + h.gguf.len()),
        peak,
    )
}

/// 99 MB; 20 MB in debug builds, where serde_json is ten times slower (the
/// ratio is what is checked, and it does not depend on the size).
const SIZE: usize = if cfg!(debug_assertions) {
    20_000_000
} else {
    99_000_000
};

#[test]
#[cfg_attr(miri, ignore = "100 MB headers: far too slow under Miri")]
fn hundred_megabyte_headers_take_at_most_three_times_their_size() {
    let _turn = one_at_a_time();
    // Tensors as model shards name them.
    let mut json = String::from("{");
    let mut at = 0u64;
    for i in 0.. {
        if json.len() > SIZE - 200 {
            break;
        }
        let bytes = 4096 * 4096 * 2;
        write!(
            json,
            r#""model.layers.{}.self_attn.{}_proj.weight":{{"dtype":"BF16","shape":[4096,4096],"data_offsets":[{at},{}]}},"#,
            i / 4,
            ["q", "k", "v", "o"][i % 4],
            at + bytes
        )
        .unwrap();
        at += bytes;
    }
    json.push_str(r#""__metadata__":{"format":"pt"}}"#);
    let tensors = safetensors(json, SIZE);
    // Metadata: many pairs of short keys and values, one large value.
    let mut json = String::from(r#"{"__metadata__":{"#);
    for i in 0.. {
        if json.len() > SIZE - 200 {
            break;
        }
        write!(json, r#""config.entry.{i}":"a value of some {i} length","#).unwrap();
    }
    json.push_str(r#""end":""}}"#);
    let pairs = safetensors(json, SIZE);
    // The shortest pairs there can be, millions of them: one string per
    // key and value would take five times the header.
    let mut json = String::from(r#"{"__metadata__":{"#);
    for i in 0.. {
        if json.len() > SIZE - 200 {
            break;
        }
        write!(json, r#""{i:x}":"","#).unwrap();
    }
    json.push_str(r#""end":""}}"#);
    let tiny = safetensors(json, SIZE);
    let large = safetensors(
        format!(
            r#"{{"__metadata__":{{"blob":"{}"}}}}"#,
            "x".repeat(SIZE - 40)
        ),
        SIZE,
    );
    for (what, file, data) in [
        ("tensors", &tensors, at),
        ("metadata pairs", &pairs, 0),
        ("tiny metadata pairs", &tiny, 0),
        ("one large value", &large, 0),
    ] {
        let (result, peak) = measure(what, file, data);
        assert!(result.unwrap() > 0);
        assert!(peak <= 3 * file.len(), "{what}: {peak} bytes at peak");
    }
    // Values that the old tree of JSON values held at 16 times their size
    // are refused where they start, in little memory.
    let numbers = safetensors(
        format!(
            r#"{{"__metadata__":{{"k":[{}0]}}}}"#,
            "0,".repeat((SIZE - 40) / 2)
        ),
        SIZE,
    );
    let (result, peak) = measure("an array of numbers", &numbers, 0);
    assert!(matches!(result, Err(FileError::BadEntry { .. })));
    assert!(peak <= SIZE / 100, "{peak} bytes at peak");
}

/// A GGUF file's header: `tensors` empty float32 tensors, or `keys` uint8
/// metadata keys, each named by its number in hex, the shortest entries
/// GGUF has (37 and 18 bytes here).
fn gguf(tensors: usize, keys: usize) -> Vec<u8> {
    let mut file = b"GGUF".to_vec();
    file.extend(3u32.to_le_bytes());
    file.extend((tensors as u64).to_le_bytes());
    file.extend((keys as u64).to_le_bytes());
    for i in 0..keys {
        let key = format!("{i:x}");
        file.extend((key.len() as u64).to_le_bytes());
        file.extend(key.as_bytes());
        file.extend(0u32.to_le_bytes()); // uint8
        file.push(1);
    }
    for i in 0..tensors {
        let name = format!("{i:x}");
        file.extend((name.len() as u64).to_le_bytes());
        file.extend(name.as_bytes());
        file.extend(1u32.to_le_bytes()); // one axis
        file.extend(0u64.to_le_bytes()); // of length 0
        file.extend(0u32.to_le_bytes()); // F32
        file.extend(0u64.to_le_bytes()); // at offset 0
    }
    file.resize(file.len().next_multiple_of(32), 0);
    file
}

#[test]
#[cfg_attr(miri, ignore = "100 MB headers: far too slow under Miri")]
fn gguf_headers_of_millions_of_entries_take_a_few_times_their_size() {
    let _turn = one_at_a_time();
    // Each tensor costs its FileArray (112 bytes) and three small
    // allocations (name, dtype, shape): 3.1 times the header; each key 40
    // bytes and its text: 2.9 times. The tensor infos were once read into
    // a list of their own before the arrays' (6.0 times).
    // A quarter of SIZE: the ratio does not depend on the size, and a
    // debug build sorts a million keys slowly.
    let (tensors, keys) = (SIZE / 4 / 37, SIZE / 4 / 18);
    for (what, file, most) in [
        ("gguf tensors", gguf(tensors, 0), 4),
        ("gguf keys", gguf(0, keys), 4),
    ] {
        let (result, peak) = measure(what, &file, 0);
        assert!(result.unwrap() > 0);
        assert!(peak <= most * file.len(), "{what}: {peak} bytes at peak");
    }
}
