//! The last checkpoint the log signed, kept in `annals.meta` under [`SIGNED_CHECKPOINT_KEY`]
//! (sealed as every meta value is): its origin, size and root. It is the log's bookkeeping, not
//! a projection: no record carries it, and a replay does not rebuild it.
//!
//! It is what stops the log from signing two checkpoints that contradict each other
//! (`crate::maintenance::Checkpoints::sign`): a later checkpoint must be of the same origin, of a size at least the
//! last one's, and of a tree whose root at the last one's size is the root signed then.

use crate::error::{Error, Result};
use crate::hash::Digest;

/// Meta key of the last signed checkpoint: `u64(size) ‖ root (32) ‖ origin (UTF-8)`.
pub(crate) const SIGNED_CHECKPOINT_KEY: &str = "signed_checkpoint";

/// Meta key of the latest checkpoint witnesses cosigned (`annals witness request`): the note's
/// text, its log signature and the cosignatures collected, as UTF-8.
pub(crate) const COSIGNED_CHECKPOINT_KEY: &str = "cosigned_checkpoint";

/// The tree head of the last checkpoint a log signed, and the origin it signed it as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedHead {
    /// The checkpoint's origin: the log's name, and the name of the key that signed it.
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The root of the tree of `size` records.
    pub root: Digest,
}

impl SignedHead {
    /// The value stored under [`SIGNED_CHECKPOINT_KEY`] (before its seal).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40 + self.origin.len());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(self.root.as_bytes());
        out.extend_from_slice(self.origin.as_bytes());
        out
    }

    /// Decodes [`SignedHead::encode`]'s bytes.
    pub(crate) fn decode(bytes: &[u8]) -> Result<SignedHead> {
        let corrupt = |detail: &str| {
            Error::undecodable_meta(crate::error::MetaItem::SignedCheckpoint, detail)
        };
        if bytes.len() <= 40 {
            return Err(corrupt("shorter than a size, a root and an origin"));
        }
        let (size, rest) = bytes.split_at(8);
        let (root, origin) = rest.split_at(32);
        let origin = std::str::from_utf8(origin).map_err(|_| corrupt("an origin not UTF-8"))?;
        Ok(SignedHead {
            origin: origin.to_owned(),
            size: u64::from_le_bytes(size.try_into().expect("8 bytes")),
            root: Digest(root.try_into().expect("32 bytes")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_head_reads_back_and_short_or_foreign_bytes_are_damage() {
        let head = SignedHead {
            origin: "example.com/log".into(),
            size: 1 << 40,
            root: Digest([7; 32]),
        };
        assert_eq!(SignedHead::decode(&head.encode()).unwrap(), head);
        assert!(SignedHead::decode(&head.encode()[..40]).is_err());
        let mut bad = head.encode();
        bad.push(0xff);
        assert!(SignedHead::decode(&bad).is_err());
    }
}
