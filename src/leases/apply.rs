//! Lease apply: each event to table writes. Reads only the record and the leases tables.
//!
//! Apply checks the event against the rules `decide` keeps (see `schema/EVENTS.md`): a live
//! command never breaks one, so a record that does was written around `decide` (a forged
//! import, a log written elsewhere) and is refused with [`crate::error::ProjectionError::Invariant`]
//! at its position. A grant writes its row first and checks the row it replaced: a refusal
//! leaves its transaction unable to commit (`StoreError::PartialWrite`), so nothing of it stays.

use super::events::{Acquired, LaneClaimed, LeaseEvent, Renewed};
use super::query::{FencingToken, HELD, LANES, LaneLease, Lease, RELEASED_TOKENS};
use crate::error::{Error, Result};
use crate::projection::table::WriteTables;
use crate::record::Record;

/// A grant's token is above every token issued before for its resource.
pub(crate) const TOKEN_INCREASES: &str = "token_increases";
/// No grant while a lease on the resource is live at the grant's time.
pub(crate) const GRANT_ONLY_WHEN_FREE: &str = "grant_only_when_free";
/// A renewal or release names the token of the lease held on the resource.
pub(crate) const CURRENT_TOKEN_ONLY: &str = "current_token_only";
/// A renewal extends a lease still live at the renewal's time.
pub(crate) const RENEW_ONLY_LIVE: &str = "renew_only_live";
/// No lane claim while another claim on the lane/key is live at the claim's time.
pub(crate) const LANE_CLAIM_ONLY_WHEN_FREE: &str = "lane_claim_only_when_free";
/// A lane renewal, cursor move or release needs a claim live at its time.
pub(crate) const LANE_CHANGE_ONLY_LIVE: &str = "lane_change_only_live";

/// `record` breaks the lease `rule`, as `detail` says.
fn broken(record: &Record, rule: &'static str, detail: String) -> Error {
    crate::projection::invariant("leases", record, rule, detail)
}

/// The lease held on `resource` if its token is `token`; the broken rule otherwise.
fn held_under(
    tables: &WriteTables<'_>,
    record: &Record,
    resource: &String,
    token: u64,
) -> Result<Lease> {
    match HELD.get(tables, resource)? {
        Some(lease) if lease.token.0 == token => Ok(lease),
        held => Err(broken(
            record,
            CURRENT_TOKEN_ONLY,
            format!(
                "token {token} for resource {resource:?}, whose held token is {:?}",
                held.map(|lease| lease.token.0)
            ),
        )),
    }
}

/// Applies one lease event recorded in `record`, refusing one that breaks a lease rule.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: LeaseEvent) -> Result<()> {
    match event {
        LeaseEvent::Acquired(e) => grant(tables, record, e),
        LeaseEvent::Renewed(e) => renew(tables, record, e),
        LeaseEvent::Released(e) => {
            let lease = held_under(tables, record, &e.resource, e.token)?;
            HELD.remove(tables, &e.resource)?;
            keep_token(tables, &e.resource, lease.token.0)
        }
        LeaseEvent::LaneClaimed(e) => claim_lane(tables, record, e),
        LeaseEvent::LaneRenewed(e) => update_lane(tables, record, e.lane, e.key, |lane| {
            lane.expires_at_ms = e.expires_at_ms;
        }),
        LeaseEvent::LaneCursorAdvanced(e) => update_lane(tables, record, e.lane, e.key, |lane| {
            lane.cursor = e.cursor;
        }),
        LeaseEvent::LaneReleased(e) => update_lane(tables, record, e.lane, e.key, |lane| {
            lane.expires_at_ms = 0;
        }),
    }
}

/// A grant: the lease held from the record's time, refused unless its token exceeds every
/// one issued for the resource and no lease on it is live.
fn grant(tables: &WriteTables<'_>, record: &Record, e: Acquired) -> Result<()> {
    let lease = Lease {
        resource: e.resource,
        holder: e.holder,
        token: FencingToken(e.token),
        acquired_at_ms: record.at_ms,
        expires_at_ms: e.expires_at_ms,
        project: e.project,
        name: e.name,
        holder_name: e.holder_name,
    };
    // Written before the rules are checked, in one B-tree operation rather than a read and a
    // write: a refused record fails its whole transaction, its append included, so the row
    // never outlives the refusal. The replaced lease (lapsed) had a lower token, so the held
    // row alone keeps the last token.
    let held = HELD.replace(tables, &lease.resource, &lease)?;
    // With every grant's token above the last, a held lease carries the resource's last
    // token; only a free resource needs the kept one.
    let last = match &held {
        Some(held) => held.token.0,
        None => RELEASED_TOKENS.get(tables, &lease.resource)?.unwrap_or(0),
    };
    if lease.token.0 <= last {
        let detail = format!(
            "token {} for resource {:?} does not exceed the last issued, {last}",
            lease.token.0, lease.resource
        );
        return Err(broken(record, TOKEN_INCREASES, detail));
    }
    if let Some(live) = held.filter(|held| held.is_live(record.at_ms)) {
        let detail = format!(
            "resource {:?} granted to {:?} at {} while {:?} holds it live until {}",
            lease.resource, lease.holder, record.at_ms, live.holder, live.expires_at_ms
        );
        return Err(broken(record, GRANT_ONLY_WHEN_FREE, detail));
    }
    Ok(())
}

/// A renewal: the held lease, under the renewal's token and still live, extended.
fn renew(tables: &WriteTables<'_>, record: &Record, e: Renewed) -> Result<()> {
    let mut lease = held_under(tables, record, &e.resource, e.token)?;
    if !lease.is_live(record.at_ms) {
        let detail = format!(
            "resource {:?} renewed at {} after its lease lapsed at {}",
            e.resource, record.at_ms, lease.expires_at_ms
        );
        return Err(broken(record, RENEW_ONLY_LIVE, detail));
    }
    lease.expires_at_ms = e.expires_at_ms;
    if let Some(labels) = e.labels {
        lease.label(labels);
    }
    HELD.insert(tables, &e.resource, &lease)
}

/// A lane claim: refused while another claim on the lane/key is live; the lane's cursor
/// carries over from the claim before.
fn claim_lane(tables: &WriteTables<'_>, record: &Record, e: LaneClaimed) -> Result<()> {
    let key = (e.lane, e.key);
    let current = LANES.get(tables, &key)?;
    if let Some(live) = current
        .as_ref()
        .filter(|lane| record.at_ms < lane.expires_at_ms)
    {
        let detail = format!(
            "lane {:?} key {:?} claimed by {:?} at {} while {:?} holds it until {}",
            key.0, key.1, e.owner, record.at_ms, live.owner, live.expires_at_ms
        );
        return Err(broken(record, LANE_CLAIM_ONLY_WHEN_FREE, detail));
    }
    let cursor = current.and_then(|lane| lane.cursor);
    let lane = LaneLease {
        lane: key.0.clone(),
        key: key.1.clone(),
        owner: e.owner,
        expires_at_ms: e.expires_at_ms,
        cursor,
    };
    LANES.insert(tables, &key, &lane)
}

/// Records that `token` was issued for `resource` once no held row says so.
fn keep_token(tables: &WriteTables<'_>, resource: &String, token: u64) -> Result<()> {
    let kept = RELEASED_TOKENS.get(tables, resource)?.unwrap_or(0);
    if token > kept {
        RELEASED_TOKENS.insert(tables, resource, &token)?;
    }
    Ok(())
}

/// Changes the lane lease of `lane`/`key`, which must be claimed live at the record's time:
/// only its live owner may change it (the events do not name the owner; `decide` checked it).
fn update_lane(
    tables: &WriteTables<'_>,
    record: &Record,
    lane: String,
    key: String,
    change: impl FnOnce(&mut LaneLease),
) -> Result<()> {
    let key = (lane, key);
    match LANES.get(tables, &key)? {
        Some(mut lane) if record.at_ms < lane.expires_at_ms => {
            change(&mut lane);
            LANES.insert(tables, &key, &lane)
        }
        current => {
            let detail = format!(
                "lane {:?} key {:?} changed at {} with its claim lapsing at {:?}",
                key.0,
                key.1,
                record.at_ms,
                current.map(|lane| lane.expires_at_ms)
            );
            Err(broken(record, LANE_CHANGE_ONLY_LIVE, detail))
        }
    }
}
