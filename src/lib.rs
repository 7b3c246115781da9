//! # annals
//!
//! An embedded, event-sourced, append-only log store. Every state change is an append of a
//! record to a log kept in a [redb](https://docs.rs/redb) file; each record is content-hashed
//! with blake3 and chained to the one before, so the whole history can be verified.
//!
//! ```
//! use annals::leases::{self, LeaseCommand, LeaseOutcome};
//! use annals::{Direction, ExpectedVersion, NewEvent, Position, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("annals.redb"))?;
//! // A raw event of the program's own.
//! store.append(
//!     "deploy/web",
//!     ExpectedVersion::NoStream,
//!     &[NewEvent::new("deploy.started", 1_700_000_000_000, b"v42".to_vec())],
//! )?;
//! // A command: decided against the leases projection, recorded as an event.
//! let acquire = LeaseCommand::Acquire {
//!     resource: "deploy-lock".into(),
//!     holder: "agent-7".into(),
//!     ttl_ms: 30_000,
//!     now_ms: 1_700_000_000_000,
//! };
//! let LeaseOutcome::Granted { lease, .. } = store.execute(&acquire)? else { panic!() };
//! assert_eq!(lease.token.0, 1);
//! assert_eq!(leases::lease(&store.snapshot()?.state(), "deploy-lock")?, Some(lease));
//! let records = store.snapshot()?.read_all(Position(0), Direction::Forward, 10)?;
//! assert_eq!(records[1].kind, "lease.acquired");
//! assert!(annals::Audit::of(&store).verify()?.is_sound());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The front door is this page: [`Store`] (open a log, append, run commands, read, verify,
//! rebuild, import), [`Writer`] (the async group-committing handle), [`Snapshot`] (one
//! consistent read), [`Subscription`] (catch-up then live), the errors, and one module per
//! domain ([`registry`], [`leases`], [`outbox`], [`runs`], [`consumers`]) with its commands,
//! outcomes, events and queries. [`projection`] is for projections of a program's own,
//! [`merkle`] for checking proofs without a log, [`export`] for the portable export file,
//! [`tlog`] for the transparency-log formats (signed notes, checkpoints, tlog-proofs).
//! Everything else is private; `ARCHITECTURE.md` maps it.
//! [`ingest`] is a domain like those five: a hub's exactly-once ingest of its runtimes' events.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod archive;
pub mod audit;
pub(crate) mod command;
pub mod consumers;
pub mod demo;
pub mod display;
pub mod erasure;
pub mod error;
pub(crate) mod event;
pub mod export;
pub(crate) use annals_format::hash;
pub mod ingest;
pub mod journal;
pub mod leases;
pub(crate) mod log;
pub mod maintenance;
#[doc(inline)]
pub use annals_format::merkle;
pub mod outbox;
pub mod output_path;
pub mod projection;
pub(crate) use annals_format::record;
pub mod registry;
#[cfg(feature = "jetstream")]
pub mod replication;
pub mod runs;
pub(crate) mod sharing;
pub(crate) mod storage;
pub(crate) mod store;
pub mod subscribe;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
#[doc(inline)]
pub use annals_format::tlog;
pub(crate) mod validate;
#[cfg(feature = "witness")]
pub mod witness;

/// The README's Rust snippets, compiled and run as doc tests: each is a whole program.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeSnippets;
/// `docs/library.md`'s Rust snippets, compiled and run as doc tests, as the README's are.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
pub struct LibrarySnippets;
/// `docs/erasure.md`'s Rust snippet, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../docs/erasure.md")]
pub struct ErasureSnippets;
pub mod writer;

pub use command::{Command, Decision, Emit, PersonalField, Sealing};
pub use error::{Error, ErrorKind, Result};
pub use event::{DomainEvent, EventKind};
pub use hash::Digest;
pub use journal::{JournalOptions, JournalRecovery};
pub use log::Head;
pub use log::append::{AppendOutcome, Appended, ExpectedVersion, check_append};
pub use log::read::{Direction, Records, Snapshot, StreamRecords, StreamSummary};
pub use log::signed::SignedHead;
pub use log::tables::FORMAT_VERSION;
pub use projection::Projection;
pub use record::limits::{Field, Limits};
pub use record::{NewEvent, Position, Record, RecordView, StreamVersion};
pub use store::{
    Audit, Backend, Durability, Holder, READ_ONLY_PATIENCE, Sharing, Store, StoreOptions,
    WriteSession,
};
pub use subscribe::Subscription;
pub use writer::{Writer, WriterOptions, WriterStats};
