//! Two writer hosts on one shared log.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::replication::{SharedLog, SharedOptions, SharedOutcome};
use annals::{AppendOutcome, Direction, ExpectedVersion, NewEvent, Position, Store};

use crate::cluster::{Cluster, log};
use crate::replicate::assert_same_log;

/// Commands per host.
pub const COMMANDS: u64 = 10_000;
/// Every this many commands is a lease acquisition on the one shared resource.
const LEASE_EVERY: u64 = 10;

/// What one host was told.
#[derive(Default)]
pub struct Acknowledged {
    /// Idempotency keys of the appends acknowledged as written (not as duplicates).
    pub keys: Vec<String>,
    /// Fencing tokens granted to this host (new, not renewed).
    pub tokens: Vec<u64>,
    /// Commands that gave up.
    pub gave_up: u64,
}

/// Runs `COMMANDS` commands on `host` as `name`.
pub async fn run_host(
    mut host: SharedLog,
    name: &'static str,
    commands: u64,
) -> (SharedLog, Acknowledged) {
    let mut acknowledged = Acknowledged::default();
    for i in 0..commands {
        if i % LEASE_EVERY == 0 {
            let command = LeaseCommand::Acquire {
                resource: "shared-lock".into(),
                holder: name.into(),
                ttl_ms: 5,
                now_ms: 1_000_000 + i,
            };
            match host.execute(command).await.unwrap() {
                SharedOutcome::Done(LeaseOutcome::Granted {
                    lease,
                    renewed: false,
                }) => acknowledged.tokens.push(lease.token.0),
                SharedOutcome::Done(_) => {}
                SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
            }
        } else {
            let key = format!("{name}/{i}");
            let event =
                NewEvent::new("job.done", i, format!("{name} {i}")).with_idempotency_key(&key);
            match host
                .append(&format!("jobs/{name}"), ExpectedVersion::Any, vec![event])
                .await
                .unwrap()
            {
                SharedOutcome::Done(AppendOutcome::Appended(_)) => acknowledged.keys.push(key),
                SharedOutcome::Done(AppendOutcome::Duplicate { .. }) => {
                    panic!("{key} was never appended before")
                }
                SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
            }
        }
    }
    (host, acknowledged)
}

/// Every idempotency key in `store`'s log, with how many records carry it.
fn keys_in(store: &Store) -> HashMap<String, u64> {
    let mut keys = HashMap::new();
    let snapshot = store.snapshot().unwrap();
    for record in snapshot.records(Position(0), Direction::Forward).unwrap() {
        if let Some(key) = record.unwrap().idempotency_key {
            *keys.entry(key).or_insert(0) += 1;
        }
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writer_hosts_share_one_log_with_every_acknowledged_command_once() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("shared");
    let mut tasks = Vec::new();
    for name in ["east", "west"] {
        let store = Arc::new(Store::open(dir.path().join(format!("{name}.redb"))).unwrap());
        let host = SharedLog::open(
            store,
            cluster.jetstream().await,
            log.clone(),
            SharedOptions::default(),
        )
        .await
        .unwrap();
        tasks.push(tokio::spawn(run_host(host, name, COMMANDS)));
    }
    let mut hosts = Vec::new();
    let mut tokens: BTreeMap<u64, &str> = BTreeMap::new();
    let mut acknowledged_keys = Vec::new();
    for (task, name) in tasks.into_iter().zip(["east", "west"]) {
        let (host, acknowledged) = task.await.unwrap();
        for token in acknowledged.tokens {
            assert_eq!(
                tokens.insert(token, name),
                None,
                "fencing token {token} granted twice"
            );
        }
        assert!(
            !acknowledged.keys.is_empty(),
            "{name} had appends acknowledged"
        );
        println!(
            "{name}: {} appends acknowledged, {} commands gave up",
            acknowledged.keys.len(),
            acknowledged.gave_up
        );
        acknowledged_keys.extend(acknowledged.keys);
        hosts.push(host);
    }
    // Each host reads the other's last records.
    for host in &mut hosts {
        host.catch_up().await.unwrap();
    }
    let (east, west) = (hosts[0].store(), hosts[1].store());
    assert_same_log(east, west);
    for store in [east, west] {
        assert!(store.verify().unwrap().is_sound());
        let keys = keys_in(store);
        for key in &acknowledged_keys {
            assert_eq!(keys.get(key), Some(&1), "{key} is in the log exactly once");
        }
    }
    assert!(!tokens.is_empty(), "leases were granted");
}
