//! A projection registered wrongly, asked for by a name none has, or read while behind.

use super::grouped;
use crate::record::Position;

/// A projection registered wrongly, or asked for by a name none has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// A name that is not lower-case ASCII letters, digits or `_`, or is `annals` (the log's
    /// own table prefix).
    #[error(
        "projection name {name:?} must be lower-case ASCII letters, digits or '_', and not 'annals'"
    )]
    InvalidName {
        /// The name.
        name: String,
    },
    /// Two projections of one name.
    #[error("projection {name:?} is registered twice")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A table whose name does not start with `<projection>.`: it could be another's.
    #[error(
        "projection {projection:?} declares table {table:?} outside its prefix \"{projection}.\""
    )]
    TableOutsidePrefix {
        /// The projection.
        projection: String,
        /// The table.
        table: String,
    },
    /// No registered projection has this name.
    #[error("no projection is called {name:?}")]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A projection this multi-writer process runs was built by another version of it (in
    /// another process), or by none: writing beside that process would mix the two versions'
    /// rows. Reopening the store rebuilds it in this version.
    #[error(
        "projection {name:?} was built by another version than this process's {version}; reopen the store to rebuild it"
    )]
    VersionElsewhere {
        /// The projection.
        name: String,
        /// This process's version of it.
        version: u32,
    },
    /// A read of a projection whose tables are behind the log: a rebuild or catch-up that
    /// has not finished (it was stopped, or is running), or, beside other writers, records a
    /// store without this projection appended. Its rows are those of a prefix of the log, so
    /// they are not handed out as the state. Not damage: a writable open (or any write by a
    /// store that runs the projection) or a rebuild catches it up.
    #[error(
        "projection {projection} is behind the log: at {} of {}; open the log writable or run `annals rebuild` to catch up",
        grouped(*at),
        grouped(*head)
    )]
    Behind {
        /// The projection.
        projection: String,
        /// The next position it has to apply: every record before it is applied.
        at: u64,
        /// The log's head (its number of records).
        head: u64,
    },
    /// An `apply` read or wrote a table that is not one of its projection's
    /// [`Projection::tables`](crate::projection::Projection::tables): another projection's rows, or rows that neither `verify` nor a
    /// rebuild would see. The transaction is abandoned.
    #[error("projection {projection:?} touched table {table:?}, which is not one of its own")]
    ForeignTable {
        /// The projection.
        projection: String,
        /// The table.
        table: String,
    },
    /// A read of the log where none is at hand: through the tables a projection's `apply` is
    /// handed (apply reads only its record and its own tables), or the bare tables of a
    /// catch-up or replay. The transaction is abandoned.
    #[error(
        "the log is not readable here: a projection's apply reads only its record and its own tables"
    )]
    LogNotReadable,
    /// A record whose domain event breaks one of its projection's invariants: an event that
    /// `decide` never emits (a lease token that does not increase, an outbox row moved from a
    /// state that does not allow it, a span ended twice). Live commands cannot write one;
    /// records that bypass `decide` (an import, a replay of a log written elsewhere) can, and
    /// the transaction that applies one is abandoned. `schema/EVENTS.md` lists every rule.
    #[error("position {position}: {kind} breaks the {projection} rule {rule}: {detail}")]
    Invariant {
        /// The projection whose rule is broken.
        projection: String,
        /// The record that breaks it.
        position: Position,
        /// The record's kind.
        kind: String,
        /// The rule, a short name that stays stable (`token_increases`, `span_ends_once`).
        rule: &'static str,
        /// What the record says against what the tables hold.
        detail: String,
    },
}
