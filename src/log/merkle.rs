//! The log's Merkle tree in redb: the frontier after the head in `annals.meta` and the
//! perfect-subtree roots in `annals.merkle`, kept by `MerkleWriter` as records are appended (in the append's
//! transaction), and read by a [`Snapshot`] for roots and proofs.
//!
//! The tree math lives in [`crate::merkle`]; this module only stores and fetches nodes. It
//! never decides what a proof means and never rewrites a stored node.

use crate::storage::{Readable, Writable, Writer};

use super::{Head, encode_head};

use super::read::Snapshot;
use super::tables::{
    HEAD_KEY, MERKLE, MERKLE_STORED_LEVEL_MIN, MERKLE_VALUE_BYTES, seal_merkle_node,
    unseal_merkle_node,
};
use crate::error::{AuditError, Error, Result};
use crate::hash::Digest;
use crate::merkle::{
    self, ConsistencyProof, Frontier, InclusionProof, LogTreeHasher, leaf_hash, root_of_leaves,
};
use crate::record::Position;
use crate::record::problem::Problem;

/// Decodes the frontier that follows the head's 40 bytes in the `head` value of a log of
/// `size` records.
pub(crate) fn decode_frontier(head_bytes: &[u8], size: u64) -> Result<Frontier<Digest>> {
    let bytes = head_bytes.get(40..).unwrap_or_default();
    let expected = size.count_ones() as usize * 32;
    if bytes.len() != expected {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::MerkleFrontier,
            crate::error::MetaFault::WrongLength {
                found: bytes.len(),
                expected,
            },
        ));
    }
    let nodes = bytes
        .chunks_exact(32)
        .map(|chunk| Digest(chunk.try_into().unwrap_or([0; 32])))
        .collect();
    Frontier::from_nodes(size, nodes).ok_or_else(|| {
        Error::undecodable_meta(
            crate::error::MetaItem::MerkleFrontier,
            "it does not fit the head",
        )
    })
}

/// The `head` value: the head's 40 bytes, then the frontier's nodes, largest subtree first.
pub(crate) fn encode_head_with_frontier(head: Head, frontier: &Frontier<Digest>) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + frontier.nodes().len() * 32);
    out.extend_from_slice(&encode_head(head));
    for node in frontier.nodes() {
        out.extend_from_slice(node.as_bytes());
    }
    out
}

/// Keeps the tree as records are appended: O(log n) hashing and at most one stored node per
/// completed subtree of 16 or more leaves.
pub(crate) struct MerkleWriter<'txn> {
    txn: &'txn Writer<'txn>,
    /// Opened at the first node to store: most transactions of a few records store none.
    nodes: Option<Writable<'txn, (u8, u64), [u8; MERKLE_VALUE_BYTES]>>,
    frontier: Frontier<Digest>,
    completed: Vec<(u8, u64, Digest)>,
}

impl<'txn> MerkleWriter<'txn> {
    /// The tree as the `head` value `head_bytes` of a log of `size` records leaves it.
    pub(crate) fn open(txn: &'txn Writer<'txn>, head_bytes: &[u8], size: u64) -> Result<Self> {
        Ok(MerkleWriter {
            txn,
            nodes: None,
            frontier: decode_frontier(head_bytes, size)?,
            completed: Vec::new(),
        })
    }

    /// Adds the leaf of the record hashed `record_hash` (the next position).
    pub(crate) fn push(&mut self, record_hash: Digest) -> Result<()> {
        let size_before = self.frontier.size();
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
        assert_eq!(
            self.frontier.size(),
            size_before + 1,
            "a push adds one leaf to the Merkle tree"
        );
        if self.completed.is_empty() {
            return Ok(());
        }
        let nodes = match &mut self.nodes {
            Some(nodes) => nodes,
            None => self.nodes.insert(MERKLE.write(self.txn)?),
        };
        for (level, index, node) in self.completed.drain(..) {
            let replaced = nodes.insert((level, index), seal_merkle_node(level, index, &node.0))?;
            // A stored node is never rewritten: the subtree it roots completed just now.
            assert!(
                !replaced,
                "the Merkle node ({level}, {index}) is stored once, when its subtree completes"
            );
        }
        Ok(())
    }

    /// How many leaves the tree has.
    pub(crate) fn size(&self) -> u64 {
        self.frontier.size()
    }

    /// The root of the tree of every leaf pushed.
    pub(crate) fn root(&self) -> Digest {
        self.frontier.root(&LogTreeHasher)
    }

    /// The `head` value for `head`, with this tree's frontier.
    pub(crate) fn head_bytes(&self, head: Head) -> Vec<u8> {
        // The frontier stored beside a head is the tree of exactly the records before it.
        assert_eq!(
            self.frontier.size(),
            head.next.0,
            "the Merkle tree has a leaf per record before the head"
        );
        encode_head_with_frontier(head, &self.frontier)
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
        match self.meta_value(HEAD_KEY)? {
            Some(bytes) => decode_frontier(&bytes, size),
            None => Err(Error::corrupt_meta(
                crate::error::MetaItem::Head,
                crate::error::MetaFault::Missing,
            )),
        }
    }

    /// The stored node `(level, index)`, `None` if absent.
    pub(crate) fn merkle_node_stored(&self, level: u8, index: u64) -> Result<Option<Digest>> {
        match self.merkle.get((level, index))? {
            Some(stored) => Ok(Some(Digest(unseal_merkle_node(
                level,
                index,
                &stored.value(),
            )?))),
            None => Ok(None),
        }
    }

    /// How many nodes `annals.merkle` holds.
    pub(crate) fn merkle_node_count(&self) -> Result<u64> {
        self.merkle.len()
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
                        fault: crate::record::problem::MerkleFault::Missing { level, index },
                    }),
                });
        }
        let leaves: Vec<Digest> = self
            .record_hashes(Position(first), 1usize << level)?
            .iter()
            .map(leaf_hash)
            .collect();
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
        crate::error::guarded(|| {
            let head = self.check_size(size)?;
            if size == head {
                return Ok(self.merkle_frontier(head)?.root(&LogTreeHasher));
            }
            merkle::root(&LogTreeHasher, size, &mut |level, index| {
                self.merkle_node(level, index)
            })
        })
    }

    /// A proof that the record at `position` is in the tree of `size` records.
    pub fn inclusion_proof(&self, position: Position, size: u64) -> Result<InclusionProof> {
        crate::error::guarded(|| {
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
        })
    }

    /// A proof that the tree of `from_size` records is a prefix of the tree of `size`
    /// (`0 < from_size ≤ size ≤` the head).
    pub fn consistency_proof(&self, from_size: u64, size: u64) -> Result<ConsistencyProof> {
        crate::error::guarded(|| {
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
        })
    }
}
