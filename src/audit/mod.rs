//! Audit: checking a log against itself, and reading state as of any position. Reads only;
//! never writes to the log.

pub mod decoded;
pub mod extends;
pub mod history;
pub mod proof_file;
pub mod replay;
pub mod verify;
