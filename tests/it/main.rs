//! Integration tests, one binary (faster to build on two cores).

mod cli;
mod common;
mod corruption;
mod crash;
mod events;
mod faults;
mod fuzz_replay;
mod leases;
mod limits;
mod log;
mod open;
mod outbox;
mod projections;
mod property;
mod registry;
mod runs;
mod subscribe;
mod vectors;
mod verify;
mod writer;
