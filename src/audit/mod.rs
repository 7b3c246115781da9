//! Audit: checking a log against itself. Reads only; never writes to the log.

pub mod verify;
