//! Why the writer could not run or answer a job, or why a whole batch failed.

use std::sync::Arc;

use super::Error;

/// Why the writer could not run or answer a job, or why a whole batch failed.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriterError {
    /// The writer no longer takes jobs: it was closed, or its thread has ended. The job was
    /// not accepted and nothing of it was written.
    #[error("the writer is closed")]
    Closed,
    /// The job's batch failed as a whole: its transaction could not begin or commit. Nothing
    /// of the batch is visible; every caller of the batch gets the same error.
    #[error("the batch failed: {0}")]
    Batch(Arc<Error>),
    /// The job panicked while it ran (a command's `decide`, say). Its transaction was
    /// abandoned and the rest of its batch re-run without it: nothing of it was written.
    #[error("the job panicked; nothing of it was written")]
    Panicked,
    /// A background task ended without an answer (the writer's thread, or a subscription's
    /// read, panicked, or the runtime shut down). Whether the job committed is unknown.
    #[error("a background task ended without an answer")]
    Lost,
    /// A [`WriterOptions`](crate::writer::WriterOptions) field out of range.
    #[error("writer option {field} is {value}; it must be between 1 and {max}")]
    InvalidOption {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
        /// The largest value accepted.
        max: u32,
    },
}
