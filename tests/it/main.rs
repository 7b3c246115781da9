//! Integration tests, one binary (faster to build on two cores).

mod cli;
mod common;
mod limits;
mod log;
mod open;
mod vectors;
mod verify;
