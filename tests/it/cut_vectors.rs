//! `schema/vectors/cut_v4.json`: the bytes a cut writes (`schema/FORMAT.md` 3.14) for a log
//! of fixed records, as a known answer. The test rebuilds the log, cuts it, and checks the
//! committed file is exactly what it finds (`annals::testing::vectors::cut`, which the
//! `write_vectors` example writes the file from).

use std::path::PathBuf;

use annals::testing::internals::hash::hex;
use annals::testing::vectors::cut;

fn vectors_path() -> PathBuf {
    annals::testing::vectors::path("cut_v4.json")
}

#[test]
fn cut_vectors_file_is_what_a_cut_writes() {
    let path = vectors_path();
    let dir = tempfile::tempdir().expect("temporary folder");
    let text = cut::text(dir.path());
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    assert!(
        committed == text,
        "{} differs from what a cut writes. Changing it changes the cut's format (FORMAT.md \
         3.14): see schema/vectors/README.md before regenerating with the write_vectors example.",
        path.display()
    );
}

#[test]
fn the_cut_payload_is_laid_out_as_format_says() {
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let vector: serde_json::Value = serde_json::from_str(&text).expect("json");
    let payload: Vec<u8> = (0..vector["cut_record"]["payload_hex"].as_str().unwrap().len() / 2)
        .map(|i| {
            u8::from_str_radix(
                &vector["cut_record"]["payload_hex"].as_str().unwrap()[2 * i..2 * i + 2],
                16,
            )
            .unwrap()
        })
        .collect();
    // u8 version ‖ u64 from ‖ u64 before ‖ anchor ‖ u64 keyed ‖ u16 len ‖ name ‖ blake3 ‖ u32 count
    assert_eq!(payload[0], 1);
    assert_eq!(u64::from_le_bytes(payload[1..9].try_into().unwrap()), 0);
    assert_eq!(u64::from_le_bytes(payload[9..17].try_into().unwrap()), 21);
    assert_eq!(hex(&payload[17..49]), vector["anchor"].as_str().unwrap());
    // Records 0, 5, 10, 15 and 20 carry a key.
    assert_eq!(u64::from_le_bytes(payload[49..57].try_into().unwrap()), 5);
    let name_len = usize::from(u16::from_le_bytes(payload[57..59].try_into().unwrap()));
    assert_eq!(&payload[59..59 + name_len], b"log-0.archive");
    let at = 59 + name_len;
    assert_eq!(
        hex(&payload[at..at + 32]),
        vector["archive_blake3"].as_str().unwrap()
    );
    let count = u32::from_le_bytes(payload[at + 32..at + 36].try_into().unwrap());
    assert_eq!(
        count as usize,
        annals::maintenance::builtin_projections().len()
    );
    // Block 0 holds 16 hashes, block 1 the 5 of positions 16 to 20, each with a checksum.
    let blocks = vector["archived"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0]["stored_hex"].as_str().unwrap().len(),
        2 * (16 * 32 + 8)
    );
    assert_eq!(
        blocks[1]["stored_hex"].as_str().unwrap().len(),
        2 * (5 * 32 + 8)
    );
}
