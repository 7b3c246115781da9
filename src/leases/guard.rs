//! Fencing enforced by the store: a write that carries a [`LeaseGuard`] is refused unless the
//! guard's token is the resource's live token at the guard's `now_ms`. A holder that woke up
//! after its lease was taken over cannot write behind its successor.

use super::query::{self, FencingToken};
use crate::command::Precondition;
pub use crate::error::GuardRefusal;
use crate::error::{Result, StoreError};
use crate::projection::table::TableSource;

/// A claim that the writer holds `resource` under `token` at `now_ms`. Its serde form is what a
/// caller gives (the Node package's `guard`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LeaseGuard {
    /// The leased resource.
    pub resource: String,
    /// The token the writer was given.
    pub token: FencingToken,
    /// The writer's clock.
    pub now_ms: u64,
}

/// `Ok(())` when the guard's token is live; the refusal otherwise.
fn check(state: &dyn TableSource, guard: &LeaseGuard) -> Result<Result<(), GuardRefusal>> {
    Ok(match query::lease(state, &guard.resource)? {
        None => Err(GuardRefusal::Missing),
        Some(lease) if lease.token != guard.token => Err(GuardRefusal::Superseded),
        Some(lease) if !lease.is_live(guard.now_ms) => Err(GuardRefusal::Expired),
        Some(_) => Ok(()),
    })
}

impl Precondition for LeaseGuard {
    /// Refuses with [`StoreError::Fenced`] unless the guard's token is its resource's live
    /// token.
    fn check(&self, state: &dyn TableSource) -> Result<()> {
        check(state, self)?.map_err(|reason| {
            StoreError::Fenced {
                resource: self.resource.clone(),
                reason,
            }
            .into()
        })
    }
}
