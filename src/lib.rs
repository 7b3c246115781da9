//! # annals
//!
//! An embedded, event-sourced, append-only log store. Every state change is an append of a
//! record to a log kept in a [redb](https://docs.rs/redb) file; each record is content-hashed
//! with blake3 and chained to the one before, so the whole history can be verified.
//!
//! ```
//! use annals::{Direction, ExpectedVersion, NewEvent, Position, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("annals.redb"))?;
//! store.append(
//!     "lease/deploy-lock",
//!     ExpectedVersion::NoStream,
//!     &[NewEvent::new("lease.acquired", 1_700_000_000_000, b"agent-7".to_vec())],
//! )?;
//! let records = store.read_all(Position(0), Direction::Forward, 10)?;
//! assert_eq!(records[0].kind, "lease.acquired");
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
pub mod error;
pub mod hash;
pub mod log;
pub mod record;
pub mod store;

pub use audit::verify::{Finding, Problem, VerifyReport};
pub use error::{Error, OpenError, Result};
pub use hash::Digest;
pub use log::Head;
pub use log::append::{AppendError, AppendOutcome, Appended, ExpectedVersion};
pub use log::read::{Direction, Records, Snapshot, StreamRecords};
pub use record::limits::{Field, LimitError, Limits};
pub use record::{NewEvent, Position, Record, RecordError, StreamVersion};
pub use store::{Stats, Store, StoreOptions};
