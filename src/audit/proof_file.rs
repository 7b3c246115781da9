//! Proof files: an inclusion or consistency proof together with every tree head it proves
//! against, as the JSON that `annals prove --json` prints and `annals check-proof` reads.
//!
//! A proof file needs nothing else to be checked: [`ProofFile::check`] runs the stateless
//! verifiers of [`crate::merkle`] and checks each tree head hash against its size and root.
//! What it cannot tell is whether its tree heads are the log's: an auditor compares
//! `tree_head` (or `size` and `root`) with a tree head they trust. This module reads
//! no log and never writes one.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::hash::Digest;
use crate::log::read::Snapshot;
use crate::merkle::{
    ConsistencyProof, InclusionProof, ProofError, TreeHead, check_consistency, check_inclusion,
};
use crate::record::Position;

/// A proof with the tree heads it proves against, in the JSON of `annals prove --json`.
/// Hashes are lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "proof", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProofFile {
    /// The record hashed `record_hash` is at `position` in the tree of `size` records whose
    /// root is `root`.
    Inclusion {
        /// The record's position (its leaf index).
        position: u64,
        /// The tree's size.
        size: u64,
        /// The record's hash (the leaf is `blake3(0x00 ‖ record_hash)`).
        #[serde(with = "hex_digest")]
        record_hash: Digest,
        /// The tree's root.
        #[serde(with = "hex_digest")]
        root: Digest,
        /// The tree head hash of `size` and `root` (see [`TreeHead::hash`]).
        #[serde(with = "hex_digest")]
        tree_head: Digest,
        /// The sibling hashes from the leaf up.
        #[serde(with = "hex_digests")]
        path: Vec<Digest>,
    },
    /// The tree of `from_size` records with root `from_root` is a prefix of the tree of
    /// `size` records with root `root`.
    Consistency {
        /// The earlier size.
        from_size: u64,
        /// The earlier tree's root.
        #[serde(with = "hex_digest")]
        from_root: Digest,
        /// The tree head hash of `from_size` and `from_root`.
        #[serde(with = "hex_digest")]
        from_tree_head: Digest,
        /// The later size.
        size: u64,
        /// The later tree's root.
        #[serde(with = "hex_digest")]
        root: Digest,
        /// The tree head hash of `size` and `root`.
        #[serde(with = "hex_digest")]
        tree_head: Digest,
        /// The path hashes.
        #[serde(with = "hex_digests")]
        path: Vec<Digest>,
    },
}

impl ProofFile {
    /// The inclusion proof of the record at `position` in the tree of `size` records.
    pub fn inclusion(snapshot: &Snapshot, position: Position, size: u64) -> Result<ProofFile> {
        let proof = snapshot.inclusion_proof(position, size)?;
        let record_hash = match snapshot.get(position)? {
            Some(record) => record.hash,
            None => {
                return Err(crate::error::AuditError::PositionBeyondSize { position, size }.into());
            }
        };
        let root = snapshot.merkle_root(size)?;
        Ok(ProofFile::Inclusion {
            position: position.0,
            size,
            record_hash,
            root,
            tree_head: TreeHead { size, root }.hash(),
            path: proof.path,
        })
    }

    /// The consistency proof from the tree of `from_size` records to the tree of `size`.
    pub fn consistency(snapshot: &Snapshot, from_size: u64, size: u64) -> Result<ProofFile> {
        let proof = snapshot.consistency_proof(from_size, size)?;
        let from = TreeHead {
            size: from_size,
            root: snapshot.merkle_root(from_size)?,
        };
        let to = TreeHead {
            size,
            root: snapshot.merkle_root(size)?,
        };
        Ok(ProofFile::Consistency {
            from_size,
            from_root: from.root,
            from_tree_head: from.hash(),
            size,
            root: to.root,
            tree_head: to.hash(),
            path: proof.path,
        })
    }

    /// Checks the proof against the tree heads it carries; `Ok` exactly when it is valid.
    pub fn check(&self) -> Result<(), ProofError> {
        match self {
            ProofFile::Inclusion {
                position,
                size,
                record_hash,
                root,
                tree_head,
                path,
            } => {
                let proof = InclusionProof {
                    position: Position(*position),
                    size: *size,
                    path: path.clone(),
                };
                let head = TreeHead {
                    size: *size,
                    root: *root,
                };
                check_tree_head(&head, tree_head)?;
                check_inclusion(&proof, &head, record_hash)
            }
            ProofFile::Consistency {
                from_size,
                from_root,
                from_tree_head,
                size,
                root,
                tree_head,
                path,
            } => {
                let proof = ConsistencyProof {
                    from_size: *from_size,
                    size: *size,
                    path: path.clone(),
                };
                let from = TreeHead {
                    size: *from_size,
                    root: *from_root,
                };
                let to = TreeHead {
                    size: *size,
                    root: *root,
                };
                check_tree_head(&from, from_tree_head)?;
                check_tree_head(&to, tree_head)?;
                check_consistency(&proof, &from, &to)
            }
        }
    }
}

fn check_tree_head(head: &TreeHead, found: &Digest) -> Result<(), ProofError> {
    if head.hash() == *found {
        return Ok(());
    }
    Err(ProofError::TreeHeadHash {
        size: head.size,
        found: found.to_hex(),
    })
}

mod hex_digest {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use crate::hash::Digest;

    pub fn serialize<S: Serializer>(digest: &Digest, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&digest.to_hex())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Digest, D::Error> {
        let text = String::deserialize(deserializer)?;
        Digest::from_hex(&text).ok_or_else(|| D::Error::custom("not 64 hex digits"))
    }
}

mod hex_digests {
    use serde::{Deserialize, Deserializer, Serializer, de::Error, ser::SerializeSeq};

    use crate::hash::Digest;

    pub fn serialize<S: Serializer>(digests: &[Digest], serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(digests.len()))?;
        for digest in digests {
            seq.serialize_element(&digest.to_hex())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Digest>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        texts
            .iter()
            .map(|text| Digest::from_hex(text).ok_or_else(|| D::Error::custom("not 64 hex digits")))
            .collect()
    }
}
