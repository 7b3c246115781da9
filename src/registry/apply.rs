//! Registry apply: each event to table writes, keeping the lookup indexes in step with the
//! instance rows. Reads only the record and the registry tables.
//!
//! Before it writes, apply checks the event against the rules `decide` keeps (see
//! `schema/EVENTS.md`): a live command never breaks one, so a record that does was written
//! around `decide` (a forged import, a log written elsewhere) and is refused with
//! [`crate::error::ProjectionError::Invariant`] at its position. Field grammars (a handle's, a
//! setting key's) are checked by `decide` only: a record is replayed as it was accepted.

use super::events::{FuelCharged, InstanceAdded, InstanceUpdated, RegistryEvent};
use super::handle::Handle;
use super::query::{
    BY_CREATED, BY_IDENTITY, BY_OWNER, FUEL, FUEL_TOTALS, FuelEntry, INSTANCES, Instance, SETTINGS,
};
use crate::error::{Error, Result};
use crate::projection::table::WriteTables;
use crate::record::Record;

/// A new instance takes a handle no instance has.
pub(crate) const HANDLE_UNUSED: &str = "handle_unused";
/// A change or a removal names an instance there is.
pub(crate) const INSTANCE_EXISTS: &str = "instance_exists";
/// A fuel charge keeps the ledger's counts within 64 bits.
pub(crate) const FUEL_FITS: &str = "fuel_fits";

/// `record` breaks the registry `rule`, as `detail` says.
fn broken(record: &Record, rule: &'static str, detail: String) -> Error {
    crate::projection::invariant("registry", record, rule, detail)
}

/// Applies one registry event recorded in `record`, refusing one that breaks a registry rule.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: RegistryEvent) -> Result<()> {
    match event {
        RegistryEvent::InstanceAdded(e) => {
            if INSTANCES.get(tables, &e.handle)?.is_some() {
                let detail = format!("instance {:?} is registered already", e.handle);
                return Err(broken(record, HANDLE_UNUSED, detail));
            }
            put_instance(tables, None, &added(e, record.at_ms))
        }
        RegistryEvent::InstanceUpdated(e) => {
            let handle = e.handle.clone();
            update_instance(tables, record, &handle, |instance| merge(instance, e))
        }
        RegistryEvent::StatusChanged(e) => update_instance(tables, record, &e.handle, |instance| {
            instance.status = e.status;
        }),
        RegistryEvent::KnowsChanged(e) => update_instance(tables, record, &e.handle, |instance| {
            instance.knows = e.knows;
        }),
        RegistryEvent::TopicsChanged(e) => update_instance(tables, record, &e.handle, |instance| {
            instance.topics = e.topics;
        }),
        RegistryEvent::InstanceRemoved(e) => {
            let old = registered(tables, record, &e.handle)?;
            reindex(tables, Some(&old), None)?;
            INSTANCES.remove(tables, &e.handle).map(drop)
        }
        RegistryEvent::SettingSet(e) => SETTINGS.insert(tables, &e.key, &e.value),
        RegistryEvent::FuelCharged(e) => charge(tables, record, e),
    }
}

/// The instance under `handle`, which a change or a removal names.
fn registered(tables: &WriteTables<'_>, record: &Record, handle: &str) -> Result<Instance> {
    INSTANCES.get(tables, &handle.to_owned())?.ok_or_else(|| {
        broken(
            record,
            INSTANCE_EXISTS,
            format!("no instance has handle {handle:?}"),
        )
    })
}

/// The instance an `instance_added` event registers at `created_at_ms`.
pub(crate) fn added(e: InstanceAdded, created_at_ms: u64) -> Instance {
    Instance {
        handle: Handle::recorded(e.handle),
        domain: e.domain,
        identity: e.identity,
        store: e.store,
        tree: e.tree,
        source: e.source,
        knows: e.knows,
        status: e.status,
        kind: e.kind,
        owner: e.owner,
        topics: e.topics,
        created_at_ms,
    }
}

/// `instance` with the fields `update` changes changed. The one merge rule, shared by the
/// decision (for its outcome) and by apply.
pub(crate) fn merge(instance: &mut Instance, update: InstanceUpdated) {
    let InstanceUpdated {
        handle: _,
        domain,
        identity,
        store,
        tree,
        source,
        knows,
        status,
        kind,
        owner,
        topics,
    } = update;
    fn set<T>(field: &mut T, change: Option<T>) {
        if let Some(value) = change {
            *field = value;
        }
    }
    set(&mut instance.domain, domain);
    set(&mut instance.identity, identity);
    set(&mut instance.store, store);
    set(&mut instance.tree, tree);
    set(&mut instance.source, source);
    set(&mut instance.knows, knows);
    set(&mut instance.status, status);
    set(&mut instance.kind, kind);
    set(&mut instance.owner, owner);
    set(&mut instance.topics, topics);
}

fn update_instance(
    tables: &WriteTables<'_>,
    record: &Record,
    handle: &str,
    change: impl FnOnce(&mut Instance),
) -> Result<()> {
    let old = registered(tables, record, handle)?;
    let mut new = old.clone();
    change(&mut new);
    put_instance(tables, Some(&old), &new)
}

/// Stores `new` in place of `old`, moving its index entries with it.
fn put_instance(tables: &WriteTables<'_>, old: Option<&Instance>, new: &Instance) -> Result<()> {
    reindex(tables, old, Some(new))?;
    INSTANCES.insert(tables, &new.handle.as_str().to_owned(), new)
}

/// Moves the index entries of an instance from what it was (`None`: not registered) to what
/// it becomes (`None`: removed), touching only those that change.
fn reindex(tables: &WriteTables<'_>, old: Option<&Instance>, new: Option<&Instance>) -> Result<()> {
    let handle = |instance: &Instance| instance.handle.as_str().to_owned();
    let identity = |instance: &Instance| {
        let identity = instance.identity.clone()?;
        Some(((identity, handle(instance)), ()))
    };
    BY_IDENTITY.move_entry(tables, old.and_then(identity), new.and_then(identity))?;
    let owner = |instance: &Instance| {
        let owner = instance.owner.clone()?;
        Some(((owner, handle(instance)), ()))
    };
    BY_OWNER.move_entry(tables, old.and_then(owner), new.and_then(owner))?;
    let created = |instance: &Instance| ((instance.created_at_ms, handle(instance)), ());
    BY_CREATED.move_entry(tables, old.map(created), new.map(created))
}

fn charge(tables: &WriteTables<'_>, record: &Record, e: FuelCharged) -> Result<()> {
    let key = (e.instance, e.caller, e.op);
    let overflow = |what: &str| {
        let detail = format!(
            "a charge of {} calls and {} fuel to {:?} overflows its {what}",
            e.calls, e.fuel, key.0
        );
        broken(record, FUEL_FITS, detail)
    };
    let entry = match FUEL.get(tables, &key)? {
        Some(entry) => FuelEntry {
            calls: entry
                .calls
                .checked_add(e.calls)
                .ok_or_else(|| overflow("ledger row"))?,
            fuel: entry
                .fuel
                .checked_add(e.fuel)
                .ok_or_else(|| overflow("ledger row"))?,
            updated_at_ms: record.at_ms,
            ..entry
        },
        None => FuelEntry {
            instance: key.0.clone(),
            caller: key.1.clone(),
            op: key.2.clone(),
            calls: e.calls,
            fuel: e.fuel,
            updated_at_ms: record.at_ms,
        },
    };
    let mut total = FUEL_TOTALS.get(tables, &key.0)?.unwrap_or_default();
    total.calls = total
        .calls
        .checked_add(e.calls)
        .ok_or_else(|| overflow("total"))?;
    total.fuel = total
        .fuel
        .checked_add(e.fuel)
        .ok_or_else(|| overflow("total"))?;
    FUEL.insert(tables, &key, &entry)?;
    FUEL_TOTALS.insert(tables, &key.0, &total)
}
