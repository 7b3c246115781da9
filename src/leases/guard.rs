//! Fencing enforced by the store: a write that carries a [`LeaseGuard`] is refused unless the
//! guard's token is the resource's live token at the guard's `now_ms`. A holder that woke up
//! after its lease was taken over cannot write behind its successor.

use super::decide::LeaseRefusal;
use super::query::{self, FencingToken};
use crate::error::Result;
use crate::projection::table::TableSource;

/// A claim that the writer holds `resource` under `token` at `now_ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseGuard {
    /// The leased resource.
    pub resource: String,
    /// The token the writer was given.
    pub token: FencingToken,
    /// The writer's clock.
    pub now_ms: u64,
}

/// `Ok(())` when the guard's token is live; the refusal otherwise.
pub fn check(state: &dyn TableSource, guard: &LeaseGuard) -> Result<Result<(), LeaseRefusal>> {
    Ok(match query::lease(state, &guard.resource)? {
        None => Err(LeaseRefusal::Missing),
        Some(lease) if lease.token != guard.token => Err(LeaseRefusal::Superseded),
        Some(lease) if !lease.is_live(guard.now_ms) => Err(LeaseRefusal::Expired),
        Some(_) => Ok(()),
    })
}
