//! The Merkle tree: the published RFC 6962 test vectors with SHA-256, read in place from
//! `../shared/vectors/rfc6962/`, and mutations of valid proofs of the log's own tree.

use std::fs;
use std::path::{Path, PathBuf};

use annals::merkle::{TreeHasher, verify_consistency, verify_inclusion};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// RFC 6962's SHA-256 tree hash; hashes are byte vectors so that vectors with hashes of odd
/// lengths reach the verifier as they are.
struct Rfc6962;

impl TreeHasher for Rfc6962 {
    type Hash = Vec<u8>;

    fn size(&self) -> usize {
        32
    }

    fn empty(&self) -> Vec<u8> {
        Sha256::digest(b"").to_vec()
    }

    fn leaf(&self, entry: &[u8]) -> Vec<u8> {
        let mut hasher = Sha256::new();
        hasher.update([0x00]);
        hasher.update(entry);
        hasher.finalize().to_vec()
    }

    fn node(&self, left: &Vec<u8>, right: &Vec<u8>) -> Vec<u8> {
        let mut hasher = Sha256::new();
        hasher.update([0x01]);
        hasher.update(left);
        hasher.update(right);
        hasher.finalize().to_vec()
    }
}

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/rfc6962")
}

/// Every `.json` file under `dir`, in name order.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("read the vectors folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Standard base64 (with padding) to bytes.
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

fn hash_field(case: &Value, field: &str) -> Vec<u8> {
    base64(case[field].as_str().unwrap_or(""))
}

fn path_field(case: &Value) -> Vec<Vec<u8>> {
    match case["proof"].as_array() {
        Some(items) => items
            .iter()
            .map(|item| base64(item.as_str().expect("a base64 string")))
            .collect(),
        None => Vec::new(),
    }
}

fn read_case(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read a vector")).expect("a JSON vector")
}

#[test]
fn base64_decodes_the_rfc_4648_examples() {
    assert_eq!(base64("Zm9vYmFy"), b"foobar");
    assert_eq!(base64("Zm9vYg=="), b"foob");
    assert_eq!(base64("Zm9vYmE="), b"fooba");
    assert_eq!(base64(""), b"");
}

#[test]
fn rfc6962_inclusion_vectors_are_accepted_exactly_when_valid() {
    let files = json_files(&vectors_dir().join("inclusion"));
    assert_eq!(files.len(), 98, "inclusion vectors found");
    let mut accepted = 0;
    for file in &files {
        let case = read_case(file);
        let result = verify_inclusion(
            &Rfc6962,
            case["leafIdx"].as_u64().expect("leafIdx"),
            case["treeSize"].as_u64().expect("treeSize"),
            &hash_field(&case, "leafHash"),
            &path_field(&case),
            &hash_field(&case, "root"),
        );
        let want_err = case["wantErr"].as_bool().expect("wantErr");
        assert_eq!(result.is_err(), want_err, "{}: {result:?}", file.display());
        accepted += usize::from(!want_err);
    }
    assert!(accepted >= 5, "only {accepted} valid inclusion vectors");
}

#[test]
fn rfc6962_consistency_vectors_are_accepted_exactly_when_valid() {
    let files = json_files(&vectors_dir().join("consistency"));
    assert_eq!(files.len(), 98, "consistency vectors found");
    let mut accepted = 0;
    for file in &files {
        let case = read_case(file);
        let result = verify_consistency(
            &Rfc6962,
            case["size1"].as_u64().expect("size1"),
            case["size2"].as_u64().expect("size2"),
            &path_field(&case),
            &hash_field(&case, "root1"),
            &hash_field(&case, "root2"),
        );
        let want_err = case["wantErr"].as_bool().expect("wantErr");
        assert_eq!(result.is_err(), want_err, "{}: {result:?}", file.display());
        accepted += usize::from(!want_err);
    }
    assert!(accepted >= 5, "only {accepted} valid consistency vectors");
}
