//! The tickets domain through a real store: its commands decide and its projection applies
//! them, its kinds are its own, history names its tickets, its precondition guards writes,
//! and a replay reproduces its tables (an older schema's record upcast on the way).

use std::sync::Arc;

use annals::audit::Entity;
use annals::{AppendOutcome, Audit, ErrorKind, ExpectedVersion, NewEvent, Store, StoreOptions};
use annals_toy_domain::tickets::{
    TicketCommand, TicketIsOpen, TicketOutcome, TicketRefusal, Tickets, closed_at, open_ticket,
    ticket_stream,
};

/// A store with the tickets registered beside the built-in projections: the one list.
fn store(dir: &tempfile::TempDir) -> Store {
    let options = StoreOptions {
        create: true,
        projections: vec![Arc::new(Tickets)],
        ..StoreOptions::default()
    };
    Store::open_with(dir.path().join("tickets.redb"), options).expect("a store with tickets")
}

fn open(ticket: &str, now_ms: u64) -> TicketCommand {
    TicketCommand::Open {
        ticket: ticket.to_owned(),
        title: "printer on fire".to_owned(),
        by: "ana".to_owned(),
        now_ms,
    }
}

fn close(ticket: &str, now_ms: u64) -> TicketCommand {
    TicketCommand::Close {
        ticket: ticket.to_owned(),
        reason: "put out".to_owned(),
        now_ms,
    }
}

/// Runs `command`, which must be carried out.
fn done(store: &Store, command: TicketCommand) {
    assert_eq!(
        store.execute(&command).unwrap(),
        TicketOutcome::Done,
        "{command:?}"
    );
}

fn records(store: &Store) -> u64 {
    store.snapshot().unwrap().head().unwrap().next.0
}

#[test]
fn a_ticket_is_opened_once_and_closed_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    done(&store, open("t-1", 10));
    let state = store.snapshot().unwrap().state();
    let ticket = open_ticket(&state, "t-1").unwrap().expect("open");
    assert_eq!(
        (ticket.opened_by.as_str(), ticket.opened_at_ms),
        ("ana", 10)
    );
    assert_eq!(
        store.execute(&open("t-1", 11)).unwrap(),
        TicketOutcome::Refused(TicketRefusal::AlreadyOpened)
    );
    done(&store, close("t-1", 12));
    assert_eq!(
        store.execute(&close("t-1", 13)).unwrap(),
        TicketOutcome::Refused(TicketRefusal::NotOpen)
    );
    assert_eq!(
        store.execute(&open("t-1", 14)).unwrap(),
        TicketOutcome::Refused(TicketRefusal::AlreadyOpened)
    );
    let state = store.snapshot().unwrap().state();
    assert_eq!(open_ticket(&state, "t-1").unwrap(), None);
    assert_eq!(closed_at(&state, "t-1").unwrap(), Some(12));
    // Refusals appended nothing: one record each for the open and the close.
    assert_eq!(records(&store), 2);
}

#[test]
fn a_raw_append_of_a_ticket_kind_is_refused_with_the_log_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let forged = NewEvent::new("ticket.closed", 1, b"forged".to_vec());
    let error = store
        .append(&ticket_stream("t-1"), ExpectedVersion::Any, &[forged])
        .expect_err("a kind the tickets own");
    assert_eq!(error.kind(), ErrorKind::ReservedKind, "{error}");
    assert_eq!(records(&store), 0);
}

#[test]
fn history_names_a_ticket_through_its_projection() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    done(&store, open("t-1", 10));
    done(&store, open("t-2", 11));
    done(&store, close("t-1", 12));
    let entity = Entity::parse_among("ticket:t-1", store.projections().iter()).unwrap();
    assert_eq!(entity.streams(), ["ticket/t-1"]);
    let kinds: Vec<String> = Audit::of(&store)
        .history(&entity)
        .unwrap()
        .into_iter()
        .map(|record| record.kind)
        .collect();
    assert_eq!(kinds, ["ticket.opened", "ticket.closed"]);
    // The built-in projections alone know no ticket, and say which kinds they know.
    let error = Entity::parse("ticket:t-1").expect_err("not a built-in kind");
    assert!(
        error.to_string().contains("unknown kind \"ticket\""),
        "{error}"
    );
}

#[test]
fn work_on_a_ticket_is_written_only_while_it_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let note = || {
        [NewEvent::new(
            "note.added",
            20,
            b"checked the toner".to_vec(),
        )]
    };
    let guard = TicketIsOpen("t-1".to_owned());
    let error = store
        .append_guarded("notes/t-1", ExpectedVersion::Any, &note(), &guard)
        .expect_err("no ticket yet");
    assert_eq!(error.kind(), ErrorKind::Fenced, "{error}");
    assert_eq!(records(&store), 0);
    done(&store, open("t-1", 10));
    let written = store
        .append_guarded("notes/t-1", ExpectedVersion::Any, &note(), &guard)
        .expect("the ticket is open");
    assert!(matches!(written, AppendOutcome::Appended(_)), "{written:?}");
    done(&store, close("t-1", 30));
    let before = records(&store);
    let error = store
        .execute_guarded(&open("t-2", 31), &guard)
        .expect_err("the ticket is closed");
    assert!(error.to_string().contains("ticket t-1 is open"), "{error}");
    assert_eq!(records(&store), before, "a refused write appends nothing");
}

#[test]
fn replay_reproduces_the_tickets_tables_with_an_older_schema_upcast() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    // A ticket opened by schema 1, before openers were named: written as an older build did.
    let v1 = annals::command::encode_payload(&annals_toy_domain::tickets::OpenedV1 {
        ticket: "t-0".to_owned(),
        title: "old".to_owned(),
    });
    let old = NewEvent::new("ticket.opened", 5, v1).with_schema(1);
    let written = store
        .write(|session| {
            session.append_unchecked(&ticket_stream("t-0"), ExpectedVersion::Any, &[old])
        })
        .unwrap();
    assert!(matches!(written, AppendOutcome::Appended(_)), "{written:?}");
    done(&store, open("t-1", 10));
    done(&store, close("t-0", 12));
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        open_ticket(&state, "t-1").unwrap().unwrap().opened_by,
        "ana"
    );
    assert_eq!(closed_at(&state, "t-0").unwrap(), Some(12));
    let report = Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    annals::maintenance::Rebuild::of(&store)
        .run(Some("tickets"))
        .unwrap();
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        open_ticket(&state, "t-1").unwrap().unwrap().opened_at_ms,
        10
    );
    assert_eq!(closed_at(&state, "t-0").unwrap(), Some(12));
    assert!(Audit::of(&store).verify().unwrap().is_sound());
}
