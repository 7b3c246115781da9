//! The tickets' tables, what applying an event writes to them, and their reads.

use annals::Record;
use annals::projection::{Table, TableSource, WriteTables};
use serde::{Deserialize, Serialize};

use super::events::TicketEvent;

/// An open ticket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTicket {
    /// What it is about.
    pub title: String,
    /// Who opened it.
    pub opened_by: String,
    /// When (the record's time).
    pub opened_at_ms: u64,
}

const OPEN: Table<String, OpenTicket> = Table::new("tickets.open");
const CLOSED_AT: Table<String, u64> = Table::new("tickets.closed_at");

/// Every table of the projection.
pub(super) const TABLES: &[&str] = &["tickets.open", "tickets.closed_at"];

/// Applies one of the tickets' events: a function of the record and the tables alone.
pub(super) fn apply(
    tables: &WriteTables<'_>,
    record: &Record,
    event: TicketEvent,
) -> annals::Result<()> {
    match event {
        TicketEvent::Opened(opened) => OPEN.insert(
            tables,
            &opened.ticket,
            &OpenTicket {
                title: opened.title,
                opened_by: opened.opened_by,
                opened_at_ms: record.at_ms,
            },
        ),
        TicketEvent::Closed(closed) => {
            OPEN.remove(tables, &closed.ticket)?;
            CLOSED_AT.insert(tables, &closed.ticket, &record.at_ms)
        }
    }
}

/// The ticket `ticket`, while it is open.
pub fn open_ticket(state: &dyn TableSource, ticket: &str) -> annals::Result<Option<OpenTicket>> {
    OPEN.get(state, &ticket.to_owned())
}

/// When `ticket` closed, if it did.
pub fn closed_at(state: &dyn TableSource, ticket: &str) -> annals::Result<Option<u64>> {
    CLOSED_AT.get(state, &ticket.to_owned())
}
