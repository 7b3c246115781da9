//! Fuzz target `commands_vs_model`: a thin wrapper; the body is `annals::testing::harness::commands_vs_model`, which
//! the stable test `tests/it/fuzz_replay.rs` also runs over the corpus.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    annals::testing::harness::commands_vs_model(data);
});
