//! The transparency-log formats against the C2SP specifications' examples and against
//! Cloudflare's `signed_note` and `tlog_tiles`, an implementation nobody here wrote.

use annals::Digest;
use annals::merkle::{TreeHasher, consistency_path, inclusion_path};
use annals::tlog::{
    Checkpoint, Note, NoteError, Sha256TreeHasher, Signer, TlogProof, Verifier, check_consistency,
};
use signed_note::{Signer as _, Verifier as _, Verifiers as _};
use tlog_tiles::tlog::{Hash, HashReader};

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

/// Every perfect subtree root of a tree of SHA-256 leaves, level by level.
struct Levels(Vec<Vec<Digest>>);

impl Levels {
    fn new(leaves: Vec<Digest>) -> Levels {
        let mut levels = vec![leaves];
        while levels.last().unwrap().len() > 1 {
            let below = levels.last().unwrap();
            let up = below
                .chunks_exact(2)
                .map(|pair| Sha256TreeHasher.node(&pair[0], &pair[1]))
                .collect();
            levels.push(up);
        }
        Levels(levels)
    }

    fn get(&self) -> impl FnMut(u8, u64) -> Result<Digest, ()> + '_ {
        |level, index| Ok(self.0[level as usize][index as usize])
    }
}

/// tlog_tiles' own hash storage, filled as its log writer would.
struct Stored(Vec<Hash>);

impl HashReader for Stored {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::tlog::Error> {
        Ok(indexes.iter().map(|&i| self.0[i as usize]).collect())
    }
}

fn record_hash(i: u64) -> Digest {
    Digest(*blake3::hash(&i.to_le_bytes()).as_bytes())
}

const SIZES: [u64; 15] = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1023, 1024, 1025, 10_007];

#[test]
fn proofs_agree_with_tlog_tiles_at_many_sizes() {
    let largest = *SIZES.last().unwrap();
    let leaves: Vec<Digest> = (0..largest)
        .map(|i| Sha256TreeHasher.leaf(record_hash(i).as_bytes()))
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
        let root = annals::merkle::root(&Sha256TreeHasher, size, &mut levels.get()).unwrap();
        assert_eq!(
            tlog_tiles::tlog::tree_hash(size, &stored).unwrap().0,
            root.0
        );
        for index in [0, size / 2, size - 1] {
            let ours = inclusion_path(&Sha256TreeHasher, index, size, &mut levels.get()).unwrap();
            let theirs: Vec<Hash> = ours.iter().map(|d| Hash(d.0)).collect();
            let leaf = Hash(leaves[index as usize].0);
            tlog_tiles::tlog::check_record(&theirs, size, Hash(root.0), index, leaf).unwrap();
            let made = tlog_tiles::tlog::prove_record(size, index, &stored).unwrap();
            let made: Vec<Digest> = made.iter().map(|h| Digest(h.0)).collect();
            assert_eq!(made, ours);
            annals::merkle::verify_inclusion(
                &Sha256TreeHasher,
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
            let from_root =
                annals::merkle::root(&Sha256TreeHasher, from, &mut levels.get()).unwrap();
            let ours = consistency_path(&Sha256TreeHasher, from, size, &mut levels.get()).unwrap();
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
        .map(|i| Sha256TreeHasher.leaf(record_hash(i).as_bytes()))
        .collect();
    let levels = Levels::new(leaves.clone());
    let root = annals::merkle::root(&Sha256TreeHasher, size, &mut levels.get()).unwrap();
    let checkpoint = Checkpoint {
        origin: "example.com/annals-log".into(),
        size,
        root: root.0,
        extensions: Vec::new(),
    };
    let text = checkpoint.sign(&signer()).unwrap();
    let opened = Checkpoint::open(&text, &[signer().verifier()]).unwrap();
    let path = inclusion_path(&Sha256TreeHasher, 6, size, &mut levels.get()).unwrap();
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

#[test]
fn keygen_writes_a_0600_key_refuses_an_existing_file_and_prints_the_vkey() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("log.key");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_annals"))
            .args(args)
            .output()
            .unwrap()
    };
    let path = key.to_str().unwrap();
    let made = run(&["keygen", "--name", "example.com/log", path]);
    assert!(made.status.success());
    let vkey = String::from_utf8(made.stdout).unwrap();
    let signer = Signer::parse(std::fs::read_to_string(&key).unwrap().trim_end()).unwrap();
    assert_eq!(signer.verifier().to_string(), vkey.trim_end());
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let again = run(&["keygen", "--name", "example.com/log", path]);
    assert_eq!(again.status.code(), Some(2));
    let stderr = String::from_utf8(again.stderr).unwrap();
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(
        Signer::parse(std::fs::read_to_string(&key).unwrap().trim_end())
            .unwrap()
            .verifier(),
        signer.verifier()
    );
    let bad = run(&[
        "keygen",
        "--name",
        "a+b",
        dir.path().join("k2").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
}
