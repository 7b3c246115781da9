//! The one list of the built-in domains: the projections a store registers before a program's
//! own (and whose entity kinds history asks), and the events a record of theirs decodes into
//! for people and for other languages ([`BuiltInEvent`]). Adding a domain adds its folder and
//! a line here.

use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;
use crate::event::DomainEvent;
use crate::projection::Projection;
use crate::record::Record;

/// Declares the built-in domains once: each line is a domain's name, its projection and its
/// event enum, in the order the projections are applied.
macro_rules! builtin_domains {
    ($($domain:ident: $projection:path => $event:ty, $doc:literal;)+) => {
        /// The built-in projections, in the order they are applied.
        pub fn builtin_projections() -> Vec<Arc<dyn Projection>> {
            vec![$(Arc::new($projection)),+]
        }

        /// The event of a built-in domain a record holds, serialised as its payload struct's
        /// fields in declaration order (the kind is the record's).
        ///
        /// ```
        /// # fn main() -> annals::Result<()> {
        /// # let dir = tempfile::tempdir()?;
        /// let store = annals::Store::open(dir.path().join("log.redb"))?;
        /// let _ = store.execute(&annals::leases::LeaseCommand::Acquire {
        ///     resource: "deploy".into(), holder: "agent-7".into(), ttl_ms: 10, now_ms: 1,
        /// })?;
        /// let record = store.snapshot()?.get(annals::Position(0))?.unwrap();
        /// let event = annals::audit::BuiltInEvent::from_record(&record)?.unwrap();
        /// let fields = serde_json::to_value(&event).unwrap();
        /// assert_eq!(fields["holder"], "agent-7");
        /// # Ok(()) }
        /// ```
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        #[non_exhaustive]
        pub enum BuiltInEvent {
            $(#[doc = $doc] $domain($event),)+
        }

        impl BuiltInEvent {
            /// The event `record` holds: `Ok(None)` for a kind no built-in domain owns (a
            /// program's own), an error ([`crate::Error::UndecodableEvent`]) for a built-in
            /// kind whose payload does not decode (an unknown schema, damaged bytes).
            pub fn from_record(record: &Record) -> Result<Option<BuiltInEvent>> {
                $(
                    if let Some(event) = <$event as DomainEvent>::from_record(record)? {
                        return Ok(Some(BuiltInEvent::$domain(event)));
                    }
                )+
                Ok(None)
            }
        }
    };
}

builtin_domains! {
    Registry: crate::registry::Registry => crate::registry::events::RegistryEvent, "The registry's.";
    Leases: crate::leases::Leases => crate::leases::events::LeaseEvent, "The leases'.";
    Outbox: crate::outbox::Outbox => crate::outbox::events::OutboxEvent, "The outbox's.";
    Runs: crate::runs::Runs => crate::runs::events::RunEvent, "The runs'.";
    Consumers: crate::consumers::Consumers => crate::consumers::events::ConsumerEvent, "The consumers'.";
    Ingest: crate::ingest::Ingest => crate::ingest::events::IngestEvent, "The ingest's.";
}
