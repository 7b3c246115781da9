//! [`TableFault`]: what is wrong with the bytes of a projection table, and
//! [`PayloadProblem`]: why an event of a known kind does not decode.

use std::fmt;

use crate::record::Position;

/// What is wrong with a projection table (the `fault` of [`super::Error::CorruptProjection`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableFault {
    /// A walk of the whole table met `walked` rows where the table counts `held`: a damaged
    /// page of redb's tree can lead a range past rows, which no row's checksum can tell.
    WalkedRows {
        /// The rows the walk met.
        walked: u64,
        /// The rows the table counts.
        held: u64,
    },
    /// The table is missing, though its projection has a checkpoint (its tables are created
    /// with it).
    Missing {
        /// The projection the table belongs to.
        projection: String,
    },
    /// A key does not decode.
    UndecodableKey,
    /// A value does not decode.
    UndecodableValue {
        /// Why, in the codec's words.
        cause: String,
    },
    /// A value does not encode (as a row to store, or as JSON to show).
    UnencodableValue {
        /// Why, in the codec's words.
        cause: String,
    },
    /// An index entry names a row the table does not hold.
    RowMissing {
        /// The row's key, as the index names it.
        key: String,
    },
    /// A run whose spans give no rollup where one must exist.
    NoRollup {
        /// The run.
        run: String,
        /// When the rollup was asked for.
        when: RollupMoment,
    },
    /// An event row points at a record that is not that event.
    NotTheEvent {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// The event's index in its span.
        event_index: u64,
        /// The position the row points at.
        position: Position,
        /// The kind of the record there.
        found_kind: String,
    },
}

/// When a run's rollup was asked for ([`TableFault::NoRollup`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RollupMoment {
    /// Once every span of the run ended.
    EverySpanEnded,
    /// While it is open, with detail held.
    WhileOpen,
}

impl fmt::Display for TableFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableFault::WalkedRows { walked, held } => write!(
                f,
                "a walk of the whole table met {walked} rows, the table holds {held}"
            ),
            TableFault::Missing { projection } => write!(
                f,
                "the table is missing, though projection {projection} has a checkpoint (its \
                 tables are created with it)"
            ),
            TableFault::UndecodableKey => f.write_str("a key does not decode"),
            TableFault::UndecodableValue { cause } => write!(f, "a value does not decode: {cause}"),
            TableFault::UnencodableValue { cause } => write!(f, "value does not encode: {cause}"),
            TableFault::RowMissing { key } => {
                write!(f, "an index names row {key}, which is missing")
            }
            TableFault::NoRollup {
                run,
                when: RollupMoment::EverySpanEnded,
            } => write!(f, "run {run:?} has no rollup once every span ended"),
            TableFault::NoRollup {
                run,
                when: RollupMoment::WhileOpen,
            } => write!(f, "run {run:?} has detail but no span"),
            TableFault::NotTheEvent {
                run,
                span,
                event_index,
                position,
                found_kind,
            } => write!(
                f,
                "event {event_index} of span {span:?} of run {run:?} points at position \
                 {position}, whose record ({found_kind}) is not that event"
            ),
        }
    }
}

/// Why an event of a known kind does not decode (the `problem` of
/// [`super::Error::UndecodableEvent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadProblem {
    /// Its schema version is one the decoder does not know.
    UnknownSchema,
    /// Its bytes do not decode as that schema.
    Undecodable {
        /// Why, in the codec's words.
        cause: String,
    },
}

impl fmt::Display for PayloadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadProblem::UnknownSchema => f.write_str("unknown schema version"),
            PayloadProblem::Undecodable { cause } => f.write_str(cause),
        }
    }
}
