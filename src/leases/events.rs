//! Lease events: what the leases projection records. Kinds start with `lease.`.

use serde::{Deserialize, Serialize};

use super::query::LeaseLabels;
use crate::error::Result;
use crate::event::{DomainEvent, EventKind, decode_payload, encode_payload, unknown_schema};
use crate::record::Record;

/// A resource lease was granted: fresh (no live lease) or by takeover of an expired one.
/// The grant time is the record's `at_ms`. Schema 3 (schema 2 had no labels).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acquired {
    /// The resource.
    pub resource: String,
    /// Who holds it now.
    pub holder: String,
    /// The fencing token issued: one more than any token issued before for the resource.
    pub token: u64,
    /// When it lapses, ms since the epoch.
    pub expires_at_ms: u64,
    /// The project the lease belongs to (empty when the acquisition named none).
    pub project: String,
    /// The lease's name within its project.
    pub name: String,
    /// The holder's display name.
    pub holder_name: String,
}

/// Schema 2 of `lease.acquired`, without the labels. Upcast with empty labels: a lease
/// acquired before labels existed belongs to no project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquiredV2 {
    /// The resource.
    pub resource: String,
    /// Who holds it now.
    pub holder: String,
    /// The fencing token issued.
    pub token: u64,
    /// When it lapses, ms since the epoch.
    pub expires_at_ms: u64,
}

/// Schema 1 of `lease.acquired`, which carried the TTL instead of the deadline. Upcast by
/// adding the record's `at_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquiredV1 {
    /// The resource.
    pub resource: String,
    /// Who holds it now.
    pub holder: String,
    /// The fencing token issued.
    pub token: u64,
    /// How long it lasts from the record's `at_ms`.
    pub ttl_ms: u64,
}

/// A live lease was extended by its holder under the same token. Schema 2 (schema 1 had no
/// labels).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Renewed {
    /// The resource.
    pub resource: String,
    /// The token, unchanged.
    pub token: u64,
    /// The new deadline.
    pub expires_at_ms: u64,
    /// The labels the lease takes now, when a labelled re-acquisition renewed it (the
    /// reference's `acquireLease` rewrites them); `None` keeps the lease's own.
    pub labels: Option<LeaseLabels>,
}

/// Schema 1 of `lease.renewed`, without labels. Upcast with `labels: None`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewedV1 {
    /// The resource.
    pub resource: String,
    /// The token, unchanged.
    pub token: u64,
    /// The new deadline.
    pub expires_at_ms: u64,
}

/// A lease was released by its holder. Its token stays spent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Released {
    /// The resource.
    pub resource: String,
    /// The token released.
    pub token: u64,
}

/// A lane/key lease was claimed (it was unowned or expired). Its cursor is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneClaimed {
    /// The lane.
    pub lane: String,
    /// The key within the lane.
    pub key: String,
    /// The new owner.
    pub owner: String,
    /// When the claim lapses.
    pub expires_at_ms: u64,
}

/// A lane/key lease was extended by its live owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneRenewed {
    /// The lane.
    pub lane: String,
    /// The key.
    pub key: String,
    /// The new deadline.
    pub expires_at_ms: u64,
}

/// The live owner moved the cursor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneCursorAdvanced {
    /// The lane.
    pub lane: String,
    /// The key.
    pub key: String,
    /// The new cursor (`None` clears it).
    pub cursor: Option<String>,
}

/// The live owner released the claim; the cursor stays for the next owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneReleased {
    /// The lane.
    pub lane: String,
    /// The key.
    pub key: String,
}

/// Every lease event.
///
/// Serialised as its payload struct alone (the kind is the record's), for the CLI's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LeaseEvent {
    /// `lease.acquired`
    Acquired(Acquired),
    /// `lease.renewed`
    Renewed(Renewed),
    /// `lease.released`
    Released(Released),
    /// `lease.lane_claimed`
    LaneClaimed(LaneClaimed),
    /// `lease.lane_renewed`
    LaneRenewed(LaneRenewed),
    /// `lease.lane_cursor_advanced`
    LaneCursorAdvanced(LaneCursorAdvanced),
    /// `lease.lane_released`
    LaneReleased(LaneReleased),
}

/// Kind of [`LeaseEvent::Acquired`].
pub const ACQUIRED: &str = "lease.acquired";
const RENEWED: &str = "lease.renewed";
const RELEASED: &str = "lease.released";
const LANE_CLAIMED: &str = "lease.lane_claimed";
const LANE_RENEWED: &str = "lease.lane_renewed";
const LANE_CURSOR_ADVANCED: &str = "lease.lane_cursor_advanced";
const LANE_RELEASED: &str = "lease.lane_released";

impl DomainEvent for LeaseEvent {
    const CATALOGUE: &'static [EventKind] = &[
        EventKind {
            kind: ACQUIRED,
            schema: 3,
        },
        EventKind {
            kind: RENEWED,
            schema: 2,
        },
        EventKind {
            kind: RELEASED,
            schema: 1,
        },
        EventKind {
            kind: LANE_CLAIMED,
            schema: 1,
        },
        EventKind {
            kind: LANE_RENEWED,
            schema: 1,
        },
        EventKind {
            kind: LANE_CURSOR_ADVANCED,
            schema: 1,
        },
        EventKind {
            kind: LANE_RELEASED,
            schema: 1,
        },
    ];

    fn kind(&self) -> &'static str {
        match self {
            LeaseEvent::Acquired(_) => ACQUIRED,
            LeaseEvent::Renewed(_) => RENEWED,
            LeaseEvent::Released(_) => RELEASED,
            LeaseEvent::LaneClaimed(_) => LANE_CLAIMED,
            LeaseEvent::LaneRenewed(_) => LANE_RENEWED,
            LeaseEvent::LaneCursorAdvanced(_) => LANE_CURSOR_ADVANCED,
            LeaseEvent::LaneReleased(_) => LANE_RELEASED,
        }
    }

    fn payload(&self) -> Vec<u8> {
        match self {
            LeaseEvent::Acquired(e) => encode_payload(e),
            LeaseEvent::Renewed(e) => encode_payload(e),
            LeaseEvent::Released(e) => encode_payload(e),
            LeaseEvent::LaneClaimed(e) => encode_payload(e),
            LeaseEvent::LaneRenewed(e) => encode_payload(e),
            LeaseEvent::LaneCursorAdvanced(e) => encode_payload(e),
            LeaseEvent::LaneReleased(e) => encode_payload(e),
        }
    }

    fn from_record(record: &Record) -> Result<Option<Self>> {
        let event = match (record.kind.as_str(), record.schema) {
            (ACQUIRED, 1) => {
                let v1: AcquiredV1 = decode_payload(record)?;
                LeaseEvent::Acquired(unlabelled(AcquiredV2 {
                    resource: v1.resource,
                    holder: v1.holder,
                    token: v1.token,
                    expires_at_ms: record.at_ms.saturating_add(v1.ttl_ms),
                }))
            }
            (ACQUIRED, 2) => LeaseEvent::Acquired(unlabelled(decode_payload(record)?)),
            (ACQUIRED, 3) => LeaseEvent::Acquired(decode_payload(record)?),
            (RENEWED, 1) => {
                let v1: RenewedV1 = decode_payload(record)?;
                LeaseEvent::Renewed(Renewed {
                    resource: v1.resource,
                    token: v1.token,
                    expires_at_ms: v1.expires_at_ms,
                    labels: None,
                })
            }
            (RENEWED, 2) => LeaseEvent::Renewed(decode_payload(record)?),
            (RELEASED, 1) => LeaseEvent::Released(decode_payload(record)?),
            (LANE_CLAIMED, 1) => LeaseEvent::LaneClaimed(decode_payload(record)?),
            (LANE_RENEWED, 1) => LeaseEvent::LaneRenewed(decode_payload(record)?),
            (LANE_CURSOR_ADVANCED, 1) => LeaseEvent::LaneCursorAdvanced(decode_payload(record)?),
            (LANE_RELEASED, 1) => LeaseEvent::LaneReleased(decode_payload(record)?),
            (kind, _) if Self::CATALOGUE.iter().any(|e| e.kind == kind) => {
                return Err(unknown_schema(record));
            }
            _ => return Ok(None),
        };
        Ok(Some(event))
    }
}

/// Schema 2 of `lease.acquired` as schema 3: a grant from before labels has none.
fn unlabelled(v2: AcquiredV2) -> Acquired {
    Acquired {
        resource: v2.resource,
        holder: v2.holder,
        token: v2.token,
        expires_at_ms: v2.expires_at_ms,
        project: String::new(),
        name: String::new(),
        holder_name: String::new(),
    }
}
