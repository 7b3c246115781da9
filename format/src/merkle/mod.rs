//! The Merkle tree over the log: RFC 9162 §2.1 tree math, proofs and their verifiers.
//!
//! This module owns the tree's structure (the tree of `n` leaves splits at the largest power
//! of two below `n`), the incremental [`Frontier`] the log keeps as records are appended, the
//! building of inclusion and consistency paths from perfect-subtree roots, and the stateless
//! verifiers. It is generic over its hash ([`TreeHasher`]); the log uses RFC 6962's,
//! [`LogTreeHasher`] (SHA-256), which the published RFC 6962 vectors test.
//!
//! It does no I/O and never imports redb: callers hand it perfect-subtree roots through a
//! closure (`get(level, index)`), which the log layer answers from its `annals.merkle` table.
//! `schema/FORMAT.md` ("The Merkle tree") specifies everything here byte for byte.

use std::fmt;

use sha2::{Digest as _, Sha256};

use crate::hash::Digest;
use crate::record::Position;

#[cfg(test)]
mod tests;

/// The hash a tree is built with: a leaf hash, an interior-node hash and the empty tree's.
pub trait TreeHasher {
    /// A hash value.
    type Hash: Clone + PartialEq + AsRef<[u8]> + fmt::Debug;
    /// The byte length of every hash this hasher produces.
    fn size(&self) -> usize;
    /// The root of the tree with no leaves: `H()`.
    fn empty(&self) -> Self::Hash;
    /// A leaf hash: `H(0x00 ‖ entry)`.
    fn leaf(&self, entry: &[u8]) -> Self::Hash;
    /// An interior node: `H(0x01 ‖ left ‖ right)`.
    fn node(&self, left: &Self::Hash, right: &Self::Hash) -> Self::Hash;
}

/// The log's tree hash, RFC 6962's: SHA-256, `leaf = SHA-256(0x00 ‖ entry)`,
/// `node = SHA-256(0x01 ‖ left ‖ right)`, and the empty tree's root `SHA-256()`. A leaf's
/// entry is a record hash (32 bytes). It is the tree every transparency-log format (C2SP's
/// checkpoints, proofs and tiles; Certificate Transparency) names, so their verifiers can
/// check an annals log. (Formats v1 to v3 built the same tree with blake3; an upgrade
/// rebuilds it, `store/upgrade.rs`.)
#[derive(Clone, Copy, Debug, Default)]
pub struct LogTreeHasher;

impl TreeHasher for LogTreeHasher {
    type Hash = Digest;

    fn size(&self) -> usize {
        32
    }

    fn empty(&self) -> Digest {
        Digest(Sha256::digest(b"").into())
    }

    fn leaf(&self, entry: &[u8]) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update([0x00]);
        hasher.update(entry);
        Digest(hasher.finalize().into())
    }

    fn node(&self, left: &Digest, right: &Digest) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update([0x01]);
        hasher.update(left.as_bytes());
        hasher.update(right.as_bytes());
        Digest(hasher.finalize().into())
    }
}

/// The leaf hash of the record whose record hash is `record_hash`.
pub fn leaf_hash(record_hash: &Digest) -> Digest {
    LogTreeHasher.leaf(record_hash.as_bytes())
}

/// The largest power of two strictly below `n` (`n ≥ 2`): where RFC 9162 splits a tree.
pub fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// The root of the tree over `leaves` (leaf hashes), by the RFC's recursive definition. A
/// reference for tests and for small subtrees.
pub fn root_of_leaves<H: TreeHasher>(hasher: &H, leaves: &[H::Hash]) -> H::Hash {
    match leaves {
        [] => hasher.empty(),
        [leaf] => leaf.clone(),
        _ => {
            let k = split(leaves.len() as u64) as usize;
            let left = root_of_leaves(hasher, &leaves[..k]);
            let right = root_of_leaves(hasher, &leaves[k..]);
            hasher.node(&left, &right)
        }
    }
}

/// The perfect subtrees `(level, index)` that make up leaves `start .. start + len`, largest
/// first: the subtree at `(level, index)` covers leaves `index·2^level .. (index+1)·2^level`.
/// `start` must be a multiple of the largest of them (true of every range the RFC's recursion
/// visits, and of every prefix `0 .. n`).
pub fn perfect_subtrees(start: u64, len: u64) -> Vec<(u8, u64)> {
    let mut out = Vec::with_capacity(len.count_ones() as usize);
    let mut at = start;
    for level in (0..64u8).rev() {
        let size = 1u64 << level;
        if len & size != 0 {
            debug_assert_eq!(at % size, 0, "perfect subtrees must be aligned");
            out.push((level, at >> level));
            at += size;
        }
    }
    out
}

/// The root of leaves `start .. start + len` (`len ≥ 1`, `start` aligned as
/// [`perfect_subtrees`] requires), folding the perfect-subtree roots `get` returns from the
/// right: `node(P1, node(P2, … Pk))`.
pub fn range_root<H: TreeHasher, E>(
    hasher: &H,
    start: u64,
    len: u64,
    get: &mut impl FnMut(u8, u64) -> Result<H::Hash, E>,
) -> Result<H::Hash, E> {
    let subtrees = perfect_subtrees(start, len);
    debug_assert_eq!(
        subtrees.len(),
        len.count_ones() as usize,
        "a range is one perfect subtree per set bit of its length"
    );
    let mut roots = Vec::with_capacity(subtrees.len());
    for (level, index) in subtrees {
        roots.push(get(level, index)?);
    }
    debug_assert_eq!(
        roots.len(),
        len.count_ones() as usize,
        "every subtree root was read"
    );
    let mut acc = roots.pop().unwrap_or_else(|| hasher.empty());
    while let Some(left) = roots.pop() {
        acc = hasher.node(&left, &acc);
    }
    Ok(acc)
}

/// The root of the tree of size `size`.
pub fn root<H: TreeHasher, E>(
    hasher: &H,
    size: u64,
    get: &mut impl FnMut(u8, u64) -> Result<H::Hash, E>,
) -> Result<H::Hash, E> {
    if size == 0 {
        return Ok(hasher.empty());
    }
    range_root(hasher, 0, size, get)
}

/// The inclusion path of leaf `index` in the tree of size `size` (RFC 9162 §2.1.3.1),
/// nearest sibling first. `index < size`.
pub fn inclusion_path<H: TreeHasher, E>(
    hasher: &H,
    index: u64,
    size: u64,
    get: &mut impl FnMut(u8, u64) -> Result<H::Hash, E>,
) -> Result<Vec<H::Hash>, E> {
    debug_assert!(index < size);
    // Walk down from the root, remembering each sibling, then reverse to leaf-first order.
    let mut siblings = Vec::new();
    let (mut start, mut len) = (0, size);
    while len > 1 {
        let k = split(len);
        if index - start < k {
            siblings.push(range_root(hasher, start + k, len - k, get)?);
            len = k;
        } else {
            siblings.push(range_root(hasher, start, k, get)?);
            start += k;
            len -= k;
        }
    }
    siblings.reverse();
    Ok(siblings)
}

/// The consistency path from the tree of size `from_size` to the tree of size `size`
/// (RFC 9162 §2.1.4.1), `0 < from_size ≤ size`; empty when the sizes are equal.
pub fn consistency_path<H: TreeHasher, E>(
    hasher: &H,
    from_size: u64,
    size: u64,
    get: &mut impl FnMut(u8, u64) -> Result<H::Hash, E>,
) -> Result<Vec<H::Hash>, E> {
    debug_assert!(0 < from_size && from_size <= size);
    let mut path = Vec::new();
    let (mut m, mut start, mut len, mut whole) = (from_size, 0, size, true);
    while m != len {
        let k = split(len);
        if m <= k {
            path.push(range_root(hasher, start + k, len - k, get)?);
            len = k;
        } else {
            path.push(range_root(hasher, start, k, get)?);
            m -= k;
            start += k;
            len -= k;
            whole = false;
        }
    }
    if !whole {
        path.push(range_root(hasher, start, len, get)?);
    }
    path.reverse();
    Ok(path)
}

/// Why a proof does not verify.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// An inclusion proof of a leaf at or past the tree's size.
    #[error("leaf index {index} is not below the tree size {size}")]
    IndexBeyondSize {
        /// The leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// A leaf hash of the wrong length.
    #[error("the leaf hash is {len} bytes, not {expected}")]
    LeafLength {
        /// Its length.
        len: usize,
        /// The hash's length.
        expected: usize,
    },
    /// A path of another length than the sizes imply.
    #[error("the proof has {len} hashes, the sizes call for {expected}")]
    PathLength {
        /// Hashes in the proof.
        len: usize,
        /// Hashes the sizes call for.
        expected: usize,
    },
    /// A consistency proof from a larger tree to a smaller one.
    #[error("the first size {from_size} is larger than the second {size}")]
    SizesDecrease {
        /// The first size.
        from_size: u64,
        /// The second size.
        size: u64,
    },
    /// A proof of another tree size than the tree head it is checked against.
    #[error("the proof is for a tree of {proof} records, the tree head has {head}")]
    SizeMismatch {
        /// The size the proof is for.
        proof: u64,
        /// The tree head's size.
        head: u64,
    },
    /// A tree head hash that is not the hash of the size and root beside it.
    #[error("the tree head hash {found} is not that of size {size} and its root")]
    TreeHeadHash {
        /// The size it should bind.
        size: u64,
        /// The hash found, in hex.
        found: String,
    },
    /// A consistency proof from the empty tree: every tree extends it, so it proves nothing.
    #[error("a consistency proof from size 0 proves nothing")]
    FromEmpty,
    /// An inclusion proof of a tree of another size than the trusted head's. A proof about
    /// another tree says nothing about the trusted one until a consistency proof links them.
    #[error(
        "the proof is for the tree of size {proof}, the trusted head is of size {trusted}: \
         check it against a trusted head of size {proof}, or first check a consistency proof \
         between sizes {proof} and {trusted} against the trusted head and then this proof \
         against the head of size {proof} that it proves"
    )]
    TrustedSize {
        /// The size the proof is for.
        proof: u64,
        /// The trusted head's size.
        trusted: u64,
    },
    /// A consistency proof neither of whose trees has the trusted head's size.
    #[error(
        "the proof links sizes {from_size} and {size}, the trusted head is of size {trusted}: \
         check it against a trusted head of one of those sizes"
    )]
    TrustedSizes {
        /// The earlier size of the proof.
        from_size: u64,
        /// The later size of the proof.
        size: u64,
        /// The trusted head's size.
        trusted: u64,
    },
    /// A proof checked against no trusted head at all.
    #[error("no trusted tree head was given to check the proof against")]
    NothingTrusted,
    /// A consistency proof checked against its earlier head alone: its path is valid, but the
    /// path binds only the earlier size, so the later head (its size and root) is not
    /// established until the auditor trusts it too.
    #[error(
        "the path from the trusted head of size {from_size} is valid, but it does not \
         establish the later head of size {size}: a consistency path from size {from_size} \
         leads to the same roots for every later size from {open_from} to {open_to}, so \
         nothing in it says which size the log had; trust the later head only as you kept \
         it yourself"
    )]
    LaterHeadNotTrusted {
        /// The earlier size, the trusted one.
        from_size: u64,
        /// The later size the proof claims.
        size: u64,
        /// The smallest later size the path leaves open.
        open_from: u64,
        /// The largest later size the path leaves open.
        open_to: u64,
    },
    /// A proof's tree of the trusted head's size, with another root than the trusted one.
    #[error("the proof's {which} for size {size} is {proof}, the trusted root is {trusted}")]
    TrustedRoot {
        /// Which of the proof's roots: `root`, or `from_root` for a consistency proof's first.
        which: &'static str,
        /// The size both are for.
        size: u64,
        /// The proof's root, in hex.
        proof: String,
        /// The trusted root, in hex.
        trusted: String,
    },
    /// No tree head of the proof hashes to the trusted tree head hash.
    #[error(
        "no tree head in the proof is the trusted tree head {trusted} (the proof's: {found}); \
         a tree head hash alone does not say whether the size or the root differs"
    )]
    TrustedHash {
        /// The trusted tree head hash, in hex.
        trusted: String,
        /// The proof's tree heads: each size with its tree head hash.
        found: String,
    },
    /// The root the proof leads to is not the root given (for consistency proofs: which one).
    #[error("the proof leads to root {computed}, not {expected}")]
    RootMismatch {
        /// Which root: `root`, or `from_root` for a consistency proof's first tree.
        which: &'static str,
        /// The root the proof computes, in hex.
        computed: String,
        /// The root it was checked against, in hex.
        expected: String,
    },
}

fn check_root<T: AsRef<[u8]>>(
    which: &'static str,
    computed: &T,
    expected: &T,
) -> Result<(), ProofError> {
    if computed.as_ref() == expected.as_ref() {
        return Ok(());
    }
    Err(ProofError::RootMismatch {
        which,
        computed: crate::hash::hex(computed.as_ref()),
        expected: crate::hash::hex(expected.as_ref()),
    })
}

/// The number of path hashes below the point where leaf `index`'s path leaves the part of the
/// tree that is perfect ("inner"), and the number after it ("border").
fn decompose_inclusion(index: u64, size: u64) -> (usize, usize) {
    let inner = (64 - (index ^ (size - 1)).leading_zeros()) as usize;
    let border = (index.checked_shr(inner as u32).unwrap_or(0)).count_ones() as usize;
    (inner, border)
}

fn chain_inner<H: TreeHasher>(hasher: &H, seed: H::Hash, path: &[H::Hash], index: u64) -> H::Hash {
    path.iter().enumerate().fold(seed, |acc, (i, sibling)| {
        if (index >> i) & 1 == 0 {
            hasher.node(&acc, sibling)
        } else {
            hasher.node(sibling, &acc)
        }
    })
}

fn chain_inner_right<H: TreeHasher>(
    hasher: &H,
    seed: H::Hash,
    path: &[H::Hash],
    index: u64,
) -> H::Hash {
    path.iter().enumerate().fold(seed, |acc, (i, sibling)| {
        if (index >> i) & 1 == 1 {
            hasher.node(sibling, &acc)
        } else {
            acc
        }
    })
}

fn chain_border_right<H: TreeHasher>(hasher: &H, seed: H::Hash, path: &[H::Hash]) -> H::Hash {
    path.iter()
        .fold(seed, |acc, sibling| hasher.node(sibling, &acc))
}

/// The root an inclusion path leads to from `leaf` (a leaf hash) at `index` in a tree of
/// `size` leaves; an error when the path's length does not fit the index and size.
pub fn root_from_inclusion<H: TreeHasher>(
    hasher: &H,
    index: u64,
    size: u64,
    leaf: &H::Hash,
    path: &[H::Hash],
) -> Result<H::Hash, ProofError> {
    if index >= size {
        return Err(ProofError::IndexBeyondSize { index, size });
    }
    if leaf.as_ref().len() != hasher.size() {
        return Err(ProofError::LeafLength {
            len: leaf.as_ref().len(),
            expected: hasher.size(),
        });
    }
    let (inner, border) = decompose_inclusion(index, size);
    if path.len() != inner + border {
        return Err(ProofError::PathLength {
            len: path.len(),
            expected: inner + border,
        });
    }
    let acc = chain_inner(hasher, leaf.clone(), &path[..inner], index);
    Ok(chain_border_right(hasher, acc, &path[inner..]))
}

/// Accepts exactly the valid inclusion proofs: `path` proves that `leaf` (a leaf hash) is
/// leaf `index` of the tree of `size` leaves whose root is `root`.
pub fn verify_inclusion<H: TreeHasher>(
    hasher: &H,
    index: u64,
    size: u64,
    leaf: &H::Hash,
    path: &[H::Hash],
    root: &H::Hash,
) -> Result<(), ProofError> {
    let computed = root_from_inclusion(hasher, index, size, leaf, path)?;
    check_root("root", &computed, root)
}

/// Accepts exactly the valid consistency proofs: `path` proves that the tree of `from_size`
/// leaves with root `from_root` is a prefix of the tree of `size` leaves with root `root`.
pub fn verify_consistency<H: TreeHasher>(
    hasher: &H,
    from_size: u64,
    size: u64,
    path: &[H::Hash],
    from_root: &H::Hash,
    root: &H::Hash,
) -> Result<(), ProofError> {
    let (first, second) = roots_from_consistency(hasher, from_size, size, path, from_root)?;
    check_root("from_root", &first, from_root)?;
    check_root("root", &second, root)
}

/// The roots a consistency path leads to: of the tree of `from_size` leaves and of the tree
/// of `size`; an error when the path's length does not fit the sizes. `from_root` is used
/// only where the RFC seeds the path with it (`from_size` a power of two, or equal sizes), so
/// the first root returned then is a check of it, not a derivation.
pub fn roots_from_consistency<H: TreeHasher>(
    hasher: &H,
    from_size: u64,
    size: u64,
    path: &[H::Hash],
    from_root: &H::Hash,
) -> Result<(H::Hash, H::Hash), ProofError> {
    if size < from_size {
        return Err(ProofError::SizesDecrease { from_size, size });
    }
    if from_size == 0 {
        return Err(ProofError::FromEmpty);
    }
    if from_size == size {
        if !path.is_empty() {
            return Err(ProofError::PathLength {
                len: path.len(),
                expected: 0,
            });
        }
        return Ok((from_root.clone(), from_root.clone()));
    }
    let (inner, border) = decompose_inclusion(from_size - 1, size);
    let shift = from_size.trailing_zeros() as usize;
    let inner = inner - shift;
    // The first tree's root is a perfect subtree of the second when from_size is a power of
    // two; otherwise the path starts with the perfect subtree its last leaf ends.
    let seeded_by_root = from_size == 1 << shift;
    let expected = usize::from(!seeded_by_root) + inner + border;
    if path.len() != expected {
        return Err(ProofError::PathLength {
            len: path.len(),
            expected,
        });
    }
    let (seed, rest) = if seeded_by_root {
        (from_root.clone(), path)
    } else {
        (path[0].clone(), &path[1..])
    };
    let mask = (from_size - 1) >> shift;
    let first = chain_inner_right(hasher, seed.clone(), &rest[..inner], mask);
    let first = chain_border_right(hasher, first, &rest[inner..]);
    let second = chain_inner(hasher, seed, &rest[..inner], mask);
    let second = chain_border_right(hasher, second, &rest[inner..]);
    Ok((first, second))
}

/// The later sizes an RFC 9162 consistency path from `from_size` to `size` leaves open: for
/// every size in the range returned, the RFC's verification (§2.1.4.2), and
/// [`verify_consistency`], hash the same path in the same order to the same two roots, so a
/// path and its roots say nothing about which of those sizes the later tree has
/// (`schema/FORMAT.md` 3.6). Only the earlier size is bound by the path. `0 < from_size <
/// size`; otherwise the range holds `size` alone.
///
/// Where `L` is the bit length of `(from_size − 1) xor (size − 1)` and `P` is `from_size − 1`
/// with its low `L` bits cleared, the range is `P + 2^(L−1) + 1 ..= P + 2^L` (capped at
/// `u64::MAX`): the sizes whose last leaf's index agrees with the earlier tree's last leaf
/// above bit `L − 1` and differs at it. For `from_size` 17 and `size` 1000: 513 to 1024.
pub fn consistency_sizes_sharing_path(from_size: u64, size: u64) -> std::ops::RangeInclusive<u64> {
    if from_size == 0 || from_size >= size {
        return size..=size;
    }
    let (first, second) = (from_size - 1, size - 1);
    let bits = 64 - (first ^ second).leading_zeros();
    let prefix = u128::from(first.checked_shr(bits).unwrap_or(0)) << bits;
    let low = prefix + (1u128 << (bits - 1)) + 1;
    let high = prefix + (1u128 << bits);
    let cap = |value: u128| u64::try_from(value).unwrap_or(u64::MAX);
    cap(low)..=cap(high)
}

/// The right edge of a tree as it grows: the roots of its perfect subtrees, largest first
/// (one per set bit of its size). Enough to append a leaf and to give the root, in O(log n).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontier<T> {
    size: u64,
    nodes: Vec<T>,
}

impl<T: Clone + PartialEq + AsRef<[u8]> + fmt::Debug> Frontier<T> {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Frontier {
            size: 0,
            nodes: Vec::new(),
        }
    }

    /// The frontier of a tree of `size` leaves from its perfect-subtree roots, largest first;
    /// `None` unless there is exactly one per set bit of `size`.
    pub fn from_nodes(size: u64, nodes: Vec<T>) -> Option<Self> {
        (nodes.len() == size.count_ones() as usize).then_some(Frontier { size, nodes })
    }

    /// How many leaves the tree has.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The perfect-subtree roots, largest first.
    pub fn nodes(&self) -> &[T] {
        &self.nodes
    }

    /// Appends leaf hash `leaf`, calling `completed(level, index, root)` for every perfect
    /// subtree it completes: the leaf itself at level 0, then each parent it closes.
    pub fn push<H: TreeHasher<Hash = T>>(
        &mut self,
        hasher: &H,
        leaf: T,
        mut completed: impl FnMut(u8, u64, &T),
    ) {
        assert_eq!(
            self.nodes.len(),
            self.size.count_ones() as usize,
            "a frontier holds one node per set bit of its size before a push"
        );
        let size_before = self.size;
        let mut index = self.size;
        let mut level = 0u8;
        completed(level, index, &leaf);
        self.nodes.push(leaf);
        while index & 1 == 1 {
            let (Some(right), Some(left)) = (self.nodes.pop(), self.nodes.pop()) else {
                unreachable!("an odd index has a left sibling on the frontier")
            };
            let parent = hasher.node(&left, &right);
            index >>= 1;
            level += 1;
            completed(level, index, &parent);
            self.nodes.push(parent);
        }
        self.size += 1;
        assert_eq!(
            self.size,
            size_before + 1,
            "a push grows the tree by exactly the one leaf appended"
        );
        assert_eq!(
            self.nodes.len(),
            self.size.count_ones() as usize,
            "a frontier holds one node per set bit of its size after a push"
        );
    }

    /// The root of the tree.
    pub fn root<H: TreeHasher<Hash = T>>(&self, hasher: &H) -> T {
        let mut nodes = self.nodes.iter().rev();
        let Some(last) = nodes.next() else {
            return hasher.empty();
        };
        let root = nodes.fold(last.clone(), |acc, left| hasher.node(left, &acc));
        debug_assert_eq!(
            Some(&root),
            self.root_from_range(hasher).as_ref(),
            "a frontier's root is the root of the range 0 .. size its nodes are the subtrees of"
        );
        root
    }

    /// The root recomputed as [`range_root`] folds the perfect subtrees of `0 .. size`, each
    /// answered from the frontier: the check of [`Frontier::root`]. `None` when the nodes are
    /// not one per subtree.
    fn root_from_range<H: TreeHasher<Hash = T>>(&self, hasher: &H) -> Option<T> {
        let subtrees = perfect_subtrees(0, self.size);
        if subtrees.len() != self.nodes.len() {
            return None;
        }
        let mut at = 0;
        range_root(hasher, 0, self.size, &mut |_, _| {
            at += 1;
            self.nodes.get(at - 1).cloned().ok_or(())
        })
        .ok()
    }
}

impl<T: Clone + PartialEq + AsRef<[u8]> + fmt::Debug> Default for Frontier<T> {
    fn default() -> Self {
        Frontier::new()
    }
}

/// A proof that a record is in the log's tree of a given size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InclusionProof {
    /// The record's position: its leaf index.
    pub position: Position,
    /// The tree's size (records).
    pub size: u64,
    /// The sibling hashes from the leaf up.
    pub path: Vec<Digest>,
}

/// A proof that the log's tree of `from_size` records is a prefix of its tree of `size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The earlier size.
    pub from_size: u64,
    /// The later size.
    pub size: u64,
    /// The path hashes.
    pub path: Vec<Digest>,
}

/// A tree head: a size and the root of the log's tree of that many records.
///
/// An RFC 9162 root does not commit to its tree's size (the trees of 149 and 150 leaves can
/// share a path from leaf 0), so what an auditor keeps and checks against is the pair, as
/// RFC 9162's signed tree heads do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeHead {
    /// Records in the tree.
    pub size: u64,
    /// The root of the tree.
    pub root: Digest,
}

impl TreeHead {
    /// The tree head hash: blake3 in derive-key mode with the context string
    /// `TREE_HEAD_CONTEXT` (`schema/FORMAT.md` 3.5)
    /// over `u64(size) ‖ root`. One value that an auditor can hold for both.
    pub fn hash(&self) -> Digest {
        let mut hasher = blake3::Hasher::new_derive_key(crate::hash::TREE_HEAD_CONTEXT);
        hasher.update(&self.size.to_le_bytes());
        hasher.update(self.root.as_bytes());
        Digest(*hasher.finalize().as_bytes())
    }
}

/// What an auditor kept of a tree head they trust (from `annals root`, or a signed source):
/// the size and root, or only the tree head hash that binds them.
///
/// A proof is evidence about a log only when checked against such a head: a proof carries
/// tree heads of its own, and anyone who forges one (another size, the root recomputed to
/// match) can make those agree with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustedHead {
    /// The size and root.
    Head(TreeHead),
    /// The tree head hash alone ([`TreeHead::hash`]).
    Hash(Digest),
}

impl TrustedHead {
    /// Whether `head` is the trusted head.
    pub fn is(&self, head: &TreeHead) -> bool {
        match self {
            TrustedHead::Head(trusted) => trusted == head,
            TrustedHead::Hash(hash) => head.hash() == *hash,
        }
    }
}

/// The tree heads an auditor trusts: the one place where a proof's tree head is taken as
/// established or not. Today that is a head the auditor kept ([`TrustedHead`]); signed
/// checkpoints will add heads trusted by their signature here, and nowhere else.
///
/// A proof never adds to it: a consistency proof checked against a trusted earlier head does
/// not make its later head trusted (`schema/FORMAT.md` 3.6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    heads: Vec<TrustedHead>,
}

impl Trust {
    /// Trusts nothing.
    pub fn new() -> Self {
        Trust::default()
    }

    /// Trusts `head` as well.
    pub fn with(mut self, head: TrustedHead) -> Self {
        self.heads.push(head);
        self
    }

    /// The heads kept, in the order given.
    pub fn heads(&self) -> &[TrustedHead] {
        &self.heads
    }

    /// Whether nothing is trusted.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Whether `head` is trusted: the decision every check of a proof against a log rests on.
    pub fn trusts(&self, head: &TreeHead) -> bool {
        self.heads.iter().any(|trusted| trusted.is(head))
    }
}

impl From<TrustedHead> for Trust {
    fn from(head: TrustedHead) -> Self {
        Trust::new().with(head)
    }
}

impl From<&TrustedHead> for Trust {
    fn from(head: &TrustedHead) -> Self {
        Trust::from(*head)
    }
}

/// Stateless check of an inclusion proof: accepts exactly when `proof` shows the record whose
/// record hash is `record_hash` at `proof.position` in the tree of `trusted`.
///
/// `trusted` must be a head the caller trusts, never one taken from the proof's own source:
/// any proof path leads to some root, and a head built from that root "verifies".
pub fn check_inclusion(
    proof: &InclusionProof,
    trusted: &TreeHead,
    record_hash: &Digest,
) -> Result<(), ProofError> {
    if proof.size != trusted.size {
        return Err(ProofError::SizeMismatch {
            proof: proof.size,
            head: trusted.size,
        });
    }
    verify_inclusion(
        &LogTreeHasher,
        proof.position.0,
        proof.size,
        &leaf_hash(record_hash),
        &proof.path,
        &trusted.root,
    )
}

/// Stateless check of a consistency proof: accepts exactly when `proof` shows that the tree of
/// `from` is a prefix of the tree of `to`.
///
/// The later head must be one the caller trusts; the check then vouches for the earlier one (a
/// prefix of it). Trusting only the earlier head vouches for no later one: the path binds only
/// the earlier size ([`consistency_sizes_sharing_path`]).
pub fn check_consistency(
    proof: &ConsistencyProof,
    from: &TreeHead,
    to: &TreeHead,
) -> Result<(), ProofError> {
    for (proof_size, head) in [(proof.from_size, from), (proof.size, to)] {
        if proof_size != head.size {
            return Err(ProofError::SizeMismatch {
                proof: proof_size,
                head: head.size,
            });
        }
    }
    verify_consistency(
        &LogTreeHasher,
        proof.from_size,
        proof.size,
        &proof.path,
        &from.root,
        &to.root,
    )
}
