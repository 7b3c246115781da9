//! What a witness keeps, as records of an annals log of its own: one stream of cosigned
//! checkpoints per origin (`cosigned:<origin>`, kind [`COSIGNED_KIND`]), and one stream of
//! proofs that the log forked (`evidence:<origin>`, kind [`FORK_KIND`]), each payload a JSON
//! object. The latest cosigned checkpoint of an origin is its stream's last record, so what the
//! witness cosigned is itself a verifiable history. Evidence holds only what the log's key
//! signed (and a path bound to a signed root): never a request's own lines.

use serde::{Deserialize, Serialize};

/// The kind of a cosigned-checkpoint record.
pub const COSIGNED_KIND: &str = "witness.cosigned";

/// The kind of an evidence record: two checkpoints signed by the log that do not extend one
/// another ([`Evidence`]).
pub const FORK_KIND: &str = "witness.fork";

/// The kind the witness once gave every refused request that carried a valid log signature,
/// its unauthenticated lines included. Such records prove nothing and are not read as
/// evidence.
pub const LEGACY_REFUSAL_KIND: &str = "witness.evidence";

/// The stream of the checkpoints cosigned for `origin`.
pub fn cosigned_stream(origin: &str) -> String {
    format!("cosigned:{origin}")
}

/// The stream of the evidence kept for `origin`.
pub fn evidence_stream(origin: &str) -> String {
    format!("evidence:{origin}")
}

/// A checkpoint the witness cosigned: the payload of a [`COSIGNED_KIND`] record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cosigned {
    /// The log's origin.
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The tree's root, standard base64.
    pub root: String,
    /// The cosignature's timestamp, POSIX seconds.
    pub timestamp: u64,
    /// The checkpoint note: the log's verified signatures, then the witness's cosignature.
    pub checkpoint: String,
}

/// Proof that a log forked: the payload of a [`FORK_KIND`] record. Anyone holding the log's
/// key can check it again (`tlog::proves_fork` over the two opened notes and the path).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The log's origin.
    pub origin: String,
    /// The checkpoint the witness had cosigned: its note with the log's signature lines only.
    pub cosigned: String,
    /// A checkpoint the log signed that does not extend it: its note with the log's signature
    /// lines only.
    pub conflicting: String,
    /// Empty when the two have the same size (and so two roots); otherwise the consistency
    /// path, base64 a hash, from the cosigned size that hashes to the conflicting root and
    /// shows another root than the cosigned one at the cosigned size.
    pub proof: Vec<String>,
}

/// A payload as stored: its JSON.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("a witness record is plain JSON")
}
