//! The `files` fuzz target: its checks are `bytelens_fuzz::files`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bytelens_fuzz::files::run(data));
