//! The tickets' events, declared once: kinds start with `ticket.`.

use annals::Record;
use serde::{Deserialize, Serialize};

/// A ticket was opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// The ticket.
    pub ticket: String,
    /// What it is about.
    pub title: String,
    /// Who opened it.
    pub opened_by: String,
}

/// `ticket.opened` as schema 1 wrote it, before it said who opened it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedV1 {
    /// The ticket.
    pub ticket: String,
    /// What it is about.
    pub title: String,
}

/// A ticket was closed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Closed {
    /// The ticket.
    pub ticket: String,
    /// Why.
    pub reason: String,
}

annals::domain_events! {
    /// Every ticket event.
    pub enum TicketEvent {
        /// `ticket.opened`
        Opened(Opened) = pub OPENED = "ticket.opened", schema 2, older { 1 => OpenedV1 => opened_v1 };
        /// `ticket.closed`
        Closed(Closed) = pub CLOSED = "ticket.closed", schema 1;
    }
}

/// Schema 1 of `ticket.opened` as schema 2: nobody is named as its opener.
fn opened_v1(v1: OpenedV1, _: &Record) -> Opened {
    Opened {
        ticket: v1.ticket,
        title: v1.title,
        opened_by: String::new(),
    }
}
