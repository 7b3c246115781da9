//! The registry projection: the instances a host runs, keyed by handle, with the lookups
//! that route to them (by identity, `handle@domain`, an owner's mailbox), the host's
//! settings and the fuel ledger of calls. It never reads a clock: every command carries
//! its `now_ms`, recorded as the event's `at_ms`.
//!
//! # Rules, from the reference host registry (`instances.js`)
//!
//! - **Handles.** A handle is a hostname label (1 to 63 of `a-z`, `0-9`, `-`; no `-` at
//!   either end) or a path-only token id (`<64 lower-case hex>_<decimal index>`). Any other
//!   handle is `Error::InvalidCommand { field: "handle" }` with
//!   [`CommandProblem::NotAHandle`](crate::error::CommandProblem::NotAHandle), in every instance
//!   command (`field: "instance"` in [`RecordFuel`]).
//! - **Upsert.** [`InstanceCommand::Upsert`] registers a handle, or changes only the given
//!   fields of the instance that has it. A new instance needs a store: without one the
//!   command is `InvalidCommand { field: "store" }`, problem `Missing` (the reference
//!   throws). A new instance defaults to domain `localhost`, status enabled, kind agent,
//!   knowing nobody, no topics; its `created_at_ms` is the command's `now_ms` and no update
//!   changes it.
//! - **Status, knows, topics, remove** change or drop an existing instance; on a handle no
//!   instance has, they append nothing and answer [`InstanceOutcome::Missing`] (the
//!   reference's `false`). A roster containing `*` knows everyone; otherwise repeats are
//!   dropped, first occurrence first; empty knows nobody. Empty topics are none. Removal
//!   keeps the instance's fuel ledger.
//! - **Settings** are key → value, set and overwritten; there is no delete (nor is there in
//!   the reference). [`query::host_skein`] is the instance the `host_skein` setting names.
//! - **Lookups.** [`query::by_identity`]: the *enabled* instance with that identity.
//!   [`query::identity_of`]: the identity `handle@domain` names — an agent's own identity,
//!   a mailbox's *owner* — whatever its status, and only if the instance's domain is that
//!   domain. [`query::mailbox_of`]: the *enabled* mailbox instance of an owner.
//! - **Fuel.** [`ChargeFuel`] (one row of the reference's `charge(rows)`) adds pre-summed
//!   calls (any number, 0 included) and their fuel to the (instance, caller, op) row and to
//!   the instance's total, and sets the row's `updated_at_ms`; [`RecordFuel`] is the same
//!   charge for one call. The caller may be empty (nobody known); the op may not. The
//!   instance need not be registered. The ledger of an instance lists the costliest rows
//!   first.
//! - **Streams.** `registry/<handle>` for instance events, `registry-setting/<key>` for
//!   settings, `fuel/<instance>` for charges.
//!
//! # Differences from the reference
//!
//! - Where several instances match a lookup, the first by handle answers; the reference
//!   leaves it to SQLite's plan, which no replay could reproduce.
//! - A command that would change nothing (an upsert giving every field its present value, a
//!   status, roster, topics or setting already so) appends nothing and answers `Unchanged`,
//!   so a provisioning script that runs again leaves no trace in the log.
//! - The reference sets a nullable column to `NULL` when given `null`; commands here have
//!   `Option` fields, so an empty `identity`, `tree`, `source` or `owner` is the clearing of
//!   it. An empty `domain` or `store` is refused (`InvalidCommand`) rather than stored: they
//!   are never empty on a new instance, and an update should not make one no command could
//!   create.
//! - The reference checks the grammar only when a handle is first inserted, to keep rows of
//!   older files; every row here was made by a command that checked it, so every command
//!   checks it.
//! - A token id's index has at most 20 digits (enough for any `u64`; the reference's is
//!   unbounded), so every handle fits a stream name; setting keys are at most
//!   [`decide::SETTING_KEY_BYTES_MAX`] bytes for the same reason.
//! - The reference's `charge(rows)` takes several rows in one call; here a [`ChargeFuel`]
//!   is one row (one event on the instance's `fuel/<instance>` stream), and several charges
//!   run in one write transaction are as atomic as the reference's batch.
//! - A charge that would take a count past 64 bits is `InvalidCommand` (problem `Overflow`,
//!   field `calls` or `fuel`) rather than stored: SQLite would turn the sum into a float.
//! - The broadcast queue, stream cursors, status marks, cron schedules, billing, image
//!   blocks and topic peers of the reference are not here (delivery queues belong to the
//!   outbox projection).

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod handle;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::Record;

pub use decide::*;
pub use decide::{
    ChargeFuel, FuelOutcome, InstanceCommand, InstanceFields, InstanceOutcome, RecordFuel,
    SetSetting, SettingOutcome,
};
pub use events::RegistryEvent;
pub use handle::Handle;
pub use query::*;
pub use query::{FuelEntry, FuelTotal, Instance, InstanceKind, Knows, Status};

/// The registry projection.
pub struct Registry;

impl Projection for Registry {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![
            ShownTable::new(&query::INSTANCES, &["handle"], "instance"),
            ShownTable::new(&query::SETTINGS, &["key"], "value"),
            ShownTable::new(&query::FUEL, &["instance", "caller", "op"], "fuel"),
            ShownTable::new(&query::FUEL_TOTALS, &["instance"], "total"),
        ]
    }

    fn name(&self) -> &'static str {
        "registry"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "registry.by_created",
            "registry.by_identity",
            "registry.by_owner",
            "registry.fuel",
            "registry.fuel_totals",
            "registry.instances",
            "registry.settings",
        ]
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("registry.")
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        RegistryEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match RegistryEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn catalogue(&self) -> &'static [EventKind] {
        RegistryEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[
            // An instance's history is its own events and its fuel ledger's.
            EntityKind {
                kind: "registry",
                shape: "registry:<handle>",
                streams: |parts| {
                    vec![
                        decide::instance_stream(parts[0]),
                        decide::fuel_stream(parts[0]),
                    ]
                },
            },
            EntityKind {
                kind: "setting",
                shape: "setting:<key>",
                streams: |parts| vec![decide::setting_stream(parts[0])],
            },
        ]
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
