//! Beyond one machine: a log replicated, or shared by several hosts, through a NATS JetStream
//! stream (the `jetstream` feature).
//!
//! The distributed part is JetStream's, not ours: a stream of one subject per log, replicated
//! across a cluster by its RAFT groups. The stream holds the log's records as their canonical
//! stored bytes (`hash ‖ header ‖ payload`, `schema/FORMAT.md` 1.3, whatever the files' format
//! version), several consecutive records to a message ([`wire`]'s frame, which names its first
//! position): a shared host's message is one command's transaction, a publisher's a run of
//! committed records, and every reader appends a message in one local transaction. Message
//! `s + 1` starts where message `s` ends, so sequences and positions are tied by the frames,
//! not by arithmetic: a host knows the stream's last sequence from the last message it applied
//! or published, and finds the message holding a position by a search. Every publish carries
//! its last record's hash as `Nats-Msg-Id` (a repeated publish is deduplicated) and the
//! sequence it must follow as the expected last sequence (`Nats-Expected-Last-Sequence`), so
//! the server refuses a message that would leave a gap or fork the stream: at most one record
//! is ever stored at a position.
//!
//! Who writes, and what each host trusts:
//!
//! - [`Publisher`]: the one writer host of a replicated log publishes every committed record of
//!   its local log, in order ([`ReplicatingWriter`] adds [`crate::Durability::Replicated`]).
//! - [`Follower`]: a replica consumes the stream from its own head and checks every record
//!   ([`wire`]) before it appends it sealed; [`Follower::promote`] makes it the writer.
//! - [`SharedLog`]: several writer hosts append by publishing the next message themselves.
//! - [`publish_seed`] and [`fetch_seed`]: a copy of the writer's log (a cut log's kept state
//!   with it) in the log's object store bucket, for a new replica to start from where the
//!   stream no longer holds the log's first records.
//!
//! No host trusts a byte it has not checked: a message's records are decoded and hashed at
//! their positions, chained to each other and to the local head, and appended through
//! `WriteSession::append_sealed`, which checks them again against the log. This module never writes a record a command of its own host did not
//! decide or a check did not pass.

mod follower;
mod publisher;
mod seed;
mod shared;
mod stream;
pub mod wire;

pub use crate::error::{
    Damage, ForkProblem, NatsOperation, NatsProblem, RefusedMessage, ReplicationError, SeedProblem,
};
pub use follower::{Follower, FollowerOptions, Waiting};
pub use publisher::{Publisher, PublisherStatus, ReplicatingWriter};
pub use seed::{SEED_OBJECT, Seed, fetch_seed, publish_seed};
pub use shared::{SharedLog, SharedOptions, SharedOutcome};
pub use stream::{
    CONNECT_WAIT_DEFAULT, Connection, JETSTREAM_WAIT, REPLICAS_DEFAULT, ReplicatedLog,
    StreamPlacement, connect, connect_within,
};
