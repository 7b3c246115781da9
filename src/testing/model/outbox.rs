//! The model's outbox: every row in a `BTreeMap` by key, moved by the rules as the outbox
//! module doc and the reference peer outbox (`outbox-store.js`) state them. It never calls
//! the outbox's `decide`, `evolve` or `created`: a rule the store gets wrong must not be
//! wrong here the same way.

mod pull;

use std::collections::BTreeMap;

use super::Op;
use crate::outbox::decide::{
    Backoff, ExpiredRow, OutboxCommand, OutboxOutcome, OutboxRefusal, PullCommand, PullOutcome,
    RowAck, SweepCommand, SweepOutcome,
};
use crate::outbox::events::ExpiryReason;
use crate::outbox::query::{self, ClaimToken, OutboxRow, OutboxState};
use crate::projection::table::TableSource;
use crate::store::WriteSession;

/// Row keys: three valid ones none of which [`super::random_domain_command`] uses, an empty
/// one and one with a control character (both invalid), then one as long as allowed and
/// one a byte longer (see [`name`]).
const KEYS: [&str; 7] = ["mo1", "mo2", "mo3", "", "mo\u{7}", LONGEST, TOO_LONG];
/// Peers (the empty one and the one too long are invalid).
const PEERS: [&str; 4] = ["mp1", "mp2", "", TOO_LONG];
/// Row kinds, valid ones drawn three times as often as the empty one and the one too long
/// (both invalid), so that most enqueues add rows.
const KINDS: [&str; 8] = [
    "event", "report", "event", "report", "event", "report", "", TOO_LONG,
];
/// The longest kind, in bytes.
const KIND_BYTES_MAX: usize = 64;
/// Claim tokens (the empty one and the one too long are invalid).
const TOKENS: [&str; 6] = ["mt1", "mt2", "mt3", "", LONGEST, TOO_LONG];
/// Stands for a name of as many bytes as its field allows.
const LONGEST: &str = "<longest>";
/// Stands for a name one byte longer than its field allows.
const TOO_LONG: &str = "<too long>";
/// The longest error text a retry may record, in bytes (the outbox's `ERROR_BYTES_MAX`,
/// restated: the model states its limits itself).
const ERROR_BYTES_MAX: usize = 1024;
/// The longest key or peer, in bytes.
const NAME_BYTES_MAX: usize = 200;
/// The longest claim token, in bytes.
const TOKEN_BYTES_MAX: usize = 128;
/// The most rows a sweep changes.
const SWEEP_ROWS_MAX: usize = 1000;

/// One outbox command, of whichever of the three command types.
#[derive(Clone, Debug)]
pub(super) enum Command {
    /// A command of the host.
    Host(OutboxCommand),
    /// A command of a peer's pull.
    Pull(PullCommand),
    /// A housekeeping command.
    Sweep(SweepCommand),
}

/// What an outbox command got, of whichever of the three outcome types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// An [`OutboxCommand`]'s.
    Host(OutboxOutcome),
    /// A [`PullCommand`]'s.
    Pull(PullOutcome),
    /// A [`SweepCommand`]'s.
    Sweep(SweepOutcome),
}

/// The outbox as the query functions show it after a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// Every row, in key order.
    pub rows: Vec<OutboxRow>,
    /// The keys of every row, in enqueue order.
    pub listed: Vec<String>,
    /// The keys of the rows due at the command's clock, in enqueue order, all of them.
    pub due: Vec<String>,
    /// The keys of the first two rows due, as a push lane's limited read takes them.
    pub due_first_two: Vec<String>,
    /// For each valid peer, the keys of its open rows, in enqueue order.
    pub open: Vec<Vec<String>>,
    /// For each valid peer, the keys of its pending rows new or past their backoff.
    pub pending: Vec<Vec<String>>,
}

/// An outbox command's outcome and the outbox it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The outcome.
    pub done: Done,
    /// The outbox after it.
    pub view: View,
}

/// The outbox command `op` states at `now_ms`, if it is one.
pub(super) fn command(op: &Op, now_ms: u64) -> Option<Command> {
    let Op::Outbox {
        action,
        key,
        peer,
        token,
        second,
        number,
        other,
    } = *op
    else {
        return None;
    };
    let key = name(&KEYS, key, NAME_BYTES_MAX);
    let peer = name(&PEERS, peer, NAME_BYTES_MAX);
    let token = ClaimToken(name(&TOKENS, token, TOKEN_BYTES_MAX));
    Some(match action % 10 {
        0 | 1 => Command::Host(OutboxCommand::Enqueue {
            key,
            peer,
            kind: name(&KINDS, other, KIND_BYTES_MAX),
            payload: vec![number % 3],
            now_ms,
        }),
        2 => Command::Host(OutboxCommand::Deliver { key, now_ms }),
        3 => Command::Host(OutboxCommand::Park { key, now_ms }),
        4 => Command::Host(OutboxCommand::Retry {
            key,
            // A zero base, or a ceiling below the base, is invalid.
            backoff: Backoff {
                base_ms: u64::from(number % 8),
                max_ms: u64::from(other % 64),
            },
            last_error: match other % 3 {
                0 => None,
                1 => Some("refused".into()),
                _ => Some("e".repeat(ERROR_BYTES_MAX + usize::from(number % 2))),
            },
            now_ms,
        }),
        5 => Command::Host(OutboxCommand::GiveUp { key, now_ms }),
        6 => Command::Pull(PullCommand::Claim {
            peer,
            token,
            // 0 and anything over 100 are clamped.
            limit: u32::from(number) % 4 + if number >= 128 { 100 } else { 0 },
            lease_ms: u64::from(other % 50),
            now_ms,
        }),
        7 => {
            let mut acks = vec![RowAck { key, token }];
            if let Some((key, token)) = second {
                acks.push(RowAck {
                    key: name(&KEYS, key, NAME_BYTES_MAX),
                    token: ClaimToken(name(&TOKENS, token, TOKEN_BYTES_MAX)),
                });
            }
            Command::Pull(PullCommand::Ack { peer, acks, now_ms })
        }
        8 => Command::Sweep(SweepCommand::Expire {
            now_ms,
            max_age_ms: u64::from(number),
            claim_retry_ms: u64::from(other),
        }),
        _ => Command::Sweep(SweepCommand::Prune {
            now_ms,
            older_than_ms: u64::from(number),
        }),
    })
}

/// The outbox command of the reference's `markWaiting` or `markRetry` that `op` states at
/// `now_ms`, if it is one.
pub(super) fn mark_command(op: &Op, now_ms: u64) -> Option<Command> {
    let Op::OutboxMark {
        retry,
        key,
        attempts,
        next_at,
        first_failed,
    } = *op
    else {
        return None;
    };
    let key = name(&KEYS, key, NAME_BYTES_MAX);
    let attempts = u32::from(attempts);
    Some(Command::Host(if retry {
        OutboxCommand::MarkRetry {
            key,
            attempts,
            // Before the clock as well as after it: the caller's time is taken as it is.
            next_at_ms: (now_ms + u64::from(next_at)).saturating_sub(128),
            first_failed_at_ms: u64::from(first_failed),
            now_ms,
        }
    } else {
        OutboxCommand::MarkWaiting {
            key,
            attempts,
            now_ms,
        }
    }))
}

/// The name `index` picks from `names`, [`LONGEST`] and [`TOO_LONG`] made `max` and
/// `max + 1` bytes long.
fn name(names: &[&'static str], index: u8, max: usize) -> String {
    match super::pick(names, index) {
        LONGEST => "l".repeat(max),
        TOO_LONG => "l".repeat(max + 1),
        name => name.to_owned(),
    }
}

/// Runs `command` in `session` at `now_ms`, and reads the outbox back through its queries.
pub(super) fn run_on_store(
    command: &Command,
    session: &mut WriteSession<'_>,
    now_ms: u64,
) -> crate::error::Result<Seen> {
    let done = match command {
        Command::Host(command) => Done::Host(session.execute(command)?),
        Command::Pull(command) => Done::Pull(session.execute(command)?),
        Command::Sweep(command) => Done::Sweep(session.execute(command)?),
    };
    let view = store_view(session.state(), now_ms)?;
    Ok(Seen { done, view })
}

/// The outbox as the store's query functions read it.
fn store_view(state: &dyn TableSource, now_ms: u64) -> crate::error::Result<View> {
    let keys = |rows: Vec<OutboxRow>| rows.into_iter().map(|row| row.key).collect();
    let valid_peers = &PEERS[..2];
    let mut open = Vec::new();
    let mut pending = Vec::new();
    for peer in valid_peers {
        open.push(keys(query::open_for(state, peer, usize::MAX)?));
        pending.push(keys(query::pending_for(state, peer, now_ms, usize::MAX)?));
    }
    Ok(View {
        rows: query::rows(state, usize::MAX)?,
        listed: keys(query::rows_by_enqueue(state, usize::MAX)?),
        due: keys(query::due(state, now_ms, usize::MAX)?),
        due_first_two: keys(query::due(state, now_ms, 2)?),
        open,
        pending,
    })
}

/// The field an invalid command names.
pub(super) type Invalid = &'static str;

/// Refuses a key, peer or token as `field` unless it is not empty, at most `max` bytes, and
/// free of control characters.
fn check(name: &str, field: Invalid, max: usize) -> Result<(), Invalid> {
    let valid = !name.is_empty() && name.len() <= max && !name.chars().any(char::is_control);
    if valid { Ok(()) } else { Err(field) }
}

/// The model's outbox.
#[derive(Clone, Debug, Default)]
pub(super) struct Outbox {
    rows: BTreeMap<String, OutboxRow>,
}

/// What the model predicts a command appends: (stream, kind) per record, in order.
pub(super) type Records = Vec<(String, &'static str)>;

impl Outbox {
    /// What `command` must do: the field named when it is invalid, else its outcome and
    /// its records.
    pub(super) fn run(&mut self, command: &Command) -> Result<(Done, Records), Invalid> {
        let mut records = Records::new();
        let done = match command {
            Command::Host(command) => Done::Host(self.host(command, &mut records)?),
            Command::Pull(command) => Done::Pull(self.pull(command, &mut records)?),
            Command::Sweep(command) => Done::Sweep(self.sweep(command, &mut records)),
        };
        Ok((done, records))
    }

    /// The outbox as the model sees it at `now_ms`.
    pub(super) fn view(&self, now_ms: u64) -> View {
        let in_enqueue_order = |keep: &dyn Fn(&OutboxRow) -> bool| -> Vec<String> {
            let mut rows: Vec<&OutboxRow> = self.rows.values().filter(|r| keep(r)).collect();
            rows.sort_by_key(|row| row.enqueue_id);
            rows.into_iter().map(|row| row.key.clone()).collect()
        };
        let open = |row: &OutboxRow| {
            matches!(
                row.state,
                OutboxState::Pending | OutboxState::Waiting | OutboxState::Claimed
            )
        };
        // The reference's `dueRows`: `state = 'pending' AND next_at <= now ORDER BY id`.
        let due = in_enqueue_order(&|row| {
            row.state == OutboxState::Pending && row.next_at_ms.is_some_and(|at| at <= now_ms)
        });
        View {
            rows: self.rows.values().cloned().collect(),
            listed: in_enqueue_order(&|_| true),
            due_first_two: due.iter().take(2).cloned().collect(),
            due,
            open: PEERS[..2]
                .iter()
                .map(|peer| in_enqueue_order(&|row| row.peer == *peer && open(row)))
                .collect(),
            pending: PEERS[..2]
                .iter()
                .map(|peer| {
                    in_enqueue_order(&|row| {
                        row.peer == *peer
                            && row.state == OutboxState::Pending
                            && (row.attempts == 0 || row.next_at_ms.is_some_and(|at| at <= now_ms))
                    })
                })
                .collect(),
        }
    }

    fn host(
        &mut self,
        command: &OutboxCommand,
        records: &mut Records,
    ) -> Result<OutboxOutcome, Invalid> {
        let (key, now_ms) = match command {
            OutboxCommand::Enqueue {
                key,
                peer,
                kind,
                payload,
                now_ms,
            } => {
                check(key, "key", NAME_BYTES_MAX)?;
                check(peer, "peer", NAME_BYTES_MAX)?;
                check(kind, "kind", KIND_BYTES_MAX)?;
                // Payloads here are one byte: far below the 256 KiB limit.
                if let Some(row) = self.rows.get(key) {
                    return Ok(OutboxOutcome::AlreadyEnqueued { row: row.clone() });
                }
                // The reference's autoincrement id, over the rows there are.
                let highest = self.rows.values().map(|row| row.enqueue_id).max();
                let row = OutboxRow {
                    key: key.clone(),
                    peer: peer.clone(),
                    kind: kind.clone(),
                    enqueue_id: highest.unwrap_or(0) + 1,
                    payload: payload.clone(),
                    state: OutboxState::Pending,
                    attempts: 0,
                    next_at_ms: Some(*now_ms),
                    first_failed_at_ms: None,
                    last_error: None,
                    created_at_ms: *now_ms,
                    claim: None,
                    claim_tokens: Vec::new(),
                };
                self.rows.insert(key.clone(), row.clone());
                records.push((format!("outbox/{key}"), "outbox.enqueued"));
                return Ok(OutboxOutcome::Enqueued { row });
            }
            // The reference has no personal payloads, and the model makes no such command.
            OutboxCommand::EnqueueFor { .. } => {
                unreachable!("the model makes no personal enqueue")
            }
            OutboxCommand::Retry {
                key,
                backoff,
                last_error,
                now_ms,
            } => {
                if backoff.base_ms == 0 {
                    return Err("backoff.base_ms");
                }
                if backoff.max_ms < backoff.base_ms {
                    return Err("backoff.max_ms");
                }
                if last_error
                    .as_ref()
                    .is_some_and(|e| e.len() > ERROR_BYTES_MAX)
                {
                    return Err("last_error");
                }
                (key, *now_ms)
            }
            OutboxCommand::Deliver { key, now_ms }
            | OutboxCommand::Park { key, now_ms }
            | OutboxCommand::MarkWaiting { key, now_ms, .. }
            | OutboxCommand::MarkRetry { key, now_ms, .. }
            | OutboxCommand::GiveUp { key, now_ms } => (key, *now_ms),
        };
        check(key, "key", NAME_BYTES_MAX)?;
        let Some(row) = self.rows.get_mut(key) else {
            return Ok(OutboxOutcome::Refused {
                reason: OutboxRefusal::Missing,
                row: None,
            });
        };
        let (pending, waiting) = (
            row.state == OutboxState::Pending,
            row.state == OutboxState::Waiting,
        );
        let kind = match command {
            OutboxCommand::Deliver { .. } if pending || waiting => {
                finish(row, OutboxState::Done);
                "outbox.delivered"
            }
            OutboxCommand::GiveUp { .. } if pending || waiting => {
                finish(row, OutboxState::Expired);
                "outbox.expired"
            }
            OutboxCommand::Park { .. } if pending => {
                row.state = OutboxState::Waiting;
                row.attempts = row.attempts.saturating_add(1);
                row.next_at_ms = None;
                "outbox.parked"
            }
            // The reference's `markWaiting` and `markRetry`: the caller's numbers, as given.
            OutboxCommand::MarkWaiting { attempts, .. } if pending => {
                row.state = OutboxState::Waiting;
                row.attempts = *attempts;
                row.next_at_ms = None;
                "outbox.parked"
            }
            OutboxCommand::MarkRetry {
                attempts,
                next_at_ms,
                first_failed_at_ms,
                ..
            } if pending => {
                row.attempts = *attempts;
                row.next_at_ms = Some(*next_at_ms);
                row.first_failed_at_ms = Some(*first_failed_at_ms);
                "outbox.retry_scheduled"
            }
            OutboxCommand::Retry {
                backoff,
                last_error,
                ..
            } if pending => {
                row.attempts = row.attempts.saturating_add(1);
                row.next_at_ms = Some(now_ms.saturating_add(wait_ms(*backoff, row.attempts)));
                row.first_failed_at_ms.get_or_insert(now_ms);
                row.last_error = last_error.clone();
                "outbox.retry_scheduled"
            }
            _ => {
                return Ok(OutboxOutcome::Refused {
                    reason: OutboxRefusal::WrongState,
                    row: Some(row.clone()),
                });
            }
        };
        records.push((format!("outbox/{key}"), kind));
        Ok(OutboxOutcome::Updated { row: row.clone() })
    }

    fn sweep(&mut self, command: &SweepCommand, records: &mut Records) -> SweepOutcome {
        match *command {
            SweepCommand::Expire {
                now_ms,
                max_age_ms,
                claim_retry_ms,
            } => {
                // Created more than `age` ago: `now - created > age`.
                let older = |row: &OutboxRow, age: u64| {
                    now_ms
                        .checked_sub(row.created_at_ms)
                        .is_some_and(|lived| lived > age)
                };
                let mut found: Vec<(u64, String, ExpiryReason)> = Vec::new();
                for row in self.rows.values() {
                    let reason = match row.state {
                        OutboxState::Pending | OutboxState::Waiting if older(row, max_age_ms) => {
                            ExpiryReason::MaxAge
                        }
                        OutboxState::Claimed
                            if older(row, claim_retry_ms)
                                && row.claim.as_ref().is_none_or(|c| c.expires_at_ms <= now_ms) =>
                        {
                            ExpiryReason::ClaimLapsed
                        }
                        _ => continue,
                    };
                    found.push((row.created_at_ms, row.key.clone(), reason));
                }
                found.sort();
                let more = found.len() > SWEEP_ROWS_MAX;
                found.truncate(SWEEP_ROWS_MAX);
                let mut rows = Vec::new();
                for (_, key, reason) in found {
                    if let Some(row) = self.rows.get_mut(&key) {
                        finish(row, OutboxState::Expired);
                    }
                    records.push((format!("outbox/{key}"), "outbox.expired"));
                    rows.push(ExpiredRow { key, reason });
                }
                SweepOutcome::Expired { rows, more }
            }
            SweepCommand::Prune {
                now_ms,
                older_than_ms,
            } => {
                let mut found: Vec<(u64, String)> = self
                    .rows
                    .values()
                    .filter(|row| matches!(row.state, OutboxState::Done | OutboxState::Expired))
                    .filter(|row| {
                        now_ms
                            .checked_sub(row.created_at_ms)
                            .is_some_and(|lived| lived > older_than_ms)
                    })
                    .map(|row| (row.created_at_ms, row.key.clone()))
                    .collect();
                found.sort();
                let more = found.len() > SWEEP_ROWS_MAX;
                found.truncate(SWEEP_ROWS_MAX);
                let mut keys = Vec::new();
                for (_, key) in found {
                    self.rows.remove(&key);
                    records.push((format!("outbox/{key}"), "outbox.pruned"));
                    keys.push(key);
                }
                SweepOutcome::Pruned { keys, more }
            }
        }
    }
}

/// Ends a row's delivery in `state`: no longer due, no longer claimed.
fn finish(row: &mut OutboxRow, state: OutboxState) {
    row.state = state;
    row.next_at_ms = None;
    row.claim = None;
}

/// The wait after failure number `attempts`: the base, doubled for each failure after the
/// first, never more than the ceiling.
fn wait_ms(backoff: Backoff, attempts: u32) -> u64 {
    let mut wait = backoff.base_ms;
    for _ in 1..attempts {
        if wait >= backoff.max_ms {
            break;
        }
        wait = wait.saturating_mul(2);
    }
    wait.min(backoff.max_ms)
}
