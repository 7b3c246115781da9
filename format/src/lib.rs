//! # annals-format
//!
//! annals' format without its store: what an auditor's program needs to check what an annals
//! log hands out, and nothing that opens it. The byte-level specification is
//! `schema/FORMAT.md`; this crate is its code.
//!
//! - [`hash`]: [`Digest`](hash::Digest) and the blake3 hashes of records, payloads, content and
//!   segments.
//! - [`record`]: the stored record (v1 header, v2 compact form), its parser
//!   ([`RecordView`](record::RecordView)), limits and caps, segments, personal payloads'
//!   envelope, and the problems a verification names.
//! - [`merkle`]: RFC 6962's tree, its [`Frontier`](merkle::Frontier), inclusion and
//!   consistency paths and their stateless verifiers.
//! - [`tlog`]: the C2SP formats to the byte: signed notes, checkpoints, tlog-proofs,
//!   cosignatures (Ed25519, ML-DSA-44), tiles' names, policies.
//! - [`proof_file`]: the JSON proof files of `annals prove --json`, checked against the tree
//!   heads an auditor trusts.
//! - [`export`]: reading a portable export file with every check a reader can make alone.
//!
//! It has no storage engine, no async runtime and no file or network I/O (annals' `.ci/run`
//! checks its dependency tree and its sources): what it reads it is handed as bytes or as a
//! [`std::io::Read`]. The `annals` crate depends on it and re-exports its types.
//!
//! An auditor checks a proof file a log's operator sent against the tree head it trusts
//! (kept from `annals root`, or from a signed checkpoint):
//!
//! ```
//! use std::convert::Infallible;
//!
//! use annals_format::hash::Digest;
//! use annals_format::merkle::{
//!     LogTreeHasher, TreeHead, Trust, TrustedHead, inclusion_path, leaf_hash, root_of_leaves,
//! };
//! use annals_format::proof_file::ProofFile;
//! use annals_format::record::Position;
//!
//! // The log's side, for the example: five records' hashes and the proof of the fourth.
//! let records: Vec<Digest> = (0u8..5).map(|byte| Digest([byte; 32])).collect();
//! let leaves: Vec<Digest> = records.iter().map(leaf_hash).collect();
//! let head = TreeHead { size: 5, root: root_of_leaves(&LogTreeHasher, &leaves) };
//! let mut subtree = |level: u8, index: u64| -> Result<Digest, Infallible> {
//!     let start = (index << level) as usize;
//!     Ok(root_of_leaves(&LogTreeHasher, &leaves[start..start + (1 << level)]))
//! };
//! let path = inclusion_path(&LogTreeHasher, 3, 5, &mut subtree)?;
//! let sent = serde_json::to_vec(&ProofFile::of_inclusion(Position(3), records[3], head, path))?;
//!
//! // The auditor's side: the file read back and checked against the head it trusts.
//! let proof = ProofFile::from_json(&sent)?;
//! assert_eq!(proof.check(&Trust::from(TrustedHead::Head(head)))?, head);
//! // Against a head it does not trust, the same proof proves nothing.
//! let other = TreeHead { size: 5, root: Digest([9; 32]) };
//! assert!(proof.check(&Trust::from(TrustedHead::Head(other))).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// `pub(crate)` is the default: an item is `pub` only where a user can name it.
#![deny(unreachable_pub)]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod export;
pub mod hash;
pub mod merkle;
pub mod proof_file;
pub mod record;
pub mod tlog;
