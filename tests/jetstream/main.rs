//! Replication and the shared log through a real 3-node NATS JetStream cluster (the `jetstream`
//! feature; `nats-server` must be on the PATH, as `.ci/run` makes sure). Each test starts its own
//! cluster on free loopback ports with its data in a temporary directory, and kills it when it
//! ends, passing or failing. With the `cli` feature too, `cli` runs `annals replicate` and
//! `annals follow` as processes (`.ci/run` enables it).

// The binary exists only with `cli`.
#[cfg(feature = "cli")]
mod cli;
mod cluster;
mod failover;
#[cfg(feature = "cli")]
mod hostile;
mod measure;
mod replicate;
mod shared;
