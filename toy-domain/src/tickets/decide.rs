//! The tickets' commands and their pure decisions, and the precondition that guards a write
//! on a ticket being open.

use annals::command::{Command, Decision, Precondition};
use annals::projection::TableSource;

use super::events::{Closed, Opened, TicketEvent};
use super::{query, ticket_stream};

/// What a caller asks of the tickets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketCommand {
    /// Opens `ticket`, unless it was ever opened.
    Open {
        /// The ticket.
        ticket: String,
        /// What it is about.
        title: String,
        /// Who opens it.
        by: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Closes `ticket`, if it is open.
    Close {
        /// The ticket.
        ticket: String,
        /// Why.
        reason: String,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// Why a ticket command appended nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TicketRefusal {
    /// It was opened before.
    AlreadyOpened,
    /// It is not open.
    NotOpen,
}

/// What a ticket command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketOutcome {
    /// The event it appended was recorded.
    Done,
    /// Nothing was appended.
    Refused(TicketRefusal),
}

impl Command for TicketCommand {
    type Outcome = TicketOutcome;

    fn decide(&self, state: &dyn TableSource) -> annals::Result<Decision<TicketOutcome>> {
        let refused = |why| Ok(Decision::nothing(TicketOutcome::Refused(why)));
        match self {
            TicketCommand::Open {
                ticket,
                title,
                by,
                now_ms,
            } => {
                let known = query::open_ticket(state, ticket)?.is_some()
                    || query::closed_at(state, ticket)?.is_some();
                if known {
                    return refused(TicketRefusal::AlreadyOpened);
                }
                let event = TicketEvent::Opened(Opened {
                    ticket: ticket.clone(),
                    title: title.clone(),
                    opened_by: by.clone(),
                });
                Ok(Decision::event(
                    ticket_stream(ticket),
                    *now_ms,
                    event,
                    TicketOutcome::Done,
                ))
            }
            TicketCommand::Close {
                ticket,
                reason,
                now_ms,
            } => {
                if query::open_ticket(state, ticket)?.is_none() {
                    return refused(TicketRefusal::NotOpen);
                }
                let event = TicketEvent::Closed(Closed {
                    ticket: ticket.clone(),
                    reason: reason.clone(),
                });
                Ok(Decision::event(
                    ticket_stream(ticket),
                    *now_ms,
                    event,
                    TicketOutcome::Done,
                ))
            }
        }
    }
}

/// Refuses a write unless the ticket is open, checked in the write's own transaction: work
/// on a ticket is recorded only while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketIsOpen(pub String);

impl Precondition for TicketIsOpen {
    fn check(&self, state: &dyn TableSource) -> annals::Result<()> {
        match query::open_ticket(state, &self.0)? {
            Some(_) => Ok(()),
            None => Err(annals::error::StoreError::PreconditionRefused {
                precondition: format!("ticket {} is open", self.0),
                reason: "it is not".to_owned(),
            }
            .into()),
        }
    }
}
