//! Replication and the shared log through a real 3-node NATS JetStream cluster (the `jetstream`
//! feature; `nats-server` must be on the PATH, as `.ci/run` makes sure). Each test starts its own
//! cluster on free loopback ports with its data in a temporary directory, and kills it when it
//! ends, passing or failing. `cli` runs `annals replicate` and `annals follow` as processes:
//! the command line built with its `jetstream` feature (`cargo build -p annals-cli --features
//! jetstream`, as `.ci/run` does first).

#[path = "../annals_bin.rs"]
mod annals_bin;
mod cli;
mod cluster;
mod cut;
mod erasure;
mod failover;
#[path = "../files.rs"]
mod files;
mod hostile;
mod measure;
mod replicate;
mod shared;
