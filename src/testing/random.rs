//! Random commands across every domain and raw appends, for the property test and the fuzz
//! harnesses: each is a plausible input (a small set of names, so commands collide), and a
//! refusal or an error is as good an outcome as any. Never asserts anything itself.

use crate::demo::Rng;
use crate::ingest::IngestCommand;
use crate::leases::LeaseLabels;
use crate::leases::{FencingToken, LaneCommand, LeaseCommand};
use crate::outbox::decide::{Backoff, OutboxCommand, PullCommand, RowAck, SweepCommand};
use crate::outbox::query::ClaimToken;
use crate::registry::decide::ChargeFuel;
use crate::registry::decide::{InstanceCommand, InstanceFields, RecordFuel, SetSetting};
use crate::registry::{InstanceKind, Knows, Status};
use crate::runs::decide::{RunCommand, SpanCommand};
use crate::runs::events::{Attributes, SpanKind, SpanOrigin, SpanOutcome, SpanUsage};
use crate::{ExpectedVersion, NewEvent, record::StreamVersion, store::WriteSession};

fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len() as u64) as usize]
}

/// Runs one random command in `session`; a refusal or an error is as good an outcome as any.
pub fn random_command(rng: &mut Rng, session: &mut WriteSession<'_>, now_ms: u64) {
    // Drawn from its own generator, seeded by the clock, so that the other commands draw
    // what they did before the ingest was added.
    if now_ms.is_multiple_of(11) {
        random_ingest(&mut Rng::new(now_ms), session, now_ms);
    }
    let choice = rng.below(16);
    command_by_choice(choice, rng, session, now_ms);
    parity_command(session, now_ms);
}

/// Runs, on some clock values, one of the commands that follow the reference stores'
/// caller-given values (a labelled acquisition, `markWaiting`, `markRetry`, a pre-summed fuel
/// charge). They are picked by the clock, not drawn, so every seed draws what it drew before
/// they existed.
fn parity_command(session: &mut WriteSession<'_>, now_ms: u64) {
    let pick = |items: &[&'static str], shift: u64| {
        items[((now_ms >> shift) % items.len() as u64) as usize]
    };
    let key = pick(&["k1", "k2", "k3", "k4"], 3).to_owned();
    let attempts = (now_ms % 5) as u32;
    let _ = match now_ms % 16 {
        0 => session
            .execute(&LeaseCommand::AcquireLabelled {
                resource: pick(&["r1", "r2"], 4).into(),
                holder: pick(&["a", "b", "c"], 5).into(),
                labels: LeaseLabels {
                    project: pick(&["proj-a", "proj-b"], 6).into(),
                    name: pick(&["deploy", "migrate"], 7).into(),
                    holder_name: pick(&["Ada", "Grace"], 8).into(),
                },
                ttl_ms: 1 + now_ms % 100,
                now_ms,
            })
            .map(drop),
        1 => session
            .execute(&OutboxCommand::MarkWaiting {
                key,
                attempts,
                now_ms,
            })
            .map(drop),
        2 => session
            .execute(&OutboxCommand::MarkRetry {
                key,
                attempts,
                next_at_ms: now_ms + (now_ms >> 4) % 50,
                first_failed_at_ms: now_ms.saturating_sub((now_ms >> 5) % 50),
                now_ms,
            })
            .map(drop),
        3 => session
            .execute(&ChargeFuel {
                instance: pick(&["alpha", "beta", "gamma-2"], 4).into(),
                caller: pick(&["a", "b", "c"], 5).into(),
                op: pick(&["op1", "op2"], 6).into(),
                calls: (now_ms >> 4) % 20,
                fuel: (now_ms >> 5) % 1000,
                now_ms,
            })
            .map(drop),
        _ => Ok(()),
    };
}

/// Runs one random command of the registry, or a lane lease: every kind [`random_command`]
/// makes except raw appends, resource leases, the outbox and the runs, which the reference
/// model in [`super::model`] predicts itself (an outbox or runs sweep here would change the
/// model's rows and runs behind its back).
pub fn random_domain_command(rng: &mut Rng, session: &mut WriteSession<'_>, now_ms: u64) {
    const CHOICES: [u64; 5] = [4, 5, 6, 7, 15];
    let choice = CHOICES[rng.below(CHOICES.len() as u64) as usize];
    command_by_choice(choice, rng, session, now_ms);
}

fn command_by_choice(choice: u64, rng: &mut Rng, session: &mut WriteSession<'_>, now_ms: u64) {
    let resources = ["r1", "r2"];
    let holders = ["a", "b", "c"];
    let handles = ["alpha", "beta", "gamma-2"];
    let peers = ["p1", "p2"];
    let keys = ["k1", "k2", "k3", "k4"];
    let tokens = ["t1", "t2", "t3"];
    let _ = match choice {
        0 => {
            let expected = match rng.below(4) {
                0 => ExpectedVersion::Any,
                1 => ExpectedVersion::NoStream,
                2 => ExpectedVersion::StreamExists,
                _ => ExpectedVersion::Exact(StreamVersion(rng.below(3))),
            };
            let mut event = NewEvent::new(
                pick(rng, &["app.a", "app.b"]),
                now_ms,
                vec![rng.below(3) as u8],
            );
            if rng.chance(40) {
                event = event.with_idempotency_key(pick(rng, &["i1", "i2"]));
            }
            session
                .append(pick(rng, &["s1", "s2"]), expected, &[event])
                .map(drop)
        }
        1 => session
            .execute(&LeaseCommand::Acquire {
                resource: pick(rng, &resources).into(),
                holder: pick(rng, &holders).into(),
                ttl_ms: 1 + rng.below(100),
                now_ms,
            })
            .map(drop),
        2 => session
            .execute(&LeaseCommand::Renew {
                resource: pick(rng, &resources).into(),
                holder: pick(rng, &holders).into(),
                token: FencingToken(rng.below(4)),
                ttl_ms: 1 + rng.below(100),
                now_ms,
            })
            .map(drop),
        3 => session
            .execute(&LeaseCommand::Release {
                resource: pick(rng, &resources).into(),
                holder: pick(rng, &holders).into(),
                token: FencingToken(rng.below(4)),
                now_ms,
            })
            .map(drop),
        4 | 15 => {
            let (lane, key, owner) = (
                "l",
                pick(rng, &["k1", "k2"]).to_owned(),
                pick(rng, &["a", "b"]).to_owned(),
            );
            let command = match rng.below(4) {
                0 => LaneCommand::Claim {
                    lane: lane.into(),
                    key,
                    owner,
                    ttl_ms: 1 + rng.below(50),
                    now_ms,
                },
                1 => LaneCommand::Renew {
                    lane: lane.into(),
                    key,
                    owner,
                    ttl_ms: 1 + rng.below(50),
                    now_ms,
                },
                2 => LaneCommand::Advance {
                    lane: lane.into(),
                    key,
                    owner,
                    cursor: Some(format!("c{}", rng.below(9))),
                    now_ms,
                },
                _ => LaneCommand::Release {
                    lane: lane.into(),
                    key,
                    owner,
                    now_ms,
                },
            };
            session.execute(&command).map(drop)
        }
        5 => {
            let handle = pick(rng, &handles).to_owned();
            let command = match rng.below(5) {
                0 | 1 => InstanceCommand::Upsert {
                    handle,
                    fields: InstanceFields {
                        store: rng.chance(80).then(|| format!("/s/{}", rng.below(2))),
                        identity: rng.chance(50).then(|| pick(rng, &["aa", "bb"]).to_owned()),
                        kind: rng.chance(30).then_some(InstanceKind::Mailbox),
                        owner: rng.chance(30).then(|| pick(rng, &["aa", "bb"]).to_owned()),
                        topics: rng
                            .chance(30)
                            .then(|| vec![pick(rng, &["x", "y"]).to_owned()]),
                        ..InstanceFields::default()
                    },
                    now_ms,
                },
                2 => InstanceCommand::SetStatus {
                    handle,
                    status: if rng.chance(50) {
                        Status::Enabled
                    } else {
                        Status::Disabled
                    },
                    now_ms,
                },
                3 if rng.chance(50) => InstanceCommand::SetTopics {
                    handle,
                    topics: vec!["z".into()],
                    now_ms,
                },
                3 => InstanceCommand::SetKnows {
                    handle,
                    knows: Knows::from_handles(["alpha"]),
                    now_ms,
                },
                _ => InstanceCommand::Remove { handle, now_ms },
            };
            session.execute(&command).map(drop)
        }
        6 => session
            .execute(&SetSetting {
                key: pick(rng, &keys).into(),
                value: pick(rng, &["v", "w"]).into(),
                now_ms,
            })
            .map(drop),
        7 => session
            .execute(&RecordFuel {
                instance: pick(rng, &handles).into(),
                caller: pick(rng, &holders).into(),
                op: pick(rng, &["op1", "op2"]).into(),
                fuel: rng.below(1000),
                now_ms,
            })
            .map(drop),
        8 => {
            let key = pick(rng, &keys).to_owned();
            let command = match rng.below(5) {
                0 | 1 => OutboxCommand::Enqueue {
                    key,
                    peer: pick(rng, &peers).into(),
                    kind: "event".into(),
                    payload: vec![1, 2],
                    now_ms,
                },
                2 => OutboxCommand::Retry {
                    key,
                    backoff: Backoff {
                        base_ms: 1 + rng.below(20),
                        max_ms: 100,
                    },
                    last_error: None,
                    now_ms,
                },
                3 if rng.chance(50) => OutboxCommand::Park { key, now_ms },
                3 => OutboxCommand::Deliver { key, now_ms },
                _ => OutboxCommand::GiveUp { key, now_ms },
            };
            session.execute(&command).map(drop)
        }
        9 => session
            .execute(&PullCommand::Claim {
                peer: pick(rng, &peers).into(),
                token: ClaimToken(pick(rng, &tokens).into()),
                limit: 1 + rng.below(3) as u32,
                lease_ms: 1 + rng.below(50),
                now_ms,
            })
            .map(drop),
        10 => session
            .execute(&PullCommand::Ack {
                peer: pick(rng, &peers).into(),
                acks: vec![RowAck {
                    key: pick(rng, &keys).into(),
                    token: ClaimToken(pick(rng, &tokens).into()),
                }],
                now_ms,
            })
            .map(drop),
        12 | 13 => {
            let run = pick(rng, &["run1", "run2"]).to_owned();
            let span = pick(rng, &["root", "s1", "s2", "s3"]).to_owned();
            let outcomes = [
                SpanOutcome::Success,
                SpanOutcome::Error,
                SpanOutcome::Timeout,
            ];
            let command = match rng.below(5) {
                4 => SpanCommand::Patch {
                    run,
                    span,
                    attributes: Attributes::from([("k".to_owned(), "v".to_owned())]),
                    usage: SpanUsage {
                        output_tokens: Some(rng.below(50)),
                        ..SpanUsage::default()
                    },
                    wait_until_ms: None,
                    billing_mode: None,
                    now_ms,
                },
                0 | 1 => SpanCommand::Start {
                    run,
                    parent: (span != "root").then(|| pick(rng, &["root", "s1", "s2"]).to_owned()),
                    span,
                    name: "n".into(),
                    kind: SpanKind::Tool,
                    origin: if rng.chance(20) {
                        SpanOrigin::Cron
                    } else {
                        SpanOrigin::Session
                    },
                    session_id: None,
                    job_name: None,
                    attributes: Attributes::new(),
                    billing_mode: None,
                    writer: pick(rng, &holders).into(),
                    now_ms,
                },
                2 => SpanCommand::End {
                    run,
                    span,
                    outcome: outcomes[rng.below(3) as usize],
                    reason: None,
                    usage: SpanUsage {
                        input_tokens: rng.chance(50).then(|| rng.below(100)),
                        cost_micro_usd: rng.chance(50).then(|| rng.below(100)),
                        ..SpanUsage::default()
                    },
                    attributes: Attributes::new(),
                    now_ms,
                },
                _ => SpanCommand::AppendEvent {
                    run,
                    span,
                    event_type: "e".into(),
                    payload: "p".repeat(rng.below(40) as usize),
                    payload_bytes_max: Some(1 + rng.below(30) as u32),
                    now_ms,
                },
            };
            session.execute(&command).map(drop)
        }
        14 => {
            let run = pick(rng, &["run1", "run2"]).to_owned();
            let command = match rng.below(5) {
                // A heartbeat, or by the clock (so that the generator's draws stay as they
                // were) a rollup on request or a child span's heartbeat.
                0 if now_ms % 3 == 1 => RunCommand::Rollup { run, now_ms },
                0 if now_ms % 3 == 2 => {
                    let span = "s1".to_owned();
                    let _ = session.execute(&SpanCommand::Heartbeat { run, span, now_ms });
                    return;
                }
                0 => RunCommand::Heartbeat { run, now_ms },
                1 => RunCommand::CascadeClose {
                    run,
                    outcome: SpanOutcome::Cancelled,
                    reason: "r".into(),
                    now_ms,
                },
                2 => RunCommand::SweepOrphans {
                    writer: pick(rng, &holders).into(),
                    now_ms,
                },
                3 => RunCommand::SweepStale {
                    stale_after_ms: rng.below(100),
                    sweeper: None,
                    now_ms,
                },
                _ => RunCommand::Prune {
                    digest_floor_at_ms: now_ms.saturating_sub(rng.below(200)),
                    detail_retention_ms: rng.below(100),
                    hard_ceiling_ms: rng.below(400),
                    batch: 1 + rng.below(3) as u32,
                    now_ms,
                },
            };
            session.execute(&command).map(drop)
        }
        _ => {
            let command = if rng.chance(50) {
                SweepCommand::Expire {
                    now_ms,
                    max_age_ms: 1 + rng.below(200),
                    claim_retry_ms: 1 + rng.below(100),
                }
            } else {
                SweepCommand::Prune {
                    now_ms,
                    older_than_ms: rng.below(200),
                }
            };
            session.execute(&command).map(drop)
        }
    };
}

/// Runs one random sync ingest: few names and sequences, one-byte events, so that events are
/// duplicated, reuse sequences and cross projects, hubs and runtimes.
fn random_ingest(rng: &mut Rng, session: &mut WriteSession<'_>, now_ms: u64) {
    let command = IngestCommand {
        project: pick(rng, &["pa", "pb"]).into(),
        run: pick(rng, &["ra", "rb"]).into(),
        sequence: rng.below(5),
        hub_project: pick(rng, &["ha", "hb"]).into(),
        home_runtime: pick(rng, &["ta", "tb"]).into(),
        event_type: pick(rng, &["ea", "eb"]).into(),
        bytes: vec![rng.below(2) as u8],
        received_at_ms: now_ms,
        subject: None,
    };
    let _ = session.execute(&command);
}

/// The seed `variable` names in the environment, if any: a failing seed a developer replays.
/// The tests run it first, then their own seeds all the same, so that a variable left set
/// never makes a test pass having checked one seed alone.
pub fn seed_to_replay(variable: &str) -> Option<u64> {
    let seed = std::env::var(variable).ok()?;
    Some(
        seed.parse()
            .unwrap_or_else(|_| panic!("{variable}={seed:?} is not a seed (a whole number)")),
    )
}
