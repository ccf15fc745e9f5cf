//! The `args` fuzz target: its input and checks are `bytelens_fuzz::args`.
#![no_main]
libfuzzer_sys::fuzz_target!(|input: bytelens_fuzz::args::Input| bytelens_fuzz::args::run(&input));
