//! Integration tests, one binary (faster to build on two cores).

mod common;
mod log;
