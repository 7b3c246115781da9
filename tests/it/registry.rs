//! Tests of the registry projection's rules.

use annals::registry::{self, HOST_SKEIN_SETTING};
use annals::registry::{
    FuelTotal, Instance, InstanceCommand, InstanceFields, InstanceKind, InstanceOutcome, Knows,
    RecordFuel, SetSetting, SettingOutcome, Status,
};
use annals::registry::{fuel_stream, instance_stream, setting_stream};
use annals::testing::setup::ExpectDone;
use annals::{Direction, Error, Position, Result, Store, error::StoreError, log::StreamVersion};

use crate::common::store;

const T0: u64 = 1_700_000_000_000;
const OWNER: &str = "02aa";
const IDENTITY: &str = "03bb";

fn token_handle(index: u64) -> String {
    format!("{}_{index}", "0123456789abcdef".repeat(4))
}

fn with_store(path: &str) -> InstanceFields {
    InstanceFields {
        store: Some(path.to_owned()),
        ..InstanceFields::default()
    }
}

fn upsert(store: &Store, handle: &str, fields: InstanceFields, now_ms: u64) -> Result<Instance> {
    match store.execute(&InstanceCommand::Upsert {
        handle: handle.to_owned(),
        fields,
        now_ms,
    })? {
        InstanceOutcome::Added { instance }
        | InstanceOutcome::Updated { instance }
        | InstanceOutcome::Unchanged { instance } => Ok(instance),
        other => panic!("an upsert answered {other:?}"),
    }
}

/// An agent with an identity.
fn agent(store: &Store, handle: &str, identity: &str, now_ms: u64) -> Result<Instance> {
    let fields = InstanceFields {
        identity: Some(identity.to_owned()),
        ..with_store(&format!("/var/{handle}.db"))
    };
    upsert(store, handle, fields, now_ms)
}

/// A mailbox instance for `owner`.
fn mailbox(store: &Store, handle: &str, owner: &str, now_ms: u64) -> Result<Instance> {
    let fields = InstanceFields {
        kind: Some(InstanceKind::Mailbox),
        owner: Some(owner.to_owned()),
        ..with_store(&format!("/var/{handle}.db"))
    };
    upsert(store, handle, fields, now_ms)
}

fn instance(store: &Store, handle: &str) -> Result<Option<Instance>> {
    registry::instance(&store.snapshot()?.state(), handle)
}

fn set_status(store: &Store, handle: &str, status: Status) -> Result<InstanceOutcome> {
    store.execute(&InstanceCommand::SetStatus {
        handle: handle.to_owned(),
        status,
        now_ms: T0 + 500,
    })
}

fn charge(store: &Store, instance: &str, caller: &str, op: &str, fuel: u64) -> Result<()> {
    store
        .execute(&RecordFuel {
            instance: instance.to_owned(),
            caller: caller.to_owned(),
            op: op.to_owned(),
            fuel,
            now_ms: T0.saturating_add(fuel),
        })?
        .expect_done();
    Ok(())
}

fn head(store: &Store) -> Result<u64> {
    Ok(store.snapshot()?.head()?.next.0)
}

fn kinds_of(store: &Store, stream: &str) -> Result<Vec<String>> {
    Ok(store
        .snapshot()?
        .read_stream(stream, StreamVersion(0), Direction::Forward, usize::MAX)?
        .into_iter()
        .map(|record| record.kind)
        .collect())
}

fn assert_invalid(result: Result<impl std::fmt::Debug>, expected_field: &str) {
    match result {
        Err(Error::InvalidCommand { field, .. }) => assert_eq!(field, expected_field),
        other => panic!("expected an invalid {expected_field}, got {other:?}"),
    }
}

#[test]
fn hostname_labels_and_token_ids_are_valid_handles() -> Result<()> {
    let (_dir, store) = store();
    let long = "a".repeat(63);
    let token = token_handle(7);
    for handle in ["a", "7", "martha", "agent-7", "a--b", long.as_str(), &token] {
        let added = upsert(&store, handle, with_store("/var/x.db"), T0)?;
        assert_eq!(added.handle.as_str(), handle);
    }
    assert!(
        instance(&store, &token)?.is_some_and(|i| i.handle.is_path_only()),
        "a token id is path-only"
    );
    assert!(!instance(&store, "martha")?.is_some_and(|i| i.handle.is_path_only()));
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn an_invalid_handle_is_an_invalid_command_and_appends_nothing() -> Result<()> {
    let (_dir, store) = store();
    let too_long = "a".repeat(64);
    let upper_token = token_handle(1).to_uppercase();
    let no_index = format!("{}_", "ab".repeat(32));
    let long_index = format!("{}_{}", "ab".repeat(32), "1".repeat(21));
    for handle in [
        "",
        "-a",
        "a-",
        "Martha",
        "a.b",
        "a_b",
        "a/b",
        too_long.as_str(),
        &upper_token,
        &no_index,
        &long_index,
    ] {
        assert_invalid(
            store.execute(&InstanceCommand::Upsert {
                handle: handle.to_owned(),
                fields: with_store("/var/x.db"),
                now_ms: T0,
            }),
            "handle",
        );
    }
    assert_invalid(set_status(&store, "Bad", Status::Disabled), "handle");
    assert_invalid(
        store.execute(&InstanceCommand::Remove {
            handle: "bad handle".into(),
            now_ms: T0,
        }),
        "handle",
    );
    assert_eq!(head(&store)?, 0);
    Ok(())
}

#[test]
fn a_new_instance_without_a_store_is_an_invalid_command() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        identity: Some(IDENTITY.into()),
        ..InstanceFields::default()
    };
    assert_invalid(
        store.execute(&InstanceCommand::Upsert {
            handle: "martha".into(),
            fields,
            now_ms: T0,
        }),
        "store",
    );
    assert_eq!(instance(&store, "martha")?, None);
    assert_eq!(head(&store)?, 0);
    Ok(())
}

#[test]
fn an_empty_store_or_domain_is_an_invalid_command() -> Result<()> {
    let (_dir, store) = store();
    assert_invalid(upsert(&store, "martha", with_store(""), T0), "store");
    upsert(&store, "martha", with_store("/var/martha.db"), T0)?;
    assert_invalid(upsert(&store, "martha", with_store(""), T0 + 1), "store");
    let empty_domain = InstanceFields {
        domain: Some(String::new()),
        ..InstanceFields::default()
    };
    assert_invalid(upsert(&store, "martha", empty_domain, T0 + 1), "domain");
    assert_eq!(head(&store)?, 1);
    Ok(())
}

#[test]
fn a_new_instance_gets_the_defaults_and_is_created_at_now() -> Result<()> {
    let (_dir, store) = store();
    let added = store.execute(&InstanceCommand::Upsert {
        handle: "martha".into(),
        fields: with_store("/var/martha.db"),
        now_ms: T0,
    })?;
    let expected = Instance {
        handle: annals::registry::Handle::parse("handle", "martha")?,
        domain: "localhost".into(),
        identity: None,
        store: "/var/martha.db".into(),
        tree: None,
        source: None,
        knows: Knows::nobody(),
        status: Status::Enabled,
        kind: InstanceKind::Agent,
        owner: None,
        topics: Vec::new(),
        created_at_ms: T0,
    };
    assert_eq!(
        added,
        InstanceOutcome::Added {
            instance: expected.clone()
        }
    );
    assert_eq!(instance(&store, "martha")?, Some(expected));
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn an_upsert_of_an_existing_instance_changes_only_the_given_fields() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        domain: Some("example.org".into()),
        identity: Some(IDENTITY.into()),
        tree: Some("bafy-tree-1".into()),
        source: Some("/src/martha".into()),
        topics: Some(vec!["tm_ship".into()]),
        ..with_store("/var/martha.db")
    };
    let before = upsert(&store, "martha", fields, T0)?;
    let outcome = store.execute(&InstanceCommand::Upsert {
        handle: "martha".into(),
        fields: InstanceFields {
            tree: Some("bafy-tree-2".into()),
            status: Some(Status::Disabled),
            ..InstanceFields::default()
        },
        now_ms: T0 + 1_000,
    })?;
    let expected = Instance {
        tree: Some("bafy-tree-2".into()),
        status: Status::Disabled,
        ..before
    };
    assert_eq!(
        outcome,
        InstanceOutcome::Updated {
            instance: expected.clone()
        }
    );
    assert_eq!(instance(&store, "martha")?, Some(expected));
    assert_eq!(
        kinds_of(&store, "registry/martha")?,
        ["registry.instance_added", "registry.instance_updated"]
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn updates_never_change_created_at() -> Result<()> {
    let (_dir, store) = store();
    upsert(&store, "martha", with_store("/var/a.db"), T0)?;
    upsert(&store, "martha", with_store("/var/b.db"), T0 + 5_000)?;
    set_status(&store, "martha", Status::Disabled)?.expect_done();
    let now = instance(&store, "martha")?;
    assert_eq!(now.as_ref().map(|i| i.created_at_ms), Some(T0));
    assert_eq!(now.map(|i| i.store), Some("/var/b.db".to_owned()));
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn an_upsert_that_changes_nothing_appends_nothing() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        identity: Some(IDENTITY.into()),
        knows: Some(Knows::from_handles(["bob", "alice"])),
        ..with_store("/var/martha.db")
    };
    let added = upsert(&store, "martha", fields.clone(), T0)?;
    let again = InstanceFields {
        knows: Some(Knows::Handles(vec![
            "bob".into(),
            "alice".into(),
            "bob".into(),
        ])),
        ..fields
    };
    let outcome = store.execute(&InstanceCommand::Upsert {
        handle: "martha".into(),
        fields: again,
        now_ms: T0 + 1,
    })?;
    assert_eq!(outcome, InstanceOutcome::Unchanged { instance: added });
    let no_fields = store.execute(&InstanceCommand::Upsert {
        handle: "martha".into(),
        fields: InstanceFields::default(),
        now_ms: T0 + 2,
    })?;
    assert!(matches!(no_fields, InstanceOutcome::Unchanged { .. }));
    assert_eq!(head(&store)?, 1);
    Ok(())
}

#[test]
fn an_empty_optional_text_field_clears_it() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        identity: Some(IDENTITY.into()),
        tree: Some("bafy-tree".into()),
        source: Some("/src".into()),
        owner: Some(OWNER.into()),
        ..with_store("/var/martha.db")
    };
    upsert(&store, "martha", fields, T0)?;
    let clear = InstanceFields {
        identity: Some(String::new()),
        tree: Some(String::new()),
        source: Some(String::new()),
        owner: Some(String::new()),
        ..InstanceFields::default()
    };
    let cleared = upsert(&store, "martha", clear, T0 + 1)?;
    assert_eq!(
        (
            cleared.identity,
            cleared.tree,
            cleared.source,
            cleared.owner
        ),
        (None, None, None, None)
    );
    let state = store.snapshot()?.state();
    assert_eq!(registry::by_identity(&state, IDENTITY)?, None);
    assert_eq!(
        registry::state_json(&state)?["by_identity"],
        serde_json::json!([])
    );
    assert_eq!(
        registry::state_json(&state)?["by_owner"],
        serde_json::json!([])
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn set_status_enables_and_disables() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let disabled = set_status(&store, "martha", Status::Disabled)?;
    assert!(
        matches!(disabled, InstanceOutcome::Updated { instance } if instance.status == Status::Disabled)
    );
    let again = set_status(&store, "martha", Status::Disabled)?;
    assert!(
        matches!(&again, InstanceOutcome::Unchanged { instance } if instance.status == Status::Disabled),
        "{again:?}"
    );
    let enabled = set_status(&store, "martha", Status::Enabled)?;
    assert!(matches!(enabled, InstanceOutcome::Updated { instance } if instance.is_enabled()));
    assert_eq!(
        kinds_of(&store, "registry/martha")?,
        [
            "registry.instance_added",
            "registry.status_changed",
            "registry.status_changed"
        ]
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn commands_on_a_missing_instance_answer_missing_and_append_nothing() -> Result<()> {
    let (_dir, store) = store();
    let commands = [
        InstanceCommand::SetStatus {
            handle: "ghost".into(),
            status: Status::Disabled,
            now_ms: T0,
        },
        InstanceCommand::SetKnows {
            handle: "ghost".into(),
            knows: Knows::All,
            now_ms: T0,
        },
        InstanceCommand::SetTopics {
            handle: "ghost".into(),
            topics: vec!["tm_x".into()],
            now_ms: T0,
        },
        InstanceCommand::Remove {
            handle: "ghost".into(),
            now_ms: T0,
        },
    ];
    for command in &commands {
        assert_eq!(store.execute(command)?, InstanceOutcome::Missing);
    }
    assert_eq!(head(&store)?, 0);
    Ok(())
}

#[test]
fn a_roster_with_a_star_knows_everyone_and_repeats_are_dropped() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let set = |knows: Knows| {
        store.execute(&InstanceCommand::SetKnows {
            handle: "martha".into(),
            knows,
            now_ms: T0 + 1,
        })
    };
    set(Knows::Handles(vec![
        "bob".into(),
        "alice".into(),
        "bob".into(),
    ]))?
    .expect_done();
    let knows = instance(&store, "martha")?.map(|i| i.knows);
    assert_eq!(
        knows,
        Some(Knows::Handles(vec!["bob".into(), "alice".into()]))
    );
    set(Knows::Handles(vec!["bob".into(), "*".into()]))?.expect_done();
    let knows = instance(&store, "martha")?.map(|i| i.knows);
    assert_eq!(knows, Some(Knows::All));
    assert!(knows.is_some_and(|k| k.includes("anyone")));
    set(Knows::Handles(Vec::new()))?.expect_done();
    assert_eq!(
        instance(&store, "martha")?.map(|i| i.knows),
        Some(Knows::nobody())
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn set_topics_replaces_them_and_empty_is_none() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let set = |topics: &[&str]| {
        store.execute(&InstanceCommand::SetTopics {
            handle: "martha".into(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            now_ms: T0 + 1,
        })
    };
    set(&["tm_ship", "ls_ship"])?.expect_done();
    assert_eq!(
        instance(&store, "martha")?.map(|i| i.topics),
        Some(vec!["tm_ship".to_owned(), "ls_ship".to_owned()])
    );
    assert!(matches!(
        set(&["tm_ship", "ls_ship"])?,
        InstanceOutcome::Unchanged { .. }
    ));
    set(&[])?.expect_done();
    assert_eq!(instance(&store, "martha")?.map(|i| i.topics), Some(vec![]));
    assert_eq!(head(&store)?, 3);
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn remove_drops_the_instance_and_its_index_entries() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    mailbox(&store, "box", OWNER, T0 + 1)?;
    for handle in ["martha", "box"] {
        let removed = store.execute(&InstanceCommand::Remove {
            handle: handle.into(),
            now_ms: T0 + 2,
        })?;
        assert!(
            matches!(removed, InstanceOutcome::Removed { instance } if instance.handle.as_str() == handle)
        );
    }
    let state = store.snapshot()?.state();
    assert_eq!(registry::instance(&state, "martha")?, None);
    assert_eq!(registry::by_identity(&state, IDENTITY)?, None);
    assert_eq!(registry::mailbox_of(&state, OWNER)?, None);
    assert_eq!(registry::instances(&state, None, usize::MAX)?, vec![]);
    let json = registry::state_json(&state)?;
    for table in ["instances", "by_identity", "by_owner", "by_created"] {
        assert_eq!(json[table], serde_json::json!([]), "{table}");
    }
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn a_removed_handle_can_be_registered_again_with_a_new_creation_time() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    store
        .execute(&InstanceCommand::Remove {
            handle: "martha".into(),
            now_ms: T0 + 1,
        })?
        .expect_done();
    let again = agent(&store, "martha", IDENTITY, T0 + 2)?;
    assert_eq!(again.created_at_ms, T0 + 2);
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn by_identity_finds_only_an_enabled_instance() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let state = store.snapshot()?.state();
    assert_eq!(
        registry::by_identity(&state, IDENTITY)?.map(|i| i.handle.to_string()),
        Some("martha".into())
    );
    assert_eq!(registry::by_identity(&state, "03cc")?, None);
    drop(state);
    set_status(&store, "martha", Status::Disabled)?.expect_done();
    assert_eq!(
        registry::by_identity(&store.snapshot()?.state(), IDENTITY)?,
        None
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn by_identity_answers_the_first_enabled_handle_when_several_share_it() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "zed", IDENTITY, T0)?;
    agent(&store, "bob", IDENTITY, T0 + 1)?;
    agent(&store, "carol", IDENTITY, T0 + 2)?;
    set_status(&store, "bob", Status::Disabled)?.expect_done();
    let found = registry::by_identity(&store.snapshot()?.state(), IDENTITY)?;
    assert_eq!(found.map(|i| i.handle.to_string()), Some("carol".into()));
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn an_identity_change_moves_the_identity_index() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let change = InstanceFields {
        identity: Some("03cc".into()),
        ..InstanceFields::default()
    };
    upsert(&store, "martha", change, T0 + 1)?;
    let state = store.snapshot()?.state();
    assert_eq!(registry::by_identity(&state, IDENTITY)?, None);
    assert_eq!(
        registry::by_identity(&state, "03cc")?.map(|i| i.handle.to_string()),
        Some("martha".into())
    );
    assert_eq!(
        registry::state_json(&state)?["by_identity"],
        serde_json::json!([{ "identity": "03cc", "handle": "martha" }])
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn identity_of_an_agent_is_its_own_identity() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    let state = store.snapshot()?.state();
    assert_eq!(
        registry::identity_of(&state, "martha", "localhost")?,
        Some(IDENTITY.into())
    );
    Ok(())
}

#[test]
fn identity_of_a_mailbox_is_its_owner() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        identity: Some(IDENTITY.into()),
        kind: Some(InstanceKind::Mailbox),
        owner: Some(OWNER.into()),
        ..with_store("/var/box.db")
    };
    upsert(&store, "box", fields, T0)?;
    let state = store.snapshot()?.state();
    assert_eq!(
        registry::identity_of(&state, "box", "localhost")?,
        Some(OWNER.into())
    );
    Ok(())
}

#[test]
fn identity_of_needs_the_domain_to_match() -> Result<()> {
    let (_dir, store) = store();
    let fields = InstanceFields {
        domain: Some("example.org".into()),
        identity: Some(IDENTITY.into()),
        ..with_store("/var/martha.db")
    };
    upsert(&store, "martha", fields, T0)?;
    let state = store.snapshot()?.state();
    assert_eq!(registry::identity_of(&state, "martha", "localhost")?, None);
    assert_eq!(
        registry::identity_of(&state, "nobody", "example.org")?,
        None
    );
    assert_eq!(
        registry::identity_of(&state, "martha", "example.org")?,
        Some(IDENTITY.into())
    );
    Ok(())
}

#[test]
fn identity_of_ignores_the_status() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    set_status(&store, "martha", Status::Disabled)?.expect_done();
    assert_eq!(
        registry::identity_of(&store.snapshot()?.state(), "martha", "localhost")?,
        Some(IDENTITY.into())
    );
    Ok(())
}

#[test]
fn mailbox_of_an_owner_is_its_enabled_mailbox_instance() -> Result<()> {
    let (_dir, store) = store();
    // An agent that records an owner is not a mailbox.
    let agent_with_owner = InstanceFields {
        owner: Some(OWNER.into()),
        ..with_store("/var/agent.db")
    };
    upsert(&store, "agent", agent_with_owner, T0)?;
    assert_eq!(
        registry::mailbox_of(&store.snapshot()?.state(), OWNER)?,
        None
    );
    mailbox(&store, "box", OWNER, T0 + 1)?;
    assert_eq!(
        registry::mailbox_of(&store.snapshot()?.state(), OWNER)?.map(|i| i.handle.to_string()),
        Some("box".into())
    );
    set_status(&store, "box", Status::Disabled)?.expect_done();
    assert_eq!(
        registry::mailbox_of(&store.snapshot()?.state(), OWNER)?,
        None
    );
    assert_eq!(
        registry::mailbox_of(&store.snapshot()?.state(), "02ff")?,
        None
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn an_owner_change_moves_the_mailbox() -> Result<()> {
    let (_dir, store) = store();
    mailbox(&store, "box", OWNER, T0)?;
    let change = InstanceFields {
        owner: Some("02ff".into()),
        ..InstanceFields::default()
    };
    upsert(&store, "box", change, T0 + 1)?;
    let state = store.snapshot()?.state();
    assert_eq!(registry::mailbox_of(&state, OWNER)?, None);
    assert!(registry::mailbox_of(&state, "02ff")?.is_some());
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn instances_are_listed_oldest_first_and_filtered_by_status() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "carol", "03c", T0 + 2)?;
    agent(&store, "bob", "03b", T0)?;
    agent(&store, "alice", "03a", T0 + 2)?;
    set_status(&store, "bob", Status::Disabled)?.expect_done();
    let handles = |status, limit| -> Result<Vec<String>> {
        Ok(
            registry::instances(&store.snapshot()?.state(), status, limit)?
                .into_iter()
                .map(|i| i.handle.to_string())
                .collect(),
        )
    };
    assert_eq!(handles(None, usize::MAX)?, ["bob", "alice", "carol"]);
    assert_eq!(
        handles(Some(Status::Enabled), usize::MAX)?,
        ["alice", "carol"]
    );
    assert_eq!(handles(Some(Status::Disabled), usize::MAX)?, ["bob"]);
    assert_eq!(handles(Some(Status::Enabled), 1)?, ["alice"]);
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn a_setting_is_set_and_overwritten() -> Result<()> {
    let (_dir, store) = store();
    let set = |value: &str, now_ms| {
        store.execute(&SetSetting {
            key: "image".into(),
            value: value.into(),
            now_ms,
        })
    };
    assert_eq!(set("tree-1", T0)?, SettingOutcome::Set { previous: None });
    assert_eq!(
        set("tree-2", T0 + 1)?,
        SettingOutcome::Set {
            previous: Some("tree-1".into())
        }
    );
    assert_eq!(
        registry::setting(&store.snapshot()?.state(), "image")?,
        Some("tree-2".into())
    );
    assert_eq!(
        registry::setting(&store.snapshot()?.state(), "unset")?,
        None
    );
    assert_eq!(
        kinds_of(&store, &setting_stream("image"))?,
        ["registry.setting_set", "registry.setting_set"]
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn setting_the_same_value_appends_nothing() -> Result<()> {
    let (_dir, store) = store();
    let set = SetSetting {
        key: "image".into(),
        value: "tree-1".into(),
        now_ms: T0,
    };
    store.execute(&set)?.expect_done();
    assert_eq!(store.execute(&set)?, SettingOutcome::Unchanged);
    assert_eq!(head(&store)?, 1);
    Ok(())
}

#[test]
fn an_empty_or_overlong_setting_key_is_an_invalid_command() -> Result<()> {
    let (_dir, store) = store();
    for key in [String::new(), "k".repeat(129)] {
        assert_invalid(
            store.execute(&SetSetting {
                key,
                value: "v".into(),
                now_ms: T0,
            }),
            "key",
        );
    }
    store
        .execute(&SetSetting {
            key: "k".repeat(128),
            value: String::new(),
            now_ms: T0,
        })?
        .expect_done();
    assert_eq!(head(&store)?, 1);
    Ok(())
}

#[test]
fn the_host_skein_is_the_instance_its_setting_names() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "operator", IDENTITY, T0)?;
    assert_eq!(registry::host_skein(&store.snapshot()?.state())?, None);
    store
        .execute(&SetSetting {
            key: HOST_SKEIN_SETTING.into(),
            value: "operator".into(),
            now_ms: T0 + 1,
        })?
        .expect_done();
    assert_eq!(
        registry::host_skein(&store.snapshot()?.state())?.map(|i| i.handle.to_string()),
        Some("operator".into())
    );
    Ok(())
}

#[test]
fn fuel_aggregates_calls_and_fuel_per_instance_caller_and_op() -> Result<()> {
    let (_dir, store) = store();
    charge(&store, "martha", "02aa", "/read", 5)?;
    charge(&store, "martha", "02aa", "/read", 7)?;
    charge(&store, "martha", "02aa", "/write", 30)?;
    charge(&store, "martha", "", "/read", 1)?;
    charge(&store, "bob", "02aa", "/read", 100)?;
    let state = store.snapshot()?.state();
    let read = registry::fuel_entry(&state, "martha", "02aa", "/read")?;
    assert_eq!(read.as_ref().map(|e| (e.calls, e.fuel)), Some((2, 12)));
    assert_eq!(read.map(|e| e.updated_at_ms), Some(T0 + 7));
    let ledger: Vec<(String, String, u64, u64)> = registry::fuel_ledger(&state, "martha")?
        .into_iter()
        .map(|e| (e.caller, e.op, e.calls, e.fuel))
        .collect();
    assert_eq!(
        ledger,
        [
            ("02aa".into(), "/write".into(), 1, 30),
            ("02aa".into(), "/read".into(), 2, 12),
            ("".into(), "/read".into(), 1, 1),
        ]
    );
    assert_eq!(
        registry::fuel_total(&state, "martha")?,
        FuelTotal { calls: 4, fuel: 43 }
    );
    assert_eq!(
        registry::fuel_total(&state, "nobody")?,
        FuelTotal::default()
    );
    assert_eq!(
        registry::fuel_totals(&state)?,
        [
            (
                "bob".into(),
                FuelTotal {
                    calls: 1,
                    fuel: 100
                }
            ),
            ("martha".into(), FuelTotal { calls: 4, fuel: 43 }),
        ]
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn fuel_ledger_rows_of_equal_fuel_are_in_caller_then_op_order() -> Result<()> {
    let (_dir, store) = store();
    charge(&store, "martha", "02bb", "/a", 3)?;
    charge(&store, "martha", "02aa", "/b", 3)?;
    charge(&store, "martha", "02aa", "/a", 3)?;
    let order: Vec<(String, String)> = registry::fuel_ledger(&store.snapshot()?.state(), "martha")?
        .into_iter()
        .map(|e| (e.caller, e.op))
        .collect();
    assert_eq!(
        order,
        [
            ("02aa".into(), "/a".into()),
            ("02aa".into(), "/b".into()),
            ("02bb".into(), "/a".into()),
        ]
    );
    Ok(())
}

#[test]
fn record_fuel_answers_the_row_and_the_total_after_the_charge() -> Result<()> {
    let (_dir, store) = store();
    charge(&store, "martha", "02aa", "/read", 5)?;
    let outcome = store.execute(&RecordFuel {
        instance: "martha".into(),
        caller: "02aa".into(),
        op: "/write".into(),
        fuel: 9,
        now_ms: T0 + 50,
    })?;
    assert_eq!((outcome.entry.calls, outcome.entry.fuel), (1, 9));
    assert_eq!(outcome.entry.updated_at_ms, T0 + 50);
    assert_eq!(outcome.total, FuelTotal { calls: 2, fuel: 14 });
    assert_eq!(
        registry::fuel_entry(&store.snapshot()?.state(), "martha", "02aa", "/write")?,
        Some(outcome.entry)
    );
    Ok(())
}

#[test]
fn fuel_with_an_invalid_instance_or_an_empty_op_is_an_invalid_command() -> Result<()> {
    let (_dir, store) = store();
    let record = |instance: &str, op: &str| {
        store.execute(&RecordFuel {
            instance: instance.into(),
            caller: "02aa".into(),
            op: op.into(),
            fuel: 1,
            now_ms: T0,
        })
    };
    assert_invalid(record("Not A Handle", "/read"), "instance");
    assert_invalid(record("martha", ""), "op");
    assert_eq!(head(&store)?, 0);
    Ok(())
}

#[test]
fn fuel_that_would_overflow_the_ledger_is_an_invalid_command() -> Result<()> {
    let (_dir, store) = store();
    charge(&store, "martha", "02aa", "/read", u64::MAX - 1)?;
    assert_invalid(
        store.execute(&RecordFuel {
            instance: "martha".into(),
            caller: "02bb".into(),
            op: "/read".into(),
            fuel: 2,
            now_ms: T0,
        }),
        "fuel",
    );
    assert_eq!(
        registry::fuel_total(&store.snapshot()?.state(), "martha")?,
        FuelTotal {
            calls: 1,
            fuel: u64::MAX - 1
        }
    );
    assert_eq!(head(&store)?, 1);
    Ok(())
}

#[test]
fn removing_an_instance_keeps_its_fuel_ledger() -> Result<()> {
    let (_dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    charge(&store, "martha", "02aa", "/read", 5)?;
    store
        .execute(&InstanceCommand::Remove {
            handle: "martha".into(),
            now_ms: T0 + 10,
        })?
        .expect_done();
    assert_eq!(
        registry::fuel_total(&store.snapshot()?.state(), "martha")?,
        FuelTotal { calls: 1, fuel: 5 }
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn events_go_to_the_instance_setting_and_fuel_streams() -> Result<()> {
    let (_dir, store) = store();
    let token = token_handle(0);
    agent(&store, &token, IDENTITY, T0)?;
    store
        .execute(&SetSetting {
            key: HOST_SKEIN_SETTING.into(),
            value: token.clone(),
            now_ms: T0 + 1,
        })?
        .expect_done();
    charge(&store, &token, "02aa", "/read", 5)?;
    store
        .execute(&InstanceCommand::Remove {
            handle: token.clone(),
            now_ms: T0 + 10,
        })?
        .expect_done();
    assert_eq!(instance_stream(&token), format!("registry/{token}"));
    assert_eq!(
        kinds_of(&store, &instance_stream(&token))?,
        ["registry.instance_added", "registry.instance_removed"]
    );
    assert_eq!(
        kinds_of(&store, "registry-setting/host_skein")?,
        ["registry.setting_set"]
    );
    assert_eq!(
        kinds_of(&store, &fuel_stream(&token))?,
        ["registry.fuel_charged"]
    );
    let first = store.snapshot()?.get(Position(0))?.map(|r| r.at_ms);
    assert_eq!(first, Some(T0), "the record's time is the command's now_ms");
    Ok(())
}

#[test]
fn registry_kinds_cannot_be_appended_raw() -> Result<()> {
    let (_dir, store) = store();
    let raw = store.append(
        "registry/martha",
        annals::ExpectedVersion::Any,
        &[crate::common::event("registry.instance_removed", T0, b"")],
    );
    assert!(
        matches!(raw, Err(Error::Store(StoreError::ReservedKind { .. }))),
        "{raw:?}"
    );
    assert_eq!(head(&store)?, 0);
    Ok(())
}

/// A store with every kind of registry event in it.
fn populated() -> Result<(tempfile::TempDir, Store)> {
    let (dir, store) = store();
    agent(&store, "martha", IDENTITY, T0)?;
    mailbox(&store, "box", OWNER, T0 + 1)?;
    upsert(
        &store,
        "martha",
        InstanceFields {
            tree: Some("bafy".into()),
            ..InstanceFields::default()
        },
        T0 + 2,
    )?;
    set_status(&store, "box", Status::Disabled)?.expect_done();
    store
        .execute(&InstanceCommand::SetKnows {
            handle: "martha".into(),
            knows: Knows::from_handles(["box"]),
            now_ms: T0 + 3,
        })?
        .expect_done();
    store
        .execute(&InstanceCommand::SetTopics {
            handle: "martha".into(),
            topics: vec!["tm_ship".into()],
            now_ms: T0 + 4,
        })?
        .expect_done();
    agent(&store, "gone", "03ff", T0 + 5)?;
    store
        .execute(&InstanceCommand::Remove {
            handle: "gone".into(),
            now_ms: T0 + 6,
        })?
        .expect_done();
    store
        .execute(&SetSetting {
            key: HOST_SKEIN_SETTING.into(),
            value: "martha".into(),
            now_ms: T0 + 7,
        })?
        .expect_done();
    charge(&store, "martha", "02aa", "/read", 5)?;
    charge(&store, "martha", "", "/read", 2)?;
    Ok((dir, store))
}

#[test]
fn registry_state_survives_reopening_the_file() -> Result<()> {
    let (dir, store) = populated()?;
    let before = registry::state_json(&store.snapshot()?.state())?;
    drop(store);
    let store = Store::open_with(dir.path().join("log.redb"), annals::StoreOptions::default())?;
    let state = store.snapshot()?.state();
    assert_eq!(registry::state_json(&state)?, before);
    assert_eq!(
        registry::mailbox_of(&state, OWNER)?,
        None,
        "the mailbox stays disabled"
    );
    assert_eq!(
        registry::host_skein(&state)?.map(|i| i.topics),
        Some(vec!["tm_ship".into()])
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}

#[test]
fn rebuilding_the_registry_reproduces_its_state() -> Result<()> {
    let (_dir, store) = populated()?;
    let before = registry::state_json(&store.snapshot()?.state())?;
    assert_ne!(before["instances"], serde_json::json!([]));
    annals::maintenance::Rebuild::of(&store).run(Some("registry"))?;
    assert_eq!(registry::state_json(&store.snapshot()?.state())?, before);
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    Ok(())
}
