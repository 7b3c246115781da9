//! Test support that ships in the crate so that fuzz targets, the stable corpus replay and
//! the simulation tests share one body each: the simulated disk ([`sim`]), the reference
//! model and its command vocabulary ([`model`]), random commands of every domain
//! ([`random`]), fault scenarios and their invariants ([`faults`]), and the fuzz harness
//! bodies ([`harness`]); besides, setup steps that check their outcome ([`setup`]), a byte of
//! one record flipped beneath the store ([`damage`]), exports made and forged beside a log
//! ([`forgery`]) and the golden event vectors with their
//! generator's body ([`event_vectors`]). Hidden from the docs; not for production use. Never
//! used by the rest of the crate.

pub mod crash;
pub mod damage;
pub mod event_vectors;
pub mod faults;
pub mod forgery;
pub mod harness;
pub mod host;
pub mod internals;
pub mod model;
pub mod random;
pub mod setup;
pub mod sim;
pub mod vectors;
