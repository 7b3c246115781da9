//! Lease reads from the projection tables: no replay, usable on a snapshot or inside a
//! write (where commands decide).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::error::Result;
use crate::log::read::Direction;
use crate::projection::table::{Table, TableSource};

/// A fencing token: issued per resource, strictly increasing, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FencingToken(pub u64);

/// A resource lease as it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Lease {
    /// The resource.
    pub resource: String,
    /// Who holds it.
    pub holder: String,
    /// Its fencing token.
    pub token: FencingToken,
    /// When it was granted under this token.
    pub acquired_at_ms: u64,
    /// When it lapses: live while `now_ms < expires_at_ms`.
    pub expires_at_ms: u64,
    /// The project it belongs to (empty when its acquisition named none).
    pub project: String,
    /// Its name within the project.
    pub name: String,
    /// The holder's display name.
    pub holder_name: String,
}

/// What a labelled acquisition says about a lease besides its resource and holder, as the
/// reference hub's `acquireLease` input does: its project, its name and the holder's display
/// name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LeaseLabels {
    /// The project the lease belongs to: what [`list_leases`] selects by.
    pub project: String,
    /// The lease's name within the project.
    pub name: String,
    /// The holder's display name.
    pub holder_name: String,
}

impl Lease {
    /// Whether it is live at `now_ms`.
    pub fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.expires_at_ms
    }

    /// Gives the lease `labels`.
    pub(crate) fn label(&mut self, labels: LeaseLabels) {
        self.project = labels.project;
        self.name = labels.name;
        self.holder_name = labels.holder_name;
    }
}

/// A lane/key lease: an owner claim with a cursor that outlives owners.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LaneLease {
    /// The lane.
    pub lane: String,
    /// The key within the lane.
    pub key: String,
    /// The last owner to claim it.
    pub owner: String,
    /// When the claim lapses (0 after a release).
    pub expires_at_ms: u64,
    /// Where the work stands, kept across owners.
    pub cursor: Option<String>,
}

impl LaneLease {
    /// Whether `owner` holds it live at `now_ms`.
    pub fn is_held_by(&self, owner: &str, now_ms: u64) -> bool {
        self.owner == owner && now_ms < self.expires_at_ms
    }
}

/// `leases.held`: resource → the lease held on it (removed at release).
pub(crate) const HELD: Table<String, Lease> = Table::new("leases.held");
/// `leases.released_tokens`: resource → the highest token of a lease on it that is no longer
/// held (never removed). The last token ever issued is the higher of this and the held
/// lease's: keeping it here only at release costs a grant one write instead of three
/// operations.
pub(crate) const RELEASED_TOKENS: Table<String, u64> = Table::new("leases.released_tokens");
/// `leases.lanes`: (lane, key) → lane lease.
pub(crate) const LANES: Table<(String, String), LaneLease> = Table::new("leases.lanes");

/// The lease held on `resource`, live or lapsed; `None` if none is held.
pub fn lease(state: &dyn TableSource, resource: &str) -> Result<Option<Lease>> {
    HELD.get(state, &resource.to_owned())
}

/// The last fencing token issued for `resource`, even if released since.
pub fn last_token(state: &dyn TableSource, resource: &str) -> Result<Option<FencingToken>> {
    let resource = resource.to_owned();
    let held = HELD.get(state, &resource)?.map(|lease| lease.token.0);
    let released = RELEASED_TOKENS.get(state, &resource)?;
    Ok(held.max(released).map(FencingToken))
}

/// Up to `limit` held leases in resource order.
pub fn leases(state: &dyn TableSource, limit: usize) -> Result<Vec<Lease>> {
    Ok(HELD
        .scan_prefix(state, &(), Direction::Forward, limit)?
        .into_iter()
        .map(|(_, l)| l)
        .collect())
}

/// Every held lease of `project`, live or lapsed, in resource order: the reference hub's
/// `listLeases`. Leases acquired without labels belong to the empty project.
pub fn list_leases(state: &dyn TableSource, project: &str) -> Result<Vec<Lease>> {
    let mut listed = Vec::new();
    for (_, lease) in HELD.scan_prefix(state, &(), Direction::Forward, usize::MAX)? {
        if lease.project == project {
            listed.push(lease);
        }
    }
    Ok(listed)
}

/// The lane lease of `lane`/`key`.
pub fn lane(state: &dyn TableSource, lane: &str, key: &str) -> Result<Option<LaneLease>> {
    LANES.get(state, &(lane.to_owned(), key.to_owned()))
}

/// Up to `limit` lane leases of `lane`, in key order.
pub fn lanes(state: &dyn TableSource, lane: &str, limit: usize) -> Result<Vec<LaneLease>> {
    let rows = LANES.scan_prefix(state, &(lane.to_owned(),), Direction::Forward, limit)?;
    Ok(rows.into_iter().map(|(_, l)| l).collect())
}

/// Every row of the leases projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('leases')` gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LeaseTables {
    /// The leases held, by resource.
    pub held: Vec<Lease>,
    /// The last token each resource was given, held or released.
    pub tokens: Vec<LastToken>,
    /// The lane leases, by lane and key.
    pub lanes: Vec<LaneLease>,
}

/// The last token a resource was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LastToken {
    /// The resource.
    pub resource: String,
    /// Its last token: the next acquisition is given one past it.
    pub last_token: u64,
}

/// Every row of the leases projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<LeaseTables> {
    let held = leases(state, usize::MAX)?;
    let mut last_tokens: BTreeMap<String, u64> = RELEASED_TOKENS
        .scan_prefix(state, &(), Direction::Forward, usize::MAX)?
        .into_iter()
        .collect();
    for lease in &held {
        let last = last_tokens.entry(lease.resource.clone()).or_default();
        *last = (*last).max(lease.token.0);
    }
    let tokens = last_tokens
        .into_iter()
        .map(|(resource, last_token)| LastToken {
            resource,
            last_token,
        })
        .collect();
    let lanes = LANES
        .scan_prefix(state, &(), Direction::Forward, usize::MAX)?
        .into_iter()
        .map(|(_, lane)| lane)
        .collect();
    Ok(LeaseTables {
        held,
        tokens,
        lanes,
    })
}

/// Every row of the leases projection as JSON, in key order: what `annals state` prints.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}
