//! The fuzz targets' bodies on the stable toolchain: every committed corpus file under
//! `fuzz/corpus/<target>/` (seeds and every past finding), then a fixed number of seeded
//! random inputs per target. A failure names the file or the seed.

use std::path::Path;

use annals::testing::harness;
use annals::testing::internals::demo::Rng;

/// Seeded random inputs per target, beyond the corpus.
const RANDOM_INPUTS: u64 = 200;

type Body = fn(&[u8]);

fn replay(target: &str, body: Body) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{target} has no committed corpus");
    for file in &files {
        let bytes = std::fs::read(file).expect("a corpus file");
        let run = std::panic::catch_unwind(|| body(&bytes));
        assert!(
            run.is_ok(),
            "{target}: corpus file {} fails",
            file.display()
        );
    }
    for seed in 0..RANDOM_INPUTS {
        let mut rng = Rng::new(seed);
        let len = rng.below(600) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        // Half the inputs are a corpus file with a few bytes changed, as a fuzzer would try.
        if rng.chance(50) {
            let file = &files[rng.below(files.len() as u64) as usize];
            bytes = std::fs::read(file).expect("a corpus file");
            for _ in 0..1 + rng.below(4) {
                if !bytes.is_empty() {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
        }
        let run = std::panic::catch_unwind(|| body(&bytes));
        assert!(run.is_ok(), "{target}: random input of seed {seed} fails");
    }
}

#[test]
fn decode_record_never_panics_on_the_corpus_or_random_bytes() {
    replay("decode_record", harness::decode_record);
}

#[test]
fn commands_agree_with_the_model_on_the_corpus_and_random_scripts() {
    replay("commands_vs_model", harness::commands_vs_model);
}

#[test]
fn storage_faults_keep_the_invariants_on_the_corpus_and_random_inputs() {
    replay("storage_faults", harness::storage_faults);
}

#[test]
fn cli_input_is_an_error_or_a_value_on_the_corpus_and_random_bytes() {
    replay("cli_input", harness::cli_input);
}
