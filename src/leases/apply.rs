//! Lease apply: each event to table writes. Reads only the record and the leases tables.

use super::events::LeaseEvent;
use super::query::{FencingToken, HELD, LANES, LaneLease, Lease, RELEASED_TOKENS};
use crate::error::Result;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Applies one lease event recorded in `record`.
pub fn apply(tables: &WriteTables<'_>, record: &Record, event: LeaseEvent) -> Result<()> {
    match event {
        LeaseEvent::Acquired(e) => {
            let lease = Lease {
                resource: e.resource.clone(),
                holder: e.holder,
                token: FencingToken(e.token),
                acquired_at_ms: record.at_ms,
                expires_at_ms: e.expires_at_ms,
            };
            // A grant carries a token above the one it replaces, so the held row alone keeps
            // the last token: one B-tree operation per grant. Only a replaced lease with a
            // higher token (no command emits one) must leave its token behind.
            match HELD.replace(tables, &e.resource, &lease)? {
                Some(replaced) if replaced.token.0 > e.token => {
                    keep_token(tables, &e.resource, replaced.token.0)
                }
                _ => Ok(()),
            }
        }
        LeaseEvent::Renewed(e) => match HELD.get(tables, &e.resource)? {
            Some(mut lease) if lease.token.0 == e.token => {
                lease.expires_at_ms = e.expires_at_ms;
                HELD.insert(tables, &e.resource, &lease)
            }
            _ => Ok(()),
        },
        LeaseEvent::Released(e) => match HELD.get(tables, &e.resource)? {
            Some(lease) if lease.token.0 == e.token => {
                HELD.remove(tables, &e.resource)?;
                keep_token(tables, &e.resource, lease.token.0)
            }
            _ => Ok(()),
        },
        LeaseEvent::LaneClaimed(e) => {
            let key = (e.lane, e.key);
            let cursor = LANES.get(tables, &key)?.and_then(|lane| lane.cursor);
            let lane = LaneLease {
                lane: key.0.clone(),
                key: key.1.clone(),
                owner: e.owner,
                expires_at_ms: e.expires_at_ms,
                cursor,
            };
            LANES.insert(tables, &key, &lane)
        }
        LeaseEvent::LaneRenewed(e) => update_lane(tables, e.lane, e.key, |lane| {
            lane.expires_at_ms = e.expires_at_ms;
        }),
        LeaseEvent::LaneCursorAdvanced(e) => update_lane(tables, e.lane, e.key, |lane| {
            lane.cursor = e.cursor;
        }),
        LeaseEvent::LaneReleased(e) => update_lane(tables, e.lane, e.key, |lane| {
            lane.expires_at_ms = 0;
        }),
    }
}

/// Records that `token` was issued for `resource` once no held row says so.
fn keep_token(tables: &WriteTables<'_>, resource: &String, token: u64) -> Result<()> {
    let kept = RELEASED_TOKENS.get(tables, resource)?.unwrap_or(0);
    if token > kept {
        RELEASED_TOKENS.insert(tables, resource, &token)?;
    }
    Ok(())
}

fn update_lane(
    tables: &WriteTables<'_>,
    lane: String,
    key: String,
    change: impl FnOnce(&mut LaneLease),
) -> Result<()> {
    let key = (lane, key);
    match LANES.get(tables, &key)? {
        Some(mut lane) => {
            change(&mut lane);
            LANES.insert(tables, &key, &lane)
        }
        None => Ok(()),
    }
}
