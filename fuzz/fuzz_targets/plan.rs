//! The `plan` fuzz target: its input and checks are `bytelens_fuzz::plan`.
#![no_main]
libfuzzer_sys::fuzz_target!(|input: bytelens_fuzz::plan::Input| bytelens_fuzz::plan::run(&input));
