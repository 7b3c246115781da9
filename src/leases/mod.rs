//! The leases projection: resource leases with fencing tokens, and lane/key leases that keep
//! a cursor across owners. It owns the tables `leases.held`, `leases.released_tokens` and
//! `leases.lanes`; it never reads a clock: everything is decided against the command's
//! `now_ms`.
//!
//! # Rules, from the reference (hub store `store.ts`; reconciler leases)
//!
//! - **Acquire** (`acquireLease`): a first acquisition gets token 1; the holder's own
//!   re-acquisition of a live lease keeps its token and grant time (`renewed`); a takeover of
//!   a lapsed lease gets the next token; a live lease of another is refused `held`. A lease is
//!   live while `now_ms < expires_at_ms`.
//! - **Labels**: [`LeaseCommand::AcquireLabelled`] carries the reference's `project`, `name`
//!   and holder name (`holderAgentName`); a grant keeps them on the lease, and the holder's
//!   own re-acquisition rewrites them, as `acquireLease` rewrites the whole record.
//! - **Renew** (`renewLease`) refuses `missing` (no lease), `superseded` (another holder or
//!   token) and `expired` (lapsed: only a fresh acquisition may take it again); it keeps the
//!   token and the labels.
//! - **Release** (`releaseLease`) refuses `missing` and `superseded`, and drops the lease.
//! - **List** ([`list_leases`], `listLeases`): every lease of one project, live or lapsed (a
//!   lapsed lease stays until it is released or taken over).
//! - **Lane leases** (reconciler leases): claim an unowned or expired lane/key, keeping its
//!   cursor across owners; only the live owner renews, advances or releases.
//!
//! # Differences from the reference
//!
//! - **A release keeps the token spent**: the next acquisition continues from it instead of
//!   restarting at 1, so no token is ever issued twice for a resource (a token in the log
//!   names one grant for good).
//! - **Labels are optional**: [`LeaseCommand::Acquire`] takes none (the lease's project, name
//!   and holder name are empty) and its re-acquisition keeps the lease's labels, for callers
//!   (a reconciler, a daemon) that have no project. Leases of logs written before labels
//!   existed upcast with empty labels.
//! - **`list_leases` orders resources by their UTF-8 bytes**, not by `localeCompare`: a
//!   locale's collation is not a pure function of the bytes on every host, and replay and
//!   queries must give the same order everywhere.
//! - **No retention purge**: the hub drops lease rows whose deadline is older than its run
//!   retention; here a lease row lives until release or takeover, and the log keeps its
//!   history anyway.
//! - **Time is the command's**: deadlines are `u64` ms from the command's `now_ms`, not ISO
//!   strings from `Date.now()`, so an unreadable deadline cannot occur.
//!
//! The store enforces fencing: an append or command may carry a [`LeaseGuard`], refused
//! inside the same transaction unless its token is the resource's live token.

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod guard;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::Record;

pub use decide::*;
pub use decide::{LaneCommand, LaneOutcome, LeaseCommand, LeaseOutcome, LeaseRefusal};
pub use events::LeaseEvent;
pub use guard::{GuardRefusal, LeaseGuard};
pub use query::*;
pub use query::{FencingToken, LaneLease, Lease, LeaseLabels};

/// The leases projection.
pub struct Leases;

impl Projection for Leases {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![
            ShownTable::new(&query::HELD, &["resource"], "lease"),
            ShownTable::new(&query::RELEASED_TOKENS, &["resource"], "last_token"),
            ShownTable::new(&query::LANES, &["lane", "key"], "lease"),
        ]
    }

    fn name(&self) -> &'static str {
        "leases"
    }

    fn version(&self) -> u32 {
        // 2: the last token of a held lease lives in its held row; `leases.released_tokens`
        // replaced `leases.tokens`.
        // 3: a held lease keeps its project, name and holder name.
        3
    }

    fn tables(&self) -> &'static [&'static str] {
        &["leases.held", "leases.lanes", "leases.released_tokens"]
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("lease.")
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        LeaseEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match LeaseEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn catalogue(&self) -> &'static [EventKind] {
        LeaseEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[
            EntityKind {
                kind: "lease",
                shape: "lease:<resource>",
                streams: |parts| vec![decide::lease_stream(parts[0])],
            },
            EntityKind {
                kind: "lane",
                shape: "lane:<lane>/<key>",
                streams: |parts| vec![decide::lane_stream(parts[0], parts[1])],
            },
        ]
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
