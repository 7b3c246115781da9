//! `c2sp.org/tlog-cosignature`: a witness's statement that, as of a time, the largest
//! consistent tree it saw of a log has the checkpoint's root, in its two types: Ed25519
//! `cosignature/v1` (type 0x04) and ML-DSA-44 `subtree/v1` (type 0x06, which the
//! specification says new deployments SHOULD use; its message is [`super::subtree`]'s).
//!
//! The Ed25519 type:
//! A cosignature is a note signature line on the checkpoint, `— <cosigner name>
//! base64(key ID ‖ timestamp ‖ signature)`, where the key ID is
//! `SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]`, the timestamp a big-endian `u64` of POSIX
//! seconds (at most 2^63 − 1), and the signature Ed25519 over `cosignature/v1\n`,
//! `time <timestamp>\n` and the checkpoint's body. Its verifier is a [`Verifier`] of type
//! 0x04, so a note opens against log keys and cosigner keys alike ([`super::Note::open`]),
//! and a bad cosignature from a known cosigner refuses the note as signed-note says.
//!
//! The time comes in with the call ([`Cosigner::cosign`]): nothing here reads a clock.

use std::fmt;

use ed25519_dalek::Signer as _;

use super::note::{
    COSIGNATURE_TYPE, KeyError, KeyId, ML_DSA_44_TYPE, NoteSignature, OpenedNote, PrivateKey,
    SecretKey, Verifier,
};
use super::subtree::{ML_DSA_44_TIMESTAMPED_BYTES, Subtree};
use super::timestamped::signed_message;
pub use super::timestamped::{COSIGNATURE_HEADER, TIMESTAMP_MAX};

/// A witness's cosigning key: a name and a private key, Ed25519 of type 0x04 or ML-DSA-44 of
/// type 0x06. Its `Debug` shows the name and key ID only.
#[derive(Clone)]
pub struct Cosigner {
    key: PrivateKey,
}

impl fmt::Debug for Cosigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key.debug("Cosigner", f)
    }
}

/// Why a cosignature was not made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CosignError {
    /// A timestamp past [`TIMESTAMP_MAX`].
    #[error("the timestamp {0} is past 2^63 - 1")]
    Timestamp(u64),
    /// A body that does not end in a newline, as every note text does.
    #[error("a checkpoint body ends in a newline")]
    Body,
    /// An ML-DSA-44 cosignature of a body that is not a checkpoint whose origin fits the
    /// `subtree/v1` message (at most 255 bytes).
    #[error("an ML-DSA-44 cosignature signs a checkpoint with an origin of at most 255 bytes")]
    NotCheckpoint,
    /// A subtree cosignature asked of an Ed25519 key (whose `cosignature/v1` signs whole
    /// checkpoints only), or of a subtree that is not one (`start` past `end`, or an empty one).
    #[error("only an ML-DSA-44 cosigner signs subtrees, each of at least one leaf")]
    NoSubtree,
}

impl Cosigner {
    /// A new cosigner named `name`, from the operating system's randomness.
    pub fn generate(name: &str) -> Result<Cosigner, KeyError> {
        PrivateKey::generate(name, COSIGNATURE_TYPE).map(|key| Cosigner { key })
    }

    /// A new ML-DSA-44 cosigner (type 0x06) named `name` (at most 255 bytes), from the
    /// operating system's randomness.
    pub fn generate_ml_dsa_44(name: &str) -> Result<Cosigner, KeyError> {
        PrivateKey::generate(name, ML_DSA_44_TYPE).map(|key| Cosigner { key })
    }

    /// The ML-DSA-44 cosigner (type 0x06) named `name` whose FIPS 204 seed (ξ) is `seed`.
    pub fn ml_dsa_44_from_seed(name: &str, seed: [u8; 32]) -> Result<Cosigner, KeyError> {
        PrivateKey::from_seed(name, ML_DSA_44_TYPE, seed).map(|key| Cosigner { key })
    }

    /// The cosigner named `name` whose Ed25519 seed is `seed`.
    pub fn from_seed(name: &str, seed: [u8; 32]) -> Result<Cosigner, KeyError> {
        PrivateKey::from_seed(name, COSIGNATURE_TYPE, seed).map(|key| Cosigner { key })
    }

    /// Parses `PRIVATE+KEY+<name>+<key ID hex>+base64(type ‖ seed)` of type 0x04 (Ed25519)
    /// or 0x06 (ML-DSA-44), checking the key ID.
    pub fn parse(text: &str) -> Result<Cosigner, KeyError> {
        PrivateKey::parse(text, &[COSIGNATURE_TYPE, ML_DSA_44_TYPE]).map(|key| Cosigner { key })
    }

    /// The signature type: [`COSIGNATURE_TYPE`] or [`ML_DSA_44_TYPE`].
    pub fn signature_type(&self) -> u8 {
        self.key.type_byte()
    }

    /// The private key text form; keep it secret.
    pub fn to_private_key_text(&self) -> zeroize::Zeroizing<String> {
        self.key.to_text()
    }

    /// The verifier of this cosigner's cosignatures (its vkey has type 0x04 or 0x06).
    pub fn verifier(&self) -> Verifier {
        self.key.verifier()
    }

    /// The cosigner's name.
    pub fn name(&self) -> &str {
        &self.key.name
    }

    /// The key ID.
    pub fn key_id(&self) -> KeyId {
        self.key.key_id
    }

    /// The cosignature line of the checkpoint whose note text (its body, newline-terminated)
    /// is `body`, made at `timestamp` (POSIX seconds).
    ///
    /// ```
    /// use annals_format::tlog::{Checkpoint, Cosigner, Note, Signer};
    ///
    /// let log = Signer::from_seed("example.com/log", [1; 32])?;
    /// let witness = Cosigner::from_seed("witness.example/w1", [2; 32])?;
    /// let body = "example.com/log\n3\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";
    /// let mut note = Note::new(body)?;
    /// note.sign(&log);
    /// note.push_signature(witness.cosign(body, 1_679_315_147)?);
    /// let opened = Checkpoint::open(&note.to_text(), &[log.verifier(), witness.verifier()])?;
    /// assert_eq!(annals_format::tlog::cosignature::cosigned_by(opened.note()).len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cosign(&self, body: &str, timestamp: u64) -> Result<NoteSignature, CosignError> {
        if timestamp > TIMESTAMP_MAX {
            return Err(CosignError::Timestamp(timestamp));
        }
        if !body.ends_with('\n') {
            return Err(CosignError::Body);
        }
        let bytes = match &self.key.key {
            SecretKey::Ed25519(key) => {
                let signature = key.sign(&signed_message(body.as_bytes(), timestamp));
                let mut bytes = Vec::with_capacity(72);
                bytes.extend_from_slice(&timestamp.to_be_bytes());
                bytes.extend_from_slice(&signature.to_bytes());
                bytes
            }
            SecretKey::MlDsa44(key) => Subtree::of_checkpoint(&self.key.name, timestamp, body)
                .and_then(|subtree| key.sign_subtree(&subtree))
                .ok_or(CosignError::NotCheckpoint)?,
        };
        Ok(NoteSignature {
            name: self.key.name.clone(),
            key_id: self.key.key_id,
            signature: bytes,
        })
    }

    /// The ML-DSA-44 cosignature line of the subtree `[start, end)` of the log `origin` whose
    /// hash is `hash`, with timestamp 0: what tlog-witness's `sign-subtree` returns. Checking
    /// that the subtree is consistent with what the witness cosigned is the caller's.
    pub fn cosign_subtree(
        &self,
        origin: &str,
        start: u64,
        end: u64,
        hash: &[u8; 32],
    ) -> Result<NoteSignature, CosignError> {
        let SecretKey::MlDsa44(key) = &self.key.key else {
            return Err(CosignError::NoSubtree);
        };
        if start >= end {
            return Err(CosignError::NoSubtree);
        }
        let subtree = Subtree {
            cosigner: &self.key.name,
            timestamp: 0,
            origin,
            start,
            end,
            hash: *hash,
        };
        let bytes = key
            .sign_subtree(&subtree)
            .ok_or(CosignError::NotCheckpoint)?;
        Ok(NoteSignature {
            name: self.key.name.clone(),
            key_id: self.key.key_id,
            signature: bytes,
        })
    }
}

/// The timestamp a cosignature line carries (not yet verified): `None` unless it is 72 bytes
/// (Ed25519) or 2,428 (ML-DSA-44).
pub fn timestamp(signature: &NoteSignature) -> Option<u64> {
    let time: [u8; 8] = signature.signature.get(..8)?.try_into().ok()?;
    let len = signature.signature.len();
    (len == 72 || len == ML_DSA_44_TIMESTAMPED_BYTES).then(|| u64::from_be_bytes(time))
}

/// The cosigners whose cosignatures of the opened note verified, each once, with the time it
/// states: what a quorum policy counts. (Opening the note checked every line of a known key;
/// a bad one refused the note.) The log's own ML-DSA-44 signature (type 0x06, named as the
/// origin) is no witness's and is left out.
pub fn cosigned_by(opened: &OpenedNote) -> Vec<(String, u64)> {
    let origin = opened.text().split('\n').next().unwrap_or_default();
    let mut cosigners: Vec<(String, u64)> = Vec::new();
    for signature in opened.verified() {
        let Some(time) = timestamp(signature) else {
            continue;
        };
        let logs_own = signature.name == origin && opened.verified_by_log_key(signature);
        if opened.verified_by_cosigner(signature)
            && !logs_own
            && !cosigners.iter().any(|(name, _)| *name == signature.name)
        {
            cosigners.push((signature.name.clone(), time));
        }
    }
    cosigners
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::timestamped::verify;
    use crate::tlog::{Checkpoint, Note, NoteError, Signer};

    const EXAMPLE: &str =
        include_str!("../../../tests/vectors/c2sp/tlog-cosignature-example.checkpoint");

    fn log() -> Signer {
        Signer::from_seed("example.com/log", [1; 32]).unwrap()
    }

    fn witness(n: u8) -> Cosigner {
        Cosigner::from_seed(&format!("witness.example/w{n}"), [n + 10; 32]).unwrap()
    }

    const BODY: &str = "example.com/log\n3\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";

    fn cosigned(witnesses: &[Cosigner]) -> String {
        let mut note = Note::new(BODY).unwrap();
        note.sign(&log());
        for (i, witness) in witnesses.iter().enumerate() {
            note.push_signature(witness.cosign(BODY, 1_700_000_000 + i as u64).unwrap());
        }
        note.to_text()
    }

    #[test]
    fn the_spec_examples_cosignature_line_carries_its_timestamp() {
        let note = Note::parse(EXAMPLE).unwrap();
        let line = note
            .signatures()
            .iter()
            .find(|s| s.name == "witness.example.com/w1")
            .expect("the example's witness line");
        // The spec's signed-message example: `time 1679315147`.
        assert_eq!(timestamp(line), Some(1_679_315_147));
    }

    #[test]
    fn cosignatures_verify_count_once_each_and_a_bad_one_refuses_the_note() {
        let witnesses = [witness(1), witness(2)];
        let text = cosigned(&witnesses);
        let mut verifiers = vec![log().verifier()];
        verifiers.extend(witnesses.iter().map(Cosigner::verifier));
        let opened = Checkpoint::open(&text, &verifiers).unwrap();
        let by = cosigned_by(opened.note());
        assert_eq!(
            by,
            [
                ("witness.example/w1".to_owned(), 1_700_000_000),
                ("witness.example/w2".to_owned(), 1_700_000_001)
            ]
        );
        // Unknown cosigners are ignored; the log's own key still opens it.
        let opened = Checkpoint::open(&text, &[log().verifier()]).unwrap();
        assert!(cosigned_by(opened.note()).is_empty());
        // A flipped timestamp breaks that cosignature, and the note with it.
        let line = text.lines().next_back().unwrap();
        let mut forged_line = line.to_owned();
        let sig_at = forged_line.rfind(' ').unwrap() + 10;
        let replaced = if &forged_line[sig_at..sig_at + 1] == "A" {
            "B"
        } else {
            "A"
        };
        forged_line.replace_range(sig_at..sig_at + 1, replaced);
        let forged = text.replace(line, &forged_line);
        assert!(matches!(
            Note::parse(&forged).unwrap().open(&verifiers),
            Err(NoteError::BadSignature { .. })
        ));
    }

    #[test]
    fn a_cosigner_key_reads_back_and_its_vkey_has_type_4() {
        let witness = witness(3);
        let text = witness.to_private_key_text();
        let again = Cosigner::parse(&text).unwrap();
        assert_eq!(again.key_id(), witness.key_id());
        let vkey = witness.verifier().to_string();
        let parsed = Verifier::parse(&vkey).unwrap();
        assert!(parsed.is_cosigner());
        assert_eq!(parsed, witness.verifier());
        // A note signer's key is not a cosigner's, nor the other way round.
        assert!(Cosigner::parse(&log().to_private_key_text()).is_err());
        assert!(Signer::parse(&text).is_err());
        // The key ID binds the type: the same name and key as a note key has another ID.
        let same = Cosigner::from_seed("example.com/log", [1; 32]).unwrap();
        assert_ne!(same.key_id(), log().key_id());
        assert!(format!("{witness:?}").contains("redacted"));
    }

    #[test]
    fn a_timestamp_past_2_63_is_refused_both_ways() {
        assert_eq!(
            witness(1).cosign(BODY, TIMESTAMP_MAX + 1),
            Err(CosignError::Timestamp(TIMESTAMP_MAX + 1))
        );
        let SecretKey::Ed25519(key) = witness(1).key.key.clone() else {
            panic!("an Ed25519 cosigner");
        };
        let mut signature = (TIMESTAMP_MAX + 1).to_be_bytes().to_vec();
        signature.extend_from_slice(
            &key.sign(&signed_message(BODY.as_bytes(), TIMESTAMP_MAX + 1))
                .to_bytes(),
        );
        assert_eq!(
            verify(&key.verifying_key(), BODY.as_bytes(), &signature),
            None
        );
    }
}
