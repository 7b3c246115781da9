//! A domain added to annals from outside its crate, to prove that a domain is its folder and
//! one registration: `tickets/` declares its events once (`annals::domain_events!`), decides
//! its commands, applies its events to its own tables, names its entities for history, and
//! guards writes with a precondition of its own; a program registers it in
//! `StoreOptions::projections`, the one list. Nothing in annals names it.

pub mod tickets;
