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
//! The front door is this page: [`Store`] (open a log, append, run commands, read), its
//! [`StoreOptions`], [`Sharing`], [`Durability`] and [`Backend`]; [`Snapshot`] (one consistent
//! read) with [`Record`], [`Position`] and [`Direction`]; [`NewEvent`], [`ExpectedVersion`]
//! and [`AppendOutcome`] for appends; [`Command`]; [`Writer`] (the async group-committing
//! handle); [`Audit`] (verify); [`Error`], [`ErrorKind`] and [`Result`]. Then one module per
//! domain ([`registry`], [`leases`], [`outbox`], [`runs`], [`consumers`], [`ingest`]) with its
//! commands, outcomes, events and queries, and one per subject, by what it is:
//!
//! - [`log`]: what a reader meets beyond the root (heads, iterators, digests, limits);
//! - [`command`] and [`projection`]: commands, events and projections of a program's own;
//! - [`writer`] and [`subscribe`]: the writer's options and a write session; catch-up then live;
//! - [`erasure`]: personal payloads, their keys and their erasure;
//! - [`archive`]: cutting a log into archive files and reading them back;
//! - [`maintenance`]: an operator's work (backups, compaction, import, rebuild, sizes, signed
//!   checkpoints, tiles) and a tool's checks beside the library;
//! - [`audit`] and [`error`]: what [`Audit`] gives; every error the crate returns;
//! - [`merkle`], [`tlog`] and [`export`]: proofs without a log, the transparency-log formats,
//!   the portable export file; [`journal`]: the commit journal's options and recovery;
//! - [`display`], [`output_path`], [`demo`]: what the command line shares with the library
//!   (how messages spell values, where an output may be written, the demo workload).
//!
//! Everything else is private; `ARCHITECTURE.md` maps it.

// `pub(crate)` is the default: an item is `pub` only where a user (or, behind `testing`, the
// crate's own tests and fuzz harnesses) can name it. The full build holds every one to that.
#![cfg_attr(feature = "testing", deny(unreachable_pub))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod archive;
pub mod audit;
mod builtins;
pub mod command;
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
pub mod log;
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

pub use command::Command;
pub use error::{Error, ErrorKind, Result};
pub use log::append::{AppendOutcome, ExpectedVersion};
pub use log::read::{Direction, Snapshot};
pub use record::{NewEvent, Position, Record};
pub use store::{Audit, Backend, Durability, Sharing, Store, StoreOptions};
pub use writer::Writer;
