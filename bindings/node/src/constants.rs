//! The reference stores' constants, as the crate keeps them: defaults a command takes when
//! a field is absent, the bounds it refuses past, and the reasons it writes. `lib.js` exports
//! them frozen as `constants`.
//!
//! The structs here are declared by the binding: the crate keeps these values as `const`s in
//! each domain, not as a type, so each field is read from its constant (none is a copy of a
//! value).

use std::collections::HashMap;

use napi_derive::napi;

/// The outbox's defaults and bounds.
#[napi(object)]
pub struct OutboxConstants {
    /// How long a claim lasts when `claim` gives no `leaseMs` (ten minutes).
    pub claim_lease_ms: f64,
    /// `expire`'s default age for rows never delivered (30 days).
    pub max_age_ms: f64,
    /// `expire`'s default age for rows whose claim lapsed unacked (a day).
    pub claim_retry_ms: f64,
    /// `pruneOutbox`'s default age for done and expired rows (a day).
    pub prune_after_ms: f64,
    /// The retry backoff a row gets when its command gives none (`Backoff`: `baseMs` and
    /// `maxMs`, numbers).
    #[napi(ts_type = "Backoff")]
    pub backoff: serde_json::Value,
    /// Most rows one claim takes.
    pub claim_rows_max: u32,
    /// Most rows one ack names.
    pub ack_rows_max: u32,
    /// Most rows one sweep touches.
    pub sweep_rows_max: u32,
    /// Longest row key, in bytes.
    pub key_bytes_max: u32,
    /// Longest peer name, in bytes.
    pub peer_bytes_max: u32,
    /// Longest kind, in bytes.
    pub kind_bytes_max: u32,
    /// Longest claim token, in bytes.
    pub claim_token_bytes_max: u32,
    /// Longest error text kept, in bytes.
    pub error_bytes_max: u32,
    /// Largest payload, in bytes.
    pub payload_bytes_max: u32,
}

/// The runs' bounds and the reasons their sweeps write.
#[napi(object)]
pub struct RunsConstants {
    /// Largest span event payload, in bytes.
    pub event_payload_bytes_max: u32,
    /// `sweepOrphans`' reason.
    pub orphan_reason: String,
    /// `sweepStale`'s reason.
    pub stale_reason: String,
    /// The reason a digest coverage gap is recorded with.
    pub coverage_gap_reason: String,
}

/// The registry's defaults.
#[napi(object)]
pub struct RegistryConstants {
    /// An instance's domain when `upsert` gives none.
    pub default_domain: String,
    /// The `knows` entry that means every other enabled instance.
    pub knows_all: String,
    /// The setting that names the host's skein.
    pub host_skein_setting: String,
    /// Longest setting key, in bytes.
    pub setting_key_bytes_max: u32,
}

/// The sync ingest's bounds.
#[napi(object)]
pub struct IngestConstants {
    /// Longest event type, in bytes.
    pub event_type_bytes_max: u32,
    /// Largest event, in bytes.
    pub event_bytes_max: u32,
    /// Longest project or run name, in bytes.
    pub name_bytes_max: u32,
}

/// How many rows a list gives when its call names no `limit`; past it, the list's `more` is
/// `true`.
#[napi(object)]
pub struct ListLimits {
    /// Every query's but `outboxOpenFor`'s.
    pub query: u32,
    /// `outboxOpenFor`'s, as the reference's.
    pub outbox_open_for: u32,
    /// `readAll`'s and `readStream`'s.
    pub read: u32,
}

/// The reference stores' constants, by domain.
#[napi(object)]
pub struct Constants {
    /// How many rows a list gives without a `limit`.
    pub limits: ListLimits,
    /// The outbox's.
    pub outbox: OutboxConstants,
    /// The runs'.
    pub runs: RunsConstants,
    /// The registry's.
    pub registry: RegistryConstants,
    /// The sync ingest's.
    pub ingest: IngestConstants,
    /// Every code an `AnnalsError` can carry (the `ErrorCode` type), in a stable order: the
    /// library's kinds of error, which the command line's kinds also come from, then the
    /// package's own.
    pub error_codes: Vec<String>,
    /// The subclasses of `AnnalsError`, each with the codes it is thrown for (`RefusedError`:
    /// `'FENCED'`, …): every code is in one.
    pub error_families: HashMap<String, Vec<String>>,
    /// The names each reason, status and kind can take (`names.LeaseRefusal`: `'held'`, …),
    /// the unions of string literals the TypeScript declarations type them with.
    pub names: HashMap<String, Vec<String>>,
}

/// A bound the crate keeps as `usize`, all of them small.
fn bound(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The reference stores' constants (`lib.js` exports them frozen as `constants`).
#[napi]
pub fn constants() -> Constants {
    use annals::{ingest, outbox, registry, runs};
    Constants {
        error_codes: crate::error::error_codes(),
        error_families: crate::error::FAMILIES
            .iter()
            .map(|(family, codes)| {
                let codes = codes.iter().map(|code| (*code).to_owned()).collect();
                ((*family).to_owned(), codes)
            })
            .collect(),
        names: crate::names::names(),
        limits: ListLimits {
            query: crate::queries::QUERY_LIMIT,
            outbox_open_for: crate::queries::OPEN_ROWS_LIMIT,
            read: crate::convert::READ_LIMIT,
        },
        outbox: OutboxConstants {
            claim_lease_ms: outbox::CLAIM_LEASE_MS as f64,
            max_age_ms: outbox::MAX_AGE_MS as f64,
            claim_retry_ms: outbox::CLAIM_RETRY_MS as f64,
            prune_after_ms: outbox::PRUNE_AFTER_MS as f64,
            backoff: serde_json::json!({
                "baseMs": outbox::Backoff::DEFAULT.base_ms,
                "maxMs": outbox::Backoff::DEFAULT.max_ms,
            }),
            claim_rows_max: outbox::CLAIM_ROWS_MAX,
            ack_rows_max: bound(outbox::ACK_ROWS_MAX),
            sweep_rows_max: bound(outbox::SWEEP_ROWS_MAX),
            key_bytes_max: bound(outbox::KEY_BYTES_MAX),
            peer_bytes_max: bound(outbox::PEER_BYTES_MAX),
            kind_bytes_max: bound(outbox::KIND_BYTES_MAX),
            claim_token_bytes_max: bound(outbox::CLAIM_TOKEN_BYTES_MAX),
            error_bytes_max: bound(outbox::ERROR_BYTES_MAX),
            payload_bytes_max: bound(outbox::PAYLOAD_BYTES_MAX),
        },
        runs: RunsConstants {
            event_payload_bytes_max: runs::EVENT_PAYLOAD_BYTES_MAX,
            orphan_reason: runs::ORPHAN_REASON.to_owned(),
            stale_reason: runs::STALE_REASON.to_owned(),
            coverage_gap_reason: runs::COVERAGE_GAP_REASON.to_owned(),
        },
        registry: RegistryConstants {
            default_domain: registry::DEFAULT_DOMAIN.to_owned(),
            knows_all: registry::KNOWS_ALL.to_owned(),
            host_skein_setting: registry::HOST_SKEIN_SETTING.to_owned(),
            setting_key_bytes_max: bound(registry::SETTING_KEY_BYTES_MAX),
        },
        ingest: IngestConstants {
            event_type_bytes_max: bound(ingest::EVENT_TYPE_BYTES_MAX),
            event_bytes_max: bound(ingest::EVENT_BYTES_MAX),
            name_bytes_max: bound(ingest::NAME_BYTES_MAX),
        },
    }
}
