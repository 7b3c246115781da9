//! The Merkle tree: the published RFC 6962 test vectors, read in place from
//! `tests/vectors/rfc6962/`, checked with the log's own tree hash (SHA-256 since format v4)
//! and with a reference written here, and mutations of valid proofs of the log's own tree.

use annals::testing::setup::ExpectDone;
use std::fs;
use std::path::{Path, PathBuf};

use annals::merkle::{
    ConsistencyProof, InclusionProof, LogTreeHasher, ProofError, TreeHasher, TreeHead, Trust,
    TrustedHead, check_consistency, check_inclusion, leaf_hash, root_from_inclusion,
    root_of_leaves, roots_from_consistency, verify_consistency, verify_inclusion,
};
use annals::{
    Direction, Error, ExpectedVersion, Position, Store, audit::Problem, audit::ProofFile,
    error::AuditError, error::ProofFileError, log::Digest,
};

use crate::common::{append_one, base64, event};
use annals::testing::internals::checksum::{seal_meta, unseal_meta};
use redb::ReadableTable;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// RFC 6962's SHA-256 tree hash written apart from the crate's; hashes are byte vectors so
/// that vectors with hashes of odd lengths reach the verifier as they are.
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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/rfc6962")
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

/// The 32-byte hashes of a vector, or `None` when one of them has another length (a case
/// only the byte-vector reference can be handed).
fn digests(hashes: &[Vec<u8>]) -> Option<Vec<Digest>> {
    hashes
        .iter()
        .map(|hash| <[u8; 32]>::try_from(hash.as_slice()).ok().map(Digest))
        .collect()
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
    let (mut accepted, mut by_the_log) = (0, 0);
    for file in &files {
        let case = read_case(file);
        let (index, size) = (
            case["leafIdx"].as_u64().expect("leafIdx"),
            case["treeSize"].as_u64().expect("treeSize"),
        );
        let (leaf, path, root) = (
            hash_field(&case, "leafHash"),
            path_field(&case),
            hash_field(&case, "root"),
        );
        let result = verify_inclusion(&Rfc6962, index, size, &leaf, &path, &root);
        let want_err = case["wantErr"].as_bool().expect("wantErr");
        assert_eq!(result.is_err(), want_err, "{}: {result:?}", file.display());
        accepted += usize::from(!want_err);
        // The log's own tree hash, wherever the vector's hashes are its size.
        if let (Some(leaf), Some(path), Some(root)) = (
            digests(&[leaf]),
            digests(&path),
            digests(std::slice::from_ref(&root)),
        ) {
            let ours = verify_inclusion(&LogTreeHasher, index, size, &leaf[0], &path, &root[0]);
            assert_eq!(ours.is_err(), want_err, "{}: {ours:?}", file.display());
            by_the_log += usize::from(!want_err);
        }
    }
    assert!(accepted >= 5, "only {accepted} valid inclusion vectors");
    assert!(
        by_the_log >= 5,
        "only {by_the_log} valid vectors checked by the log's tree"
    );
}

#[test]
fn rfc6962_consistency_vectors_are_accepted_exactly_when_valid() {
    let files = json_files(&vectors_dir().join("consistency"));
    assert_eq!(files.len(), 98, "consistency vectors found");
    let (mut accepted, mut by_the_log) = (0, 0);
    for file in &files {
        let case = read_case(file);
        let (from, size) = (
            case["size1"].as_u64().expect("size1"),
            case["size2"].as_u64().expect("size2"),
        );
        let (path, root1, root2) = (
            path_field(&case),
            hash_field(&case, "root1"),
            hash_field(&case, "root2"),
        );
        let result = verify_consistency(&Rfc6962, from, size, &path, &root1, &root2);
        let want_err = case["wantErr"].as_bool().expect("wantErr");
        assert_eq!(result.is_err(), want_err, "{}: {result:?}", file.display());
        accepted += usize::from(!want_err);
        if let (Some(path), Some(roots)) = (digests(&path), digests(&[root1, root2])) {
            let ours = verify_consistency(&LogTreeHasher, from, size, &path, &roots[0], &roots[1]);
            assert_eq!(ours.is_err(), want_err, "{}: {ours:?}", file.display());
            by_the_log += usize::from(!want_err);
        }
    }
    assert!(accepted >= 5, "only {accepted} valid consistency vectors");
    assert!(
        by_the_log >= 5,
        "only {by_the_log} valid vectors checked by the log's tree"
    );
}

/// A log of 150 records: single appends to three streams, then batches of 7 (several records
/// per append and per segment).
fn log_of_150() -> (tempfile::TempDir, Store) {
    let (dir, store) = crate::common::store();
    for i in 0..80u32 {
        append_one(
            &store,
            &format!("s{}", i % 3),
            format!("payload {i}").as_bytes(),
        );
    }
    for batch in 0..10u32 {
        let events: Vec<_> = (0..7u32)
            .map(|i| event("batch", 5, &(batch * 7 + i).to_le_bytes()))
            .collect();
        store
            .append("batch", ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        Position(150)
    );
    // Drained into the file: the tests copy the file itself and damage it beneath the store.
    store.flush().unwrap();
    (dir, store)
}

fn record_hashes(store: &Store) -> Vec<Digest> {
    store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
        .iter()
        .map(|record| record.hash)
        .collect()
}

/// RFC 6962's root over `hashes` by the reference hasher written here, not the crate's.
fn reference_root(hashes: &[Digest]) -> Digest {
    let leaves: Vec<Vec<u8>> = hashes
        .iter()
        .map(|hash| Rfc6962.leaf(hash.as_bytes()))
        .collect();
    Digest(
        root_of_leaves(&Rfc6962, &leaves)
            .try_into()
            .expect("a 32-byte root"),
    )
}

fn flipped(digest: &Digest) -> Digest {
    let mut bytes = digest.0;
    bytes[7] ^= 0x20;
    Digest(bytes)
}

#[test]
fn stored_tree_gives_the_rfc_root_at_every_size() {
    let (_dir, store) = log_of_150();
    let hashes = record_hashes(&store);
    let snapshot = store.snapshot().unwrap();
    for size in 0..=150u64 {
        assert_eq!(
            snapshot.merkle_root(size).unwrap(),
            reference_root(&hashes[..size as usize]),
            "size {size}"
        );
    }
    assert!(matches!(
        snapshot.merkle_root(151),
        Err(Error::Audit(AuditError::SizeBeyondHead {
            size: 151,
            head: 150
        }))
    ));
}

#[test]
fn inclusion_proofs_of_every_position_verify_against_the_root() {
    let (_dir, store) = log_of_150();
    let hashes = record_hashes(&store);
    let snapshot = store.snapshot().unwrap();
    for size in [1, 2, 15, 16, 17, 64, 100, 150] {
        let root = snapshot.merkle_root(size).unwrap();
        for position in 0..size {
            let proof = snapshot.inclusion_proof(Position(position), size).unwrap();
            let head = TreeHead { size, root };
            let checked = check_inclusion(&proof, &head, &hashes[position as usize]);
            assert_eq!(checked, Ok(()));
        }
    }
}

#[test]
fn consistency_proofs_between_sizes_verify_against_both_roots() {
    let (_dir, store) = log_of_150();
    let snapshot = store.snapshot().unwrap();
    let roots: Vec<Digest> = (0..=150)
        .map(|n| snapshot.merkle_root(n).unwrap())
        .collect();
    for size in [1, 2, 3, 16, 17, 31, 32, 33, 100, 150] {
        for from_size in 1..=size {
            let proof = snapshot.consistency_proof(from_size, size).unwrap();
            let from = TreeHead {
                size: from_size,
                root: roots[from_size as usize],
            };
            let to = TreeHead {
                size,
                root: roots[size as usize],
            };
            let checked = check_consistency(&proof, &from, &to);
            assert_eq!(checked, Ok(()), "{from_size} -> {size}");
        }
    }
    assert!(matches!(
        snapshot.consistency_proof(0, 10),
        Err(Error::Audit(AuditError::FromSize { .. }))
    ));
}

#[test]
fn every_mutation_of_a_valid_inclusion_proof_is_rejected() {
    let (_dir, store) = log_of_150();
    let hashes = record_hashes(&store);
    let snapshot = store.snapshot().unwrap();
    let mut self_consistent = 0;
    for (position, size) in [(0, 150), (37, 150), (149, 150), (64, 129), (5, 6)] {
        let root = snapshot.merkle_root(size).unwrap();
        let record = hashes[position as usize];
        let valid = snapshot.inclusion_proof(Position(position), size).unwrap();
        let head = |root| TreeHead { size, root };
        assert_eq!(check_inclusion(&valid, &head(root), &record), Ok(()));
        let mut mutants: Vec<(String, InclusionProof, Digest, Digest)> = Vec::new();
        for i in 0..valid.path.len() {
            let mut proof = valid.clone();
            proof.path[i] = flipped(&proof.path[i]);
            mutants.push((format!("path[{i}] flipped"), proof, root, record));
            let mut proof = valid.clone();
            proof.path.remove(i);
            mutants.push((format!("path[{i}] removed"), proof, root, record));
            let mut proof = valid.clone();
            proof.path.insert(i, root);
            mutants.push((format!("hash inserted at {i}"), proof, root, record));
        }
        let mut proof = valid.clone();
        proof.path.push(root);
        mutants.push(("hash appended".into(), proof, root, record));
        for other in [position.wrapping_sub(1), position + 1, position ^ 2, size] {
            let mut proof = valid.clone();
            proof.position = Position(other);
            mutants.push((format!("position {other}"), proof, root, record));
        }
        for other in [size - 1, size + 1, size * 2, size / 2] {
            let mut proof = valid.clone();
            proof.size = other;
            mutants.push((format!("size {other}"), proof, root, record));
        }
        mutants.push(("root flipped".into(), valid.clone(), flipped(&root), record));
        mutants.push((
            "record flipped".into(),
            valid.clone(),
            root,
            flipped(&record),
        ));
        let neighbour = hashes[(position as usize + 1) % hashes.len()];
        mutants.push(("another record".into(), valid.clone(), root, neighbour));
        for (what, proof, root, record) in mutants {
            assert!(
                check_inclusion(&proof, &head(root), &record).is_err(),
                "({position}, {size}): {what} accepted"
            );
        }
        self_consistent += reject_inclusion_forgeries(&snapshot, &valid, &record, &head(root));
    }
    // The forgeries are real: each of these passes against the head it carries.
    assert!(self_consistent >= 30, "only {self_consistent} forgeries");
}

/// Forges `valid` as a forger who controls the whole proof would: position and size changed
/// (together and alone) and the tree head recomputed from the path to match. Every forgery
/// must be refused against the trusted head, and against the true head of its forged size
/// when the log has one (there the sizes agree and only the root can catch it). Returns how
/// many forgeries pass against their own head: what checking a proof against the head it
/// carries is worth.
fn reject_inclusion_forgeries(
    snapshot: &annals::Snapshot,
    valid: &InclusionProof,
    record: &Digest,
    trusted: &TreeHead,
) -> usize {
    let (position, size) = (valid.position.0, valid.size);
    let positions = [
        position,
        position ^ 1,
        position ^ 2,
        position.saturating_sub(1),
    ];
    let sizes = [size, size - 1, size + 1, size * 2, size / 2, position + 1];
    let mut self_consistent = 0;
    for forged_position in positions {
        for forged_size in sizes {
            if (forged_position, forged_size) == (position, size) {
                continue;
            }
            let mut forged = valid.clone();
            forged.position = Position(forged_position);
            forged.size = forged_size;
            let leaf = leaf_hash(record);
            let Ok(root) = root_from_inclusion(
                &LogTreeHasher,
                forged_position,
                forged_size,
                &leaf,
                &forged.path,
            ) else {
                continue;
            };
            let forged_head = TreeHead {
                size: forged_size,
                root,
            };
            let what = format!("({position}, {size}) forged as ({forged_position}, {forged_size})");
            assert_eq!(
                check_inclusion(&forged, &forged_head, record),
                Ok(()),
                "{what}"
            );
            self_consistent += 1;
            assert!(
                check_inclusion(&forged, trusted, record).is_err(),
                "{what}: accepted"
            );
            if let Ok(true_root) = snapshot.merkle_root(forged_size) {
                let same_size = TreeHead {
                    size: forged_size,
                    root: true_root,
                };
                assert!(
                    matches!(
                        check_inclusion(&forged, &same_size, record),
                        Err(ProofError::RootMismatch { .. })
                    ),
                    "{what}: accepted against the true head of size {forged_size}"
                );
            }
        }
    }
    self_consistent
}

#[test]
fn every_mutation_of_a_valid_consistency_proof_is_rejected() {
    let (_dir, store) = log_of_150();
    let snapshot = store.snapshot().unwrap();
    let mut self_consistent = 0;
    for (from_size, size) in [
        (1, 150),
        (37, 150),
        (64, 150),
        (100, 129),
        (5, 6),
        (149, 150),
    ] {
        let from_root = snapshot.merkle_root(from_size).unwrap();
        let root = snapshot.merkle_root(size).unwrap();
        let valid = snapshot.consistency_proof(from_size, size).unwrap();
        let heads = |from_root, root| {
            let from = TreeHead {
                size: from_size,
                root: from_root,
            };
            (from, TreeHead { size, root })
        };
        let (from, to) = heads(from_root, root);
        assert_eq!(check_consistency(&valid, &from, &to), Ok(()));
        let mut mutants: Vec<(String, ConsistencyProof, Digest, Digest)> = Vec::new();
        for i in 0..valid.path.len() {
            let mut proof = valid.clone();
            proof.path[i] = flipped(&proof.path[i]);
            mutants.push((format!("path[{i}] flipped"), proof, from_root, root));
            let mut proof = valid.clone();
            proof.path.remove(i);
            mutants.push((format!("path[{i}] removed"), proof, from_root, root));
            let mut proof = valid.clone();
            proof.path.insert(i, root);
            mutants.push((format!("hash inserted at {i}"), proof, from_root, root));
        }
        let mut proof = valid.clone();
        proof.path.push(root);
        mutants.push(("hash appended".into(), proof, from_root, root));
        for other in [from_size - 1, from_size + 1, from_size ^ 2, size + 1] {
            let mut proof = valid.clone();
            proof.from_size = other;
            mutants.push((format!("from_size {other}"), proof, from_root, root));
        }
        for other in [size - 1, size + 1, size * 2, from_size - 1] {
            let mut proof = valid.clone();
            proof.size = other;
            mutants.push((format!("size {other}"), proof, from_root, root));
        }
        mutants.push((
            "from_root flipped".into(),
            valid.clone(),
            flipped(&from_root),
            root,
        ));
        mutants.push((
            "root flipped".into(),
            valid.clone(),
            from_root,
            flipped(&root),
        ));
        mutants.push(("roots swapped".into(), valid.clone(), root, from_root));
        for (what, proof, from_root, root) in mutants {
            let (from, to) = heads(from_root, root);
            assert!(
                check_consistency(&proof, &from, &to).is_err(),
                "({from_size}, {size}): {what} accepted"
            );
        }
        self_consistent += reject_consistency_forgeries(&snapshot, &valid, &from, &to);
    }
    assert!(self_consistent >= 15, "only {self_consistent} forgeries");
}

/// Forges `valid` with its sizes changed (together and alone) and both tree heads recomputed
/// from the path to match. A consistency proof vouches for one head given the other, so each
/// forgery must be refused when either head is the trusted one, and when both are the log's
/// true heads of the forged sizes. Returns how many pass against the heads they carry.
fn reject_consistency_forgeries(
    snapshot: &annals::Snapshot,
    valid: &ConsistencyProof,
    from: &TreeHead,
    to: &TreeHead,
) -> usize {
    let (from_size, size) = (valid.from_size, valid.size);
    let from_sizes = [from_size, from_size + 1, from_size - 1, from_size * 2];
    let sizes = [size, size - 1, size + 1, size * 2];
    let mut self_consistent = 0;
    for forged_from_size in from_sizes {
        for forged_size in sizes {
            if (forged_from_size, forged_size) == (from_size, size) {
                continue;
            }
            let mut forged = valid.clone();
            forged.from_size = forged_from_size;
            forged.size = forged_size;
            let Ok((first, second)) = roots_from_consistency(
                &LogTreeHasher,
                forged_from_size,
                forged_size,
                &forged.path,
                &from.root,
            ) else {
                continue;
            };
            let forged_from = TreeHead {
                size: forged_from_size,
                root: first,
            };
            let forged_to = TreeHead {
                size: forged_size,
                root: second,
            };
            if check_consistency(&forged, &forged_from, &forged_to).is_err() {
                // Seeded by the first root, and that seed does not reproduce itself.
                continue;
            }
            self_consistent += 1;
            let what =
                format!("({from_size}, {size}) forged as ({forged_from_size}, {forged_size})");
            // From a trusted earlier head a consistency proof vouches only that the later head
            // extends it: a forger who keeps the earlier head can make up a later one. That
            // later head is then not the log's, which a trusted later head shows.
            if check_consistency(&forged, from, &forged_to).is_ok() {
                assert_eq!(forged_from, *from, "{what}: accepted from another head");
                assert_ne!(
                    snapshot.merkle_root(forged_size).ok(),
                    Some(forged_to.root),
                    "{what}: the made-up later head is the log's"
                );
            }
            // To a trusted later head, only a true prefix of it passes.
            if check_consistency(&forged, &forged_from, to).is_ok() {
                assert_eq!(forged_to, *to, "{what}: accepted to another head");
                assert_eq!(
                    snapshot.merkle_root(forged_from_size).ok(),
                    Some(forged_from.root),
                    "{what}: vouches for a false prefix of the trusted head"
                );
            }
            if let (Ok(true_from), Ok(true_to)) = (
                snapshot.merkle_root(forged_from_size),
                snapshot.merkle_root(forged_size),
            ) {
                let true_from = TreeHead {
                    size: forged_from_size,
                    root: true_from,
                };
                let true_to = TreeHead {
                    size: forged_size,
                    root: true_to,
                };
                let honest = snapshot.consistency_proof(forged_from_size, forged_size);
                // Only a path the log itself would give may pass between its true heads.
                if honest
                    .as_ref()
                    .is_ok_and(|honest| honest.path == forged.path)
                {
                    continue;
                }
                assert!(
                    check_consistency(&forged, &true_from, &true_to).is_err(),
                    "{what}: accepted between the log's true heads"
                );
            }
        }
    }
    self_consistent
}

#[test]
fn verify_finds_a_stored_tree_node_that_differs_from_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let (_keep, store) = log_of_150();
        std::fs::copy(store.path(), &path).unwrap();
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut nodes = txn
                .open_table(annals::testing::internals::tables::MERKLE)
                .unwrap();
            // Leaves 32..48: completed by the record at position 47.
            let node = annals::testing::internals::tables::seal_merkle_node(4, 2, &[7u8; 32]);
            nodes.insert((4, 2), node).unwrap();
        }
        txn.commit().unwrap();
    }
    let report = annals::Audit::of(&Store::open_read_only(&path).unwrap())
        .verify()
        .unwrap();
    let finding = report.problem.expect("a finding");
    assert_eq!(finding.position, Position(47));
    assert!(
        matches!(finding.problem, Problem::Merkle { .. }),
        "{finding}"
    );
}

/// Damage written beneath the store through raw redb.
type Damage = fn(&redb::WriteTransaction);

#[test]
fn verify_finds_a_stored_frontier_or_an_extra_node_that_differs_from_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let (_keep, store) = log_of_150();
    let damage: [(&str, Damage); 2] = [
        ("frontier", |txn| {
            let mut meta = txn
                .open_table(annals::testing::internals::tables::META)
                .unwrap();
            let key = annals::testing::internals::tables::HEAD_KEY;
            let stored = meta.get(key).unwrap().unwrap().value().to_vec();
            let mut head = unseal_meta(key, &stored).unwrap().to_vec();
            // The first byte of the frontier, after the next position and the head hash,
            // sealed again: the damage is the frontier's, not its checksum's.
            head[40] ^= 1;
            meta.insert(key, seal_meta(key, &head).as_slice()).unwrap();
        }),
        ("extra node", |txn| {
            let mut nodes = txn
                .open_table(annals::testing::internals::tables::MERKLE)
                .unwrap();
            let node = annals::testing::internals::tables::seal_merkle_node(4, 1_000, &[1u8; 32]);
            nodes.insert((4, 1_000), node).unwrap();
        }),
    ];
    for (what, damage) in damage {
        let path = dir.path().join(format!("{what}.redb"));
        std::fs::copy(store.path(), &path).unwrap();
        {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            damage(&txn);
            txn.commit().unwrap();
        }
        let report = annals::Audit::of(&Store::open_read_only(&path).unwrap())
            .verify()
            .unwrap();
        let finding = report.problem.expect("a finding");
        assert_eq!(finding.position, Position(150), "{what}");
        assert!(
            matches!(finding.problem, Problem::Merkle { .. }),
            "{what}: {finding}"
        );
    }
}

/// The proof file of the record at `position` in the tree of `size`, and that file forged into
/// the tree of `size - 1`: the size changed, the root recomputed from the path, the tree head
/// hash recomputed to match.
fn forged_proof_file(
    snapshot: &annals::Snapshot,
    position: u64,
    size: u64,
) -> (ProofFile, ProofFile) {
    let valid = snapshot
        .inclusion_proof_file(Position(position), size)
        .unwrap();
    let ProofFile::Inclusion {
        record_hash, path, ..
    } = valid.clone()
    else {
        panic!("an inclusion proof file")
    };
    let leaf = leaf_hash(&record_hash);
    let root = root_from_inclusion(&LogTreeHasher, position, size - 1, &leaf, &path)
        .expect("the path fits the smaller tree too");
    let forged = ProofFile::Inclusion {
        tree: annals::audit::ProofTree::Rfc6962,
        position,
        size: size - 1,
        record_hash,
        root,
        tree_head: TreeHead {
            size: size - 1,
            root,
        }
        .hash(),
        path,
    };
    (valid, forged)
}

/// The forgery issue 13 found accepted: "position 1234 is in the tree of size 2006" for a log
/// of 2,007 records, with the tree head recomputed to match.
#[test]
fn a_forged_claim_about_a_tree_of_2006_is_refused_against_the_kept_head_of_2007() {
    let (_dir, store) = crate::common::store();
    for batch in 0..9u64 {
        let events: Vec<_> = (0..223u64)
            .map(|i| event("batch", 1, &(batch * 223 + i).to_le_bytes()))
            .collect();
        store
            .append("batch", ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
    }
    let snapshot = store.snapshot().unwrap();
    let kept = TreeHead {
        size: 2007,
        root: snapshot.merkle_root(2007).unwrap(),
    };
    let (valid, forged) = forged_proof_file(&snapshot, 1234, 2007);
    assert_eq!(forged.check_self_consistency(), Ok(()));
    assert_eq!(
        valid.check(&Trust::from(TrustedHead::Hash(kept.hash()))),
        Ok(kept)
    );
    assert_eq!(
        forged.check(&Trust::from(TrustedHead::Head(kept))),
        Err(ProofError::TrustedSize {
            proof: 2006,
            trusted: 2007
        })
    );
    assert!(matches!(
        forged.check(&Trust::from(TrustedHead::Hash(kept.hash()))),
        Err(ProofError::TrustedHash { .. })
    ));
}

#[test]
fn a_forged_proof_file_passes_only_against_its_own_heads() {
    let (_dir, store) = log_of_150();
    let snapshot = store.snapshot().unwrap();
    let (valid, forged) = forged_proof_file(&snapshot, 37, 150);
    let head = |size| TreeHead {
        size,
        root: snapshot.merkle_root(size).unwrap(),
    };
    let (kept, kept_149) = (head(150), head(149));
    // Self-consistent: the check a proof file could make alone accepts the forgery.
    assert_eq!(forged.check_self_consistency(), Ok(()));
    assert_eq!(
        forged.check(&Trust::from(TrustedHead::Head(forged.tree_head()))),
        Ok(forged.tree_head())
    );
    // The heads the auditor kept refuse it, naming what disagrees.
    assert_eq!(
        forged.check(&Trust::from(TrustedHead::Head(kept))),
        Err(ProofError::TrustedSize {
            proof: 149,
            trusted: 150
        })
    );
    assert!(matches!(
        forged.check(&Trust::from(TrustedHead::Head(kept_149))),
        Err(ProofError::TrustedRoot {
            which: "root",
            size: 149,
            ..
        })
    ));
    for trusted in [kept, kept_149] {
        assert!(matches!(
            forged.check(&Trust::from(TrustedHead::Hash(trusted.hash()))),
            Err(ProofError::TrustedHash { .. })
        ));
    }
    assert_eq!(valid.check(&Trust::from(TrustedHead::Head(kept))), Ok(kept));
    assert_eq!(
        valid.check(&Trust::from(TrustedHead::Hash(kept.hash()))),
        Ok(kept)
    );
    // A valid proof of a smaller tree is refused too: only a consistency proof links it.
    let smaller = snapshot.inclusion_proof_file(Position(37), 149).unwrap();
    assert_eq!(smaller.check_self_consistency(), Ok(()));
    assert!(matches!(
        smaller.check(&Trust::from(TrustedHead::Head(kept))),
        Err(ProofError::TrustedSize { .. })
    ));
    let link = snapshot.consistency_proof_file(149, 150).unwrap();
    assert_eq!(link.check(&Trust::from(TrustedHead::Head(kept))), Ok(kept));
    let vouched = link.from_tree_head().unwrap();
    assert_eq!(
        smaller.check(&Trust::from(TrustedHead::Head(vouched))),
        Ok(vouched)
    );
    assert!(matches!(
        link.check(&Trust::from(TrustedHead::Head(head(100)))),
        Err(ProofError::TrustedSizes {
            from_size: 149,
            size: 150,
            trusted: 100
        })
    ));
}

/// Every field of a proof file that holds one hash.
const HASH_FIELDS: [&str; 5] = [
    "record_hash",
    "root",
    "tree_head",
    "from_root",
    "from_tree_head",
];

#[test]
fn proof_files_spell_hashes_in_lower_case_and_the_reader_names_the_field_otherwise() {
    let (_dir, store) = log_of_150();
    let snapshot = store.snapshot().unwrap();
    let proofs = [
        snapshot.inclusion_proof_file(Position(37), 150).unwrap(),
        snapshot.consistency_proof_file(37, 150).unwrap(),
    ];
    for proof in proofs {
        let json = serde_json::to_value(&proof).unwrap();
        let text = json.to_string();
        assert_eq!(text, text.to_lowercase(), "written in lower case");
        assert_eq!(ProofFile::from_json(text.as_bytes()), Ok(proof.clone()));
        let mut fields: Vec<String> = HASH_FIELDS
            .into_iter()
            .filter(|field| json.get(field).is_some())
            .map(String::from)
            .collect();
        fields.push("path[1]".into());
        for field in fields {
            let mut upper = json.clone();
            let slot = match field.strip_prefix("path[") {
                Some(_) => &mut upper["path"][1],
                None => &mut upper[field.as_str()],
            };
            *slot = slot.as_str().unwrap().to_uppercase().into();
            let bytes = upper.to_string().into_bytes();
            assert_eq!(
                ProofFile::from_json(&bytes),
                Err(ProofFileError::UpperCaseHex {
                    field: field.clone()
                }),
                "{field}"
            );
            // Deserialising without `from_json` refuses it too, though without the field.
            assert!(
                serde_json::from_slice::<ProofFile>(&bytes).is_err(),
                "{field}"
            );
        }
        let mut short = json.clone();
        short["root"] = "abc".into();
        assert_eq!(
            ProofFile::from_json(short.to_string().as_bytes()),
            Err(ProofFileError::NotHex {
                field: "root".into()
            })
        );
    }
}
