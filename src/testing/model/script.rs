//! Seeded random scripts: the mix of commands the simulation tests draw, weighted so that
//! names collide and rows, leases and runs go through their states before the script ends.
//! It models nothing itself and never calls a domain's `decide` or `apply`: it only draws
//! the commands that [`Model::run`](super::Model::run) and
//! [`run_on_store`](super::run_on_store) are compared on.

use super::{EventSpec, Expect, Op, Script};
use crate::demo::Rng;

impl Script {
    /// A seeded random script of `transactions` transactions.
    pub fn random(seed: u64, transactions: u64) -> Script {
        let mut rng = Rng::new(seed);
        let byte = |rng: &mut Rng| rng.below(256) as u8;
        let transactions = (0..transactions)
            .map(|_| {
                (0..1 + rng.below(4))
                    .map(|_| {
                        let spec = |rng: &mut Rng| EventSpec {
                            kind: rng.below(8) as u8,
                            payload: rng.below(3) as u8,
                            key: rng.chance(40).then(|| rng.below(3) as u8),
                        };
                        if rng.chance(8) {
                            // Mostly valid names, so that events collide, reuse sequences
                            // and cross projects, hubs and runtimes.
                            let mostly = |rng: &mut Rng, valid: u64| {
                                if rng.chance(90) {
                                    rng.below(valid) as u8
                                } else {
                                    byte(rng)
                                }
                            };
                            return Op::Ingest {
                                project: mostly(&mut rng, 2),
                                run: mostly(&mut rng, 2),
                                sequence: if rng.chance(95) {
                                    1 + rng.below(4) as u8
                                } else {
                                    0
                                },
                                hub: if rng.chance(85) {
                                    0
                                } else {
                                    mostly(&mut rng, 2)
                                },
                                runtime: if rng.chance(85) {
                                    0
                                } else {
                                    mostly(&mut rng, 2)
                                },
                                event_type: mostly(&mut rng, 2),
                                content: if rng.chance(80) { 0 } else { byte(&mut rng) },
                            };
                        }
                        match rng.below(27) {
                            0 | 1 => Op::Append {
                                stream: byte(&mut rng),
                                expect: match rng.below(4) {
                                    0 => Expect::Any,
                                    1 => Expect::NoStream,
                                    2 => Expect::StreamExists,
                                    _ => Expect::Exact(rng.below(3) as u8),
                                },
                                first: spec(&mut rng),
                                second: rng.chance(25).then(|| spec(&mut rng)),
                            },
                            2 => Op::Acquire {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                ttl_ms: byte(&mut rng) % 60,
                            },
                            3 => Op::Renew {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                token: byte(&mut rng),
                                ttl_ms: byte(&mut rng) % 60,
                            },
                            4 => Op::Release {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                token: byte(&mut rng),
                            },
                            5 if rng.chance(50) => Op::SetSetting {
                                key: byte(&mut rng),
                                value: byte(&mut rng),
                            },
                            5 => Op::Tick(byte(&mut rng) % 40),
                            6 | 7 => Op::Lane {
                                // Claims half the time, on the first key mostly, so that
                                // the others find a lane lease to act on.
                                action: if rng.chance(50) { 0 } else { byte(&mut rng) },
                                key: if rng.chance(70) { 0 } else { byte(&mut rng) },
                                owner: if rng.chance(10) {
                                    2
                                } else {
                                    rng.below(2) as u8
                                },
                                ttl_ms: byte(&mut rng) % 60,
                                cursor: rng.chance(80).then(|| byte(&mut rng)),
                            },
                            9 | 10 => {
                                let maybe = |rng: &mut Rng, n: u64| {
                                    rng.chance(50).then(|| rng.below(n) as u8)
                                };
                                Op::Instance {
                                    action: if rng.chance(40) {
                                        0
                                    } else {
                                        rng.below(6) as u8
                                    },
                                    handle: if rng.chance(80) {
                                        rng.below(2) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    store: if rng.chance(70) {
                                        Some(rng.below(2) as u8)
                                    } else {
                                        maybe(&mut rng, 3)
                                    },
                                    domain: maybe(&mut rng, 3),
                                    identity: maybe(&mut rng, 3),
                                    owner: maybe(&mut rng, 3),
                                    disabled: rng.chance(50).then(|| rng.chance(50)),
                                    mailbox: rng.chance(30).then(|| rng.chance(50)),
                                    knows: maybe(&mut rng, 5),
                                    topics: maybe(&mut rng, 3),
                                }
                            }
                            8 => Op::Fuel {
                                instance: if rng.chance(70) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                caller: byte(&mut rng),
                                op: byte(&mut rng),
                                fuel: byte(&mut rng),
                            },
                            12..=15 => Op::Outbox {
                                // Mostly enqueues, claims, retries and acks, on valid names
                                // and short times, so that rows go through their states.
                                action: match rng.below(10) {
                                    0..=2 => 0,
                                    3 | 4 => 6,
                                    5 => 4,
                                    6 => 7,
                                    _ => byte(&mut rng),
                                },
                                key: if rng.chance(90) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                peer: if rng.chance(90) {
                                    rng.below(2) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                token: if rng.chance(90) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                second: rng
                                    .chance(30)
                                    .then(|| (rng.below(3) as u8, rng.below(4) as u8)),
                                number: if rng.chance(70) {
                                    rng.below(40) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                // Short leases, so that claims lapse and rows are claimed
                                // again.
                                other: if rng.chance(70) {
                                    rng.below(12) as u8
                                } else {
                                    byte(&mut rng)
                                },
                            },
                            16 => Op::Tick(byte(&mut rng) % 40),
                            17..=22 => {
                                // Mostly a root on `s0`, children on the other spans under
                                // spans started before them, ends (of children more
                                // often than roots), patches and events, on valid names,
                                // so that runs grow trees before they close.
                                let action = match rng.below(12) {
                                    0..=2 => 0,
                                    3..=6 => 1,
                                    7 | 8 => 4,
                                    9 => 3,
                                    10 => 6,
                                    _ => byte(&mut rng),
                                };
                                let span = match action % 12 {
                                    0 => 0,
                                    _ if rng.chance(25) => 0,
                                    _ => 1 + rng.below(3) as u8,
                                };
                                Op::Run {
                                    action,
                                    run: if rng.chance(80) {
                                        rng.below(2) as u8
                                    } else if rng.chance(50) {
                                        2
                                    } else {
                                        byte(&mut rng)
                                    },
                                    span: if rng.chance(95) { span } else { byte(&mut rng) },
                                    parent: if rng.chance(50) {
                                        0
                                    } else if rng.chance(80) {
                                        rng.below(u64::from(span.max(1))) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    writer: if rng.chance(90) {
                                        rng.below(2) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    outcome: byte(&mut rng),
                                    usage: rng.chance(60).then(|| byte(&mut rng)),
                                    number: if rng.chance(70) {
                                        rng.below(40) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    other: byte(&mut rng),
                                }
                            }
                            23 => Op::AcquireLabelled {
                                resource: rng.below(3) as u8,
                                holder: rng.below(3) as u8,
                                project: byte(&mut rng),
                                name: byte(&mut rng),
                                holder_name: byte(&mut rng),
                                ttl_ms: byte(&mut rng),
                            },
                            24 => Op::ListLeases {
                                project: byte(&mut rng),
                            },
                            25 => Op::OutboxMark {
                                retry: rng.chance(50),
                                key: if rng.chance(90) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                attempts: byte(&mut rng),
                                next_at: byte(&mut rng),
                                first_failed: byte(&mut rng),
                            },
                            26 => Op::Charge {
                                instance: rng.below(3) as u8,
                                caller: byte(&mut rng),
                                op: rng.below(2) as u8,
                                calls: byte(&mut rng),
                                fuel: byte(&mut rng),
                            },
                            _ => Op::Domain(rng.next_u64()),
                        }
                    })
                    .collect()
            })
            .collect();
        Script { transactions }
    }
}
