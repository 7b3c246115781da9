//! The transparency-log formats against the C2SP specifications' examples and against
//! Cloudflare's `signed_note` and `tlog_tiles`, an implementation nobody here wrote.

use annals::log::Digest;
use annals::merkle::{LogTreeHasher, TreeHasher, consistency_path, inclusion_path};
use annals::testing::setup::ExpectDone;
use annals::tlog::{Checkpoint, Note, NoteError, Signer, TlogProof, Verifier, check_consistency};
use signed_note::{Signer as _, Verifier as _, Verifiers as _};
use tlog_tiles::tlog::{Hash, HashReader};

use annals::testing::vectors::tree::{Levels, record_hash};
use annals::testing::vectors::{self, tree};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/c2sp");

fn vector(name: &str) -> String {
    std::fs::read_to_string(format!("{VECTORS}/{name}")).unwrap()
}

fn signer() -> Signer {
    Signer::from_seed("example.com/annals-log", [0x42; 32]).unwrap()
}

#[test]
fn signed_note_spec_example_opens() {
    let vkey = vector("signed-note-example.vkey");
    let verifier = Verifier::parse(vkey.trim_end()).unwrap();
    let text = vector("signed-note-example.note");
    let opened = Note::parse(&text).unwrap().open(&[verifier]).unwrap();
    assert_eq!(opened.text(), "This is an example message.\n");
    assert_eq!(opened.note().to_text(), text);
}

#[test]
fn cosignature_spec_example_parses_and_keeps_its_lines() {
    let text = vector("tlog-cosignature-example.checkpoint");
    let note = Note::parse(&text).unwrap();
    let checkpoint = Checkpoint::parse_body(note.text()).unwrap();
    assert_eq!(checkpoint.origin, "example.com/behind-the-sofa");
    assert_eq!(checkpoint.size, 20_852_163);
    assert_eq!(note.signatures().len(), 2);
    assert_eq!(note.signatures()[1].name, "witness.example.com/w1");
    // The log's key is not published: with no known key the note must be refused.
    assert!(matches!(
        note.open(&[signer().verifier()]),
        Err(NoteError::NotVerified { signatures: 2, .. })
    ));
}

#[test]
fn keys_round_trip_between_annals_and_signed_note() {
    let ours = signer();
    let theirs = signed_note::StandardSigner::new(&ours.to_private_key_text()).unwrap();
    assert_eq!(theirs.name(), ours.name());
    assert_eq!(theirs.key_id(), ours.key_id().0);
    let their_verifier = signed_note::StandardVerifier::new(&ours.verifier().to_string()).unwrap();
    assert_eq!(their_verifier.key_id(), ours.key_id().0);
    let (skey, vkey) = signed_note::generate_key(&mut rand_core::OsRng, "example.com/theirs");
    let parsed = Signer::parse(&skey).unwrap();
    assert_eq!(parsed.verifier().to_string(), vkey);
    assert_eq!(Verifier::parse(&vkey).unwrap(), parsed.verifier());
}

#[test]
fn annals_checkpoints_open_with_signed_note_and_tlog_tiles() {
    let checkpoint = Checkpoint {
        origin: "example.com/annals-log".into(),
        size: 10_007,
        root: [9; 32],
        extensions: vec!["an extension".into()],
    };
    let text = checkpoint.sign(&signer()).unwrap();
    let note = signed_note::Note::from_bytes(text.as_bytes()).unwrap();
    let verifier = signed_note::StandardVerifier::new(&signer().verifier().to_string()).unwrap();
    let list = signed_note::VerifierList::new(vec![Box::new(verifier)]);
    let (verified, unverified) = note.verify(&list).unwrap();
    assert_eq!((verified.len(), unverified.len()), (1, 0));
    assert!(
        list.verifier("example.com/annals-log", signer().key_id().0)
            .is_ok()
    );
    let theirs = tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap();
    assert_eq!(theirs.origin(), checkpoint.origin);
    assert_eq!(theirs.size(), checkpoint.size);
    assert_eq!(theirs.hash().0, checkpoint.root);
    assert_eq!(theirs.extension(), "an extension\n");
    assert_eq!(note.to_bytes(), text.as_bytes());
}

#[test]
fn signed_note_checkpoints_open_with_annals() {
    let (skey, vkey) = signed_note::generate_key(&mut rand_core::OsRng, "example.com/theirs");
    let their_signer = signed_note::StandardSigner::new(&skey).unwrap();
    let body = tlog_tiles::Checkpoint::new("example.com/theirs", 17, Hash([3; 32]), "")
        .unwrap()
        .to_bytes();
    let mut note = signed_note::Note::new(&body, &[]).unwrap();
    note.add_sigs(&[&their_signer]).unwrap();
    let text = String::from_utf8(note.to_bytes()).unwrap();
    let opened = Checkpoint::open(&text, &[Verifier::parse(&vkey).unwrap()]).unwrap();
    assert_eq!(opened.checkpoint.size, 17);
    assert_eq!(opened.checkpoint.root, [3; 32]);
    assert_eq!(opened.to_text(), text);
}

#[test]
fn ed25519_checkpoints_are_signed_notes_byte_for_byte() {
    // Beside the ML-DSA-44 keys (issue 56) the Ed25519 path writes what it wrote before: the
    // same note as signed_note's, to the byte, from the same key.
    for seed in [[0u8; 32], [0x42; 32], [0xfe; 32]] {
        let ours = Signer::from_seed("example.com/annals-log", seed).unwrap();
        let theirs = signed_note::StandardSigner::new(&ours.to_private_key_text()).unwrap();
        let checkpoint = Checkpoint {
            origin: "example.com/annals-log".into(),
            size: 1234,
            root: [seed[0] ^ 0x5a; 32],
            extensions: vec!["an extension".into()],
        };
        let body = checkpoint.body().unwrap();
        let mut note = signed_note::Note::new(body.as_bytes(), &[]).unwrap();
        note.add_sigs(&[&theirs]).unwrap();
        assert_eq!(
            checkpoint.sign(&ours).unwrap().into_bytes(),
            note.to_bytes(),
            "{seed:?}"
        );
    }
}

/// tlog_tiles' own hash storage, filled as its log writer would.
struct Stored(Vec<Hash>);

impl HashReader for Stored {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::tlog::Error> {
        Ok(indexes.iter().map(|&i| self.0[i as usize]).collect())
    }
}

const SIZES: [u64; 15] = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1023, 1024, 1025, 10_007];

#[test]
fn proofs_agree_with_tlog_tiles_at_many_sizes() {
    let largest = *SIZES.last().unwrap();
    let leaves: Vec<Digest> = (0..largest)
        .map(|i| LogTreeHasher.leaf(record_hash(i).as_bytes()))
        .collect();
    let mut stored = Stored(Vec::new());
    for (i, leaf) in leaves.iter().enumerate() {
        // Their leaf hash of the record hash is ours.
        assert_eq!(
            tlog_tiles::tlog::record_hash(record_hash(i as u64).as_bytes()).0,
            leaf.0
        );
        let new = tlog_tiles::tlog::stored_hashes_for_record_hash(i as u64, Hash(leaf.0), &stored)
            .unwrap();
        stored.0.extend(new);
    }
    let mut checked = 0;
    for size in SIZES {
        let levels = Levels::new(leaves[..size as usize].to_vec());
        let root = annals::merkle::root(&LogTreeHasher, size, &mut levels.get()).unwrap();
        assert_eq!(
            tlog_tiles::tlog::tree_hash(size, &stored).unwrap().0,
            root.0
        );
        for index in [0, size / 2, size - 1] {
            let ours = inclusion_path(&LogTreeHasher, index, size, &mut levels.get()).unwrap();
            let theirs: Vec<Hash> = ours.iter().map(|d| Hash(d.0)).collect();
            let leaf = Hash(leaves[index as usize].0);
            tlog_tiles::tlog::check_record(&theirs, size, Hash(root.0), index, leaf).unwrap();
            let made = tlog_tiles::tlog::prove_record(size, index, &stored).unwrap();
            let made: Vec<Digest> = made.iter().map(|h| Digest(h.0)).collect();
            assert_eq!(made, ours);
            annals::merkle::verify_inclusion(
                &LogTreeHasher,
                index,
                size,
                &leaves[index as usize],
                &made,
                &root,
            )
            .unwrap();
            checked += 1;
        }
        for from in [1, size / 2, size - 1, size] {
            if from == 0 {
                continue;
            }
            let from_root = annals::merkle::root(&LogTreeHasher, from, &mut levels.get()).unwrap();
            let ours = consistency_path(&LogTreeHasher, from, size, &mut levels.get()).unwrap();
            let theirs: Vec<Hash> = ours.iter().map(|d| Hash(d.0)).collect();
            tlog_tiles::tlog::check_tree(&theirs, size, Hash(root.0), from, Hash(from_root.0))
                .unwrap();
            let made = tlog_tiles::tlog::prove_tree(size, from, &stored).unwrap();
            let made: Vec<[u8; 32]> = made.iter().map(|h| h.0).collect();
            assert_eq!(made, ours.iter().map(|d| d.0).collect::<Vec<_>>());
            let checkpoint = |size, root: Digest| Checkpoint {
                origin: "example.com/annals-log".into(),
                size,
                root: root.0,
                extensions: Vec::new(),
            };
            check_consistency(&checkpoint(from, from_root), &checkpoint(size, root), &made)
                .unwrap();
            checked += 1;
        }
    }
    assert_eq!(checked, SIZES.len() * 3 + SIZES.len() * 4 - 2);
}

fn signed_proof() -> (String, String, Digest) {
    let size = 9;
    let leaves: Vec<Digest> = (0..size)
        .map(|i| LogTreeHasher.leaf(record_hash(i).as_bytes()))
        .collect();
    let levels = Levels::new(leaves.clone());
    let root = annals::merkle::root(&LogTreeHasher, size, &mut levels.get()).unwrap();
    let checkpoint = Checkpoint {
        origin: "example.com/annals-log".into(),
        size,
        root: root.0,
        extensions: Vec::new(),
    };
    let text = checkpoint.sign(&signer()).unwrap();
    let opened = Checkpoint::open(&text, &[signer().verifier()]).unwrap();
    let path = inclusion_path(&LogTreeHasher, 6, size, &mut levels.get()).unwrap();
    let proof = TlogProof::new(6, path.iter().map(|d| d.0).collect(), &opened);
    (text, proof.to_text(), record_hash(6))
}

#[test]
fn a_tlog_proof_checks_and_every_truncation_or_bit_flip_is_a_typed_error() {
    let (checkpoint, proof, record) = signed_proof();
    let verifiers = [signer().verifier()];
    assert!(
        TlogProof::parse(&proof)
            .unwrap()
            .check_record(&record, &verifiers)
            .is_ok()
    );
    let mut cases = 0;
    for cut in 0..checkpoint.len() {
        if let Some(text) = checkpoint.get(..cut) {
            assert!(Checkpoint::open(text, &verifiers).is_err(), "{cut}");
            cases += 1;
        }
        assert!(
            Note::from_bytes(&checkpoint.as_bytes()[..cut])
                .and_then(|n| n.open(&verifiers))
                .is_err()
        );
    }
    for cut in 0..proof.len() {
        if let Some(text) = proof.get(..cut) {
            let checked = TlogProof::parse(text).map(|p| p.check_record(&record, &verifiers));
            assert!(!matches!(checked, Ok(Ok(_))), "{cut}");
            cases += 1;
        }
    }
    for (text, is_proof) in [(&checkpoint, false), (&proof, true)] {
        for byte in 0..text.len() {
            for bit in 0..8 {
                let mut bytes = text.as_bytes().to_vec();
                bytes[byte] ^= 1 << bit;
                let Ok(flipped) = String::from_utf8(bytes) else {
                    continue;
                };
                let accepted = if is_proof {
                    matches!(
                        TlogProof::parse(&flipped).map(|p| p.check_record(&record, &verifiers)),
                        Ok(Ok(_))
                    )
                } else {
                    Checkpoint::open(&flipped, &verifiers).is_ok()
                };
                assert!(!accepted, "byte {byte} bit {bit} of {flipped:?}");
                cases += 1;
            }
        }
    }
    assert!(cases > 8 * (checkpoint.len() + proof.len()) / 2, "{cases}");
}

/// A log of `size` records in `dir`, appended in batches of 500 (so that a proof's nodes come
/// from the stored tree, the frontier and recomputed small subtrees alike).
fn log_of(dir: &std::path::Path, size: u64) -> annals::Store {
    let store = annals::Store::open(dir.join("tree.redb")).unwrap();
    let mut appended = 0;
    while appended < size {
        let batch: Vec<annals::NewEvent> = (appended..size.min(appended + 500))
            .map(|i| annals::NewEvent::new("note", i, i.to_le_bytes().to_vec()))
            .collect();
        appended += batch.len() as u64;
        let stream = format!("s/{}", appended % 3);
        store
            .append(&stream, annals::ExpectedVersion::Any, &batch)
            .unwrap()
            .expect_done();
    }
    store
}

/// The tree the store keeps, its roots and its proofs, as tlog_tiles computes and checks them
/// from the store's record hashes alone (format v4's RFC 6962 tree).
#[test]
fn the_stores_roots_and_proofs_verify_with_tlog_tiles_at_many_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let largest = *SIZES.last().unwrap();
    let store = log_of(dir.path(), largest);
    let snapshot = store.snapshot().unwrap();
    let mut stored = Stored(Vec::new());
    let mut hashes = Vec::new();
    for record in snapshot
        .records(annals::Position(0), annals::Direction::Forward)
        .unwrap()
    {
        let record = record.unwrap();
        let leaf = tlog_tiles::tlog::record_hash(record.hash.as_bytes());
        let new = tlog_tiles::tlog::stored_hashes_for_record_hash(record.position.0, leaf, &stored)
            .unwrap();
        stored.0.extend(new);
        hashes.push(leaf);
    }
    assert_eq!(hashes.len() as u64, largest);
    let mut checked = 0;
    for size in SIZES {
        let root = snapshot.merkle_root(size).unwrap();
        assert_eq!(
            tlog_tiles::tlog::tree_hash(size, &stored).unwrap().0,
            root.0,
            "root at {size}"
        );
        for index in [0, size / 2, size - 1] {
            let proof = snapshot
                .inclusion_proof(annals::Position(index), size)
                .unwrap();
            let path: Vec<Hash> = proof.path.iter().map(|d| Hash(d.0)).collect();
            tlog_tiles::tlog::check_record(
                &path,
                size,
                Hash(root.0),
                index,
                hashes[index as usize],
            )
            .unwrap_or_else(|error| panic!("inclusion of {index} in {size}: {error:?}"));
            checked += 1;
        }
        for from in [1, size / 2, size - 1, size] {
            if from == 0 {
                continue;
            }
            let proof = snapshot.consistency_proof(from, size).unwrap();
            let path: Vec<Hash> = proof.path.iter().map(|d| Hash(d.0)).collect();
            let from_root = snapshot.merkle_root(from).unwrap();
            tlog_tiles::tlog::check_tree(&path, size, Hash(root.0), from, Hash(from_root.0))
                .unwrap_or_else(|error| panic!("consistency of {from} with {size}: {error:?}"));
            checked += 1;
        }
    }
    assert_eq!(checked, SIZES.len() * 3 + SIZES.len() * 4 - 2);
}

/// The committed tree vectors are what the generator (`annals::testing::vectors::tree`)
/// writes, and tlog_tiles, knowing nothing of annals, computes the same roots from the record
/// hashes and accepts every proof in them.
#[test]
fn tree_vectors_are_what_the_generator_writes_and_tlog_tiles_accepts_them() {
    let path = vectors::path("tree_v4.json");
    let text = tree::text();
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == text,
        "{} differs from what the generator writes: the tree of format v4 changed",
        path.display()
    );
    let cases: Vec<serde_json::Value> = serde_json::from_str(&committed).unwrap();
    assert_eq!(cases.len(), tree::SIZES.len());
    let hash =
        |value: &serde_json::Value| Hash(Digest::from_hex(value.as_str().unwrap()).unwrap().0);
    let path_of = |value: &serde_json::Value| -> Vec<Hash> {
        value.as_array().unwrap().iter().map(hash).collect()
    };
    let mut stored = Stored(Vec::new());
    for i in 0..*tree::SIZES.last().unwrap() {
        let leaf = tlog_tiles::tlog::record_hash(record_hash(i).as_bytes());
        let new = tlog_tiles::tlog::stored_hashes_for_record_hash(i, leaf, &stored).unwrap();
        stored.0.extend(new);
    }
    // RFC 6962's empty tree, spelled out: SHA-256 of nothing.
    assert_eq!(
        cases[0]["root"],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    for case in &cases[1..] {
        let size = case["size"].as_u64().unwrap();
        let root = hash(&case["root"]);
        assert_eq!(tlog_tiles::tlog::tree_hash(size, &stored).unwrap(), root);
        let inclusion = &case["inclusion"];
        let index = inclusion["index"].as_u64().unwrap();
        let leaf = tlog_tiles::tlog::record_hash(&hash(&inclusion["record_hash"]).0);
        tlog_tiles::tlog::check_record(&path_of(&inclusion["path"]), size, root, index, leaf)
            .unwrap();
        let consistency = &case["consistency"];
        let from = consistency["from_size"].as_u64().unwrap();
        let from_root = hash(&consistency["from_root"]);
        tlog_tiles::tlog::check_tree(&path_of(&consistency["path"]), size, root, from, from_root)
            .unwrap();
    }
}
