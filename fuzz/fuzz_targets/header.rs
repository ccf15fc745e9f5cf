//! The `header` fuzz target: its input and checks are `bytelens_fuzz::header`.
#![no_main]
libfuzzer_sys::fuzz_target!(
    |input: bytelens_fuzz::header::Input| bytelens_fuzz::header::run(&input)
);
