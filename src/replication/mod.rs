//! Beyond one machine: a log replicated, or shared by several hosts, through a NATS JetStream
//! stream (the `jetstream` feature).
//!
//! The distributed part is JetStream's, not ours: a stream of one subject per log, replicated
//! across a cluster by its RAFT groups. The stream holds the log's records as their stored bytes
//! (`hash ‖ header ‖ payload`, `schema/FORMAT.md`), one message per record, so the record at
//! position `p` is the message of stream sequence `p + 1`. Every publish carries the record hash
//! as `Nats-Msg-Id` (a repeated publish is deduplicated) and `p` as the expected last sequence
//! (`Nats-Expected-Last-Sequence`), so the server refuses a record that would leave a gap or fork
//! the stream: at most one record is ever stored at a position.
//!
//! Who writes, and what each host trusts:
//!
//! - [`Publisher`]: the one writer host of a replicated log publishes every committed record of
//!   its local log, in order ([`ReplicatingWriter`] adds [`crate::Durability::Replicated`]).
//! - [`Follower`]: a replica consumes the stream from its own head and checks every record
//!   ([`wire`]) before it appends it sealed; [`Follower::promote`] makes it the writer.
//! - [`SharedLog`]: several writer hosts append by publishing the next record themselves.
//!
//! No host trusts a byte it has not checked: a message is decoded and hashed at its position,
//! chained to the local head, and appended through `WriteSession::append_sealed`, which checks it
//! again against the log. This module never writes a record a command of its own host did not
//! decide or a check did not pass.

mod error;
mod follower;
mod publisher;
mod shared;
mod stream;
pub mod wire;

pub use error::ReplicationError;
pub use follower::{Follower, FollowerOptions};
pub use publisher::{Publisher, PublisherStatus, ReplicatingWriter};
pub use shared::{SharedLog, SharedOptions, SharedOutcome};
pub use stream::{ReplicatedLog, connect};
