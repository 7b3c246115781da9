//! Registry events: what the registry projection records. Kinds start with `registry.`.
//!
//! Each event carries everything `apply` needs; an instance's creation time is its
//! `registry.instance_added` record's `at_ms` (the command's `now_ms`).

use serde::{Deserialize, Serialize};

use super::query::{InstanceKind, Knows, Status};
use crate::domain_events;

/// A new instance was registered, with every field resolved (defaults filled in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceAdded {
    /// Its handle.
    pub handle: String,
    /// Its domain.
    pub domain: String,
    /// Its identity key, if given.
    pub identity: Option<String>,
    /// Its store.
    pub store: String,
    /// The tree deployed into it, if given.
    pub tree: Option<String>,
    /// Where that tree came from, if given.
    pub source: Option<String>,
    /// Whom it knows.
    pub knows: Knows,
    /// Whether it is served.
    pub status: Status,
    /// Agent or mailbox.
    pub kind: InstanceKind,
    /// A mailbox's owner, if given.
    pub owner: Option<String>,
    /// Overlay names routed to it.
    pub topics: Vec<String>,
}

/// Fields of an existing instance changed. `None`: unchanged; for the optional fields,
/// `Some(None)` clears the field. Only fields whose value differs are present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceUpdated {
    /// The instance.
    pub handle: String,
    /// The new domain.
    pub domain: Option<String>,
    /// The new identity, or cleared.
    pub identity: Option<Option<String>>,
    /// The new store.
    pub store: Option<String>,
    /// The new tree, or cleared.
    pub tree: Option<Option<String>>,
    /// The new source, or cleared.
    pub source: Option<Option<String>>,
    /// The new roster.
    pub knows: Option<Knows>,
    /// The new status.
    pub status: Option<Status>,
    /// The new kind.
    pub kind: Option<InstanceKind>,
    /// The new owner, or cleared.
    pub owner: Option<Option<String>>,
    /// The new topics.
    pub topics: Option<Vec<String>>,
}

impl InstanceUpdated {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
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
        } = self;
        domain.is_none()
            && identity.is_none()
            && store.is_none()
            && tree.is_none()
            && source.is_none()
            && knows.is_none()
            && status.is_none()
            && kind.is_none()
            && owner.is_none()
            && topics.is_none()
    }
}

/// An instance was enabled or disabled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChanged {
    /// The instance.
    pub handle: String,
    /// Its status now.
    pub status: Status,
}

/// An instance's roster was replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnowsChanged {
    /// The instance.
    pub handle: String,
    /// Whom it knows now (normalized).
    pub knows: Knows,
}

/// An instance's overlay names were replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicsChanged {
    /// The instance.
    pub handle: String,
    /// Its topics now; empty: none.
    pub topics: Vec<String>,
}

/// An instance was removed from the registry (its store and its fuel ledger stay).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceRemoved {
    /// The instance.
    pub handle: String,
}

/// A host setting was given a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingSet {
    /// The setting.
    pub key: String,
    /// Its value now.
    pub value: String,
}

/// Calls on an instance were charged to the fuel ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FuelCharged {
    /// The instance called.
    pub instance: String,
    /// Who called (hex identity), or empty for nobody known.
    pub caller: String,
    /// The op (the route).
    pub op: String,
    /// How many calls this charge counts.
    pub calls: u64,
    /// The fuel they cost.
    pub fuel: u64,
}

domain_events! {
    /// Every registry event.
    pub enum RegistryEvent {
        /// `registry.instance_added`
        InstanceAdded(InstanceAdded) = INSTANCE_ADDED = "registry.instance_added", schema 1;
        /// `registry.instance_updated`
        InstanceUpdated(InstanceUpdated) = INSTANCE_UPDATED = "registry.instance_updated", schema 1;
        /// `registry.status_changed`
        StatusChanged(StatusChanged) = STATUS_CHANGED = "registry.status_changed", schema 1;
        /// `registry.knows_changed`
        KnowsChanged(KnowsChanged) = KNOWS_CHANGED = "registry.knows_changed", schema 1;
        /// `registry.topics_changed`
        TopicsChanged(TopicsChanged) = TOPICS_CHANGED = "registry.topics_changed", schema 1;
        /// `registry.instance_removed`
        InstanceRemoved(InstanceRemoved) = INSTANCE_REMOVED = "registry.instance_removed", schema 1;
        /// `registry.setting_set`
        SettingSet(SettingSet) = SETTING_SET = "registry.setting_set", schema 1;
        /// `registry.fuel_charged`
        FuelCharged(FuelCharged) = FUEL_CHARGED = "registry.fuel_charged", schema 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::DomainEvent;

    /// The payload bytes `schema/EVENTS.md` describes, for one event of each shape.
    #[test]
    fn payloads_are_encoded_as_the_schema_describes() {
        let status = RegistryEvent::StatusChanged(StatusChanged {
            handle: "a".into(),
            status: Status::Disabled,
        });
        assert_eq!(status.payload(), [1, 0, 0, 0, 0, 0, 0, 0, b'a', 1, 0, 0, 0]);
        let knows = RegistryEvent::KnowsChanged(KnowsChanged {
            handle: "a".into(),
            knows: Knows::All,
        });
        assert_eq!(knows.payload(), [1, 0, 0, 0, 0, 0, 0, 0, b'a', 1, 0, 0, 0]);
        let roster = RegistryEvent::KnowsChanged(KnowsChanged {
            handle: "a".into(),
            knows: Knows::Handles(vec!["b".into()]),
        });
        let mut expected = vec![1, 0, 0, 0, 0, 0, 0, 0, b'a', 0, 0, 0, 0];
        expected.extend([1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'b']);
        assert_eq!(roster.payload(), expected);
        let cleared = RegistryEvent::InstanceUpdated(InstanceUpdated {
            handle: "a".into(),
            identity: Some(None),
            ..InstanceUpdated::default()
        });
        let mut expected = vec![1, 0, 0, 0, 0, 0, 0, 0, b'a'];
        // domain None, identity Some(None), then eight more `None`s.
        expected.extend([0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(cleared.payload(), expected);
    }
}
