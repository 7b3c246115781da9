//! Fuzz target `cli_input`: a thin wrapper; the body is `annals::testing::harness::cli_input`, which
//! the stable test `tests/it/fuzz_replay.rs` also runs over the corpus.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    annals::testing::harness::cli_input(data);
});
