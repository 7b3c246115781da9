//! Lease commands and their pure decisions: state + command → events or a refusal.
//!
//! Every rule is decided against the command's `now_ms`; nothing here reads a clock.

use super::events::{
    Acquired, LaneClaimed, LaneCursorAdvanced, LaneReleased, LaneRenewed, LeaseEvent, Released,
    Renewed,
};
use super::query::{self, FencingToken, LaneLease, Lease, LeaseLabels};
use crate::command::{Command, Decision};
use crate::error::Result;
use crate::projection::table::TableSource;
use crate::validate;

/// Why a lease command did not get what it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LeaseRefusal {
    /// Someone else holds a live lease.
    Held,
    /// The caller's token (or identity) is not the current one: it was taken over.
    Superseded,
    /// The caller's lease lapsed; only a fresh acquisition can take it again.
    Expired,
    /// There is no lease.
    Missing,
}

impl std::fmt::Display for LeaseRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LeaseRefusal::Held => "held",
            LeaseRefusal::Superseded => "superseded",
            LeaseRefusal::Expired => "expired",
            LeaseRefusal::Missing => "missing",
        })
    }
}

/// A resource lease command. Its serde form names each variant in snake_case
/// (`acquire_labelled`), its fields as they are.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LeaseCommand {
    /// Take the resource: free → token 1 (or one past the last token issued); own live lease
    /// → extended, same token; expired → takeover, next token; another's live lease → `held`.
    Acquire {
        /// The resource.
        resource: String,
        /// Who asks.
        holder: String,
        /// How long the lease lasts from `now_ms`.
        ttl_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// [`LeaseCommand::Acquire`] with the labels the reference hub's `acquireLease` takes:
    /// a grant carries them, and the holder's own re-acquisition rewrites them (as the
    /// reference does) while keeping its token and grant time.
    AcquireLabelled {
        /// The resource.
        resource: String,
        /// Who asks.
        holder: String,
        /// The lease's project, name and the holder's display name.
        labels: LeaseLabels,
        /// How long the lease lasts from `now_ms`.
        ttl_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Extend a live lease under its token: `missing`, `superseded` or `expired` otherwise.
    Renew {
        /// The resource.
        resource: String,
        /// Who asks.
        holder: String,
        /// The token the holder was given.
        token: FencingToken,
        /// The new length from `now_ms`.
        ttl_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Drop a lease the caller holds under `token`: `missing` or `superseded` otherwise.
    Release {
        /// The resource.
        resource: String,
        /// Who asks.
        holder: String,
        /// The token the holder was given.
        token: FencingToken,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// What a lease command got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum LeaseOutcome {
    /// The caller holds the lease (`renewed`: it already did, under the same token).
    Granted {
        /// The lease now.
        lease: Lease,
        /// Whether an existing lease of the caller's was extended.
        renewed: bool,
    },
    /// The lease was released.
    Released {
        /// The lease as it was.
        lease: Lease,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: LeaseRefusal,
        /// The lease that stands, if any.
        lease: Option<Lease>,
    },
}

/// The stream of a resource's lease events.
pub fn lease_stream(resource: &str) -> String {
    format!("lease/{resource}")
}

/// The stream of a lane lease's events.
pub fn lane_stream(lane: &str, key: &str) -> String {
    format!("lease-lane/{lane}/{key}")
}

fn require_ttl(ttl_ms: u64) -> Result<()> {
    validate::positive("ttl_ms", ttl_ms)
}

impl Command for LeaseCommand {
    type Outcome = LeaseOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<LeaseOutcome>> {
        match self {
            LeaseCommand::Acquire {
                resource,
                holder,
                ttl_ms,
                now_ms,
            } => decide_acquire(state, resource, holder, None, *ttl_ms, *now_ms),
            LeaseCommand::AcquireLabelled {
                resource,
                holder,
                labels,
                ttl_ms,
                now_ms,
            } => decide_acquire(state, resource, holder, Some(labels), *ttl_ms, *now_ms),
            LeaseCommand::Renew {
                resource,
                holder,
                token,
                ttl_ms,
                now_ms,
            } => decide_renew(state, resource, holder, *token, *ttl_ms, *now_ms),
            LeaseCommand::Release {
                resource,
                holder,
                token,
                now_ms,
            } => decide_release(state, resource, holder, *token, *now_ms),
        }
    }
}

/// [`LeaseCommand::Acquire`] and [`LeaseCommand::AcquireLabelled`]: free → the next token;
/// own live lease → extended (relabelled if `labels` are given); another's live lease →
/// `held`.
fn decide_acquire(
    state: &dyn TableSource,
    resource: &str,
    holder: &str,
    labels: Option<&LeaseLabels>,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Decision<LeaseOutcome>> {
    validate::non_empty("resource", resource)?;
    validate::non_empty("holder", holder)?;
    require_ttl(ttl_ms)?;
    let expires_at_ms = now_ms.saturating_add(ttl_ms);
    let current = query::lease(state, resource)?;
    let stream = lease_stream(resource);
    match current {
        Some(lease) if lease.is_live(now_ms) && lease.holder != *holder => {
            Ok(Decision::nothing(LeaseOutcome::Refused {
                reason: LeaseRefusal::Held,
                lease: Some(lease),
            }))
        }
        Some(mut lease) if lease.is_live(now_ms) => {
            let event = LeaseEvent::Renewed(Renewed {
                resource: resource.to_owned(),
                token: lease.token.0,
                expires_at_ms,
                labels: labels.cloned(),
            });
            lease.expires_at_ms = expires_at_ms;
            if let Some(labels) = labels {
                lease.label(labels.clone());
            }
            let outcome = LeaseOutcome::Granted {
                lease,
                renewed: true,
            };
            Ok(Decision::event(stream, now_ms, event, outcome))
        }
        _ => {
            let last = query::last_token(state, resource)?.map_or(0, |t| t.0);
            let token = validate::next_counter("resource", last)?;
            let labels = labels.cloned().unwrap_or_default();
            let lease = Lease {
                resource: resource.to_owned(),
                holder: holder.to_owned(),
                token: FencingToken(token),
                acquired_at_ms: now_ms,
                expires_at_ms,
                project: labels.project.clone(),
                name: labels.name.clone(),
                holder_name: labels.holder_name.clone(),
            };
            let event = LeaseEvent::Acquired(Acquired {
                resource: resource.to_owned(),
                holder: holder.to_owned(),
                token,
                expires_at_ms,
                project: labels.project,
                name: labels.name,
                holder_name: labels.holder_name,
            });
            let outcome = LeaseOutcome::Granted {
                lease,
                renewed: false,
            };
            Ok(Decision::event(stream, now_ms, event, outcome))
        }
    }
}

/// [`LeaseCommand::Renew`]: extends the caller's live lease under its token.
fn decide_renew(
    state: &dyn TableSource,
    resource: &str,
    holder: &str,
    token: FencingToken,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Decision<LeaseOutcome>> {
    validate::non_empty("resource", resource)?;
    require_ttl(ttl_ms)?;
    let lease = match check_holder(state, resource, holder, token)? {
        Ok(lease) => lease,
        Err(refused) => return Ok(Decision::nothing(refused)),
    };
    if !lease.is_live(now_ms) {
        return Ok(Decision::nothing(LeaseOutcome::Refused {
            reason: LeaseRefusal::Expired,
            lease: Some(lease),
        }));
    }
    let expires_at_ms = now_ms.saturating_add(ttl_ms);
    let event = LeaseEvent::Renewed(Renewed {
        resource: resource.to_owned(),
        token: token.0,
        expires_at_ms,
        labels: None,
    });
    let lease = Lease {
        expires_at_ms,
        ..lease
    };
    let outcome = LeaseOutcome::Granted {
        lease,
        renewed: true,
    };
    Ok(Decision::event(
        lease_stream(resource),
        now_ms,
        event,
        outcome,
    ))
}

/// [`LeaseCommand::Release`]: drops the lease the caller holds under its token.
fn decide_release(
    state: &dyn TableSource,
    resource: &str,
    holder: &str,
    token: FencingToken,
    now_ms: u64,
) -> Result<Decision<LeaseOutcome>> {
    validate::non_empty("resource", resource)?;
    let lease = match check_holder(state, resource, holder, token)? {
        Ok(lease) => lease,
        Err(refused) => return Ok(Decision::nothing(refused)),
    };
    let event = LeaseEvent::Released(Released {
        resource: resource.to_owned(),
        token: token.0,
    });
    Ok(Decision::event(
        lease_stream(resource),
        now_ms,
        event,
        LeaseOutcome::Released { lease },
    ))
}

/// The lease if `holder` holds it under `token`; otherwise the refusal.
fn check_holder(
    state: &dyn TableSource,
    resource: &str,
    holder: &str,
    token: FencingToken,
) -> Result<Result<Lease, LeaseOutcome>> {
    Ok(match query::lease(state, resource)? {
        None => Err(LeaseOutcome::Refused {
            reason: LeaseRefusal::Missing,
            lease: None,
        }),
        Some(lease) if lease.holder != holder || lease.token != token => {
            Err(LeaseOutcome::Refused {
                reason: LeaseRefusal::Superseded,
                lease: Some(lease),
            })
        }
        Some(lease) => Ok(lease),
    })
}

/// A lane/key lease command (a reconciler's claim on one key of a lane).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// Its serde names are prefixed (`lane_claim`): a command's name says its domain, apart from
// the resource leases' (`acquire`, `renew`, `release`).
pub enum LaneCommand {
    /// Claim an unowned or expired lane/key; its cursor carries over.
    #[serde(rename = "lane_claim")]
    Claim {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who claims.
        owner: String,
        /// How long the claim lasts from `now_ms`.
        ttl_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Extend a live claim; only its owner may.
    #[serde(rename = "lane_renew")]
    Renew {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The new length from `now_ms`.
        ttl_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Move the cursor; only the live owner may.
    #[serde(rename = "lane_advance")]
    Advance {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The new cursor.
        cursor: Option<String>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Release the claim, keeping the cursor; only the live owner may.
    #[serde(rename = "lane_release")]
    Release {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// What a lane command got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum LaneOutcome {
    /// Done; the lane lease as it now stands.
    Done {
        /// The lane lease now.
        lane: LaneLease,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: LeaseRefusal,
        /// The lane lease that stands, if any.
        lane: Option<LaneLease>,
    },
}

impl Command for LaneCommand {
    type Outcome = LaneOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<LaneOutcome>> {
        match self {
            LaneCommand::Claim {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => decide_lane_claim(state, lane, key, owner, *ttl_ms, *now_ms),
            LaneCommand::Renew {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => decide_lane_renew(state, lane, key, owner, *ttl_ms, *now_ms),
            LaneCommand::Advance {
                lane,
                key,
                owner,
                cursor,
                now_ms,
            } => decide_lane_advance(state, lane, key, owner, cursor, *now_ms),
            LaneCommand::Release {
                lane,
                key,
                owner,
                now_ms,
            } => decide_lane_release(state, lane, key, owner, *now_ms),
        }
    }
}

/// [`LaneCommand::Claim`]: takes an unowned or expired lane/key, keeping its cursor.
fn decide_lane_claim(
    state: &dyn TableSource,
    lane: &str,
    key: &str,
    owner: &str,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Decision<LaneOutcome>> {
    validate::non_empty("lane", lane)?;
    validate::non_empty("key", key)?;
    validate::non_empty("owner", owner)?;
    require_ttl(ttl_ms)?;
    let current = query::lane(state, lane, key)?;
    if let Some(current) = &current
        && now_ms < current.expires_at_ms
    {
        return Ok(Decision::nothing(LaneOutcome::Refused {
            reason: LeaseRefusal::Held,
            lane: Some(current.clone()),
        }));
    }
    let expires_at_ms = now_ms.saturating_add(ttl_ms);
    let claimed = LaneLease {
        lane: lane.to_owned(),
        key: key.to_owned(),
        owner: owner.to_owned(),
        expires_at_ms,
        cursor: current.and_then(|c| c.cursor),
    };
    let event = LeaseEvent::LaneClaimed(LaneClaimed {
        lane: lane.to_owned(),
        key: key.to_owned(),
        owner: owner.to_owned(),
        expires_at_ms,
    });
    Ok(Decision::event(
        lane_stream(lane, key),
        now_ms,
        event,
        LaneOutcome::Done { lane: claimed },
    ))
}

/// [`LaneCommand::Renew`]: extends the owner's live claim.
fn decide_lane_renew(
    state: &dyn TableSource,
    lane: &str,
    key: &str,
    owner: &str,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Decision<LaneOutcome>> {
    require_ttl(ttl_ms)?;
    let expires_at_ms = now_ms.saturating_add(ttl_ms);
    let event = LeaseEvent::LaneRenewed(LaneRenewed {
        lane: lane.to_owned(),
        key: key.to_owned(),
        expires_at_ms,
    });
    as_live_owner(state, lane, key, owner, now_ms, event, |l| {
        l.expires_at_ms = expires_at_ms
    })
}

/// [`LaneCommand::Advance`]: moves the live owner's cursor.
fn decide_lane_advance(
    state: &dyn TableSource,
    lane: &str,
    key: &str,
    owner: &str,
    cursor: &Option<String>,
    now_ms: u64,
) -> Result<Decision<LaneOutcome>> {
    let event = LeaseEvent::LaneCursorAdvanced(LaneCursorAdvanced {
        lane: lane.to_owned(),
        key: key.to_owned(),
        cursor: cursor.clone(),
    });
    as_live_owner(state, lane, key, owner, now_ms, event, |l| {
        l.cursor = cursor.clone()
    })
}

/// [`LaneCommand::Release`]: ends the live owner's claim, keeping the cursor.
fn decide_lane_release(
    state: &dyn TableSource,
    lane: &str,
    key: &str,
    owner: &str,
    now_ms: u64,
) -> Result<Decision<LaneOutcome>> {
    let event = LeaseEvent::LaneReleased(LaneReleased {
        lane: lane.to_owned(),
        key: key.to_owned(),
    });
    as_live_owner(state, lane, key, owner, now_ms, event, |l| {
        l.expires_at_ms = 0
    })
}

/// Emits `event` if `owner` holds `lane`/`key` live at `now_ms`, else refuses.
fn as_live_owner(
    state: &dyn TableSource,
    lane: &str,
    key: &str,
    owner: &str,
    now_ms: u64,
    event: LeaseEvent,
    change: impl FnOnce(&mut LaneLease),
) -> Result<Decision<LaneOutcome>> {
    let refused = |reason, lane| Ok(Decision::nothing(LaneOutcome::Refused { reason, lane }));
    match query::lane(state, lane, key)? {
        None => refused(LeaseRefusal::Missing, None),
        Some(current) if current.owner != owner => refused(LeaseRefusal::Superseded, Some(current)),
        Some(current) if now_ms >= current.expires_at_ms => {
            refused(LeaseRefusal::Expired, Some(current))
        }
        Some(mut current) => {
            change(&mut current);
            Ok(Decision::event(
                lane_stream(lane, key),
                now_ms,
                event,
                LaneOutcome::Done { lane: current },
            ))
        }
    }
}
