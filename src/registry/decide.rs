//! Registry commands and their pure decisions: state + command → events or an outcome that
//! appends nothing.
//!
//! Nothing here reads a clock: each command carries its `now_ms`, which becomes the
//! record's `at_ms` (and so a new instance's `created_at_ms`, and a fuel row's
//! `updated_at_ms`).

use super::apply;
use super::events::{
    FuelCharged, InstanceAdded, InstanceRemoved, InstanceUpdated, KnowsChanged, RegistryEvent,
    SettingSet, StatusChanged, TopicsChanged,
};
use super::handle::{HANDLE_BYTES_MAX, Handle};
use super::query::{self, FuelEntry, FuelTotal, Instance, InstanceKind, Knows, Status};
use crate::command::{Command, Decision};
use crate::error::Result;
use crate::projection::table::TableSource;
use crate::record::limits::Limits;
use crate::validate;

/// The domain a new instance gets when none is given.
pub const DEFAULT_DOMAIN: &str = "localhost";
/// Longest setting key, in bytes.
pub const SETTING_KEY_BYTES_MAX: usize = 128;

const INSTANCE_STREAM_PREFIX: &str = "registry/";
const SETTING_STREAM_PREFIX: &str = "registry-setting/";
const FUEL_STREAM_PREFIX: &str = "fuel/";

// Every stream a valid command names fits the default stream name limit.
const _: () = assert!(
    INSTANCE_STREAM_PREFIX.len() + HANDLE_BYTES_MAX <= Limits::DEFAULT.stream_bytes_max as usize
);
const _: () = assert!(
    FUEL_STREAM_PREFIX.len() + HANDLE_BYTES_MAX <= Limits::DEFAULT.stream_bytes_max as usize
);
const _: () = assert!(
    SETTING_STREAM_PREFIX.len() + SETTING_KEY_BYTES_MAX
        <= Limits::DEFAULT.stream_bytes_max as usize
);

/// The stream of an instance's events.
pub fn instance_stream(handle: &str) -> String {
    format!("{INSTANCE_STREAM_PREFIX}{handle}")
}

/// The stream of a setting's events.
pub fn setting_stream(key: &str) -> String {
    format!("{SETTING_STREAM_PREFIX}{key}")
}

/// The stream of an instance's fuel charges.
pub fn fuel_stream(instance: &str) -> String {
    format!("{FUEL_STREAM_PREFIX}{instance}")
}

/// The fields an upsert gives; `None` leaves a field as it is (or to its default on a new
/// instance). For `identity`, `tree`, `source` and `owner`, an empty string clears the field.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InstanceFields {
    /// The domain (default `localhost`); must not be empty.
    pub domain: Option<String>,
    /// The identity key (hex).
    pub identity: Option<String>,
    /// The store; a new instance needs one, and it must not be empty.
    pub store: Option<String>,
    /// The root of the tree deployed.
    pub tree: Option<String>,
    /// The directory it came from.
    pub source: Option<String>,
    /// Whom it knows (default nobody); normalized as [`Knows::from_handles`] does.
    pub knows: Option<Knows>,
    /// Whether it is served (default enabled).
    pub status: Option<Status>,
    /// Agent or mailbox (default agent).
    pub kind: Option<InstanceKind>,
    /// A mailbox's owner (hex identity).
    pub owner: Option<String>,
    /// Overlay names routed to it (default none).
    pub topics: Option<Vec<String>>,
}

/// A command on one instance. Its serde form names each variant in snake_case (`set_knows`);
/// a command's serde form is not stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InstanceCommand {
    /// Registers `handle`, or changes the given fields of the instance that has it (so a
    /// provisioning script can run again). A new instance needs a store.
    Upsert {
        /// The handle.
        handle: String,
        /// The fields given.
        fields: InstanceFields,
        /// The caller's clock: a new instance's creation time.
        now_ms: u64,
    },
    /// Enables or disables an instance.
    SetStatus {
        /// The handle.
        handle: String,
        /// The status wanted.
        status: Status,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Replaces whom an instance knows.
    SetKnows {
        /// The handle.
        handle: String,
        /// The roster wanted (normalized before it is compared or recorded).
        knows: Knows,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Replaces the overlay names routed to an instance (empty: none).
    SetTopics {
        /// The handle.
        handle: String,
        /// The topics wanted.
        topics: Vec<String>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Removes an instance from the registry (not its store, not its fuel ledger).
    Remove {
        /// The handle.
        handle: String,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// What an instance command did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum InstanceOutcome {
    /// A new instance was registered.
    Added {
        /// The instance now.
        instance: Instance,
    },
    /// The instance changed.
    Updated {
        /// The instance now.
        instance: Instance,
    },
    /// The instance already was as asked; nothing appended.
    Unchanged {
        /// The instance as it stands.
        instance: Instance,
    },
    /// The instance was removed.
    Removed {
        /// The instance as it was.
        instance: Instance,
    },
    /// No instance has the handle; nothing appended.
    Missing,
}

/// An optional text field as given: an empty string is the clearing of it.
fn optional(given: &str) -> Option<String> {
    (!given.is_empty()).then(|| given.to_owned())
}

/// `Some(wanted)` if it was given and differs from `current`.
fn changed<T: PartialEq>(current: &T, wanted: Option<T>) -> Option<T> {
    wanted.filter(|wanted| wanted != current)
}

impl InstanceFields {
    fn check(&self) -> Result<()> {
        if let Some(domain) = &self.domain {
            validate::non_empty("domain", domain)?;
        }
        if let Some(store) = &self.store {
            validate::non_empty("store", store)?;
        }
        Ok(())
    }

    /// A new instance under `handle`, defaults filled in.
    fn added(&self, handle: &Handle) -> Result<InstanceAdded> {
        let store = validate::given("store", self.store.clone())?;
        Ok(InstanceAdded {
            handle: handle.as_str().to_owned(),
            domain: self
                .domain
                .clone()
                .unwrap_or_else(|| DEFAULT_DOMAIN.to_owned()),
            identity: self.identity.as_deref().and_then(optional),
            store,
            tree: self.tree.as_deref().and_then(optional),
            source: self.source.as_deref().and_then(optional),
            knows: self
                .knows
                .as_ref()
                .map_or_else(Knows::nobody, Knows::normalized),
            status: self.status.unwrap_or(Status::Enabled),
            kind: self.kind.unwrap_or(InstanceKind::Agent),
            owner: self.owner.as_deref().and_then(optional),
            topics: self.topics.clone().unwrap_or_default(),
        })
    }

    /// The fields of `current` these change, and only those.
    fn update_of(&self, current: &Instance) -> InstanceUpdated {
        let text = |field: &Option<String>| field.as_deref().map(optional);
        InstanceUpdated {
            handle: current.handle.as_str().to_owned(),
            domain: changed(&current.domain, self.domain.clone()),
            identity: changed(&current.identity, text(&self.identity)),
            store: changed(&current.store, self.store.clone()),
            tree: changed(&current.tree, text(&self.tree)),
            source: changed(&current.source, text(&self.source)),
            knows: changed(&current.knows, self.knows.as_ref().map(Knows::normalized)),
            status: changed(&current.status, self.status),
            kind: changed(&current.kind, self.kind),
            owner: changed(&current.owner, text(&self.owner)),
            topics: changed(&current.topics, self.topics.clone()),
        }
    }
}

impl Command for InstanceCommand {
    type Outcome = InstanceOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<InstanceOutcome>> {
        match self {
            InstanceCommand::Upsert {
                handle,
                fields,
                now_ms,
            } => decide_upsert(state, handle, fields, *now_ms),
            InstanceCommand::SetStatus {
                handle,
                status,
                now_ms,
            } => decide_set_status(state, handle, *status, *now_ms),
            InstanceCommand::SetKnows {
                handle,
                knows,
                now_ms,
            } => decide_set_knows(state, handle, knows, *now_ms),
            InstanceCommand::SetTopics {
                handle,
                topics,
                now_ms,
            } => decide_set_topics(state, handle, topics, *now_ms),
            InstanceCommand::Remove { handle, now_ms } => decide_remove(state, handle, *now_ms),
        }
    }
}

/// [`InstanceCommand::Upsert`]: registers `handle`, or changes the given fields of the
/// instance that has it.
fn decide_upsert(
    state: &dyn TableSource,
    handle: &str,
    fields: &InstanceFields,
    now_ms: u64,
) -> Result<Decision<InstanceOutcome>> {
    let handle = Handle::parse("handle", handle)?;
    fields.check()?;
    let stream = instance_stream(handle.as_str());
    match query::instance(state, handle.as_str())? {
        None => {
            let added = fields.added(&handle)?;
            let instance = apply::added(added.clone(), now_ms);
            let event = RegistryEvent::InstanceAdded(added);
            Ok(Decision::event(
                stream,
                now_ms,
                event,
                InstanceOutcome::Added { instance },
            ))
        }
        Some(current) => {
            let update = fields.update_of(&current);
            if update.is_empty() {
                return Ok(Decision::nothing(InstanceOutcome::Unchanged {
                    instance: current,
                }));
            }
            let mut instance = current;
            apply::merge(&mut instance, update.clone());
            let event = RegistryEvent::InstanceUpdated(update);
            Ok(Decision::event(
                stream,
                now_ms,
                event,
                InstanceOutcome::Updated { instance },
            ))
        }
    }
}

/// [`InstanceCommand::SetStatus`].
fn decide_set_status(
    state: &dyn TableSource,
    handle: &str,
    status: Status,
    now_ms: u64,
) -> Result<Decision<InstanceOutcome>> {
    change(state, handle, now_ms, |instance| {
        (instance.status != status).then(|| {
            instance.status = status;
            RegistryEvent::StatusChanged(StatusChanged {
                handle: instance.handle.as_str().to_owned(),
                status,
            })
        })
    })
}

/// [`InstanceCommand::SetKnows`]: the roster is normalized before it is compared.
fn decide_set_knows(
    state: &dyn TableSource,
    handle: &str,
    knows: &Knows,
    now_ms: u64,
) -> Result<Decision<InstanceOutcome>> {
    let knows = knows.normalized();
    change(state, handle, now_ms, |instance| {
        (instance.knows != knows).then(|| {
            instance.knows = knows.clone();
            RegistryEvent::KnowsChanged(KnowsChanged {
                handle: instance.handle.as_str().to_owned(),
                knows,
            })
        })
    })
}

/// [`InstanceCommand::SetTopics`].
fn decide_set_topics(
    state: &dyn TableSource,
    handle: &str,
    topics: &[String],
    now_ms: u64,
) -> Result<Decision<InstanceOutcome>> {
    change(state, handle, now_ms, |instance| {
        (instance.topics != topics).then(|| {
            instance.topics = topics.to_vec();
            RegistryEvent::TopicsChanged(TopicsChanged {
                handle: instance.handle.as_str().to_owned(),
                topics: topics.to_vec(),
            })
        })
    })
}

/// [`InstanceCommand::Remove`]: drops the instance (not its store, not its fuel ledger).
fn decide_remove(
    state: &dyn TableSource,
    handle: &str,
    now_ms: u64,
) -> Result<Decision<InstanceOutcome>> {
    let handle = Handle::parse("handle", handle)?;
    match query::instance(state, handle.as_str())? {
        None => Ok(Decision::nothing(InstanceOutcome::Missing)),
        Some(instance) => {
            let event = RegistryEvent::InstanceRemoved(InstanceRemoved {
                handle: handle.as_str().to_owned(),
            });
            Ok(Decision::event(
                instance_stream(handle.as_str()),
                now_ms,
                event,
                InstanceOutcome::Removed { instance },
            ))
        }
    }
}

/// Applies `edit` to the instance under `handle`: the event it returns is appended, `None`
/// means the instance already was as asked.
fn change(
    state: &dyn TableSource,
    handle: &str,
    now_ms: u64,
    edit: impl FnOnce(&mut Instance) -> Option<RegistryEvent>,
) -> Result<Decision<InstanceOutcome>> {
    let handle = Handle::parse("handle", handle)?;
    let Some(mut instance) = query::instance(state, handle.as_str())? else {
        return Ok(Decision::nothing(InstanceOutcome::Missing));
    };
    match edit(&mut instance) {
        None => Ok(Decision::nothing(InstanceOutcome::Unchanged { instance })),
        Some(event) => Ok(Decision::event(
            instance_stream(handle.as_str()),
            now_ms,
            event,
            InstanceOutcome::Updated { instance },
        )),
    }
}

/// Sets a host setting (key → value). There is no delete: the reference has none.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetSetting {
    /// The setting: 1 to [`SETTING_KEY_BYTES_MAX`] bytes.
    pub key: String,
    /// Its value (may be empty).
    pub value: String,
    /// The caller's clock.
    pub now_ms: u64,
}

/// What [`SetSetting`] did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum SettingOutcome {
    /// The setting has the new value.
    Set {
        /// The value it had, if any.
        previous: Option<String>,
    },
    /// It already had that value; nothing appended.
    Unchanged,
}

impl Command for SetSetting {
    type Outcome = SettingOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<SettingOutcome>> {
        validate::bounded("key", &self.key, SETTING_KEY_BYTES_MAX)?;
        let previous = query::setting(state, &self.key)?;
        if previous.as_ref() == Some(&self.value) {
            return Ok(Decision::nothing(SettingOutcome::Unchanged));
        }
        let event = RegistryEvent::SettingSet(SettingSet {
            key: self.key.clone(),
            value: self.value.clone(),
        });
        Ok(Decision::event(
            setting_stream(&self.key),
            self.now_ms,
            event,
            SettingOutcome::Set { previous },
        ))
    }
}

/// Charges one call of `op` on `instance` by `caller`, costing `fuel`, to the ledger. The
/// instance need not be registered: the ledger outlives instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordFuel {
    /// The instance called: a valid handle.
    pub instance: String,
    /// Who called (hex identity), or empty for nobody known.
    pub caller: String,
    /// The op (the route); must not be empty.
    pub op: String,
    /// What the call cost.
    pub fuel: u64,
    /// The caller's clock.
    pub now_ms: u64,
}

/// What [`RecordFuel`] did: the ledger row and the instance's total after the charge.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[must_use]
pub struct FuelOutcome {
    /// The (instance, caller, op) row now.
    pub entry: FuelEntry,
    /// The instance's total now.
    pub total: FuelTotal,
}

/// Calls one [`RecordFuel`] counts: one command, one call.
const CALLS_PER_CHARGE: u64 = 1;

/// A [`ChargeFuel`] that does not say how many calls it counts counts one.
fn one_call() -> u64 {
    CALLS_PER_CHARGE
}

impl Command for RecordFuel {
    type Outcome = FuelOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<FuelOutcome>> {
        decide_charge(
            state,
            &self.instance,
            &self.caller,
            &self.op,
            CALLS_PER_CHARGE,
            self.fuel,
            self.now_ms,
        )
    }
}

/// Charges `calls` pre-summed calls of `op` on `instance` by `caller`, costing `fuel` in
/// all, to the ledger: one row of the reference's `charge(rows)`. Zero calls are allowed (the
/// row's `updated_at_ms` still moves), as the reference adds whatever it is given. The
/// instance need not be registered. Its serde form may leave `calls` out: one call.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChargeFuel {
    /// The instance called: a valid handle.
    pub instance: String,
    /// Who called (hex identity), or empty for nobody known.
    pub caller: String,
    /// The op (the route); must not be empty.
    pub op: String,
    /// How many calls the charge counts.
    #[serde(default = "one_call")]
    pub calls: u64,
    /// What they cost in all.
    pub fuel: u64,
    /// The caller's clock.
    pub now_ms: u64,
}

impl Command for ChargeFuel {
    type Outcome = FuelOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<FuelOutcome>> {
        decide_charge(
            state,
            &self.instance,
            &self.caller,
            &self.op,
            self.calls,
            self.fuel,
            self.now_ms,
        )
    }
}

/// [`RecordFuel`] and [`ChargeFuel`]: adds `calls` and `fuel` to the (instance, caller, op)
/// row and to the instance's total, refusing a sum past 64 bits.
fn decide_charge(
    state: &dyn TableSource,
    instance: &str,
    caller: &str,
    op: &str,
    calls: u64,
    fuel: u64,
    now_ms: u64,
) -> Result<Decision<FuelOutcome>> {
    let instance = Handle::parse("instance", instance)?;
    validate::non_empty("op", op)?;
    let current = query::fuel_entry(state, instance.as_str(), caller, op)?;
    let (calls_before, fuel_before) = current.map_or((0, 0), |entry| (entry.calls, entry.fuel));
    let entry = FuelEntry {
        instance: instance.as_str().to_owned(),
        caller: caller.to_owned(),
        op: op.to_owned(),
        calls: validate::total("calls", calls_before, calls)?,
        fuel: validate::total("fuel", fuel_before, fuel)?,
        updated_at_ms: now_ms,
    };
    let before = query::fuel_total(state, instance.as_str())?;
    let total = FuelTotal {
        calls: validate::total("calls", before.calls, calls)?,
        fuel: validate::total("fuel", before.fuel, fuel)?,
    };
    let event = RegistryEvent::FuelCharged(FuelCharged {
        instance: instance.as_str().to_owned(),
        caller: caller.to_owned(),
        op: op.to_owned(),
        calls,
        fuel,
    });
    Ok(Decision::event(
        fuel_stream(instance.as_str()),
        now_ms,
        event,
        FuelOutcome { entry, total },
    ))
}
