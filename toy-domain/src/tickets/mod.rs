//! Help-desk tickets: a ticket is opened once and closed once. The projection keeps each
//! open ticket and the time each closed one closed.

mod decide;
mod events;
mod query;

use annals::Record;
use annals::command::DomainEvent;
use annals::projection::{EntityKind, Projection, WriteTables};

pub use decide::{TicketCommand, TicketIsOpen, TicketOutcome, TicketRefusal};
pub use events::{CLOSED, Closed, OPENED, Opened, OpenedV1, TicketEvent};
pub use query::{OpenTicket, closed_at, open_ticket};

/// The tickets projection: register it with `StoreOptions::projections`.
pub struct Tickets;

/// The stream of one ticket's events.
pub fn ticket_stream(ticket: &str) -> String {
    format!("ticket/{ticket}")
}

impl Projection for Tickets {
    fn name(&self) -> &'static str {
        "tickets"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        query::TABLES
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("ticket.")
    }

    fn catalogue(&self) -> &'static [annals::command::EventKind] {
        TicketEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[EntityKind {
            kind: "ticket",
            shape: "ticket:<id>",
            streams: |parts| vec![ticket_stream(parts[0])],
        }]
    }

    fn check_payload(&self, record: &Record) -> annals::Result<()> {
        TicketEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> annals::Result<()> {
        match TicketEvent::from_record(record)? {
            Some(event) => query::apply(tables, record, event),
            None => Ok(()),
        }
    }
}
