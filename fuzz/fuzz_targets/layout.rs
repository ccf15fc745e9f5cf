//! The `layout` fuzz target: its input and checks are `bytelens_fuzz::layout`.
#![no_main]
libfuzzer_sys::fuzz_target!(
    |input: bytelens_fuzz::layout::Input| bytelens_fuzz::layout::run(&input)
);
