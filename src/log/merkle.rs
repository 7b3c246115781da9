//! The log's Merkle tree in redb: the frontier in `annals.meta` and the perfect-subtree roots
//! in `annals.merkle`, kept by `MerkleWriter` as records are appended (in the append's
//! transaction), and read by a [`Snapshot`] for roots and proofs.
//!
//! The tree math lives in [`crate::merkle`]; this module only stores and fetches nodes. It
//! never decides what a proof means and never rewrites a stored node.

use redb::{ReadableTableMetadata, Table, WriteTransaction};

use super::read::Snapshot;
use super::tables::{MERKLE, MERKLE_KEY, MERKLE_STORED_LEVEL_MIN};
use crate::audit::verify::Problem;
use crate::error::{AuditError, Error, Result};
use crate::hash::Digest;
use crate::merkle::{
    self, ConsistencyProof, Frontier, InclusionProof, LogTreeHasher, leaf_hash, root_of_leaves,
};
use crate::record::Position;

/// Decodes the frontier stored under [`MERKLE_KEY`] for a log of `size` records. An empty log
/// may have none.
pub(crate) fn decode_frontier(bytes: Option<&[u8]>, size: u64) -> Result<Frontier<Digest>> {
    let bytes = match bytes {
        Some(bytes) => bytes,
        None if size == 0 => return Ok(Frontier::new()),
        None => return Err(Error::CorruptMeta("the Merkle frontier is missing".into())),
    };
    let expected = size.count_ones() as usize * 32;
    if bytes.len() != expected {
        return Err(Error::CorruptMeta(format!(
            "the Merkle frontier is {} bytes, a log of {size} records needs {expected}",
            bytes.len()
        )));
    }
    let nodes = bytes
        .chunks_exact(32)
        .map(|chunk| Digest(chunk.try_into().unwrap_or([0; 32])))
        .collect();
    Frontier::from_nodes(size, nodes)
        .ok_or_else(|| Error::CorruptMeta("the Merkle frontier does not fit the head".into()))
}

/// The frontier's stored bytes: its nodes, largest subtree first.
pub(crate) fn encode_frontier(frontier: &Frontier<Digest>) -> Vec<u8> {
    let mut out = Vec::with_capacity(frontier.nodes().len() * 32);
    for node in frontier.nodes() {
        out.extend_from_slice(node.as_bytes());
    }
    out
}

/// Keeps the tree as records are appended: O(log n) hashing and at most one stored node per
/// completed subtree of 16 or more leaves.
pub(crate) struct MerkleWriter<'txn> {
    nodes: Table<'txn, (u8, u64), [u8; 32]>,
    frontier: Frontier<Digest>,
    completed: Vec<(u8, u64, Digest)>,
}

impl<'txn> MerkleWriter<'txn> {
    pub(crate) fn open(txn: &'txn WriteTransaction, frontier: Frontier<Digest>) -> Result<Self> {
        Ok(MerkleWriter {
            nodes: txn.open_table(MERKLE)?,
            frontier,
            completed: Vec::new(),
        })
    }

    /// Adds the leaf of the record hashed `record_hash` (the next position).
    pub(crate) fn push(&mut self, record_hash: Digest) -> Result<()> {
        let completed = &mut self.completed;
        self.frontier.push(
            &LogTreeHasher,
            leaf_hash(&record_hash),
            |level, index, node| {
                if level >= MERKLE_STORED_LEVEL_MIN {
                    completed.push((level, index, *node));
                }
            },
        );
        for (level, index, node) in self.completed.drain(..) {
            self.nodes.insert((level, index), node.0)?;
        }
        Ok(())
    }

    /// The root of the tree of every leaf pushed.
    pub(crate) fn root(&self) -> Digest {
        self.frontier.root(&LogTreeHasher)
    }

    /// The frontier's bytes, for [`MERKLE_KEY`].
    pub(crate) fn frontier_bytes(&self) -> Vec<u8> {
        encode_frontier(&self.frontier)
    }
}

/// How many nodes `annals.merkle` holds for a log of `size` records.
pub(crate) fn stored_node_count(size: u64) -> u64 {
    (MERKLE_STORED_LEVEL_MIN..64)
        .map(|level| size >> level)
        .sum()
}

impl Snapshot {
    /// The stored frontier of the tree of every record.
    pub(crate) fn merkle_frontier(&self, size: u64) -> Result<Frontier<Digest>> {
        let stored = self.meta_value(MERKLE_KEY)?;
        decode_frontier(stored.as_ref().map(|guard| guard.value()), size)
    }

    /// The stored node `(level, index)`, `None` if absent.
    pub(crate) fn merkle_node_stored(&self, level: u8, index: u64) -> Result<Option<Digest>> {
        Ok(self
            .merkle
            .get((level, index))?
            .map(|guard| Digest(guard.value())))
    }

    /// How many nodes `annals.merkle` holds.
    pub(crate) fn merkle_node_count(&self) -> Result<u64> {
        Ok(self.merkle.len()?)
    }

    /// The root of the perfect subtree `(level, index)`, which must be complete: stored from
    /// level [`MERKLE_STORED_LEVEL_MIN`] up, recomputed from its records below.
    pub(crate) fn merkle_node(&self, level: u8, index: u64) -> Result<Digest> {
        let first = index << level;
        if level >= MERKLE_STORED_LEVEL_MIN {
            return self
                .merkle_node_stored(level, index)?
                .ok_or_else(|| Error::Corrupt {
                    position: Position(first),
                    problem: Box::new(Problem::Merkle {
                        detail: format!("the tree node at level {level}, index {index} is missing"),
                    }),
                });
        }
        let count = 1usize << level;
        let mut leaves = Vec::with_capacity(count);
        for record in self
            .records(Position(first), crate::log::read::Direction::Forward)?
            .take(count)
        {
            leaves.push(leaf_hash(&record?.hash));
        }
        if leaves.len() != count {
            return Err(Error::Corrupt {
                position: Position(first + leaves.len() as u64),
                problem: Box::new(Problem::Missing),
            });
        }
        Ok(root_of_leaves(&LogTreeHasher, &leaves))
    }

    fn check_size(&self, size: u64) -> Result<u64> {
        let head = self.head()?.next.0;
        if size > head {
            return Err(AuditError::SizeBeyondHead { size, head }.into());
        }
        Ok(head)
    }

    /// The root of the log's Merkle tree over its first `size` records (`size` ≤ the head).
    pub fn merkle_root(&self, size: u64) -> Result<Digest> {
        let head = self.check_size(size)?;
        if size == head {
            return Ok(self.merkle_frontier(head)?.root(&LogTreeHasher));
        }
        merkle::root(&LogTreeHasher, size, &mut |level, index| {
            self.merkle_node(level, index)
        })
    }

    /// A proof that the record at `position` is in the tree of `size` records.
    pub fn inclusion_proof(&self, position: Position, size: u64) -> Result<InclusionProof> {
        self.check_size(size)?;
        if position.0 >= size {
            return Err(AuditError::PositionBeyondSize { position, size }.into());
        }
        let path = merkle::inclusion_path(&LogTreeHasher, position.0, size, &mut |l, i| {
            self.merkle_node(l, i)
        })?;
        Ok(InclusionProof {
            position,
            size,
            path,
        })
    }

    /// A proof that the tree of `from_size` records is a prefix of the tree of `size`
    /// (`0 < from_size ≤ size ≤` the head).
    pub fn consistency_proof(&self, from_size: u64, size: u64) -> Result<ConsistencyProof> {
        self.check_size(size)?;
        if from_size == 0 || from_size > size {
            return Err(AuditError::FromSize { from_size, size }.into());
        }
        let path = merkle::consistency_path(&LogTreeHasher, from_size, size, &mut |l, i| {
            self.merkle_node(l, i)
        })?;
        Ok(ConsistencyProof {
            from_size,
            size,
            path,
        })
    }
}
