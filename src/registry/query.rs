//! Registry reads from the projection tables: no replay, usable on a snapshot or inside a
//! write (where commands decide). Also the row types the tables hold and the table
//! definitions, which only `apply` writes.

use serde::{Deserialize, Serialize};

use super::handle::Handle;
use crate::error::Result;
use crate::log::read::Direction;
use crate::projection::table::{Table, TableSource};

/// Whether the host serves an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "InstanceStatus")
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Served (the default of a new instance).
    Enabled,
    /// Kept but not served.
    Disabled,
}

/// What an instance is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InstanceKind {
    /// An agent with its own identity (the default of a new instance).
    Agent,
    /// A mailbox instance: it keeps mail for an identity outside the host, its `owner`.
    Mailbox,
}

/// The handles an instance knows (its roster).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Knows {
    /// These handles, in the order first given, without repeats; empty: nobody.
    Handles(Vec<String>),
    /// Every other enabled instance (the reference's `["*"]`).
    All,
}

/// The wildcard that makes a roster [`Knows::All`].
pub const KNOWS_ALL: &str = "*";

impl Knows {
    /// Nobody.
    pub fn nobody() -> Knows {
        Knows::Handles(Vec::new())
    }

    /// The roster of `handles`: [`Knows::All`] if `*` is among them, else the handles with
    /// repeats dropped (the first occurrence keeps its place).
    pub fn from_handles<S: Into<String>>(handles: impl IntoIterator<Item = S>) -> Knows {
        let mut kept: Vec<String> = Vec::new();
        for handle in handles {
            let handle = handle.into();
            if handle == KNOWS_ALL {
                return Knows::All;
            }
            if !kept.contains(&handle) {
                kept.push(handle);
            }
        }
        Knows::Handles(kept)
    }

    /// The same roster in its one normal form (see [`Knows::from_handles`]), so that equal
    /// rosters are equal values.
    pub fn normalized(&self) -> Knows {
        match self {
            Knows::All => Knows::All,
            Knows::Handles(handles) => Knows::from_handles(handles.iter().cloned()),
        }
    }

    /// Whether the roster names `handle` (everyone does under [`Knows::All`]).
    pub fn includes(&self, handle: &str) -> bool {
        match self {
            Knows::All => true,
            Knows::Handles(handles) => handles.iter().any(|h| h == handle),
        }
    }
}

/// One registered instance, as it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Instance {
    /// Its handle: the key.
    pub handle: Handle,
    /// The domain its origin is under (`localhost` unless given).
    pub domain: String,
    /// Its identity key (hex), if known.
    pub identity: Option<String>,
    /// Where its runtime state lives; never empty.
    pub store: String,
    /// The root of the tree last deployed into it.
    pub tree: Option<String>,
    /// The directory that tree came from.
    pub source: Option<String>,
    /// The handles it knows.
    pub knows: Knows,
    /// Whether it is served.
    pub status: Status,
    /// Agent or mailbox.
    pub kind: InstanceKind,
    /// A mailbox's owner: the identity (hex) whose mail it keeps.
    pub owner: Option<String>,
    /// The overlay names routed to it, in the order given; empty: none.
    pub topics: Vec<String>,
    /// When it was first registered (the command's `now_ms`); updates never change it.
    pub created_at_ms: u64,
}

impl Instance {
    /// Whether it is served.
    pub fn is_enabled(&self) -> bool {
        self.status == Status::Enabled
    }

    /// The identity its `handle@domain` names: an agent's own, a mailbox's owner.
    pub fn named_identity(&self) -> Option<&str> {
        match self.kind {
            InstanceKind::Agent => self.identity.as_deref(),
            InstanceKind::Mailbox => self.owner.as_deref(),
        }
    }
}

/// What one caller's calls of one op on one instance cost, summed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FuelEntry {
    /// The instance (a handle; it may have been removed since).
    pub instance: String,
    /// Who called (hex identity), or empty for nobody known.
    pub caller: String,
    /// The op (the route).
    pub op: String,
    /// Calls counted.
    pub calls: u64,
    /// Fuel spent by them.
    pub fuel: u64,
    /// When the last of them was recorded.
    pub updated_at_ms: u64,
}

/// What every call on one instance cost, summed over callers and ops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FuelTotal {
    /// Calls counted.
    pub calls: u64,
    /// Fuel spent by them.
    pub fuel: u64,
}

/// The setting that names the host skein: the operator's instance.
pub const HOST_SKEIN_SETTING: &str = "host_skein";

/// `registry.instances`: handle → instance.
pub(crate) const INSTANCES: Table<String, Instance> = Table::new("registry.instances");
/// `registry.by_identity`: (identity, handle) for every instance with an identity.
pub(crate) const BY_IDENTITY: Table<(String, String), ()> = Table::new("registry.by_identity");
/// `registry.by_owner`: (owner, handle) for every instance with an owner.
pub(crate) const BY_OWNER: Table<(String, String), ()> = Table::new("registry.by_owner");
/// `registry.by_created`: (created_at_ms, handle) for every instance: the listing order.
pub(crate) const BY_CREATED: Table<(u64, String), ()> = Table::new("registry.by_created");
/// `registry.settings`: key → value.
pub(crate) const SETTINGS: Table<String, String> = Table::new("registry.settings");
/// `registry.fuel`: (instance, caller, op) → the aggregate (kept when the instance goes).
pub(crate) const FUEL: Table<(String, String, String), FuelEntry> = Table::new("registry.fuel");
/// `registry.fuel_totals`: instance → the sum of its `registry.fuel` rows.
pub(crate) const FUEL_TOTALS: Table<String, FuelTotal> = Table::new("registry.fuel_totals");

/// The instance registered under `handle`.
pub fn instance(state: &dyn TableSource, handle: &str) -> Result<Option<Instance>> {
    INSTANCES.get(state, &handle.to_owned())
}

/// Up to `limit` instances (only those with `status`, if given), oldest first, then by handle.
pub fn instances(
    state: &dyn TableSource,
    status: Option<Status>,
    limit: usize,
) -> Result<Vec<Instance>> {
    let mut found = Vec::new();
    for ((_, handle), ()) in BY_CREATED.scan_prefix(state, &(), Direction::Forward, usize::MAX)? {
        if found.len() >= limit {
            break;
        }
        if let Some(instance) = instance(state, &handle)?
            && status.is_none_or(|s| s == instance.status)
        {
            found.push(instance);
        }
    }
    Ok(found)
}

/// The first enabled instance in handle order among those in `index` under `key`.
fn first_enabled(
    state: &dyn TableSource,
    index: Table<(String, String), ()>,
    key: &str,
    wanted: impl Fn(&Instance) -> bool,
) -> Result<Option<Instance>> {
    for ((_, handle), ()) in
        index.scan_prefix(state, &(key.to_owned(),), Direction::Forward, usize::MAX)?
    {
        if let Some(instance) = instance(state, &handle)?
            && instance.is_enabled()
            && wanted(&instance)
        {
            return Ok(Some(instance));
        }
    }
    Ok(None)
}

/// The enabled instance whose identity is `identity` (the first by handle if several are).
pub fn by_identity(state: &dyn TableSource, identity: &str) -> Result<Option<Instance>> {
    first_enabled(state, BY_IDENTITY, identity, |_| true)
}

/// The identity `handle@domain` names: an agent's own identity, or a mailbox's owner. `None`
/// when no instance has that handle under that domain, or it names none. The status does not
/// matter: a disabled instance still names its identity.
pub fn identity_of(state: &dyn TableSource, handle: &str, domain: &str) -> Result<Option<String>> {
    Ok(instance(state, handle)?
        .filter(|instance| instance.domain == domain)
        .and_then(|instance| instance.named_identity().map(str::to_owned)))
}

/// The enabled mailbox instance of identity `owner` (the first by handle if several are).
pub fn mailbox_of(state: &dyn TableSource, owner: &str) -> Result<Option<Instance>> {
    first_enabled(state, BY_OWNER, owner, |instance| {
        instance.kind == InstanceKind::Mailbox
    })
}

/// The value of setting `key`, if set.
pub fn setting(state: &dyn TableSource, key: &str) -> Result<Option<String>> {
    SETTINGS.get(state, &key.to_owned())
}

/// Every setting, in key order.
pub fn settings(state: &dyn TableSource) -> Result<Vec<(String, String)>> {
    SETTINGS.scan_prefix(state, &(), Direction::Forward, usize::MAX)
}

/// The host skein: the instance the [`HOST_SKEIN_SETTING`] setting names, if it exists.
pub fn host_skein(state: &dyn TableSource) -> Result<Option<Instance>> {
    match setting(state, HOST_SKEIN_SETTING)? {
        Some(handle) => instance(state, &handle),
        None => Ok(None),
    }
}

/// The ledger row of `caller`'s calls of `op` on `instance`.
pub fn fuel_entry(
    state: &dyn TableSource,
    instance: &str,
    caller: &str,
    op: &str,
) -> Result<Option<FuelEntry>> {
    FUEL.get(
        state,
        &(instance.to_owned(), caller.to_owned(), op.to_owned()),
    )
}

/// Every ledger row of `instance`, the costliest first (ties by caller, then op).
pub fn fuel_ledger(state: &dyn TableSource, instance: &str) -> Result<Vec<FuelEntry>> {
    let mut rows: Vec<FuelEntry> = FUEL
        .scan_prefix(
            state,
            &(instance.to_owned(),),
            Direction::Forward,
            usize::MAX,
        )?
        .into_iter()
        .map(|(_, entry)| entry)
        .collect();
    // The scan is in (caller, op) order and the sort is stable, so ties keep that order.
    rows.sort_by_key(|entry| std::cmp::Reverse(entry.fuel));
    Ok(rows)
}

/// What every call on `instance` cost (zero if none was recorded).
pub fn fuel_total(state: &dyn TableSource, instance: &str) -> Result<FuelTotal> {
    Ok(FUEL_TOTALS
        .get(state, &instance.to_owned())?
        .unwrap_or_default())
}

/// The total of every instance with recorded calls, in handle order.
pub fn fuel_totals(state: &dyn TableSource) -> Result<Vec<(String, FuelTotal)>> {
    FUEL_TOTALS.scan_prefix(state, &(), Direction::Forward, usize::MAX)
}

/// Every row of the registry projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('registry')` gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RegistryTables {
    /// Every instance, by handle.
    pub instances: Vec<Instance>,
    /// The handle each identity names.
    pub by_identity: Vec<IdentityRow>,
    /// The handles each owner has.
    pub by_owner: Vec<OwnerRow>,
    /// The handles by when they were created.
    pub by_created: Vec<CreatedRow>,
    /// Every setting, by key.
    pub settings: Vec<SettingRow>,
    /// What each instance's calls cost, by instance, caller and op.
    pub fuel: Vec<FuelEntry>,
    /// What each instance's calls cost in all.
    pub fuel_totals: Vec<FuelTotalRow>,
}

/// The handle an identity names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IdentityRow {
    /// The identity.
    pub identity: String,
    /// The instance's handle.
    pub handle: String,
}

/// A handle an owner has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OwnerRow {
    /// The owner.
    pub owner: String,
    /// The instance's handle.
    pub handle: String,
}

/// A handle by when it was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreatedRow {
    /// When the instance was created.
    pub created_at_ms: u64,
    /// The instance's handle.
    pub handle: String,
}

/// A setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SettingRow {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// What one instance's calls cost in all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FuelTotalRow {
    /// The instance.
    pub instance: String,
    /// Calls counted.
    pub calls: u64,
    /// Fuel spent by them.
    pub fuel: u64,
}

/// Every row of the registry projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<RegistryTables> {
    let all = Direction::Forward;
    let instances = INSTANCES
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|(_, instance)| instance)
        .collect();
    let by_identity = BY_IDENTITY
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((identity, handle), ())| IdentityRow { identity, handle })
        .collect();
    let by_owner = BY_OWNER
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((owner, handle), ())| OwnerRow { owner, handle })
        .collect();
    let by_created = BY_CREATED
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((created_at_ms, handle), ())| CreatedRow {
            created_at_ms,
            handle,
        })
        .collect();
    let settings = settings(state)?
        .into_iter()
        .map(|(key, value)| SettingRow { key, value })
        .collect();
    let fuel = FUEL
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|(_, entry)| entry)
        .collect();
    let fuel_totals = fuel_totals(state)?
        .into_iter()
        .map(|(instance, total)| FuelTotalRow {
            instance,
            calls: total.calls,
            fuel: total.fuel,
        })
        .collect();
    Ok(RegistryTables {
        instances,
        by_identity,
        by_owner,
        by_created,
        settings,
        fuel,
        fuel_totals,
    })
}

/// Every row of the registry projection as JSON, in key order: what `annals state` prints.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}
