//! Replication and the shared log through a real 3-node NATS JetStream cluster (the `jetstream`
//! feature; `nats-server` must be on the PATH, as `.ci/run` makes sure). Each test starts its own
//! cluster on free loopback ports with its data in a temporary directory, and kills it when it
//! ends, passing or failing. The command line's `replicate`, `follow` and `seed` are tested as
//! processes in `cli/tests/replication/`, on the same cluster.

#[allow(dead_code)] // Parts of it serve the command line's tests alone.
mod cluster;
mod cut;
mod erasure;
mod failover;
#[path = "../files.rs"]
mod files;
mod measure;
mod replicate;
mod shared;
