//! `annals replicate`, `annals follow` and `annals seed` as real processes against a real
//! JetStream cluster of `nats-server` processes (the `jetstream` feature: `cargo test -p
//! annals-cli --features jetstream --test replication`; `nats-server` must be on the PATH, as
//! `.ci/run` makes sure). `cli`: a follower brought to the writer's root and stopped cleanly;
//! `hostile`: what `follow` says of messages no annals host publishes, and how `replicate` and
//! `follow` say what they wait for. The cluster is the library's replication tests' own
//! (`tests/jetstream/cluster.rs`), shared rather than copied.

#[path = "../../../tests/jetstream/cluster.rs"]
#[allow(dead_code)] // The library's tests use parts of the cluster these do not.
mod cluster;

mod cli;
mod hostile;

/// The command line built with its `jetstream` feature, beside these tests.
const ANNALS: &str = env!("CARGO_BIN_EXE_annals");
