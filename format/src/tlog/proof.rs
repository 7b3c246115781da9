//! `c2sp.org/tlog-proof@v1`: an offline-verifiable proof that an entry is in a log — the
//! header line, optional `extra` data, the entry's `index`, its inclusion proof (one base64
//! SHA-256 hash a line, the leaf's sibling first), a blank line, then the log's checkpoint
//! note verbatim, cosignatures included.
//!
//! tlog-proof has no form for consistency proofs (tlog-witness carries them only inside its
//! `add-checkpoint` request), so the library call [`check_consistency`] checks one between two
//! checkpoints the caller has already opened.
//!
//! This module owns the file's lines and the checks against a checkpoint; the tree math is
//! `crate::merkle`'s with [`LogTreeHasher`]. It does no I/O.

use crate::hash::Digest;
use crate::merkle::{
    LogTreeHasher, ProofError, TreeHasher, roots_from_consistency, verify_consistency,
    verify_inclusion,
};

use super::checkpoint::{Checkpoint, CheckpointError, OpenedCheckpoint, SizeProblem};
use super::note::{NOTE_BYTES_MAX, Verifier};
use super::{base64_decode, base64_encode, base64_hash, next_line, parse_decimal};

/// The first line of every proof file.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// The most hashes an inclusion proof has: one per level of a tree of up to `2^64 − 1` leaves.
pub const PROOF_HASHES_MAX: usize = 64;

/// The most bytes of extra data read (base64 text of `4/3` as many).
pub const EXTRA_BYTES_MAX: usize = 64 * 1024;

/// The largest proof file read: the lines before the checkpoint, then the checkpoint note.
pub const TLOG_PROOF_BYTES_MAX: usize = TLOG_PROOF_HEADER.len()
    + 1
    + 6
    + EXTRA_BYTES_MAX * 4 / 3
    + 4
    + 1
    + 6
    + 20
    + 1
    + PROOF_HASHES_MAX * 45
    + 1
    + NOTE_BYTES_MAX;

/// Why a tlog-proof does not parse or check. Line numbers count from 1 over the proof file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlogProofError {
    /// The file is larger than [`TLOG_PROOF_BYTES_MAX`].
    #[error("the proof is {bytes} bytes, more than the {max} read")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The first line is not [`TLOG_PROOF_HEADER`].
    #[error("line 1: not a tlog proof (the first line is not {TLOG_PROOF_HEADER})")]
    Header,
    /// An `extra` line whose data is empty, not standard base64, or too long.
    #[error("line {line}: the extra data is not non-empty standard base64 of at most {max} bytes")]
    Extra {
        /// The line.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// No `index ` line where one must be.
    #[error("line {line}: expected `index <N>`")]
    NoIndex {
        /// The line.
        line: usize,
    },
    /// The index is not a decimal as tlog-proof writes it.
    #[error("line {line}: the index has {problem}")]
    Index {
        /// The line.
        line: usize,
        /// What is wrong.
        problem: SizeProblem,
    },
    /// An inclusion proof line that is not the base64 of a 32-byte hash.
    #[error("line {line}: a proof hash is not standard base64 of 32 bytes")]
    Hash {
        /// The line.
        line: usize,
    },
    /// More proof hashes than [`PROOF_HASHES_MAX`].
    #[error("line {line}: more than {max} proof hashes")]
    TooManyHashes {
        /// The first line over the limit.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// The file ends before the blank line and the checkpoint.
    #[error("line {line}: the proof ends before the blank line and the checkpoint")]
    Truncated {
        /// The line after the last.
        line: usize,
    },
    /// The checkpoint is malformed or does not open.
    #[error("in the checkpoint from line {first_line}: {error}")]
    Checkpoint {
        /// The proof file's line where the checkpoint starts.
        first_line: usize,
        /// What is wrong with it (its lines numbered from the checkpoint's first).
        error: CheckpointError,
    },
    /// The inclusion proof does not lead from the leaf to the checkpoint's root.
    #[error(
        "the inclusion proof of index {index} does not verify against the checkpoint of \
         size {size}: {error}"
    )]
    Inclusion {
        /// The index.
        index: u64,
        /// The checkpoint's size.
        size: u64,
        /// Why.
        error: ProofError,
    },
}

/// A tlog-proof file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlogProof {
    /// Opaque extra data, not authenticated (empty: no `extra` line).
    pub extra: Vec<u8>,
    /// The entry's zero-based index in the log.
    pub index: u64,
    /// The inclusion proof: the leaf's sibling first, up to a child of the root.
    pub path: Vec<[u8; 32]>,
    /// The checkpoint's signed note, verbatim.
    checkpoint_text: String,
    /// The checkpoint's body, parsed (its signatures are checked by [`TlogProof::check`]).
    checkpoint: Checkpoint,
}

impl TlogProof {
    /// A proof of the entry at `index` in the tree of `checkpoint`, with its cosignatures.
    pub fn new(index: u64, path: Vec<[u8; 32]>, checkpoint: &OpenedCheckpoint) -> TlogProof {
        TlogProof {
            extra: Vec::new(),
            index,
            path,
            checkpoint_text: checkpoint.to_text(),
            checkpoint: checkpoint.checkpoint.clone(),
        }
    }

    /// A proof of the entry at `index` in the tree of the checkpoint note `checkpoint_text`
    /// (kept verbatim, cosignatures included), not yet opened against a key: what a log that
    /// holds the checkpoint but not its verifier keys writes. `extra` is the opaque extra
    /// data (empty: none).
    pub fn for_checkpoint(
        index: u64,
        path: Vec<[u8; 32]>,
        checkpoint_text: &str,
        extra: Vec<u8>,
    ) -> Result<TlogProof, TlogProofError> {
        let in_checkpoint = |error: CheckpointError| TlogProofError::Checkpoint {
            first_line: 1,
            error,
        };
        let note =
            super::note::Note::parse(checkpoint_text).map_err(|e| in_checkpoint(e.into()))?;
        let checkpoint = Checkpoint::parse_body(note.text()).map_err(in_checkpoint)?;
        if extra.len() > EXTRA_BYTES_MAX {
            return Err(TlogProofError::Extra {
                line: 2,
                max: EXTRA_BYTES_MAX,
            });
        }
        Ok(TlogProof {
            extra,
            index,
            path,
            checkpoint_text: checkpoint_text.to_owned(),
            checkpoint,
        })
    }

    /// The checkpoint the proof carries (not yet opened against a key).
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The checkpoint's signed note, as carried.
    pub fn checkpoint_text(&self) -> &str {
        &self.checkpoint_text
    }

    /// Parses a proof file: its lines and its checkpoint's, not yet its signatures.
    pub fn parse(text: &str) -> Result<TlogProof, TlogProofError> {
        if text.len() > TLOG_PROOF_BYTES_MAX {
            return Err(TlogProofError::TooLarge {
                bytes: text.len(),
                max: TLOG_PROOF_BYTES_MAX,
            });
        }
        let mut rest = text;
        let mut line = 1;
        if next_line(&mut rest) != Some(TLOG_PROOF_HEADER) {
            return Err(TlogProofError::Header);
        }
        line += 1;
        let mut current = next_line(&mut rest).ok_or(TlogProofError::Truncated { line })?;
        let mut extra = Vec::new();
        if let Some(encoded) = current.strip_prefix("extra ") {
            let bad = TlogProofError::Extra {
                line,
                max: EXTRA_BYTES_MAX,
            };
            if encoded.len() > EXTRA_BYTES_MAX.div_ceil(3) * 4 {
                return Err(bad);
            }
            extra = base64_decode(encoded).ok_or(bad.clone())?;
            // "If no extra data is present, this line is omitted": one form per proof.
            if extra.is_empty() || extra.len() > EXTRA_BYTES_MAX {
                return Err(bad);
            }
            line += 1;
            current = next_line(&mut rest).ok_or(TlogProofError::Truncated { line })?;
        }
        let index = current
            .strip_prefix("index ")
            .ok_or(TlogProofError::NoIndex { line })?;
        let index =
            parse_decimal(index).map_err(|problem| TlogProofError::Index { line, problem })?;
        let mut path = Vec::new();
        loop {
            line += 1;
            let current = next_line(&mut rest).ok_or(TlogProofError::Truncated { line })?;
            if current.is_empty() {
                break;
            }
            if path.len() == PROOF_HASHES_MAX {
                return Err(TlogProofError::TooManyHashes {
                    line,
                    max: PROOF_HASHES_MAX,
                });
            }
            path.push(base64_hash(current).map_err(|_| TlogProofError::Hash { line })?);
        }
        let first_line = line + 1;
        let in_checkpoint =
            |error: CheckpointError| TlogProofError::Checkpoint { first_line, error };
        let note = super::note::Note::parse(rest).map_err(|e| in_checkpoint(e.into()))?;
        let checkpoint = Checkpoint::parse_body(note.text()).map_err(in_checkpoint)?;
        Ok(TlogProof {
            extra,
            index,
            path,
            checkpoint_text: rest.to_owned(),
            checkpoint,
        })
    }

    /// The proof file's text.
    pub fn to_text(&self) -> String {
        let mut out =
            String::with_capacity(128 + 45 * self.path.len() + self.checkpoint_text.len());
        out.push_str(TLOG_PROOF_HEADER);
        out.push('\n');
        if !self.extra.is_empty() {
            out.push_str("extra ");
            out.push_str(&base64_encode(&self.extra));
            out.push('\n');
        }
        out.push_str(&format!("index {}\n", self.index));
        for hash in &self.path {
            out.push_str(&base64_encode(hash));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint_text);
        out
    }

    /// The first line of the checkpoint in [`TlogProof::to_text`]'s form.
    fn checkpoint_first_line(&self) -> usize {
        3 + usize::from(!self.extra.is_empty()) + self.path.len() + 1
    }

    /// Checks the proof as tlog-proof's "Verifying a tlog proof" says, for the entry whose
    /// leaf hash is `leaf`: the checkpoint opens against `verifiers` (signed by a key named as
    /// its origin: [`Checkpoint::open`]), and the inclusion proof leads from `leaf` at
    /// `index` to the checkpoint's root. Cosignatures are returned for the caller's policy.
    pub fn check_leaf(
        &self,
        leaf: &[u8; 32],
        verifiers: &[Verifier],
    ) -> Result<OpenedCheckpoint, TlogProofError> {
        let opened = Checkpoint::open(&self.checkpoint_text, verifiers).map_err(|error| {
            TlogProofError::Checkpoint {
                first_line: self.checkpoint_first_line(),
                error,
            }
        })?;
        let size = opened.checkpoint.size;
        let path: Vec<Digest> = self.path.iter().copied().map(Digest).collect();
        verify_inclusion(
            &LogTreeHasher,
            self.index,
            size,
            &Digest(*leaf),
            &path,
            &Digest(opened.checkpoint.root),
        )
        .map_err(|error| TlogProofError::Inclusion {
            index: self.index,
            size,
            error,
        })?;
        Ok(opened)
    }

    /// [`TlogProof::check_leaf`] for the annals record whose record hash is `record_hash`:
    /// its leaf is `SHA-256(0x00 ‖ record hash)`.
    pub fn check_record(
        &self,
        record_hash: &Digest,
        verifiers: &[Verifier],
    ) -> Result<OpenedCheckpoint, TlogProofError> {
        let leaf = LogTreeHasher.leaf(record_hash.as_bytes());
        self.check_leaf(leaf.as_bytes(), verifiers)
    }
}

/// Why two checkpoints are not shown consistent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsistencyError {
    /// Checkpoints of two logs.
    #[error("the checkpoints are of two logs: {old} and {new}")]
    Origins {
        /// The earlier checkpoint's origin.
        old: String,
        /// The later one's.
        new: String,
    },
    /// A checkpoint of size 0 whose root is not the empty tree's (`SHA-256()`).
    #[error("a checkpoint of size 0 has a root other than the empty tree's")]
    EmptyRoot,
    /// The proof does not verify.
    #[error("the consistency proof from size {old} to {new} does not verify: {error}")]
    Proof {
        /// The earlier size.
        old: u64,
        /// The later size.
        new: u64,
        /// Why.
        error: ProofError,
    },
}

/// Checks `proof` (RFC 6962 §2.1.2's hashes) shows that `old`'s tree is a prefix of `new`'s,
/// both checkpoints of the same origin and both already opened by the caller: a consistency
/// proof says nothing about a size or root that is not itself trusted.
///
/// From size 0 the proof must be empty and the old root the empty tree's: "the empty tree is
/// consistent with any tree" (tlog-witness, `add-checkpoint`). At equal sizes it must be
/// empty and the roots equal.
pub fn check_consistency(
    old: &Checkpoint,
    new: &Checkpoint,
    proof: &[[u8; 32]],
) -> Result<(), ConsistencyError> {
    if old.origin != new.origin {
        return Err(ConsistencyError::Origins {
            old: old.origin.clone(),
            new: new.origin.clone(),
        });
    }
    let wrap = |error| ConsistencyError::Proof {
        old: old.size,
        new: new.size,
        error,
    };
    for checkpoint in [old, new] {
        if checkpoint.size == 0 && checkpoint.root != LogTreeHasher.empty().0 {
            return Err(ConsistencyError::EmptyRoot);
        }
    }
    if old.size == 0 {
        if proof.is_empty() {
            return Ok(());
        }
        return Err(wrap(ProofError::PathLength {
            len: proof.len(),
            expected: 0,
        }));
    }
    let path: Vec<Digest> = proof.iter().copied().map(Digest).collect();
    verify_consistency(
        &LogTreeHasher,
        old.size,
        new.size,
        &path,
        &Digest(old.root),
        &Digest(new.root),
    )
    .map_err(wrap)
}

/// Whether `old` and `new`, two checkpoints of one origin both already opened against the
/// log's key, prove the log forked: neither extends the other. That is so when they have the
/// same size and another root, or when `proof`, a consistency path from `old`'s size, hashes
/// to `new`'s root and so shows `new`'s tree holding another root than `old`'s at `old`'s
/// size. Only signed data and a path bound to a signed root enter: nobody without the log's
/// key can make an honest pair prove a fork, whatever path they give (short of a SHA-256
/// collision). A path that merely fails to verify proves nothing, and from a power-of-two
/// size RFC 6962's path takes the old root as given rather than deriving it, so there only
/// equal sizes prove a fork.
pub fn proves_fork(old: &Checkpoint, new: &Checkpoint, proof: &[[u8; 32]]) -> bool {
    if old.origin != new.origin {
        return false;
    }
    if old.size == new.size {
        return old.root != new.root;
    }
    if old.size == 0 || old.size > new.size {
        return false;
    }
    let path: Vec<Digest> = proof.iter().copied().map(Digest).collect();
    match roots_from_consistency(&LogTreeHasher, old.size, new.size, &path, &Digest(old.root)) {
        Ok((earlier, later)) => later.0 == new.root && earlier.0 != old.root,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{inclusion_path, root_of_leaves};
    use crate::tlog::Signer;

    fn signer() -> Signer {
        Signer::from_seed("example.com/log", [1; 32]).unwrap()
    }

    fn leaves(n: u64) -> Vec<Digest> {
        (0..n)
            .map(|i| LogTreeHasher.leaf(&i.to_le_bytes()))
            .collect()
    }

    /// The checkpoint of `leaves` and the consistency path from its first `old` leaves (none
    /// from 0).
    fn grown(leaves: &[Digest], old: u64) -> (Checkpoint, Vec<[u8; 32]>) {
        let checkpoint = Checkpoint {
            origin: "example.com/log".into(),
            size: leaves.len() as u64,
            root: root_of_leaves(&LogTreeHasher, leaves).0,
            extensions: Vec::new(),
        };
        if old == 0 {
            return (checkpoint, Vec::new());
        }
        let path = crate::merkle::consistency_path(
            &LogTreeHasher,
            old,
            leaves.len() as u64,
            &mut |level, i| {
                let start = (i << level) as usize;
                Ok::<_, ()>(root_of_leaves(
                    &LogTreeHasher,
                    &leaves[start..start + (1usize << level)],
                ))
            },
        )
        .unwrap();
        (checkpoint, path.iter().map(|d| d.0).collect())
    }

    #[test]
    fn only_signed_roots_and_a_path_bound_to_one_prove_a_fork() {
        let honest = leaves(20);
        let mut forked = honest.clone();
        forked[12] = LogTreeHasher.leaf(b"another record");
        for old in [6u64, 13, 14, 16] {
            let (cosigned, _) = grown(&honest[..old as usize], 0);
            let (later, path) = grown(&honest, old);
            // An honest pair proves nothing, with its own path, a junk one or none.
            assert!(!proves_fork(&cosigned, &later, &path), "{old}");
            assert!(!proves_fork(&cosigned, &later, &[[7; 32]; 3]), "{old}");
            assert!(!proves_fork(&cosigned, &later, &[]), "{old}");
            assert!(!proves_fork(&later, &cosigned, &path), "{old}");
            // A fork after the cosigned size proves one with its own path, unless that path
            // is from a power of two (RFC 6962 then takes the old root as given).
            let (fork, fork_path) = grown(&forked, old);
            let expected = old > 12 && !old.is_power_of_two();
            assert_eq!(proves_fork(&cosigned, &fork, &fork_path), expected, "{old}");
            assert!(!proves_fork(&cosigned, &fork, &[[7; 32]; 3]), "{old}");
        }
        // The same size with two roots proves one, whatever path comes with it.
        let (at_14, _) = grown(&honest[..14], 0);
        let (fork_14, _) = grown(&forked[..14], 0);
        assert!(proves_fork(&at_14, &fork_14, &[]));
        assert!(proves_fork(&at_14, &fork_14, &[[7; 32]]));
        assert!(!proves_fork(&at_14, &at_14.clone(), &[]));
    }

    fn proof_of(index: u64, size: u64, extra: &[u8]) -> (TlogProof, Digest) {
        let leaves = leaves(size);
        let root = root_of_leaves(&LogTreeHasher, &leaves);
        let checkpoint = Checkpoint {
            origin: "example.com/log".into(),
            size,
            root: root.0,
            extensions: Vec::new(),
        };
        let text = checkpoint.sign(&signer()).unwrap();
        let opened = Checkpoint::open(&text, &[signer().verifier()]).unwrap();
        let path = inclusion_path(&LogTreeHasher, index, size, &mut |level, i| {
            let width = 1usize << level;
            let start = i as usize * width;
            Ok::<_, ()>(root_of_leaves(
                &LogTreeHasher,
                &leaves[start..start + width],
            ))
        })
        .unwrap();
        let mut proof = TlogProof::new(index, path.iter().map(|d| d.0).collect(), &opened);
        proof.extra = extra.to_vec();
        (proof, leaves[index as usize])
    }

    #[test]
    fn proof_round_trips_and_checks() {
        for extra in [&b""[..], b"age-v1.2.1"] {
            let (proof, leaf) = proof_of(5, 11, extra);
            let text = proof.to_text();
            let parsed = TlogProof::parse(&text).unwrap();
            assert_eq!(parsed, proof);
            assert_eq!(parsed.to_text(), text);
            assert!(parsed.check_leaf(&leaf.0, &[signer().verifier()]).is_ok());
            let other = LogTreeHasher.leaf(b"other");
            assert!(matches!(
                parsed.check_leaf(&other.0, &[signer().verifier()]),
                Err(TlogProofError::Inclusion {
                    index: 5,
                    size: 11,
                    ..
                })
            ));
        }
    }

    #[test]
    fn proof_lines_errors_name_the_line() {
        let (proof, _) = proof_of(2, 4, b"x");
        let text = proof.to_text();
        let lines: Vec<&str> = text.split('\n').collect();
        let with = |i: usize, replacement: &str| {
            let mut lines = lines.clone();
            lines[i] = replacement;
            TlogProof::parse(&lines.join("\n"))
        };
        assert_eq!(
            with(0, "c2sp.org/tlog-proof@v2"),
            Err(TlogProofError::Header)
        );
        assert!(matches!(
            with(1, "extra "),
            Err(TlogProofError::Extra { line: 2, .. })
        ));
        assert!(matches!(
            with(1, "extra eA"),
            Err(TlogProofError::Extra { line: 2, .. })
        ));
        assert_eq!(
            with(2, "index 02"),
            Err(TlogProofError::Index {
                line: 3,
                problem: SizeProblem::LeadingZero
            })
        );
        assert_eq!(
            with(2, "index: 2"),
            Err(TlogProofError::NoIndex { line: 3 })
        );
        assert_eq!(with(4, "AAAA"), Err(TlogProofError::Hash { line: 5 }));
        assert!(matches!(
            with(7, "example.com/log"),
            Err(TlogProofError::Checkpoint { first_line: 7, .. })
        ));
        assert_eq!(
            TlogProof::parse(&lines[..5].join("\n")),
            Err(TlogProofError::Truncated { line: 5 })
        );
        let many = format!(
            "{TLOG_PROOF_HEADER}\nindex 0\n{}",
            format!("{}\n", base64_encode(&[0; 32])).repeat(PROOF_HASHES_MAX + 1)
        );
        assert_eq!(
            TlogProof::parse(&many),
            Err(TlogProofError::TooManyHashes {
                line: 3 + PROOF_HASHES_MAX,
                max: PROOF_HASHES_MAX
            })
        );
    }

    #[test]
    fn consistency_between_checkpoints() {
        let checkpoint = |size: u64| {
            let leaves = leaves(size);
            Checkpoint {
                origin: "example.com/log".into(),
                size,
                root: root_of_leaves(&LogTreeHasher, &leaves).0,
                extensions: Vec::new(),
            }
        };
        let all = leaves(7);
        let path = crate::merkle::consistency_path(&LogTreeHasher, 3, 7, &mut |level, i| {
            let width = 1usize << level;
            let start = i as usize * width;
            Ok::<_, ()>(root_of_leaves(&LogTreeHasher, &all[start..start + width]))
        })
        .unwrap();
        let path: Vec<[u8; 32]> = path.iter().map(|d| d.0).collect();
        assert_eq!(
            check_consistency(&checkpoint(3), &checkpoint(7), &path),
            Ok(())
        );
        assert!(check_consistency(&checkpoint(3), &checkpoint(6), &path).is_err());
        assert_eq!(
            check_consistency(&checkpoint(0), &checkpoint(7), &[]),
            Ok(())
        );
        assert!(check_consistency(&checkpoint(0), &checkpoint(7), &path).is_err());
        assert_eq!(
            check_consistency(&checkpoint(7), &checkpoint(7), &[]),
            Ok(())
        );
        let mut forged = checkpoint(7);
        forged.root[0] ^= 1;
        assert!(check_consistency(&checkpoint(7), &forged, &[]).is_err());
        let mut empty = checkpoint(0);
        empty.root = [0; 32];
        assert_eq!(
            check_consistency(&empty, &checkpoint(7), &[]),
            Err(ConsistencyError::EmptyRoot)
        );
        let mut elsewhere = checkpoint(7);
        elsewhere.origin = "example.com/other".into();
        assert!(matches!(
            check_consistency(&checkpoint(3), &elsewhere, &path),
            Err(ConsistencyError::Origins { .. })
        ));
    }
}
