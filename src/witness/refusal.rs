//! Why a witness did not cosign a checkpoint, each reason with the HTTP status code
//! c2sp.org/tlog-witness gives it.

/// Why `add-checkpoint` was not cosigned. [`Refusal::status`] is the response's status code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The body is not an `add-checkpoint` request (or the old size exceeds the checkpoint's,
    /// or it is larger than a request can be): 400.
    #[error("bad request: {0}")]
    Malformed(String),
    /// The checkpoint's origin is not a log this witness is configured for: 404.
    #[error("unknown log origin {0:?}")]
    UnknownOrigin(String),
    /// No valid signature by a trusted key of the origin, or one by a trusted key that fails
    /// to verify: 403.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The old size is not the size of the latest checkpoint cosigned for the origin: 409,
    /// with that size as the body (`text/x.tlog.size`).
    #[error("the latest checkpoint cosigned for this log is of size {latest}")]
    Conflict {
        /// The size of the latest cosigned checkpoint (0 if none).
        latest: u64,
    },
    /// The consistency proof does not verify, a size-0 checkpoint has a root other than the
    /// empty tree's, or the root differs from the cosigned one at the same size: 422.
    #[error("unprocessable: {0}")]
    Inconsistent(String),
    /// The witness's own state log failed: 500, nothing cosigned.
    #[error("the witness's state failed: {0}")]
    State(#[from] crate::Error),
}

impl Refusal {
    /// The HTTP status code of the refusal.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Malformed(_) => 400,
            Refusal::UnknownOrigin(_) => 404,
            Refusal::Forbidden(_) => 403,
            Refusal::Conflict { .. } => 409,
            Refusal::Inconsistent(_) => 422,
            Refusal::State(_) => 500,
        }
    }
}
