//! Registry apply: each event to table writes, keeping the lookup indexes in step with the
//! instance rows. Reads only the record and the registry tables.

use super::events::{FuelCharged, InstanceAdded, InstanceUpdated, RegistryEvent};
use super::handle::Handle;
use super::query::{
    BY_CREATED, BY_IDENTITY, BY_OWNER, FUEL, FUEL_TOTALS, FuelEntry, INSTANCES, Instance, SETTINGS,
};
use crate::error::Result;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Applies one registry event recorded in `record`.
pub fn apply(tables: &WriteTables<'_>, record: &Record, event: RegistryEvent) -> Result<()> {
    match event {
        RegistryEvent::InstanceAdded(e) => {
            let old = INSTANCES.get(tables, &e.handle)?;
            put_instance(tables, old.as_ref(), &added(e, record.at_ms))
        }
        RegistryEvent::InstanceUpdated(e) => {
            let handle = e.handle.clone();
            update_instance(tables, &handle, |instance| merge(instance, e))
        }
        RegistryEvent::StatusChanged(e) => update_instance(tables, &e.handle, |instance| {
            instance.status = e.status;
        }),
        RegistryEvent::KnowsChanged(e) => update_instance(tables, &e.handle, |instance| {
            instance.knows = e.knows;
        }),
        RegistryEvent::TopicsChanged(e) => update_instance(tables, &e.handle, |instance| {
            instance.topics = e.topics;
        }),
        RegistryEvent::InstanceRemoved(e) => match INSTANCES.get(tables, &e.handle)? {
            Some(old) => {
                unindex(tables, &old)?;
                INSTANCES.remove(tables, &e.handle).map(drop)
            }
            None => Ok(()),
        },
        RegistryEvent::SettingSet(e) => SETTINGS.insert(tables, &e.key, &e.value),
        RegistryEvent::FuelCharged(e) => charge(tables, record, e),
    }
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
    handle: &str,
    change: impl FnOnce(&mut Instance),
) -> Result<()> {
    match INSTANCES.get(tables, &handle.to_owned())? {
        Some(old) => {
            let mut new = old.clone();
            change(&mut new);
            put_instance(tables, Some(&old), &new)
        }
        None => Ok(()),
    }
}

/// Stores `new` in place of `old`, moving its index entries with it.
fn put_instance(tables: &WriteTables<'_>, old: Option<&Instance>, new: &Instance) -> Result<()> {
    if let Some(old) = old {
        unindex(tables, old)?;
    }
    let handle = new.handle.as_str().to_owned();
    if let Some(identity) = &new.identity {
        BY_IDENTITY.insert(tables, &(identity.clone(), handle.clone()), &())?;
    }
    if let Some(owner) = &new.owner {
        BY_OWNER.insert(tables, &(owner.clone(), handle.clone()), &())?;
    }
    BY_CREATED.insert(tables, &(new.created_at_ms, handle.clone()), &())?;
    INSTANCES.insert(tables, &handle, new)
}

/// Removes every index entry of `instance`.
fn unindex(tables: &WriteTables<'_>, instance: &Instance) -> Result<()> {
    let handle = instance.handle.as_str().to_owned();
    if let Some(identity) = &instance.identity {
        BY_IDENTITY.remove(tables, &(identity.clone(), handle.clone()))?;
    }
    if let Some(owner) = &instance.owner {
        BY_OWNER.remove(tables, &(owner.clone(), handle.clone()))?;
    }
    BY_CREATED.remove(tables, &(instance.created_at_ms, handle))?;
    Ok(())
}

fn charge(tables: &WriteTables<'_>, record: &Record, e: FuelCharged) -> Result<()> {
    let key = (e.instance, e.caller, e.op);
    // The decision refused any charge that would overflow; saturating keeps apply total on
    // a log that holds one anyway.
    let entry = match FUEL.get(tables, &key)? {
        Some(entry) => FuelEntry {
            calls: entry.calls.saturating_add(e.calls),
            fuel: entry.fuel.saturating_add(e.fuel),
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
    FUEL.insert(tables, &key, &entry)?;
    let mut total = FUEL_TOTALS.get(tables, &key.0)?.unwrap_or_default();
    total.calls = total.calls.saturating_add(e.calls);
    total.fuel = total.fuel.saturating_add(e.fuel);
    FUEL_TOTALS.insert(tables, &key.0, &total)
}
