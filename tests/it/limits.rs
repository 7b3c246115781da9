//! Every limit: a breach is a typed error naming the field and the limit, and writes nothing.

use annals::testing::setup::ExpectDone;
use annals::{
    Error, ExpectedVersion, NewEvent, Position, Store, StoreOptions,
    error::AppendError,
    error::LimitError,
    log::{Field, Limits},
};

use crate::common::{event, store};

fn store_with(limits: Limits) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        limits,
        create: true,
        ..StoreOptions::default()
    };
    let store = Store::open_with(dir.path().join("log.redb"), options).unwrap();
    (dir, store)
}

fn limit_error(store: &Store, stream: &str, events: &[NewEvent]) -> LimitError {
    let before = store.snapshot().unwrap().head().unwrap();
    let error = store
        .append(stream, ExpectedVersion::Any, events)
        .unwrap_err();
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        before,
        "a refused append writes nothing"
    );
    match error {
        Error::Append(AppendError::Limit(limit)) => limit,
        other => panic!("expected a limit error, got {other:?}"),
    }
}

fn check_too_long(error: LimitError, field: Field, len: u64, max: u64) {
    assert_eq!(error, LimitError::TooLong { field, len, max });
    let message = error.to_string();
    assert!(
        message.contains(field.name()) && message.contains(&max.to_string()),
        "{message}"
    );
}

#[test]
fn a_stream_name_over_the_limit_is_refused() {
    let (_dir, store) = store();
    let error = limit_error(&store, &"s".repeat(257), &[event("k", 1, b"")]);
    check_too_long(error, Field::Stream, 257, 256);
    assert!(
        store
            .append(
                &"s".repeat(256),
                ExpectedVersion::Any,
                &[event("k", 1, b"")]
            )
            .is_ok()
    );
}

#[test]
fn an_empty_stream_name_is_refused() {
    let (_dir, store) = store();
    let error = limit_error(&store, "", &[event("k", 1, b"")]);
    assert_eq!(
        error,
        LimitError::Empty {
            field: Field::Stream
        }
    );
}

#[test]
fn a_kind_over_the_limit_or_empty_is_refused() {
    let (_dir, store) = store();
    let error = limit_error(&store, "s", &[event(&"k".repeat(129), 1, b"")]);
    check_too_long(error, Field::Kind, 129, 128);
    let error = limit_error(&store, "s", &[event("", 1, b"")]);
    assert_eq!(error, LimitError::Empty { field: Field::Kind });
}

#[test]
fn an_idempotency_key_over_the_limit_or_empty_is_refused() {
    let (_dir, store) = store();
    let long = event("k", 1, b"").with_idempotency_key("i".repeat(257));
    check_too_long(
        limit_error(&store, "s", &[long]),
        Field::IdempotencyKey,
        257,
        256,
    );
    let empty = event("k", 1, b"").with_idempotency_key("");
    assert_eq!(
        limit_error(&store, "s", &[empty]),
        LimitError::Empty {
            field: Field::IdempotencyKey
        }
    );
}

#[test]
fn a_payload_over_the_default_one_mebibyte_is_refused_and_one_at_it_is_kept() {
    let (_dir, store) = store();
    let max = 1024 * 1024;
    let error = limit_error(&store, "s", &[event("k", 1, &vec![7; max + 1])]);
    check_too_long(error, Field::Payload, max as u64 + 1, max as u64);
    store
        .append("s", ExpectedVersion::Any, &[event("k", 1, &vec![7; max])])
        .unwrap()
        .expect_done();
    let record = store.snapshot().unwrap().get(Position(0)).unwrap().unwrap();
    assert_eq!(record.payload.len(), max);
}

#[test]
fn a_configured_payload_limit_is_enforced() {
    let (_dir, store) = store_with(Limits {
        payload_bytes_max: 4 << 20,
        ..Limits::default()
    });
    store
        .append(
            "s",
            ExpectedVersion::Any,
            &[event("k", 1, &vec![1; 3 << 20])],
        )
        .unwrap()
        .expect_done();
    let error = limit_error(&store, "s", &[event("k", 1, &vec![1; (4 << 20) + 1])]);
    check_too_long(error, Field::Payload, (4 << 20) + 1, 4 << 20);
}

#[test]
fn too_many_events_in_one_append_are_refused() {
    let (_dir, store) = store_with(Limits {
        events_per_append_max: 3,
        ..Limits::default()
    });
    let events: Vec<_> = (0..4).map(|_| event("k", 1, b"")).collect();
    let error = limit_error(&store, "s", &events);
    assert_eq!(
        error,
        LimitError::TooMany {
            field: Field::EventsPerAppend,
            count: 4,
            max: 3
        }
    );
}

#[test]
fn too_many_payload_bytes_in_one_append_are_refused() {
    let (_dir, store) = store_with(Limits {
        append_payload_bytes_max: 10,
        ..Limits::default()
    });
    let events = [event("k", 1, b"123456"), event("k", 1, b"78901")];
    check_too_long(
        limit_error(&store, "s", &events),
        Field::AppendPayload,
        11,
        10,
    );
}

#[test]
fn limits_beyond_the_format_caps_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            Limits {
                stream_bytes_max: 0,
                ..Limits::default()
            },
            Field::Stream,
        ),
        (
            Limits {
                stream_bytes_max: 1025,
                ..Limits::default()
            },
            Field::Stream,
        ),
        (
            Limits {
                payload_bytes_max: u32::MAX,
                ..Limits::default()
            },
            Field::Payload,
        ),
        (
            Limits {
                kind_bytes_max: 257,
                ..Limits::default()
            },
            Field::Kind,
        ),
    ];
    for (limits, field) in cases {
        let options = StoreOptions {
            limits,
            create: true,
            ..StoreOptions::default()
        };
        match Store::open_with(dir.path().join("log.redb"), options) {
            Err(Error::Config(LimitError::Misconfigured { field: found, .. })) => {
                assert_eq!(found, field)
            }
            Err(other) => panic!("expected a configuration error, got {other:?}"),
            Ok(_) => panic!("expected a configuration error for {field}"),
        }
    }
}
