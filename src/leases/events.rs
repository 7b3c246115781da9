//! Lease events: what the leases projection records. Kinds start with `lease.`.

use serde::{Deserialize, Serialize};

use super::query::LeaseLabels;
use crate::domain_events;
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

domain_events! {
    /// Every lease event.
    pub enum LeaseEvent {
        /// `lease.acquired`
        Acquired(Acquired) = pub ACQUIRED = "lease.acquired", schema 3,
            older { 1 => AcquiredV1 => acquired_v1, 2 => AcquiredV2 => acquired_v2 };
        /// `lease.renewed`
        Renewed(Renewed) = RENEWED = "lease.renewed", schema 2,
            older { 1 => RenewedV1 => renewed_v1 };
        /// `lease.released`
        Released(Released) = RELEASED = "lease.released", schema 1;
        /// `lease.lane_claimed`
        LaneClaimed(LaneClaimed) = LANE_CLAIMED = "lease.lane_claimed", schema 1;
        /// `lease.lane_renewed`
        LaneRenewed(LaneRenewed) = LANE_RENEWED = "lease.lane_renewed", schema 1;
        /// `lease.lane_cursor_advanced`
        LaneCursorAdvanced(LaneCursorAdvanced) =
            LANE_CURSOR_ADVANCED = "lease.lane_cursor_advanced", schema 1;
        /// `lease.lane_released`
        LaneReleased(LaneReleased) = LANE_RELEASED = "lease.lane_released", schema 1;
    }
}

/// Schema 1 of `lease.acquired` as schema 3: its expiry is its time plus its length, and it
/// has no labels.
fn acquired_v1(v1: AcquiredV1, record: &Record) -> Acquired {
    unlabelled(AcquiredV2 {
        resource: v1.resource,
        holder: v1.holder,
        token: v1.token,
        expires_at_ms: record.at_ms.saturating_add(v1.ttl_ms),
    })
}

/// Schema 2 of `lease.acquired` as schema 3.
fn acquired_v2(v2: AcquiredV2, _: &Record) -> Acquired {
    unlabelled(v2)
}

/// Schema 1 of `lease.renewed` as schema 2: a renewal from before labels changes none.
fn renewed_v1(v1: RenewedV1, _: &Record) -> Renewed {
    Renewed {
        resource: v1.resource,
        token: v1.token,
        expires_at_ms: v1.expires_at_ms,
        labels: None,
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
