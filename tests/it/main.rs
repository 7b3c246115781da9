//! Integration tests, one binary (faster to build on two cores).

mod cli;
mod common;
mod log;
mod vectors;
