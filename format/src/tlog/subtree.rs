//! ML-DSA-44 (FIPS 204) keys and the `subtree/v1` message their signatures sign
//! (c2sp.org/tlog-cosignature, "ML-DSA-44 signed message"): what a note signer or cosigner of
//! type 0x06 signs ([`super::note`], [`super::cosignature`]) and what its verifier checks, kept
//! apart from both so neither imports the other.
//!
//! The message is the TLS encoding of `cosigned_message`: the 12-byte label
//! `subtree/v1\n\0`, the cosigner's name and the log's origin each with a one-byte length,
//! the timestamp, the subtree's start and end (big-endian `u64`s) and its 32-byte hash. A
//! checkpoint is the subtree `[0, size)`; its extension lines are not signed. The signature is
//! ML-DSA-44's pure form with an empty context, in its deterministic variant: signing reads no
//! randomness, so a checkpoint signed twice is the same bytes (what `check_tiles` compares).

use ml_dsa::{EncodedVerifyingKey, MlDsa44};

use super::timestamped::TIMESTAMP_MAX;
use super::{base64_hash, parse_decimal};

/// The label that opens every `subtree/v1` message.
pub const SUBTREE_LABEL: &[u8; 12] = b"subtree/v1\n\0";

/// The bytes of an ML-DSA-44 public key.
pub const ML_DSA_44_PUBLIC_KEY_BYTES: usize = 1312;

/// The bytes of an ML-DSA-44 signature.
pub const ML_DSA_44_SIGNATURE_BYTES: usize = 2420;

/// The bytes of a `timestamped_signature` of ML-DSA-44: the timestamp, then the signature.
pub const ML_DSA_44_TIMESTAMPED_BYTES: usize = 8 + ML_DSA_44_SIGNATURE_BYTES;

/// The longest cosigner name or origin the message holds (a one-byte length, at least 1).
pub const SUBTREE_NAME_BYTES_MAX: usize = 255;

/// What the message of one subtree cosignature states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Subtree<'a> {
    pub(super) cosigner: &'a str,
    pub(super) timestamp: u64,
    pub(super) origin: &'a str,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) hash: [u8; 32],
}

impl Subtree<'_> {
    /// The `cosigned_message` bytes; `None` when a name or the origin is empty or longer than
    /// 255 bytes, the timestamp is past 2^63 − 1, a subtree that does not start at 0 has a
    /// timestamp, or the range is backwards or empty (the empty tree `[0, 0)` of a checkpoint
    /// of size 0 aside).
    pub(super) fn message(&self) -> Option<Vec<u8>> {
        let fits = |text: &str| (1..=SUBTREE_NAME_BYTES_MAX).contains(&text.len());
        if !fits(self.cosigner) || !fits(self.origin) || self.timestamp > TIMESTAMP_MAX {
            return None;
        }
        let empty = self.start == self.end && self.start != 0;
        if (self.start != 0 && self.timestamp != 0) || self.start > self.end || empty {
            return None;
        }
        let mut message = Vec::with_capacity(12 + 2 + 8 * 3 + 32 + 2 * SUBTREE_NAME_BYTES_MAX);
        message.extend_from_slice(SUBTREE_LABEL);
        // Both lengths were checked to fit a byte.
        message.push(self.cosigner.len() as u8);
        message.extend_from_slice(self.cosigner.as_bytes());
        message.extend_from_slice(&self.timestamp.to_be_bytes());
        message.push(self.origin.len() as u8);
        message.extend_from_slice(self.origin.as_bytes());
        message.extend_from_slice(&self.start.to_be_bytes());
        message.extend_from_slice(&self.end.to_be_bytes());
        message.extend_from_slice(&self.hash);
        Some(message)
    }

    /// The subtree `[0, size)` of the checkpoint whose note text is `text` (its origin, size
    /// and root hash lines; extension lines are not part of the message), as `cosigner`
    /// states it at `timestamp`. `None` when the text is not a checkpoint.
    pub(super) fn of_checkpoint<'a>(
        cosigner: &'a str,
        timestamp: u64,
        text: &'a str,
    ) -> Option<Subtree<'a>> {
        let mut lines = text.split('\n');
        let origin = lines.next()?;
        let size = parse_decimal(lines.next()?).ok()?;
        let hash = base64_hash(lines.next()?).ok()?;
        // The third line ends in a newline (the text is a note text).
        lines.next()?;
        Some(Subtree {
            cosigner,
            timestamp,
            origin,
            start: 0,
            end: size,
            hash,
        })
    }
}

/// An ML-DSA-44 public key, with its encoding.
#[derive(Clone)]
pub(super) struct PublicKey {
    encoded: Box<[u8; ML_DSA_44_PUBLIC_KEY_BYTES]>,
    key: Box<ml_dsa::VerifyingKey<MlDsa44>>,
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &PublicKey) -> bool {
        self.encoded == other.encoded
    }
}

impl Eq for PublicKey {}

impl PublicKey {
    /// The key whose FIPS 204 encoding (`pkEncode`) is `bytes`; `None` for another length.
    pub(super) fn from_bytes(bytes: &[u8]) -> Option<PublicKey> {
        let encoded: [u8; ML_DSA_44_PUBLIC_KEY_BYTES] = bytes.try_into().ok()?;
        let array = EncodedVerifyingKey::<MlDsa44>::try_from(bytes).ok()?;
        Some(PublicKey {
            encoded: Box::new(encoded),
            key: Box::new(ml_dsa::VerifyingKey::decode(&array)),
        })
    }

    /// The 1,312-byte encoding.
    pub(super) fn as_bytes(&self) -> &[u8; ML_DSA_44_PUBLIC_KEY_BYTES] {
        &self.encoded
    }

    /// Whether `signature` is this key's ML-DSA-44 signature (pure, empty context) of
    /// `message`.
    pub(super) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = ml_dsa::Signature::<MlDsa44>::try_from(signature) else {
            return false;
        };
        self.key.verify_with_context(message, &[], &signature)
    }

    /// The timestamp of `signature` (a `timestamped_signature`: the bytes after the key ID)
    /// when it is this key's valid `subtree/v1` signature, as `name`, of the checkpoint whose
    /// note text is `text`.
    pub(super) fn verify_checkpoint(
        &self,
        name: &str,
        text: &str,
        signature: &[u8],
    ) -> Option<u64> {
        let (timestamp, signature) = split_timestamped(signature)?;
        let message = Subtree::of_checkpoint(name, timestamp, text)?.message()?;
        self.verify(&message, signature).then_some(timestamp)
    }
}

/// The timestamp and the ML-DSA-44 signature of a `timestamped_signature`; `None` unless it
/// is 2,428 bytes.
pub(super) fn split_timestamped(signature: &[u8]) -> Option<(u64, &[u8])> {
    if signature.len() != ML_DSA_44_TIMESTAMPED_BYTES {
        return None;
    }
    let (time, signature) = signature.split_at(8);
    Some((u64::from_be_bytes(time.try_into().ok()?), signature))
}

/// An ML-DSA-44 private key: its 32-byte seed (FIPS 204's ξ, wiped when dropped) expanded.
#[derive(Clone)]
pub(super) struct PrivateKey {
    key: Box<ml_dsa::SigningKey<MlDsa44>>,
    public: PublicKey,
}

impl PrivateKey {
    /// The key `ML-DSA.KeyGen_internal` derives from `seed`.
    pub(super) fn from_seed(seed: &[u8; 32]) -> PrivateKey {
        let key = ml_dsa::SigningKey::<MlDsa44>::from_seed(&(*seed).into());
        let encoded = ml_dsa::Keypair::verifying_key(&key).encode();
        let public = PublicKey::from_bytes(encoded.as_slice())
            .expect("an encoded ML-DSA-44 key is 1,312 bytes");
        PrivateKey {
            key: Box::new(key),
            public,
        }
    }

    /// The seed; keep it secret.
    pub(super) fn seed(&self) -> zeroize::Zeroizing<[u8; 32]> {
        zeroize::Zeroizing::new(self.key.to_seed().into())
    }

    /// The public key.
    pub(super) fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The ML-DSA-44 signature (pure, empty context, deterministic) of `message`; `None` only
    /// if FIPS 204's rejection loop gave up (it does not, in practice).
    pub(super) fn sign(&self, message: &[u8]) -> Option<Vec<u8>> {
        use ml_dsa::signature::Signer as _;
        let signature = self.key.try_sign(message).ok()?;
        Some(signature.encode().to_vec())
    }

    /// The `timestamped_signature` of the subtree `subtree` states; `None` when its message
    /// cannot be written.
    pub(super) fn sign_subtree(&self, subtree: &Subtree<'_>) -> Option<Vec<u8>> {
        let message = subtree.message()?;
        let mut bytes = Vec::with_capacity(ML_DSA_44_TIMESTAMPED_BYTES);
        bytes.extend_from_slice(&subtree.timestamp.to_be_bytes());
        bytes.extend_from_slice(&self.sign(&message)?);
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subtree(start: u64, end: u64, timestamp: u64) -> Subtree<'static> {
        Subtree {
            cosigner: "w",
            timestamp,
            origin: "log",
            start,
            end,
            hash: [7; 32],
        }
    }

    #[test]
    fn the_message_is_label_names_times_range_and_hash_in_that_order() {
        let message = subtree(0, 3, 5).message().unwrap();
        let mut expected = b"subtree/v1\n\0\x01w".to_vec();
        expected.extend_from_slice(&5u64.to_be_bytes());
        expected.extend_from_slice(b"\x03log");
        expected.extend_from_slice(&0u64.to_be_bytes());
        expected.extend_from_slice(&3u64.to_be_bytes());
        expected.extend_from_slice(&[7; 32]);
        assert_eq!(message, expected);
    }

    #[test]
    fn subtrees_the_spec_forbids_have_no_message() {
        // A subtree past leaf 0 states no time; a range is never backwards or empty, but the
        // empty tree of a checkpoint of size 0 is signed.
        assert!(subtree(8, 13, 0).message().is_some());
        assert!(subtree(8, 13, 1).message().is_none());
        assert!(subtree(13, 8, 0).message().is_none());
        assert!(subtree(8, 8, 0).message().is_none());
        assert!(subtree(0, 0, 9).message().is_some());
        assert!(subtree(0, 1, TIMESTAMP_MAX + 1).message().is_none());
        let long = "x".repeat(SUBTREE_NAME_BYTES_MAX + 1);
        let signs = |cosigner: &str, origin: &str| {
            let named = Subtree {
                cosigner,
                origin,
                ..subtree(0, 1, 0)
            };
            named.message().is_some()
        };
        assert!(!signs(&long, "log"));
        assert!(!signs("w", &long));
        assert!(!signs("", "log"));
        assert!(signs(&long[1..], &long[1..]));
    }

    #[test]
    fn a_checkpoint_text_gives_its_whole_tree_and_leaves_extensions_out() {
        let text = "log\n3\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\nextension\n";
        let of = Subtree::of_checkpoint("w", 5, text).unwrap();
        assert_eq!(of, subtree(0, 3, 5));
        for bad in [
            "log\n3\n",
            "log\n03\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n",
            "log",
        ] {
            assert_eq!(Subtree::of_checkpoint("w", 5, bad), None, "{bad:?}");
        }
    }
}
