//! The model's registry: settings, the fuel ledger by (instance, caller, op) and instances
//! by handle, kept in the [`Model`]'s `BTreeMap`s. It predicts:
//! - settings: set (with the previous value), unchanged when the value is the same (nothing
//!   appended), an empty key refused, and the setting streams' records;
//! - fuel: one call and its fuel added to the (instance, caller, op) row and so to the
//!   instance's total, the row's `updated_at_ms` the command's clock, an instance outside
//!   the handle grammar (hostname label or token id) or an empty op refused as invalid, and
//!   the fuel streams' records;
//! - instances: upsert (a new handle needs a non-empty store and gets the defaults — domain
//!   `localhost`, enabled, agent, knowing nobody, no topics, created at the command's clock;
//!   an existing one changes only the fields given, an empty identity or owner clearing it;
//!   `Unchanged` with nothing appended when nothing would change), set status, roster
//!   (normalized: `*` is everyone, else repeats dropped, first occurrence first) and topics
//!   (`Updated`, `Unchanged`, or `Missing` for a handle no instance has), remove (`Removed`
//!   with the instance as it was, or `Missing`), a handle outside the grammar and an empty
//!   domain or store given refused as invalid, the instance as it then stands, and the
//!   instance streams' records.
//!
//! It never calls the registry's `decide` or `apply` (only its stream names, and
//! `Handle::parse` to build a handle it has already judged valid): a rule the store gets
//! wrong must not be wrong here the same way.

use super::{Model, Op, Outcome, failed, pick};
use crate::registry::decide::{
    ChargeFuel, FuelOutcome, InstanceCommand, InstanceFields, InstanceOutcome, RecordFuel,
    SetSetting, SettingOutcome, fuel_stream, instance_stream, setting_stream,
};
use crate::registry::handle::Handle;
use crate::registry::query::{FuelEntry, FuelTotal, Instance, InstanceKind, Knows, Status};
use crate::store::WriteSession;

/// Registry setting keys: none of them is one [`super::random_domain_command`] sets.
const SETTING_KEYS: [&str; 3] = ["model/a", "model/b", ""];
/// Registry setting values.
const SETTING_VALUES: [&str; 2] = ["on", "off"];
/// A token id: 64 lower-case hex digits, `_`, a decimal index.
const TOKEN_ID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff_7";
/// Instances charged fuel: valid handles none of which [`super::random_domain_command`] uses, then
/// handles outside the grammar.
const FUEL_INSTANCES: [&str; 7] = ["m-1", "m2", TOKEN_ID, "-m", "m3-", "M4", ""];
/// Fuel callers (empty: nobody known).
const FUEL_CALLERS: [&str; 2] = ["aa", ""];
/// Fuel ops (the empty one is invalid).
const FUEL_OPS: [&str; 3] = ["op-x", "op-y", ""];
/// Instance handles: two valid ones none of which [`super::random_domain_command`] uses, then two
/// outside the grammar.
const INSTANCE_HANDLES: [&str; 4] = ["m-a", "m-b", "m_a", ""];
/// Instance stores (the empty one is invalid).
const INSTANCE_STORES: [&str; 3] = ["/m/1", "/m/2", ""];
/// Instance domains (the empty one is invalid).
const INSTANCE_DOMAINS: [&str; 3] = ["localhost", "example.org", ""];
/// Identities and owners (the empty one clears the field).
const INSTANCE_IDS: [&str; 3] = ["aa", "bb", ""];
/// Rosters as given, before normalization.
const ROSTERS: [&[&str]; 5] = [&[], &["m-a"], &["m-b", "m-a", "m-b"], &["m-a", "*"], &["*"]];
/// Topic lists.
const TOPICS: [&[&str]; 3] = [&[], &["t1"], &["t1", "t2"]];

/// The fuel command `op` states at `now_ms`, if it is one.
pub(super) fn fuel_command(op: &Op, now_ms: u64) -> Option<RecordFuel> {
    let Op::Fuel {
        instance,
        caller,
        op,
        fuel,
    } = *op
    else {
        return None;
    };
    Some(RecordFuel {
        instance: pick(&FUEL_INSTANCES, instance).into(),
        caller: pick(&FUEL_CALLERS, caller).into(),
        op: pick(&FUEL_OPS, op).into(),
        fuel: u64::from(fuel),
        now_ms,
    })
}

/// Pre-summed calls of a charge: none, one, several, and so many that a second overflows.
const CHARGE_CALLS: [u64; 4] = [0, 1, 7, u64::MAX];

/// The pre-summed fuel charge `op` states at `now_ms`, if it is one.
pub(super) fn charge_command(op: &Op, now_ms: u64) -> Option<ChargeFuel> {
    let Op::Charge {
        instance,
        caller,
        op,
        calls,
        fuel,
    } = *op
    else {
        return None;
    };
    Some(ChargeFuel {
        instance: pick(&FUEL_INSTANCES, instance).into(),
        caller: pick(&FUEL_CALLERS, caller).into(),
        op: pick(&FUEL_OPS, op).into(),
        calls: CHARGE_CALLS[usize::from(calls) % CHARGE_CALLS.len()],
        fuel: u64::from(fuel),
        now_ms,
    })
}

/// Runs the pre-summed charge in `session`, and states what it did.
pub(super) fn charge_on_store(command: &ChargeFuel, session: &mut WriteSession<'_>) -> Outcome {
    match session.execute(command) {
        Ok(outcome) => Outcome::Fuel(outcome),
        Err(error) => failed(error),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The instance command `op` states at `now_ms`, if it is one.
pub(super) fn instance_command(op: &Op, now_ms: u64) -> Option<InstanceCommand> {
    let Op::Instance {
        action,
        handle,
        store,
        domain,
        identity,
        owner,
        disabled,
        mailbox,
        knows,
        topics,
    } = *op
    else {
        return None;
    };
    let handle = pick(&INSTANCE_HANDLES, handle).to_owned();
    let status = |disabled: bool| {
        if disabled {
            Status::Disabled
        } else {
            Status::Enabled
        }
    };
    let roster = |knows: u8| Knows::Handles(strings(ROSTERS[usize::from(knows) % ROSTERS.len()]));
    let topics = topics.map(|t| strings(TOPICS[usize::from(t) % TOPICS.len()]));
    Some(match action % 6 {
        0 | 1 => InstanceCommand::Upsert {
            handle,
            fields: InstanceFields {
                domain: domain.map(|d| pick(&INSTANCE_DOMAINS, d).to_owned()),
                identity: identity.map(|i| pick(&INSTANCE_IDS, i).to_owned()),
                store: store.map(|s| pick(&INSTANCE_STORES, s).to_owned()),
                knows: knows.map(roster),
                status: disabled.map(status),
                kind: mailbox.map(|m| {
                    if m {
                        InstanceKind::Mailbox
                    } else {
                        InstanceKind::Agent
                    }
                }),
                owner: owner.map(|o| pick(&INSTANCE_IDS, o).to_owned()),
                topics,
                ..InstanceFields::default()
            },
            now_ms,
        },
        2 => InstanceCommand::SetStatus {
            handle,
            status: status(disabled.unwrap_or(false)),
            now_ms,
        },
        3 => InstanceCommand::SetKnows {
            handle,
            knows: roster(knows.unwrap_or(0)),
            now_ms,
        },
        4 => InstanceCommand::SetTopics {
            handle,
            topics: topics.unwrap_or_default(),
            now_ms,
        },
        _ => InstanceCommand::Remove { handle, now_ms },
    })
}

/// The setting command `op` states at `now_ms`, if it is one.
pub(super) fn setting_command(op: &Op, now_ms: u64) -> Option<SetSetting> {
    let Op::SetSetting { key, value } = *op else {
        return None;
    };
    Some(SetSetting {
        key: pick(&SETTING_KEYS, key).into(),
        value: pick(&SETTING_VALUES, value).into(),
        now_ms,
    })
}

/// Runs the setting command in `session`, and states what it did.
pub(super) fn setting_on_store(command: &SetSetting, session: &mut WriteSession<'_>) -> Outcome {
    match session.execute(command) {
        Ok(SettingOutcome::Set { previous }) => Outcome::SettingSet(previous),
        Ok(SettingOutcome::Unchanged) => Outcome::SettingUnchanged,
        Err(error) => failed(error),
    }
}

/// Runs the fuel command in `session`, and states what it did.
pub(super) fn fuel_on_store(command: &RecordFuel, session: &mut WriteSession<'_>) -> Outcome {
    match session.execute(command) {
        Ok(outcome) => Outcome::Fuel(outcome),
        Err(error) => failed(error),
    }
}

/// Runs the instance command in `session`, and states what it did.
pub(super) fn instance_on_store(
    command: &InstanceCommand,
    session: &mut WriteSession<'_>,
) -> Outcome {
    match session.execute(command) {
        Ok(outcome) => Outcome::Instance(Box::new(outcome)),
        Err(error) => failed(error),
    }
}

impl Model {
    /// What the setting command must do, applied to the model.
    pub(super) fn setting(&mut self, command: &SetSetting) -> Outcome {
        let (key, value) = (command.key.as_str(), command.value.as_str());
        if key.is_empty() {
            return Outcome::Invalid;
        }
        let previous = self.settings.get(key).cloned();
        if previous.as_deref() == Some(value) {
            return Outcome::SettingUnchanged;
        }
        self.settings.insert(key.to_owned(), value.to_owned());
        self.write(&setting_stream(key), 1);
        Outcome::SettingSet(previous)
    }

    /// What the fuel command must do, applied to the model: a charge of one call.
    pub(super) fn fuel(&mut self, command: RecordFuel) -> Outcome {
        let RecordFuel {
            instance,
            caller,
            op,
            fuel,
            now_ms,
        } = command;
        self.charge(ChargeFuel {
            instance,
            caller,
            op,
            calls: 1,
            fuel,
            now_ms,
        })
    }

    /// What the pre-summed charge must do, applied to the model: the reference's
    /// `charge(rows)` for one row, its calls and fuel added as given (0 calls too); a sum past
    /// 64 bits is invalid.
    pub(super) fn charge(&mut self, command: ChargeFuel) -> Outcome {
        let ChargeFuel {
            instance,
            caller,
            op,
            calls,
            fuel,
            now_ms,
        } = command;
        if !is_handle(&instance) || op.is_empty() {
            return Outcome::Invalid;
        }
        let row = (instance.clone(), caller.clone(), op.clone());
        let (calls_before, spent) = self.fuel.get(&row).copied().unwrap_or_default();
        let (Some(calls_after), Some(spent_after)) =
            (calls_before.checked_add(calls), spent.checked_add(fuel))
        else {
            return Outcome::Invalid;
        };
        let mut total = FuelTotal::default();
        for (_, &(calls, fuel)) in self.fuel.iter().filter(|(row, _)| row.0 == instance) {
            total.calls += calls;
            total.fuel += fuel;
        }
        let (Some(total_calls), Some(total_fuel)) =
            (total.calls.checked_add(calls), total.fuel.checked_add(fuel))
        else {
            return Outcome::Invalid;
        };
        let total = FuelTotal {
            calls: total_calls,
            fuel: total_fuel,
        };
        self.fuel.insert(row, (calls_after, spent_after));
        self.write(&fuel_stream(&instance), 1);
        Outcome::Fuel(FuelOutcome {
            entry: FuelEntry {
                instance,
                caller,
                op,
                calls: calls_after,
                fuel: spent_after,
                updated_at_ms: now_ms,
            },
            total,
        })
    }

    /// What the instance command must do, applied to the model.
    pub(super) fn instance(&mut self, command: InstanceCommand) -> Outcome {
        let (handle, now_ms) = match &command {
            InstanceCommand::Upsert { handle, now_ms, .. }
            | InstanceCommand::SetStatus { handle, now_ms, .. }
            | InstanceCommand::SetKnows { handle, now_ms, .. }
            | InstanceCommand::SetTopics { handle, now_ms, .. }
            | InstanceCommand::Remove { handle, now_ms } => (handle.clone(), *now_ms),
        };
        if !is_handle(&handle) {
            return Outcome::Invalid;
        }
        let current = self.instances.get(&handle).cloned();
        // An empty text field given is the clearing of it.
        let text = |given: &String| (!given.is_empty()).then(|| given.clone());
        let wanted = match command {
            InstanceCommand::Upsert { fields, .. } => {
                if fields.domain.as_deref() == Some("") || fields.store.as_deref() == Some("") {
                    return Outcome::Invalid;
                }
                let mut instance = match current.clone() {
                    Some(instance) => instance,
                    None => {
                        let Some(store) = fields.store.clone() else {
                            return Outcome::Invalid;
                        };
                        let Ok(handle) = Handle::parse("handle", &handle) else {
                            return Outcome::Failed(format!("model: {handle:?} is a handle"));
                        };
                        Instance {
                            handle,
                            domain: "localhost".into(),
                            identity: None,
                            store,
                            tree: None,
                            source: None,
                            knows: Knows::Handles(Vec::new()),
                            status: Status::Enabled,
                            kind: InstanceKind::Agent,
                            owner: None,
                            topics: Vec::new(),
                            created_at_ms: now_ms,
                        }
                    }
                };
                if let Some(domain) = fields.domain {
                    instance.domain = domain;
                }
                if let Some(identity) = &fields.identity {
                    instance.identity = text(identity);
                }
                if let Some(store) = fields.store {
                    instance.store = store;
                }
                if let Some(tree) = &fields.tree {
                    instance.tree = text(tree);
                }
                if let Some(source) = &fields.source {
                    instance.source = text(source);
                }
                if let Some(knows) = &fields.knows {
                    instance.knows = roster(knows);
                }
                if let Some(status) = fields.status {
                    instance.status = status;
                }
                if let Some(kind) = fields.kind {
                    instance.kind = kind;
                }
                if let Some(owner) = &fields.owner {
                    instance.owner = text(owner);
                }
                if let Some(topics) = fields.topics {
                    instance.topics = topics;
                }
                instance
            }
            InstanceCommand::Remove { .. } => {
                let Some(instance) = self.instances.remove(&handle) else {
                    return Outcome::Instance(Box::new(InstanceOutcome::Missing));
                };
                self.write(&instance_stream(&handle), 1);
                return Outcome::Instance(Box::new(InstanceOutcome::Removed { instance }));
            }
            other => {
                let Some(mut instance) = current.clone() else {
                    return Outcome::Instance(Box::new(InstanceOutcome::Missing));
                };
                match other {
                    InstanceCommand::SetStatus { status, .. } => instance.status = status,
                    InstanceCommand::SetKnows { knows, .. } => instance.knows = roster(&knows),
                    InstanceCommand::SetTopics { topics, .. } => instance.topics = topics,
                    _ => unreachable!("upsert and remove are decided above"),
                }
                instance
            }
        };
        let outcome = match current {
            Some(current) if current == wanted => {
                return Outcome::Instance(Box::new(InstanceOutcome::Unchanged {
                    instance: current,
                }));
            }
            Some(_) => InstanceOutcome::Updated {
                instance: wanted.clone(),
            },
            None => InstanceOutcome::Added {
                instance: wanted.clone(),
            },
        };
        self.instances.insert(handle.clone(), wanted);
        self.write(&instance_stream(&handle), 1);
        Outcome::Instance(Box::new(outcome))
    }
}

/// Whether `handle` is a hostname label (1 to 63 of `a-z`, `0-9`, `-`, no `-` at either end)
/// or a token id (64 lower-case hex digits, `_`, 1 to 20 decimal digits).
fn is_handle(handle: &str) -> bool {
    let label = (1..=63).contains(&handle.len())
        && !handle.starts_with('-')
        && !handle.ends_with('-')
        && handle
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let token_id = handle.split_once('_').is_some_and(|(txid, index)| {
        txid.len() == 64
            && txid
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && (1..=20).contains(&index.len())
            && index.bytes().all(|b| b.is_ascii_digit())
    });
    label || token_id
}

/// A roster in its one form: everyone if it names `*`, else its handles without repeats,
/// each where it first occurs.
fn roster(knows: &Knows) -> Knows {
    let Knows::Handles(handles) = knows else {
        return Knows::All;
    };
    if handles.iter().any(|h| h == "*") {
        return Knows::All;
    }
    let mut kept: Vec<String> = Vec::new();
    for handle in handles {
        if !kept.contains(handle) {
            kept.push(handle.clone());
        }
    }
    Knows::Handles(kept)
}
