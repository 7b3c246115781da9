//! A consistency proof between two checkpoints, in the one text form the C2SP specifications
//! give it: the body of tlog-witness's `add-checkpoint` request — an `old <size>` line, the
//! consistency proof from that size (one base64 SHA-256 hash a line), a blank line, then the
//! later checkpoint's note verbatim. A witness takes the same bytes.
//!
//! A consistency proof binds the earlier size but not the later one, so it is checked only
//! between two checkpoints that both open against the log's key (the later one carried here,
//! the earlier one the auditor kept): [`ConsistencyFile::check`].

use super::checkpoint::{Checkpoint, CheckpointError, OpenedCheckpoint};
use super::note::{NOTE_BYTES_MAX, Verifier};
use super::proof::{ConsistencyError, check_consistency};
use super::{base64_encode, base64_hash, checkpoint::SizeProblem, next_line, parse_decimal};

/// The most proof lines a consistency proof has (tlog-witness: "MUST NOT send more than 63").
pub const CONSISTENCY_HASHES_MAX: usize = 63;

/// The largest file read: the old size line, the hashes, the blank line and the note.
pub const CONSISTENCY_BYTES_MAX: usize =
    4 + 20 + 1 + CONSISTENCY_HASHES_MAX * 45 + 1 + NOTE_BYTES_MAX;

/// Why a consistency file does not parse or check. Lines count from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsistencyFileError {
    /// The file is larger than [`CONSISTENCY_BYTES_MAX`].
    #[error("the proof is {bytes} bytes, more than the {max} read")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The first line is not `old <size>`.
    #[error("line 1: expected `old <size>`, the size of the earlier checkpoint")]
    NoOld,
    /// The old size is not a decimal as the spec writes it.
    #[error("line 1: the old size has {0}")]
    OldSize(SizeProblem),
    /// A proof line that is not the base64 of a 32-byte hash.
    #[error("line {line}: a proof hash is not standard base64 of 32 bytes")]
    Hash {
        /// The line.
        line: usize,
    },
    /// More proof lines than [`CONSISTENCY_HASHES_MAX`].
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
    /// A checkpoint (the carried one, or the earlier one given) is malformed or does not open.
    #[error("the {which} checkpoint: {error}")]
    Checkpoint {
        /// `later` (carried, from the line after the blank one) or `earlier` (given).
        which: &'static str,
        /// What is wrong with it.
        error: CheckpointError,
    },
    /// The earlier checkpoint given is not of the size the proof is from.
    #[error(
        "the proof is from size {proof}, the earlier checkpoint given is of size {given}: give \
         the checkpoint of size {proof}"
    )]
    OldSizeMismatch {
        /// The proof's old size.
        proof: u64,
        /// The given checkpoint's size.
        given: u64,
    },
    /// The later checkpoint is smaller than the old size.
    #[error("the old size {old} is larger than the checkpoint's size {new}")]
    Shrinks {
        /// The old size.
        old: u64,
        /// The carried checkpoint's size.
        new: u64,
    },
    /// The proof does not show the earlier tree a prefix of the later.
    #[error("{0}")]
    Inconsistent(ConsistencyError),
}

/// A consistency proof from the tree of `old_size` records to a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsistencyFile {
    /// The earlier checkpoint's size.
    pub old_size: u64,
    /// The consistency proof from `old_size` to the checkpoint's size.
    pub path: Vec<[u8; 32]>,
    checkpoint_text: String,
    checkpoint: Checkpoint,
}

impl ConsistencyFile {
    /// The proof from `old_size` to the checkpoint note `checkpoint_text` (kept verbatim).
    pub fn new(
        old_size: u64,
        path: Vec<[u8; 32]>,
        checkpoint_text: &str,
    ) -> Result<ConsistencyFile, ConsistencyFileError> {
        let checkpoint = parse_note(checkpoint_text, "later")?;
        if path.len() > CONSISTENCY_HASHES_MAX {
            return Err(ConsistencyFileError::TooManyHashes {
                line: 2 + CONSISTENCY_HASHES_MAX,
                max: CONSISTENCY_HASHES_MAX,
            });
        }
        Ok(ConsistencyFile {
            old_size,
            path,
            checkpoint_text: checkpoint_text.to_owned(),
            checkpoint,
        })
    }

    /// The later checkpoint (not yet opened against a key).
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The later checkpoint's note, verbatim.
    pub fn checkpoint_text(&self) -> &str {
        &self.checkpoint_text
    }

    /// Parses the file: its lines and its checkpoint's, not yet any signature.
    pub fn parse(text: &str) -> Result<ConsistencyFile, ConsistencyFileError> {
        if text.len() > CONSISTENCY_BYTES_MAX {
            return Err(ConsistencyFileError::TooLarge {
                bytes: text.len(),
                max: CONSISTENCY_BYTES_MAX,
            });
        }
        let mut rest = text;
        let first = next_line(&mut rest).ok_or(ConsistencyFileError::NoOld)?;
        let old = first
            .strip_prefix("old ")
            .ok_or(ConsistencyFileError::NoOld)?;
        let old_size = parse_decimal(old).map_err(ConsistencyFileError::OldSize)?;
        let mut path = Vec::new();
        let mut line = 1;
        loop {
            line += 1;
            let current = next_line(&mut rest).ok_or(ConsistencyFileError::Truncated { line })?;
            if current.is_empty() {
                break;
            }
            if path.len() == CONSISTENCY_HASHES_MAX {
                return Err(ConsistencyFileError::TooManyHashes {
                    line,
                    max: CONSISTENCY_HASHES_MAX,
                });
            }
            path.push(base64_hash(current).map_err(|_| ConsistencyFileError::Hash { line })?);
        }
        ConsistencyFile::new(old_size, path, rest)
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = format!("old {}\n", self.old_size);
        for hash in &self.path {
            out.push_str(&base64_encode(hash));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint_text);
        out
    }

    /// Checks that the carried checkpoint and `earlier` (the checkpoint note of the tree the
    /// auditor kept) both open against `verifiers`, that `earlier` is of the proof's old size,
    /// and that the proof shows its tree a prefix of the carried one's. Returns the carried
    /// checkpoint opened, which then has the standing `earlier` had.
    pub fn check(
        &self,
        earlier: &str,
        verifiers: &[Verifier],
    ) -> Result<OpenedCheckpoint, ConsistencyFileError> {
        let later = Checkpoint::open(&self.checkpoint_text, verifiers).map_err(|error| {
            ConsistencyFileError::Checkpoint {
                which: "later",
                error,
            }
        })?;
        let earlier = Checkpoint::open(earlier, verifiers).map_err(|error| {
            ConsistencyFileError::Checkpoint {
                which: "earlier",
                error,
            }
        })?;
        if earlier.checkpoint.size != self.old_size {
            return Err(ConsistencyFileError::OldSizeMismatch {
                proof: self.old_size,
                given: earlier.checkpoint.size,
            });
        }
        if self.old_size > later.checkpoint.size {
            return Err(ConsistencyFileError::Shrinks {
                old: self.old_size,
                new: later.checkpoint.size,
            });
        }
        check_consistency(&earlier.checkpoint, &later.checkpoint, &self.path)
            .map_err(ConsistencyFileError::Inconsistent)?;
        Ok(later)
    }
}

fn parse_note(text: &str, which: &'static str) -> Result<Checkpoint, ConsistencyFileError> {
    let wrap = |error: CheckpointError| ConsistencyFileError::Checkpoint { which, error };
    let note = super::note::Note::parse(text).map_err(|error| wrap(error.into()))?;
    Checkpoint::parse_body(note.text()).map_err(wrap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Digest;
    use crate::merkle::{LogTreeHasher, TreeHasher, consistency_path, root_of_leaves};
    use crate::tlog::Signer;

    fn signer() -> Signer {
        Signer::from_seed("example.com/log", [3; 32]).unwrap()
    }

    /// The signed checkpoint of the first `size` of 20 made-up leaves.
    fn checkpoint(size: u64) -> String {
        let leaves = leaves();
        Checkpoint {
            origin: "example.com/log".into(),
            size,
            root: root_of_leaves(&LogTreeHasher, &leaves[..size as usize]).0,
            extensions: Vec::new(),
        }
        .sign(&signer())
        .unwrap()
    }

    fn leaves() -> Vec<Digest> {
        (0..20u64)
            .map(|i| LogTreeHasher.leaf(&i.to_le_bytes()))
            .collect()
    }

    fn proof(old: u64, new: u64) -> ConsistencyFile {
        let leaves = leaves();
        let path = consistency_path(&LogTreeHasher, old, new, &mut |level, index| {
            let start = (index << level) as usize;
            Ok::<_, ()>(root_of_leaves(
                &LogTreeHasher,
                &leaves[start..start + (1 << level)],
            ))
        })
        .unwrap();
        ConsistencyFile::new(old, path.iter().map(|d| d.0).collect(), &checkpoint(new)).unwrap()
    }

    #[test]
    fn a_proof_between_two_signed_checkpoints_checks_and_reads_back() {
        let file = proof(7, 19);
        let text = file.to_text();
        assert!(text.starts_with("old 7\n"));
        let parsed = ConsistencyFile::parse(&text).unwrap();
        assert_eq!(parsed, file);
        let opened = parsed
            .check(&checkpoint(7), &[signer().verifier()])
            .unwrap();
        assert_eq!(opened.checkpoint.size, 19);
    }

    #[test]
    fn a_wrong_earlier_checkpoint_an_unsigned_one_or_a_changed_hash_is_refused() {
        let file = proof(7, 19);
        let verifiers = [signer().verifier()];
        assert!(matches!(
            file.check(&checkpoint(8), &verifiers),
            Err(ConsistencyFileError::OldSizeMismatch { proof: 7, given: 8 })
        ));
        let other = Signer::from_seed("example.com/log", [4; 32]).unwrap();
        assert!(matches!(
            file.check(&checkpoint(7), &[other.verifier()]),
            Err(ConsistencyFileError::Checkpoint { which: "later", .. })
        ));
        let mut forged = file.clone();
        forged.path[0][0] ^= 1;
        assert!(matches!(
            forged.check(&checkpoint(7), &verifiers),
            Err(ConsistencyFileError::Inconsistent(_))
        ));
        for bad in ["", "old\n", "old 07\n\n", "old 7\nAAAA\n\n", "old 7\n"] {
            assert!(ConsistencyFile::parse(bad).is_err(), "{bad:?}");
        }
    }
}
