//! Lane leases: a reconciler's claim on one key of a lane, with a cursor kept across owners
//! (`type`: `laneClaim`, `laneRenew`, `laneAdvance`, `laneRelease`).

use annals::leases::{LaneCommand as CoreLaneCommand, LaneOutcome as CoreLaneOutcome};
use napi_derive::napi;

use crate::convert::{name_of, u64_of_ms};
use crate::rows::{LaneLease, lane_js};

/// A lane lease command.
// The prefix keeps each `type` distinct from the resource leases' (`execute` dispatches on it).
#[allow(clippy::enum_variant_names)]
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum LaneCommand {
    /// Claim an unowned or expired lane/key; its cursor carries over.
    LaneClaim {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who claims.
        owner: String,
        /// How long the claim lasts from `nowMs`.
        ttl_ms: f64,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Extend a live claim; only its owner may.
    LaneRenew {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The new length from `nowMs`.
        ttl_ms: f64,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Move the cursor; only the live owner may.
    LaneAdvance {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The new cursor (absent: none).
        cursor: Option<String>,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Release the claim, keeping the cursor; only the live owner may.
    LaneRelease {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
        /// Who asks.
        owner: String,
        /// The caller's clock.
        now_ms: f64,
    },
}

/// What a lane command got: `done` with the lane lease as it now stands, or `refused` with
/// the reason (`held`, `missing`, `expired`, …) and the lane lease that stands.
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum LaneOutcome {
    /// Done.
    Done {
        /// The lane lease now.
        lane: LaneLease,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        #[napi(ts_type = "LeaseRefusal")]
        reason: String,
        /// The lane lease that stands, if any.
        lane: Option<LaneLease>,
    },
}

pub fn lane_command(command: LaneCommand) -> napi::Result<CoreLaneCommand> {
    Ok(match command {
        LaneCommand::LaneClaim {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        } => CoreLaneCommand::Claim {
            lane,
            key,
            owner,
            ttl_ms: u64_of_ms(ttl_ms, "ttlMs")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        LaneCommand::LaneRenew {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        } => CoreLaneCommand::Renew {
            lane,
            key,
            owner,
            ttl_ms: u64_of_ms(ttl_ms, "ttlMs")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        LaneCommand::LaneAdvance {
            lane,
            key,
            owner,
            cursor,
            now_ms,
        } => CoreLaneCommand::Advance {
            lane,
            key,
            owner,
            cursor,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        LaneCommand::LaneRelease {
            lane,
            key,
            owner,
            now_ms,
        } => CoreLaneCommand::Release {
            lane,
            key,
            owner,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
    })
}

pub fn lane_outcome(outcome: CoreLaneOutcome) -> LaneOutcome {
    match outcome {
        CoreLaneOutcome::Done { lane } => LaneOutcome::Done {
            lane: lane_js(&lane),
        },
        CoreLaneOutcome::Refused { reason, lane } => LaneOutcome::Refused {
            reason: name_of(&reason),
            lane: lane.as_ref().map(lane_js),
        },
    }
}
