//! What a witness keeps, as records of an annals log of its own: one stream of cosigned
//! checkpoints per origin (`cosigned:<origin>`, kind [`COSIGNED_KIND`]), and one stream of
//! refused requests that carried a valid log signature (`evidence:<origin>`, kind
//! [`EVIDENCE_KIND`]), each payload a JSON object. The latest cosigned checkpoint of an origin
//! is its stream's last record, so what the witness cosigned is itself a verifiable history.

use serde::{Deserialize, Serialize};

/// The kind of a cosigned-checkpoint record.
pub const COSIGNED_KIND: &str = "witness.cosigned";

/// The kind of an evidence record: a refused request with a valid log signature.
pub const EVIDENCE_KIND: &str = "witness.evidence";

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

/// A refused request that carried a valid signature of the log: the payload of an
/// [`EVIDENCE_KIND`] record, kept as a possible proof of the log's misbehaviour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The log's origin.
    pub origin: String,
    /// The HTTP status the request was answered with.
    pub status: u16,
    /// Why it was refused.
    pub reason: String,
    /// The request's body, verbatim.
    pub request: String,
    /// The size of the latest checkpoint the witness had cosigned for the origin then.
    pub latest_size: u64,
    /// Its root, standard base64.
    pub latest_root: String,
}

/// A payload as stored: its JSON.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("a witness record is plain JSON")
}
