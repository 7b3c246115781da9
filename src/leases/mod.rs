//! The leases projection: resource leases with fencing tokens, and lane/key leases that keep
//! a cursor across owners.
//!
//! Rules (from the reference hub and reconciler stores, event-sourced): a first acquisition
//! gets token 1; the holder's own re-acquisition keeps its token; a takeover of an expired
//! lease gets the next token; a live lease of another is refused `held`. Renew refuses
//! `missing`, `superseded` (wrong holder or token) and `expired`. Unlike the reference, a
//! release keeps the token spent: the next acquisition continues from it, so no token is
//! ever issued twice for a resource. Everything is decided against the command's `now_ms`.
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
use crate::projection::Projection;
use crate::projection::table::{TableSource, WriteTables};
use crate::record::Record;

pub use decide::*;
pub use decide::{LaneCommand, LaneOutcome, LeaseCommand, LeaseOutcome, LeaseRefusal};
pub use events::LeaseEvent;
pub use guard::{GuardRefusal, LeaseGuard};
pub use query::*;
pub use query::{FencingToken, LaneLease, Lease};

/// The leases projection.
pub struct Leases;

impl Projection for Leases {
    fn name(&self) -> &'static str {
        "leases"
    }

    fn version(&self) -> u32 {
        // 2: the last token of a held lease lives in its held row; `leases.released_tokens`
        // replaced `leases.tokens`.
        2
    }

    fn tables(&self) -> &'static [&'static str] {
        &["leases.held", "leases.lanes", "leases.released_tokens"]
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("lease.")
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

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
