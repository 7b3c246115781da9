//! The transparency-log formats of the C2SP specifications, so that witnesses, monitors and
//! verifiers written for other logs can check an annals log:
//!
//! - [`note`]: `c2sp.org/signed-note` with Ed25519 and ML-DSA-44 — a text and its signature
//!   lines, the signer and verifier keys in their text forms, key IDs and key names;
//! - [`subtree`]: ML-DSA-44 keys and the `subtree/v1` message of `c2sp.org/tlog-cosignature`;
//! - [`checkpoint`]: `c2sp.org/tlog-checkpoint` — origin, tree size and root hash as the body
//!   of a signed note, opened only when the log's own key signed it;
//! - [`proof`]: `c2sp.org/tlog-proof@v1` — the offline inclusion proof file, and the check of
//!   a consistency proof between two checkpoints;
//! - [`consistency`]: that consistency proof as a file, in the form of tlog-witness's
//!   `add-checkpoint` body (`old <size>`, the proof, the later checkpoint);
//! - [`policy`]: `c2sp.org/tlog-policy` — the logs, witnesses, groups and quorum a verifier
//!   trusts, and the check of a checkpoint against them.
//!
//! Every tree hash here is RFC 6962's SHA-256 tree ([`crate::merkle::LogTreeHasher`]), the tree those
//! specifications name; the tree math is `crate::merkle`'s, generic over its hasher.
//!
//! This module parses and writes text and checks signatures and proofs. It never does I/O,
//! never opens a log, and never puts a private key into an error or a `Debug` output: reading
//! a key file is the command line's (`cli/src/cli/keys.rs`).
//!
//! ```
//! use annals_format::tlog::{Checkpoint, Signer};
//!
//! let signer = Signer::from_seed("example.com/log", [7; 32])?;
//! let checkpoint = Checkpoint {
//!     origin: "example.com/log".into(),
//!     size: 3,
//!     root: [0xab; 32],
//!     extensions: Vec::new(),
//! };
//! let text = checkpoint.sign(&signer)?;
//! let opened = Checkpoint::open(&text, &[signer.verifier()])?;
//! assert_eq!(opened.checkpoint, checkpoint);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod checkpoint;
pub mod consistency;
pub mod cosignature;
pub mod note;
pub mod policy;
pub mod proof;
pub mod subtree;
pub mod tiles;
mod timestamped;

pub use checkpoint::{Checkpoint, CheckpointError, OpenedCheckpoint, SizeProblem};
pub use consistency::{ConsistencyFile, ConsistencyFileError};
pub use cosignature::{CosignError, Cosigner};
pub use note::{
    KeyError, KeyId, KeyNameProblem, Note, NoteError, NoteSignature, OpenedNote,
    SignatureLineProblem, Signer, Verifier,
};
pub use policy::{
    Policy, PolicyCheckError, PolicyChecked, PolicyError, PolicyLog, PolicyProblem, PolicyWitness,
};
pub use proof::{ConsistencyError, TlogProof, TlogProofError, check_consistency, proves_fork};

use base64::Engine as _;

/// Standard base64 with padding (RFC 4648 §4), as every C2SP format uses it. Decoding is
/// strict: padding required, no stray bits, no whitespace, so that each value has one
/// encoding and a parsed file writes back byte for byte.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes [`base64_encode`]'s form; `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Decodes the base64 of exactly 32 bytes (a hash); `Err(Some(len))` for another length,
/// `Err(None)` for text that is not base64.
pub fn base64_hash(text: &str) -> Result<[u8; 32], Option<usize>> {
    // A 32-byte value is 44 characters; anything longer is refused before decoding.
    if text.len() > 44 {
        return Err(base64_decode(text).map(|bytes| bytes.len()));
    }
    let bytes = base64_decode(text).ok_or(None)?;
    let len = bytes.len();
    bytes.try_into().map_err(|_| Some(len))
}

/// The next line of `rest`, advancing `rest` past it: the line-by-line forms (tlog-proof,
/// the consistency file) end each line before their checkpoint in a newline, so `None` when
/// the text ends first.
fn next_line<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let (head, tail) = rest.split_once('\n')?;
    *rest = tail;
    Some(head)
}

/// Parses a decimal `u64` as C2SP writes sizes and indexes: ASCII digits, no sign, no leading
/// zero unless the number is 0.
fn parse_decimal(text: &str) -> Result<u64, checkpoint::SizeProblem> {
    use checkpoint::SizeProblem;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SizeProblem::NotDecimal);
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(SizeProblem::LeadingZero);
    }
    text.parse::<u64>().map_err(|_| SizeProblem::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{LogTreeHasher, TreeHasher};

    #[test]
    fn sha256_tree_hasher_is_rfc6962() {
        // RFC 6962's empty tree and the leaf of the empty entry (the RFC's test data).
        assert_eq!(
            LogTreeHasher.empty().to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            LogTreeHasher.leaf(b"").to_hex(),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
    }

    #[test]
    fn decimal_refuses_leading_zeros_signs_and_overflow() {
        use checkpoint::SizeProblem;
        assert_eq!(parse_decimal("0"), Ok(0));
        assert_eq!(parse_decimal("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            parse_decimal("18446744073709551616"),
            Err(SizeProblem::Overflow)
        );
        assert_eq!(parse_decimal("007"), Err(SizeProblem::LeadingZero));
        assert_eq!(parse_decimal("00"), Err(SizeProblem::LeadingZero));
        for bad in ["", "+5", "-5", " 5", "5 ", "5e3", "٣"] {
            assert_eq!(parse_decimal(bad), Err(SizeProblem::NotDecimal), "{bad:?}");
        }
    }

    #[test]
    fn base64_is_strict() {
        assert_eq!(base64_decode("AA=="), Some(vec![0]));
        // Non-zero padding bits, missing padding, whitespace.
        for bad in ["AB==", "AA", "AA= =", " AA==", "AA==\n"] {
            assert_eq!(base64_decode(bad), None, "{bad:?}");
        }
        assert_eq!(base64_hash(&base64_encode(&[1; 31])), Err(Some(31)));
        assert_eq!(base64_hash(&base64_encode(&[1; 33])), Err(Some(33)));
        assert_eq!(base64_hash("!"), Err(None));
    }
}
