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
//! assert_eq!(leases::query::lease(&store.state()?, "deploy-lock")?, Some(lease));
//! let records = store.read_all(Position(0), Direction::Forward, 10)?;
//! assert_eq!(records[1].kind, "lease.acquired");
//! assert!(store.verify()?.is_sound());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The layers, bottom up: [`hash`] and [`record`] (bytes, no I/O), [`log`] (redb tables,
//! append and read), [`store`] (the file and its transactions), [`audit`] (verification).
//! `ARCHITECTURE.md` maps them.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod audit;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub mod command;
pub mod consumers;
#[cfg(any(feature = "cli", feature = "testing"))]
#[doc(hidden)]
pub mod demo;
pub mod error;
pub mod event;
pub mod export;
pub mod hash;
pub mod leases;
pub mod log;
pub mod merkle;
pub mod outbox;
pub mod projection;
pub mod record;
pub mod registry;
pub mod runs;
pub mod store;
pub mod subscribe;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
pub mod writer;

pub use audit::extends::Extension;
pub use audit::verify::{Finding, Problem, VerifyReport};
pub use command::{Command, Decision, Emit};
pub use error::{AuditError, Error, OpenError, Result};
pub use hash::Digest;
pub use log::Head;
pub use log::append::{AppendError, AppendOutcome, Appended, ExpectedVersion};
pub use log::read::{Direction, Records, Snapshot, StreamRecords};
pub use projection::Projection;
pub use record::limits::{Field, LimitError, Limits};
pub use record::{NewEvent, Position, Record, RecordError, StreamVersion};
pub use store::{Durability, Stats, Store, StoreOptions, WriteSession};
pub use subscribe::Subscription;
pub use writer::{Writer, WriterError, WriterOptions};
