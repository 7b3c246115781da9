//! Integration tests, one binary (faster to build on two cores).

#[path = "../annals_bin.rs"]
mod annals_bin;

mod architecture;
mod archive;
mod archive_crash;
mod checkpoints;
mod checksums;
mod cli;
mod cli_audit;
mod cli_json;
mod cli_read;
mod common;
mod compact;
mod corruption;
mod crash;
mod cut_vectors;
mod events;
mod export;
mod faults;
mod footprint;
mod format_v2;
mod full_disk;
mod fuzz_replay;
mod history;
mod ingest;
mod invariants;
mod leases;
mod limits;
mod log;
mod merkle;
mod open;
mod outbox;
mod outputs;
mod performance_doc;
mod processes;
mod projections;
mod property;
mod races;
mod readme;
mod rebuild;
mod reference_parity;
mod refusals;
mod registry;
mod runs;
mod runs_reference;
mod sharing;
mod static_tiles;
mod subscribe;
mod tiling;
mod tlog;
mod vectors;
mod verify;
#[cfg(feature = "witness")]
mod witness;
mod writer;
