//! Audit: checking a log against itself, and reading state as of any position. Reads only;
//! never writes to the log. What [`crate::Audit`] gives: a [`VerifyReport`] and its
//! [`Finding`], a [`History`] of an [`Entity`] with its [`BuiltInEvent`]s decoded, a
//! [`Replay`] of the state at a position, an [`Extension`] of an earlier head, and the
//! [`ProofFile`]s a log proves its records with.

pub(crate) mod extends;
pub(crate) mod history;
pub(crate) mod proof_file;
pub(crate) mod replay;
pub(crate) mod verify;

pub use crate::builtins::BuiltInEvent;
pub use extends::Extension;
pub use history::{Entity, History, records as history};
pub use proof_file::{ProofFile, ProofTree, lower_hex_digest};
pub use replay::Replay;
pub use verify::{Finding, Problem, ProjectionBehind, VerifyReport};
