//! Integration tests, one binary (faster to build on two cores).

mod architecture;
mod cli;
mod cli_audit;
mod common;
mod corruption;
mod crash;
mod events;
mod export;
mod faults;
mod fuzz_replay;
mod history;
mod leases;
mod limits;
mod log;
mod merkle;
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
