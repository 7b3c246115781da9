//! The model's leases: each resource's lease and last token, and each (lane, key)'s lane
//! lease, kept in the [`Model`]'s `BTreeMap`s. It predicts:
//! - resource leases: acquire (grant with the next token, extend one's own live lease,
//!   take over an expired one, refuse a live one of another's), renew (missing, superseded,
//!   expired, or extended), release (missing, superseded, or released), empty names and
//!   zero TTLs refused as invalid, and the lease streams' records;
//! - lane leases: claim (an unowned or expired lane/key, keeping its cursor; a live one,
//!   even one's own, refused `held`), renew, advance and release by the live owner only
//!   (`missing`, `superseded` for another owner, `expired`; a release leaves the cursor and
//!   expiry 0), an empty key or owner on a claim and a zero TTL refused as invalid, the
//!   lane lease as it then stands, and the lane streams' records.
//!
//! It never calls the leases' `decide` or `apply` (only `lane_stream`, for the stream's
//! name): a rule the store gets wrong must not be wrong here the same way.

use super::{Model, Op, Outcome, failed, pick};
use crate::leases::decide::lane_stream;
use crate::leases::{
    FencingToken, LaneCommand, LaneLease, LaneOutcome, Lease, LeaseCommand, LeaseLabels,
    LeaseOutcome, LeaseRefusal, list_leases,
};
use crate::store::WriteSession;

/// Lease resources.
const RESOURCES: [&str; 3] = ["r1", "r2", ""];
/// Lease holders.
const HOLDERS: [&str; 3] = ["h1", "h2", ""];
/// Lease projects (the empty one is the project of unlabelled leases).
const PROJECTS: [&str; 3] = ["pa", "pb", ""];
/// Lease names.
const LEASE_NAMES: [&str; 2] = ["deploy", "migrate"];
/// Holders' display names.
const HOLDER_NAMES: [&str; 2] = ["Ada", "Grace"];
/// The lane of lane leases: not the one [`super::random_domain_command`] claims.
const LANE: &str = "model-lane";
/// Keys of the lane (the empty one is invalid to claim).
const LANE_KEYS: [&str; 3] = ["mk1", "mk2", ""];
/// Lane owners (the empty one is invalid to claim).
const LANE_OWNERS: [&str; 3] = ["o1", "o2", ""];
/// Lane cursors.
const LANE_CURSORS: [&str; 2] = ["c1", "c2"];

/// A resource's lease as the model holds it.
#[derive(Clone, Debug)]
pub(super) struct ModelLease {
    holder: String,
    token: u64,
    expires_at_ms: u64,
    acquired_at_ms: u64,
    labels: LeaseLabels,
}

/// The lease command `op` states at `now_ms`, if it is one.
pub(super) fn lease_command(op: &Op, now_ms: u64) -> Option<LeaseCommand> {
    Some(match *op {
        Op::Acquire {
            resource,
            holder,
            ttl_ms,
        } => LeaseCommand::Acquire {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            ttl_ms: u64::from(ttl_ms),
            now_ms,
        },
        Op::Renew {
            resource,
            holder,
            token,
            ttl_ms,
        } => LeaseCommand::Renew {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            token: FencingToken(u64::from(token % 4)),
            ttl_ms: u64::from(ttl_ms),
            now_ms,
        },
        Op::AcquireLabelled {
            resource,
            holder,
            project,
            name,
            holder_name,
            ttl_ms,
        } => LeaseCommand::AcquireLabelled {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            labels: LeaseLabels {
                project: pick(&PROJECTS, project).into(),
                name: pick(&LEASE_NAMES, name).into(),
                holder_name: pick(&HOLDER_NAMES, holder_name).into(),
            },
            ttl_ms: u64::from(ttl_ms),
            now_ms,
        },
        Op::Release {
            resource,
            holder,
            token,
        } => LeaseCommand::Release {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            token: FencingToken(u64::from(token % 4)),
            now_ms,
        },
        _ => return None,
    })
}

/// The lane command `op` states at `now_ms`, if it is one.
pub(super) fn lane_command(op: &Op, now_ms: u64) -> Option<LaneCommand> {
    let Op::Lane {
        action,
        key,
        owner,
        ttl_ms,
        cursor,
    } = *op
    else {
        return None;
    };
    let (lane, key, owner) = (
        LANE.to_owned(),
        pick(&LANE_KEYS, key).to_owned(),
        pick(&LANE_OWNERS, owner).to_owned(),
    );
    let ttl_ms = u64::from(ttl_ms);
    Some(match action % 4 {
        0 => LaneCommand::Claim {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        },
        1 => LaneCommand::Renew {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        },
        2 => LaneCommand::Advance {
            lane,
            key,
            owner,
            cursor: cursor.map(|c| pick(&LANE_CURSORS, c).to_owned()),
            now_ms,
        },
        _ => LaneCommand::Release {
            lane,
            key,
            owner,
            now_ms,
        },
    })
}

/// Runs the lease command in `session`, and states what it did.
pub(super) fn lease_on_store(command: &LeaseCommand, session: &mut WriteSession<'_>) -> Outcome {
    match session.execute(command) {
        Ok(LeaseOutcome::Granted { lease, renewed }) => Outcome::Granted {
            holder: lease.holder,
            token: lease.token.0,
            expires_at_ms: lease.expires_at_ms,
            renewed,
        },
        Ok(LeaseOutcome::Released { lease }) => Outcome::Released {
            token: lease.token.0,
        },
        Ok(LeaseOutcome::Refused { reason, lease }) => Outcome::Refused {
            reason,
            token: lease.map(|l| l.token.0),
        },
        Err(error) => failed(error),
    }
}

/// The project whose leases `op` lists, if it is a listing.
pub(super) fn listed_project(op: &Op) -> Option<&'static str> {
    match *op {
        Op::ListLeases { project } => Some(pick(&PROJECTS, project)),
        _ => None,
    }
}

/// The leases of `project` as the store's `list_leases` reads them.
pub(super) fn list_on_store(project: &str, session: &mut WriteSession<'_>) -> Outcome {
    match list_leases(session.state(), project) {
        Ok(leases) => Outcome::Leases(leases),
        Err(error) => failed(error),
    }
}

/// Runs the lane command in `session`, and states what it did.
pub(super) fn lane_on_store(command: &LaneCommand, session: &mut WriteSession<'_>) -> Outcome {
    match session.execute(command) {
        Ok(LaneOutcome::Done { lane }) => Outcome::LaneDone(lane),
        Ok(LaneOutcome::Refused { reason, lane }) => Outcome::LaneRefused { reason, lane },
        Err(error) => failed(error),
    }
}

impl Model {
    /// What the lease command must do, applied to the model.
    pub(super) fn lease(&mut self, command: LeaseCommand) -> Outcome {
        match command {
            LeaseCommand::Acquire {
                resource,
                holder,
                ttl_ms,
                now_ms,
            } => self.acquire(resource, holder, None, ttl_ms, now_ms),
            LeaseCommand::AcquireLabelled {
                resource,
                holder,
                labels,
                ttl_ms,
                now_ms,
            } => self.acquire(resource, holder, Some(labels), ttl_ms, now_ms),
            LeaseCommand::Renew {
                resource,
                holder,
                token,
                ttl_ms,
                now_ms,
            } => {
                if resource.is_empty() || ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                let lease = match self.held_by(&resource, &holder, token.0) {
                    Ok(lease) => lease,
                    Err(refused) => return refused,
                };
                if now_ms >= lease.expires_at_ms {
                    return Outcome::Refused {
                        reason: LeaseRefusal::Expired,
                        token: Some(lease.token),
                    };
                }
                let expires_at_ms = now_ms.saturating_add(ttl_ms);
                let granted = Outcome::Granted {
                    holder: lease.holder.clone(),
                    token: lease.token,
                    expires_at_ms,
                    renewed: true,
                };
                if let Some(lease) = self.leases.get_mut(&resource) {
                    lease.expires_at_ms = expires_at_ms;
                }
                self.write(&format!("lease/{resource}"), 1);
                granted
            }
            LeaseCommand::Release {
                resource,
                holder,
                token,
                ..
            } => {
                if resource.is_empty() {
                    return Outcome::Invalid;
                }
                if let Err(refused) = self.held_by(&resource, &holder, token.0) {
                    return refused;
                }
                self.leases.remove(&resource);
                self.write(&format!("lease/{resource}"), 1);
                Outcome::Released { token: token.0 }
            }
        }
    }

    /// An acquisition, labelled or not: a grant takes the labels (none: empty), the
    /// holder's own re-acquisition of a live lease takes them if given (the reference's
    /// `acquireLease` rewrites its record) and keeps its own otherwise.
    fn acquire(
        &mut self,
        resource: String,
        holder: String,
        labels: Option<LeaseLabels>,
        ttl_ms: u64,
        now_ms: u64,
    ) -> Outcome {
        if resource.is_empty() || holder.is_empty() || ttl_ms == 0 {
            return Outcome::Invalid;
        }
        let expires_at_ms = now_ms.saturating_add(ttl_ms);
        let stream = format!("lease/{resource}");
        match self.leases.get_mut(&resource) {
            Some(lease) if now_ms < lease.expires_at_ms && lease.holder != holder => {
                Outcome::Refused {
                    reason: LeaseRefusal::Held,
                    token: Some(lease.token),
                }
            }
            Some(lease) if now_ms < lease.expires_at_ms => {
                lease.expires_at_ms = expires_at_ms;
                if let Some(labels) = labels {
                    lease.labels = labels;
                }
                let token = lease.token;
                self.write(&stream, 1);
                Outcome::Granted {
                    holder,
                    token,
                    expires_at_ms,
                    renewed: true,
                }
            }
            _ => {
                let token = self.tokens.get(&resource).copied().unwrap_or(0) + 1;
                self.tokens.insert(resource.clone(), token);
                let lease = ModelLease {
                    holder: holder.clone(),
                    token,
                    expires_at_ms,
                    acquired_at_ms: now_ms,
                    labels: labels.unwrap_or_default(),
                };
                self.leases.insert(resource, lease);
                self.write(&stream, 1);
                Outcome::Granted {
                    holder,
                    token,
                    expires_at_ms,
                    renewed: false,
                }
            }
        }
    }

    /// The reference's `listLeases(project)`: every lease of the project, live or lapsed,
    /// by resource.
    pub(super) fn list_leases(&self, project: &str) -> Outcome {
        let leases = self
            .leases
            .iter()
            .filter(|(_, lease)| lease.labels.project == project)
            .map(|(resource, lease)| Lease {
                resource: resource.clone(),
                holder: lease.holder.clone(),
                token: FencingToken(lease.token),
                acquired_at_ms: lease.acquired_at_ms,
                expires_at_ms: lease.expires_at_ms,
                project: lease.labels.project.clone(),
                name: lease.labels.name.clone(),
                holder_name: lease.labels.holder_name.clone(),
            })
            .collect();
        Outcome::Leases(leases)
    }

    /// What the lane command must do, applied to the model.
    pub(super) fn lane(&mut self, command: LaneCommand) -> Outcome {
        match command {
            LaneCommand::Claim {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => {
                if lane.is_empty() || key.is_empty() || owner.is_empty() || ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                let id = (lane, key);
                let cursor = match self.lanes.get(&id) {
                    Some(current) if now_ms < current.expires_at_ms => {
                        return Outcome::LaneRefused {
                            reason: LeaseRefusal::Held,
                            lane: Some(current.clone()),
                        };
                    }
                    Some(current) => current.cursor.clone(),
                    None => None,
                };
                let claimed = LaneLease {
                    lane: id.0.clone(),
                    key: id.1.clone(),
                    owner,
                    expires_at_ms: now_ms + ttl_ms,
                    cursor,
                };
                self.lanes.insert(id.clone(), claimed.clone());
                self.write(&lane_stream(&id.0, &id.1), 1);
                Outcome::LaneDone(claimed)
            }
            LaneCommand::Renew {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => {
                if ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                self.as_lane_owner(lane, key, &owner, now_ms, |l| {
                    l.expires_at_ms = now_ms + ttl_ms
                })
            }
            LaneCommand::Advance {
                lane,
                key,
                owner,
                cursor,
                now_ms,
            } => self.as_lane_owner(lane, key, &owner, now_ms, |l| l.cursor = cursor),
            LaneCommand::Release {
                lane,
                key,
                owner,
                now_ms,
            } => self.as_lane_owner(lane, key, &owner, now_ms, |l| l.expires_at_ms = 0),
        }
    }

    /// Changes the lane lease if `owner` holds it live at `now_ms`; the refusal otherwise.
    fn as_lane_owner(
        &mut self,
        lane: String,
        key: String,
        owner: &str,
        now_ms: u64,
        change: impl FnOnce(&mut LaneLease),
    ) -> Outcome {
        let stream = lane_stream(&lane, &key);
        let Some(current) = self.lanes.get_mut(&(lane, key)) else {
            return Outcome::LaneRefused {
                reason: LeaseRefusal::Missing,
                lane: None,
            };
        };
        let reason = if current.owner != owner {
            LeaseRefusal::Superseded
        } else if now_ms >= current.expires_at_ms {
            LeaseRefusal::Expired
        } else {
            change(current);
            let done = current.clone();
            self.write(&stream, 1);
            return Outcome::LaneDone(done);
        };
        Outcome::LaneRefused {
            reason,
            lane: Some(current.clone()),
        }
    }

    /// The lease of `resource` if `holder` holds it under `token`, the refusal otherwise.
    fn held_by(&self, resource: &str, holder: &str, token: u64) -> Result<ModelLease, Outcome> {
        match self.leases.get(resource) {
            None => Err(Outcome::Refused {
                reason: LeaseRefusal::Missing,
                token: None,
            }),
            Some(lease) if lease.holder != holder || lease.token != token => {
                Err(Outcome::Refused {
                    reason: LeaseRefusal::Superseded,
                    token: Some(lease.token),
                })
            }
            Some(lease) => Ok(lease.clone()),
        }
    }
}
