//! The work every contender does: lease commands, the bulk events and their stored bytes.

use std::path::Path;

use annals::command::DomainEvent;
use annals::leases::events::{Acquired, LeaseEvent};
use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::testing::internals::record::{Placement, encode_stored};
use annals::{
    NewEvent, Position, Sharing, Store, StoreOptions,
    log::{Digest, StreamVersion},
};

use crate::{BULK_RESOURCES, EPOCH_MS, PAYLOAD_BYTES, TTL_MS};

pub(crate) fn holder(task: usize) -> String {
    format!("task-{task}")
}

pub(crate) fn lease_command(task: usize, step: u64) -> LeaseCommand {
    // The same holder re-acquiring its live lease renews it: one event per command.
    LeaseCommand::Acquire {
        resource: format!("resource-{task}"),
        holder: holder(task),
        ttl_ms: TTL_MS,
        now_ms: EPOCH_MS + step,
    }
}

pub(crate) fn granted(outcome: &LeaseOutcome) {
    assert!(
        matches!(outcome, LeaseOutcome::Granted { .. }),
        "each task owns its resource: {outcome:?}"
    );
}

/// The `i`-th bulk event: a lease acquisition whose payload is [`PAYLOAD_BYTES`] long.
pub(crate) fn bulk_event(i: usize) -> NewEvent {
    // Each resource is granted again every BULK_RESOURCES events: the clock steps so that its
    // lease has expired by then, as the leases projection's rules require of a grant.
    let step_ms = TTL_MS / BULK_RESOURCES as u64 + 1;
    let at_ms = EPOCH_MS + i as u64 * step_ms;
    let acquired = |holder: String| {
        LeaseEvent::Acquired(Acquired {
            resource: format!("resource-{:04}", i % BULK_RESOURCES),
            holder,
            token: (i / BULK_RESOURCES) as u64 + 1,
            expires_at_ms: at_ms + TTL_MS,
            project: String::new(),
            name: String::new(),
            holder_name: String::new(),
        })
        .to_new_event(at_ms)
    };
    let holder = format!("holder-{}", i % 7);
    let short = acquired(holder.clone()).payload.len();
    let event = acquired(format!(
        "{holder:-<0$}",
        holder.len() + PAYLOAD_BYTES - short
    ));
    debug_assert_eq!(event.payload.len(), PAYLOAD_BYTES);
    event
}

/// The stored bytes of `event` as annals would write it at `position`.
pub(crate) fn stored_bytes(event: &NewEvent, position: u64) -> Vec<u8> {
    stored_bytes_in("bulk", position, event, position)
}

/// The stored bytes of `event` as annals would write it at `position`, as `version` of
/// `stream`.
pub(crate) fn stored_bytes_in(
    stream: &str,
    version: u64,
    event: &NewEvent,
    position: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    let placement = Placement {
        stream,
        position: Position(position),
        version: StreamVersion(version),
        prev: Digest::ZERO,
    };
    encode_stored(&mut out, event, placement).expect("a bench event within limits");
    out
}

/// A new store at `path` in `sharing` mode.
pub(crate) fn open_new(path: &Path, sharing: Sharing) -> Store {
    Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing,
            ..StoreOptions::default()
        },
    )
    .expect("a new store")
}

/// What one command appends, for sizing the raw redb record.
pub(crate) fn lease_command_event() -> NewEvent {
    let event = LeaseEvent::Renewed(annals::leases::events::Renewed {
        resource: "resource-0".into(),
        token: 1,
        expires_at_ms: EPOCH_MS + TTL_MS,
        labels: None,
    });
    event.to_new_event(EPOCH_MS)
}

pub(crate) fn decode_lease(event: &NewEvent) -> Option<LeaseEvent> {
    let record = annals::Record {
        position: Position(0),
        stream: "bulk".into(),
        version: StreamVersion(0),
        kind: event.kind.clone(),
        schema: event.schema,
        at_ms: event.at_ms,
        idempotency_key: None,
        payload: event.payload.clone(),
        payload_hash: Digest::ZERO,
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    };
    LeaseEvent::from_record(&record).ok().flatten()
}
