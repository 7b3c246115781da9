//! Proof files of a log: the inclusion or consistency proof of a [`Snapshot`]'s tree, as the
//! JSON that `annals prove --json` prints. The file's shape and its checks are
//! `annals_format::proof_file`'s, re-exported here; this module only reads the log's tree.

pub use annals_format::proof_file::{ProofFile, ProofTree, lower_hex_digest, quoted};

use crate::error::Result;
use crate::log::read::Snapshot;
use crate::merkle::TreeHead;
use crate::record::Position;

impl Snapshot {
    /// The inclusion proof file of the record at `position` in the tree of `size` records.
    pub fn inclusion_proof_file(&self, position: Position, size: u64) -> Result<ProofFile> {
        let proof = self.inclusion_proof(position, size)?;
        if position.0 >= size {
            return Err(crate::error::AuditError::PositionBeyondSize { position, size }.into());
        }
        // The hash the tree holds: a record's own, or below a cut log's start the one the cut
        // kept, so an archived record's proof needs no archive.
        let record_hash = self.record_hash(position)?;
        let head = TreeHead {
            size,
            root: self.merkle_root(size)?,
        };
        Ok(ProofFile::of_inclusion(
            position,
            record_hash,
            head,
            proof.path,
        ))
    }

    /// The consistency proof file from the tree of `from_size` records to the tree of `size`.
    pub fn consistency_proof_file(&self, from_size: u64, size: u64) -> Result<ProofFile> {
        let proof = self.consistency_proof(from_size, size)?;
        let from = TreeHead {
            size: from_size,
            root: self.merkle_root(from_size)?,
        };
        let to = TreeHead {
            size,
            root: self.merkle_root(size)?,
        };
        Ok(ProofFile::of_consistency(from, to, proof.path))
    }
}
