//! Two writer hosts on one shared log, with commands of one record and of several.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::outbox::{ClaimToken, OutboxCommand, OutboxOutcome, PullCommand, PullOutcome};
use annals::replication::{SharedLog, SharedOptions, SharedOutcome};
use annals::{AppendOutcome, Direction, ExpectedVersion, NewEvent, Position, Store};

use crate::cluster::{Cluster, log};
use crate::replicate::assert_same_log;

/// Commands per host.
pub const COMMANDS: u64 = 10_000;
/// The commands repeat in rounds of this many (see [`run_host`]).
const ROUND: u64 = 10;
/// Events of the raw append that appends several records in one command.
const EVENTS_PER_MULTI_APPEND: u64 = 3;

/// What one host was told.
#[derive(Default)]
pub struct Acknowledged {
    /// Idempotency keys of the appends acknowledged as written (not as duplicates), a
    /// multi-event append's keys together.
    pub appends: Vec<Vec<String>>,
    /// Fencing tokens granted to this host (new, not renewed).
    pub tokens: Vec<u64>,
    /// Outbox rows acknowledged as enqueued.
    pub enqueued: Vec<String>,
    /// Outbox claims acknowledged, each with the rows it claimed.
    pub claims: Vec<Vec<String>>,
    /// Commands that gave up.
    pub gave_up: u64,
}

/// Runs `commands` commands on `host` as `name`, in rounds of [`ROUND`]: a lease acquisition
/// on the one shared resource (one record, or none when refused), an append of
/// [`EVENTS_PER_MULTI_APPEND`] events (one command, several records), two outbox rows
/// enqueued for this host's peer and one claim of them (one command, a record per row), and
/// single-event appends.
pub async fn run_host(
    mut host: SharedLog,
    name: &'static str,
    commands: u64,
) -> (SharedLog, Acknowledged) {
    let mut acknowledged = Acknowledged::default();
    for i in 0..commands {
        let now_ms = 1_000_000 + i;
        match i % ROUND {
            0 => {
                let command = LeaseCommand::Acquire {
                    resource: "shared-lock".into(),
                    holder: name.into(),
                    ttl_ms: 5,
                    now_ms,
                };
                match host.execute(command).await.unwrap() {
                    SharedOutcome::Done(LeaseOutcome::Granted {
                        lease,
                        renewed: false,
                    }) => acknowledged.tokens.push(lease.token.0),
                    SharedOutcome::Done(_) => {}
                    SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
                }
            }
            6 | 7 => {
                let key = format!("{name}-row-{i}");
                let command = OutboxCommand::Enqueue {
                    key: key.clone(),
                    peer: name.into(),
                    kind: "job".into(),
                    payload: b"row".to_vec(),
                    now_ms,
                };
                match host.execute(command).await.unwrap() {
                    SharedOutcome::Done(OutboxOutcome::Enqueued { .. }) => {
                        acknowledged.enqueued.push(key)
                    }
                    SharedOutcome::Done(other) => panic!("{key} enqueued: {other:?}"),
                    SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
                }
            }
            8 => {
                let command = PullCommand::Claim {
                    peer: name.into(),
                    token: ClaimToken(format!("{name}-claim-{i}")),
                    limit: 8,
                    lease_ms: 1_000_000_000,
                    now_ms,
                };
                match host.execute(command).await.unwrap() {
                    SharedOutcome::Done(PullOutcome::Claimed { rows, .. }) => acknowledged
                        .claims
                        .push(rows.into_iter().map(|row| row.key).collect()),
                    SharedOutcome::Done(other) => panic!("{name} claimed: {other:?}"),
                    SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
                }
            }
            round => {
                let events = if round == 3 {
                    EVENTS_PER_MULTI_APPEND
                } else {
                    1
                };
                let keys: Vec<String> = (0..events).map(|e| format!("{name}/{i}/{e}")).collect();
                let batch = keys
                    .iter()
                    .map(|key| {
                        NewEvent::new("job.done", i, format!("{name} {i}"))
                            .with_idempotency_key(key)
                    })
                    .collect();
                match host
                    .append(&format!("jobs/{name}"), ExpectedVersion::Any, batch)
                    .await
                    .unwrap()
                {
                    SharedOutcome::Done(AppendOutcome::Appended(_)) => {
                        acknowledged.appends.push(keys)
                    }
                    SharedOutcome::Done(AppendOutcome::Duplicate { .. }) => {
                        panic!("{keys:?} were never appended before")
                    }
                    SharedOutcome::GaveUp { .. } => acknowledged.gave_up += 1,
                }
            }
        }
    }
    (host, acknowledged)
}

/// What `store`'s log holds: each idempotency key with the positions of the records carrying
/// it, and how many records of each (stream, kind) there are.
struct Contents {
    keys: HashMap<String, Vec<u64>>,
    kinds: HashMap<(String, String), u64>,
}

fn contents(store: &Store) -> Contents {
    let mut keys: HashMap<String, Vec<u64>> = HashMap::new();
    let mut kinds = HashMap::new();
    let snapshot = store.snapshot().unwrap();
    for record in snapshot.records(Position(0), Direction::Forward).unwrap() {
        let record = record.unwrap();
        if let Some(key) = record.idempotency_key {
            keys.entry(key).or_default().push(record.position.0);
        }
        *kinds.entry((record.stream, record.kind)).or_insert(0) += 1;
    }
    Contents { keys, kinds }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writer_hosts_share_one_log_with_every_acknowledged_command_once_and_whole() {
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
    let mut told = Vec::new();
    for (task, name) in tasks.into_iter().zip(["east", "west"]) {
        let (host, acknowledged) = task.await.unwrap();
        for &token in &acknowledged.tokens {
            assert_eq!(
                tokens.insert(token, name),
                None,
                "fencing token {token} granted twice"
            );
        }
        let multi = acknowledged
            .appends
            .iter()
            .filter(|keys| keys.len() > 1)
            .count();
        let multi_claims = acknowledged
            .claims
            .iter()
            .filter(|rows| rows.len() > 1)
            .count();
        println!(
            "{name}: {} appends acknowledged ({multi} of several events), {} rows enqueued, \
             {} claims ({multi_claims} of several rows), {} commands gave up",
            acknowledged.appends.len(),
            acknowledged.enqueued.len(),
            acknowledged.claims.len(),
            acknowledged.gave_up
        );
        assert!(
            multi > 0,
            "{name} had appends of several records acknowledged"
        );
        assert!(
            multi_claims > 0,
            "{name} had claims of several rows acknowledged"
        );
        told.push(acknowledged);
        hosts.push(host);
    }
    // Each host reads the other's last records.
    for host in &mut hosts {
        host.catch_up().await.unwrap();
    }
    let (east, west) = (hosts[0].store(), hosts[1].store());
    assert_same_log(east, west);
    for store in [east, west] {
        assert!(annals::Audit::of(store).verify().unwrap().is_sound());
        let contents = contents(store);
        for acknowledged in &told {
            for keys in &acknowledged.appends {
                let positions: Vec<u64> = keys
                    .iter()
                    .map(|key| match contents.keys.get(key).map(Vec::as_slice) {
                        Some(&[position]) => position,
                        other => panic!("{key} is in the log exactly once, not at {other:?}"),
                    })
                    .collect();
                assert!(
                    positions.windows(2).all(|pair| pair[1] == pair[0] + 1),
                    "one append's records are consecutive: {keys:?} at {positions:?}"
                );
            }
            let once = |key: &str, kind: &str| {
                let found = contents
                    .kinds
                    .get(&(annals::outbox::row_stream(key), kind.to_owned()));
                assert_eq!(found, Some(&1), "{key}: one {kind} record");
            };
            for key in &acknowledged.enqueued {
                once(key, annals::outbox::events::ENQUEUED);
            }
            for key in acknowledged.claims.iter().flatten() {
                once(key, annals::outbox::events::CLAIMED);
            }
        }
    }
    assert!(!tokens.is_empty(), "leases were granted");
}
