//! Consumer commands and their pure decisions: state + command → events or a refusal.
//!
//! A checkpoint only moves forward. Recording the same position and hash again is a no-op
//! (a retry); an earlier position is refused `behind` (a stale instance of the consumer);
//! the same position with another hash is refused `diverged` (one log cannot hold two
//! records at one position). `decide` sees only the projection tables, so it cannot check the
//! hash against the log: [`super::query::resume`] does, when the consumer comes back.

use super::events::{Checkpointed, ConsumerEvent};
use super::query::{self, ConsumerCheckpoint};
use crate::command::{Command, Decision};
use crate::error::Result;
use crate::event::DomainEvent;
use crate::hash::Digest;
use crate::projection::table::TableSource;
use crate::record::{Position, Record};
use crate::validate;

/// Why a checkpoint was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConsumerRefusal {
    /// The stored checkpoint is further on.
    Behind,
    /// The stored checkpoint has the same position and another hash.
    Diverged,
}

impl std::fmt::Display for ConsumerRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConsumerRefusal::Behind => "behind",
            ConsumerRefusal::Diverged => "diverged",
        })
    }
}

/// A consumer command.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConsumerCommand {
    /// Record that `consumer` handled every record up to and including `position`, whose
    /// hash is `hash`.
    Checkpoint {
        /// The consumer's name.
        consumer: String,
        /// The position of the last record handled.
        position: Position,
        /// That record's hash.
        hash: Digest,
        /// The caller's clock.
        now_ms: u64,
    },
}

impl ConsumerCommand {
    /// A checkpoint of `consumer` just after `record`.
    pub fn checkpoint_after(consumer: impl Into<String>, record: &Record, now_ms: u64) -> Self {
        ConsumerCommand::Checkpoint {
            consumer: consumer.into(),
            position: record.position,
            hash: record.hash,
            now_ms,
        }
    }
}

/// What a consumer command got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum ConsumerOutcome {
    /// The checkpoint was recorded.
    Checkpointed {
        /// The checkpoint now.
        checkpoint: ConsumerCheckpoint,
    },
    /// The same checkpoint was already recorded; nothing appended.
    Unchanged {
        /// The checkpoint as it stands.
        checkpoint: ConsumerCheckpoint,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: ConsumerRefusal,
        /// The checkpoint that stands.
        checkpoint: ConsumerCheckpoint,
    },
}

/// The stream of a consumer's events.
pub fn consumer_stream(consumer: &str) -> String {
    format!("consumer/{consumer}")
}

impl Command for ConsumerCommand {
    type Outcome = ConsumerOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<ConsumerOutcome>> {
        match self {
            ConsumerCommand::Checkpoint {
                consumer,
                position,
                hash,
                now_ms,
            } => {
                validate::non_empty("consumer", consumer)?;
                let refused = |reason, checkpoint| {
                    Ok(Decision::nothing(ConsumerOutcome::Refused {
                        reason,
                        checkpoint,
                    }))
                };
                match query::checkpoint(state, consumer)? {
                    Some(stored) if stored.position > *position => {
                        refused(ConsumerRefusal::Behind, stored)
                    }
                    Some(stored) if stored.position == *position && stored.hash != *hash => {
                        refused(ConsumerRefusal::Diverged, stored)
                    }
                    Some(stored) if stored.position == *position => {
                        Ok(Decision::nothing(ConsumerOutcome::Unchanged {
                            checkpoint: stored,
                        }))
                    }
                    _ => {
                        let event = ConsumerEvent::Checkpointed(Checkpointed {
                            consumer: consumer.clone(),
                            position: position.0,
                            hash: hash.0,
                        });
                        let checkpoint = ConsumerCheckpoint {
                            consumer: consumer.clone(),
                            position: *position,
                            hash: *hash,
                            at_ms: *now_ms,
                        };
                        Ok(Decision::emit(
                            consumer_stream(consumer),
                            vec![event.to_new_event(*now_ms)],
                            ConsumerOutcome::Checkpointed { checkpoint },
                        ))
                    }
                }
            }
        }
    }
}
