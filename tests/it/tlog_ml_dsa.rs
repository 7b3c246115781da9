//! ML-DSA-44 signatures and cosignatures (c2sp.org/tlog-cosignature, type 0x06) against code
//! nobody here wrote: a checkpoint that filippo.io/torchwood's ML-DSA-44 log signed, and the
//! `fips204` crate (IntegrityChain's FIPS 204), which the library does not ship, deriving the
//! same keys, making the same deterministic signatures and verifying annals' own.

use annals::tlog::cosignature::{cosigned_by, timestamp};
use annals::tlog::note::{COSIGNATURE_TYPE, ML_DSA_44_TYPE};
use annals::tlog::subtree::{ML_DSA_44_PUBLIC_KEY_BYTES, ML_DSA_44_SIGNATURE_BYTES};
use annals::tlog::{
    Checkpoint, CosignError, Cosigner, KeyError, Note, NoteError, Signer, Verifier,
};
use fips204::ml_dsa_44;
use fips204::traits::{KeyGen as _, SerDes as _, Signer as _, Verifier as _};

const TORCHWOOD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/torchwood");

fn vector(name: &str) -> String {
    std::fs::read_to_string(format!("{TORCHWOOD}/{name}")).unwrap()
}

const BODY: &str = "example.com/log\n3\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";

/// tlog-cosignature's `cosigned_message`, written here from the specification's struct, not
/// from the library's code.
fn spec_message(
    name: &str,
    time: u64,
    origin: &str,
    start: u64,
    end: u64,
    hash: [u8; 32],
) -> Vec<u8> {
    let mut m = b"subtree/v1\n\0".to_vec();
    m.push(name.len() as u8);
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(&time.to_be_bytes());
    m.push(origin.len() as u8);
    m.extend_from_slice(origin.as_bytes());
    m.extend_from_slice(&start.to_be_bytes());
    m.extend_from_slice(&end.to_be_bytes());
    m.extend_from_slice(&hash);
    m
}

#[test]
fn a_checkpoint_torchwoods_ml_dsa_log_signed_opens() {
    let vkey = vector("mldsa-log.vkey");
    let verifier = Verifier::parse(vkey.trim_end()).unwrap();
    assert_eq!(verifier.signature_type(), ML_DSA_44_TYPE);
    assert_eq!(
        verifier.public_key_bytes().len(),
        ML_DSA_44_PUBLIC_KEY_BYTES
    );
    assert!(verifier.is_log_key() && verifier.is_cosigner());
    assert_eq!(
        verifier.to_string(),
        vkey.trim_end(),
        "the vkey writes back"
    );
    let text = vector("mldsa-log.checkpoint");
    let opened = Checkpoint::open(&text, std::slice::from_ref(&verifier)).unwrap();
    assert_eq!(opened.checkpoint.origin, "example.com/mldsa-log");
    assert_eq!(opened.checkpoint.size, 1);
    assert_eq!(opened.to_text(), text);
    let line = &opened.note().note().signatures()[0];
    assert_eq!(line.signature.len(), 8 + ML_DSA_44_SIGNATURE_BYTES);
    assert_eq!(
        timestamp(line),
        Some(0),
        "torchwood's log signs with timestamp 0"
    );
    // The log's own signature is no witness's cosignature.
    assert!(cosigned_by(opened.note()).is_empty());
    assert_eq!(opened.cosignatures().count(), 0);
    // One flipped bit of the signature refuses the checkpoint.
    let mut note = Note::parse(&text).unwrap();
    let mut forged = note.signatures()[0].clone();
    forged.signature[100] ^= 1;
    note = Note::parse(&format!("{}\n{}", note.text(), forged.to_line())).unwrap();
    assert!(matches!(
        note.open(&[verifier]),
        Err(NoteError::BadSignature { line: 5, .. })
    ));
}

#[test]
fn keys_and_signatures_match_another_fips_204_implementation() {
    for seed in [[0u8; 32], [7; 32], [0xa5; 32]] {
        let cosigner = Cosigner::ml_dsa_44_from_seed("witness.example/pq", seed).unwrap();
        let (public, private) = ml_dsa_44::KG::keygen_from_seed(&seed);
        let public_bytes = public.clone().into_bytes();
        assert_eq!(
            cosigner.verifier().public_key_bytes(),
            public_bytes.as_slice()
        );
        let line = cosigner.cosign(BODY, 1_700_000_000).unwrap();
        let (time, signature) = line.signature.split_at(8);
        assert_eq!(time, 1_700_000_000u64.to_be_bytes());
        let message = spec_message(
            "witness.example/pq",
            1_700_000_000,
            "example.com/log",
            0,
            3,
            [0xab; 32],
        );
        let signature: [u8; ML_DSA_44_SIGNATURE_BYTES] = signature.try_into().unwrap();
        assert!(
            public.verify(&message, &signature, b""),
            "fips204 verifies annals' cosignature"
        );
        // The deterministic variant (rnd = 0) is the same signature, byte for byte.
        let theirs = private.try_sign_with_seed(&[0; 32], &message, b"").unwrap();
        assert_eq!(theirs, signature);
        // The key ID binds name, type 0x06 and the 1,312-byte key.
        assert_eq!(
            cosigner.key_id(),
            annals::tlog::KeyId::of_key("witness.example/pq", ML_DSA_44_TYPE, &public_bytes)
        );
    }
}

#[test]
fn a_signature_fips204_made_verifies_as_a_cosignature() {
    let seed = [0x33; 32];
    let (_, private) = ml_dsa_44::KG::keygen_from_seed(&seed);
    let verifier = Cosigner::ml_dsa_44_from_seed("witness.example/other", seed)
        .unwrap()
        .verifier();
    let log = Signer::from_seed("example.com/log", [1; 32]).unwrap();
    let message = spec_message(
        "witness.example/other",
        42,
        "example.com/log",
        0,
        3,
        [0xab; 32],
    );
    // Hedged (randomized) this time: another signature of the same message.
    let signature = private.try_sign(&message, b"").unwrap();
    let mut bytes = 42u64.to_be_bytes().to_vec();
    bytes.extend_from_slice(&signature);
    let mut note = Note::new(BODY).unwrap();
    note.sign(&log);
    note.push_signature(annals::tlog::NoteSignature {
        name: "witness.example/other".into(),
        key_id: verifier.key_id(),
        signature: bytes,
    });
    let opened = Checkpoint::open(&note.to_text(), &[log.verifier(), verifier]).unwrap();
    assert_eq!(
        cosigned_by(opened.note()),
        [("witness.example/other".to_owned(), 42)]
    );
}

#[test]
fn a_log_signs_its_checkpoints_with_ml_dsa_and_the_same_bytes_twice() {
    let log = Signer::ml_dsa_44_from_seed("example.com/log", [9; 32]).unwrap();
    let checkpoint = Checkpoint::parse_body(BODY).unwrap();
    let text = checkpoint.sign(&log).unwrap();
    assert_eq!(text, checkpoint.sign(&log).unwrap(), "deterministic");
    let opened = Checkpoint::open(&text, &[log.verifier()]).unwrap();
    assert_eq!(opened.checkpoint, checkpoint);
    let line = &opened.note().note().signatures()[0];
    assert_eq!(timestamp(line), Some(0));
    // What fips204 verifies: the subtree [0, 3) with the log's name as the cosigner's.
    let (public, _) = ml_dsa_44::KG::keygen_from_seed(&[9; 32]);
    let message = spec_message("example.com/log", 0, "example.com/log", 0, 3, [0xab; 32]);
    let signature: [u8; ML_DSA_44_SIGNATURE_BYTES] = line.signature[8..].try_into().unwrap();
    assert!(public.verify(&message, &signature, b""));
    // The key reads back from its text form, as a log's key and as a cosigner's.
    let text_form = log.to_private_key_text();
    assert_eq!(Signer::parse(&text_form).unwrap().key_id(), log.key_id());
    assert_eq!(Cosigner::parse(&text_form).unwrap().key_id(), log.key_id());
    assert!(format!("{log:?}").contains("redacted"));
    assert!(!format!("{log:?}").contains(&text_form[text_form.len() - 20..]));
}

#[test]
fn ml_dsa_cosignatures_count_towards_a_quorum_beside_ed25519_ones() {
    let log = Signer::from_seed("example.com/log", [1; 32]).unwrap();
    let pq = Cosigner::generate_ml_dsa_44("witness.example/pq").unwrap();
    let classic = Cosigner::from_seed("witness.example/classic", [2; 32]).unwrap();
    assert_eq!(pq.signature_type(), ML_DSA_44_TYPE);
    assert_eq!(classic.signature_type(), COSIGNATURE_TYPE);
    let mut note = Note::new(BODY).unwrap();
    note.sign(&log);
    note.push_signature(pq.cosign(BODY, 10).unwrap());
    note.push_signature(classic.cosign(BODY, 11).unwrap());
    let verifiers = [log.verifier(), pq.verifier(), classic.verifier()];
    let opened = Checkpoint::open(&note.to_text(), &verifiers).unwrap();
    assert_eq!(
        cosigned_by(opened.note()),
        [
            ("witness.example/pq".to_owned(), 10),
            ("witness.example/classic".to_owned(), 11)
        ]
    );
    // A witness's ML-DSA key is no log key for a checkpoint of another origin.
    assert!(Checkpoint::open(&note.to_text(), &[pq.verifier()]).is_err());
}

#[test]
fn subtree_cosignatures_bind_range_origin_and_name() {
    let pq = Cosigner::ml_dsa_44_from_seed("witness.example/pq", [5; 32]).unwrap();
    let hash = [0x11; 32];
    let line = pq.cosign_subtree("example.com/log", 8, 13, &hash).unwrap();
    assert_eq!(
        timestamp(&line),
        Some(0),
        "a subtree cosignature has no timestamp"
    );
    let verifier = pq.verifier();
    assert!(verifier.verify_subtree("example.com/log", 8, 13, &hash, &line.signature));
    assert!(!verifier.verify_subtree("example.com/log", 8, 14, &hash, &line.signature));
    assert!(!verifier.verify_subtree("example.com/other", 8, 13, &hash, &line.signature));
    let renamed = Cosigner::ml_dsa_44_from_seed("witness.example/pq2", [5; 32]).unwrap();
    assert!(
        !renamed
            .verifier()
            .verify_subtree("example.com/log", 8, 13, &hash, &line.signature)
    );
    let (public, _) = ml_dsa_44::KG::keygen_from_seed(&[5; 32]);
    let message = spec_message("witness.example/pq", 0, "example.com/log", 8, 13, hash);
    let signature: [u8; ML_DSA_44_SIGNATURE_BYTES] = line.signature[8..].try_into().unwrap();
    assert!(public.verify(&message, &signature, b""));
    // Ed25519 cosigners sign no subtree; an empty or backwards range is none.
    let classic = Cosigner::from_seed("witness.example/classic", [2; 32]).unwrap();
    assert_eq!(
        classic.cosign_subtree("example.com/log", 8, 13, &hash),
        Err(CosignError::NoSubtree)
    );
    assert_eq!(
        pq.cosign_subtree("example.com/log", 13, 13, &hash),
        Err(CosignError::NoSubtree)
    );
}

#[test]
fn ml_dsa_key_texts_refuse_wrong_lengths_and_long_names() {
    let long = "a".repeat(256);
    assert_eq!(
        Cosigner::ml_dsa_44_from_seed(&long, [1; 32]).unwrap_err(),
        KeyError::MlDsaNameTooLong {
            bytes: 256,
            max: 255
        }
    );
    assert!(Cosigner::ml_dsa_44_from_seed(&"a".repeat(255), [1; 32]).is_ok());
    // A vkey of type 0x06 with an Ed25519-sized key.
    let short = annals::tlog::base64_encode(&[[ML_DSA_44_TYPE].as_slice(), &[1; 32]].concat());
    assert!(matches!(
        Verifier::parse(&format!("example.com/x+00000000+{short}")),
        Err(KeyError::MlDsaKeyLength { bytes: 32, .. })
    ));
    // A cosignature of something that is not a checkpoint.
    let pq = Cosigner::ml_dsa_44_from_seed("witness.example/pq", [5; 32]).unwrap();
    assert_eq!(
        pq.cosign("just some text\n", 1),
        Err(CosignError::NotCheckpoint)
    );
}
