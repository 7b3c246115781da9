//! Empty on purpose: this crate exists only so that `cargo run` and `cargo test` in the
//! repository build annals with its `cli` feature (the `annals` binary needs it). It is a
//! default member of the workspace and is never published.
