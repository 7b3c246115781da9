//! The model's outbox claims and acks: a claim takes the peer's own pending, waiting or
//! lapsed rows in enqueue order, the limit clamped, refused when a row it
//! would take was claimed under the token before; an ack takes each row in turn, refused
//! `missing`, `other_peer`, `wrong_state` or `other_token`. It never calls the outbox's
//! `decide`, `evolve` or `created`: a rule the store gets wrong must not be wrong here the
//! same way.

use super::{Invalid, NAME_BYTES_MAX, Outbox, Records, TOKEN_BYTES_MAX, check, finish};
use crate::outbox::decide::{AckRefusal, OutboxRefusal, PullCommand, PullOutcome};
use crate::outbox::query::{Claim, OutboxState};

impl Outbox {
    /// What the claim or ack must do, its records added to `records`; the field named when
    /// it is invalid.
    pub(super) fn pull(
        &mut self,
        command: &PullCommand,
        records: &mut Records,
    ) -> Result<PullOutcome, Invalid> {
        match command {
            PullCommand::Claim {
                peer,
                token,
                limit,
                lease_ms,
                now_ms,
            } => {
                check(peer, "peer", NAME_BYTES_MAX)?;
                check(&token.0, "token", TOKEN_BYTES_MAX)?;
                if *lease_ms == 0 {
                    return Err("lease_ms");
                }
                let take = (*limit).clamp(1, 100) as usize;
                // The peer's own claimable rows, oldest first: pending, waiting, or under a
                // claim that has lapsed.
                let mut claimable: Vec<(u64, String)> = self
                    .rows
                    .values()
                    .filter(|row| row.peer == *peer)
                    .filter(|row| match row.state {
                        OutboxState::Pending | OutboxState::Waiting => true,
                        OutboxState::Claimed => row
                            .claim
                            .as_ref()
                            .is_none_or(|c| c.expires_at_ms <= *now_ms),
                        OutboxState::Done | OutboxState::Expired => false,
                    })
                    .map(|row| (row.enqueue_id, row.key.clone()))
                    .collect();
                claimable.sort();
                claimable.truncate(take);
                if let Some((_, key)) = claimable.iter().find(|(_, key)| {
                    self.rows
                        .get(key)
                        .is_some_and(|row| row.claim_tokens.contains(token))
                }) {
                    return Ok(PullOutcome::Refused {
                        reason: OutboxRefusal::TokenReused,
                        key: key.clone(),
                    });
                }
                let expires_at_ms = now_ms.saturating_add(*lease_ms);
                let mut claimed = Vec::new();
                for (_, key) in claimable {
                    let Some(row) = self.rows.get_mut(&key) else {
                        continue;
                    };
                    row.state = OutboxState::Claimed;
                    row.next_at_ms = None;
                    row.claim = Some(Claim {
                        token: token.clone(),
                        claimed_at_ms: *now_ms,
                        expires_at_ms,
                    });
                    row.claim_tokens.push(token.clone());
                    claimed.push(row.clone());
                    records.push((format!("outbox/{key}"), "outbox.claimed"));
                }
                Ok(PullOutcome::Claimed {
                    token: token.clone(),
                    expires_at_ms,
                    rows: claimed,
                })
            }
            PullCommand::Ack { peer, acks, .. } => {
                check(peer, "peer", NAME_BYTES_MAX)?;
                if acks.len() > 1000 {
                    return Err("acks");
                }
                for ack in acks {
                    check(&ack.key, "key", NAME_BYTES_MAX)?;
                    check(&ack.token.0, "token", TOKEN_BYTES_MAX)?;
                }
                let (mut acked, mut refused) = (Vec::new(), Vec::new());
                // One at a time, each against the rows as the earlier ones left them: a key
                // named twice finds itself done the second time.
                for ack in acks {
                    let reason = match self.rows.get_mut(&ack.key) {
                        None => OutboxRefusal::Missing,
                        Some(row) if row.peer != *peer => OutboxRefusal::OtherPeer,
                        Some(row) if row.state != OutboxState::Claimed => OutboxRefusal::WrongState,
                        Some(row) if row.claim.as_ref().map(|c| &c.token) != Some(&ack.token) => {
                            OutboxRefusal::OtherToken
                        }
                        Some(row) => {
                            finish(row, OutboxState::Done);
                            acked.push(ack.key.clone());
                            records.push((format!("outbox/{}", ack.key), "outbox.acked"));
                            continue;
                        }
                    };
                    refused.push(AckRefusal {
                        key: ack.key.clone(),
                        reason,
                    });
                }
                Ok(PullOutcome::Acked { acked, refused })
            }
        }
    }
}
