//! The queries of every domain, each read from one consistent view of the projections as of
//! the last commit: what the reference stores' `get…` and `list…` calls return.

use napi::Env;
use napi::bindgen_prelude::{BigInt, Either3};
use napi_derive::napi;

use annals::registry::{FuelTotalRow, SettingRow};

use crate::Store;
use crate::convert::{self, u64_of, u64_of_ms};
use crate::crossing::{Made, to_js};
use crate::erasure::{self, Opener};
use crate::error::invalid;

impl Store {
    /// Every row of one projection, read by `read` (a domain's `tables`), as JavaScript's.
    fn tables<T: serde::Serialize + Send + 'static>(
        &self,
        env: &Env,
        read: fn(&dyn annals::projection::TableSource) -> annals::Result<T>,
    ) -> napi::Result<Made> {
        let tables = self.query(read)?;
        to_js(env, &tables)
    }
}

// The package's own: the crate's query takes a status and a count as arguments.
/// Which instances `instances` lists.
#[napi(object)]
pub struct InstancesOptions {
    /// Only those with this status (`'enabled'` or `'disabled'`).
    #[napi(ts_type = "InstanceStatus")]
    pub status: Option<String>,
    /// At most this many; default 1000.
    pub limit: Option<f64>,
}

/// How many rows a query gives without a `limit`.
pub(crate) const QUERY_LIMIT: u32 = 1000;

/// How many rows `outboxOpenFor` gives without a `limit`, as the reference's.
pub(crate) const OPEN_ROWS_LIMIT: u32 = 100;

/// How many rows a query asks for: one past its `limit` (`QUERY_LIMIT` when absent), which
/// `lib.js` takes off again and reports as the list's `more`.
fn limit(limit: Option<f64>) -> napi::Result<usize> {
    limit_or(limit, QUERY_LIMIT)
}

/// [`limit`] with its own default.
fn limit_or(limit: Option<f64>, default: u32) -> napi::Result<usize> {
    Ok(convert::optional_u32(limit, "limit")?.unwrap_or(default) as usize + 1)
}

#[napi]
impl Store {
    /// The lease of `resource` as it stands, or `null`.
    #[napi(ts_return_type = "Lease | null")]
    pub fn lease_of(&self, env: Env, resource: String) -> napi::Result<Made> {
        let lease = self.query(move |state| annals::leases::lease(state, &resource))?;
        to_js(&env, &lease)
    }

    /// Up to `limit` (default 1000) leases held, by resource.
    #[napi(ts_return_type = "Array<Lease>")]
    pub fn leases(&self, env: Env, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let leases = self.query(move |state| annals::leases::leases(state, limit))?;
        to_js(&env, &leases)
    }

    /// The leases of one project (granted with labels), as the reference hub's `listLeases`.
    #[napi(ts_return_type = "Array<Lease>")]
    pub fn leases_of(&self, env: Env, project: String) -> napi::Result<Made> {
        let leases = self.query(move |state| annals::leases::list_leases(state, &project))?;
        to_js(&env, &leases)
    }

    /// The last fencing token issued for `resource` (kept after a release), or `null`.
    #[napi]
    pub fn last_token(&self, resource: String) -> napi::Result<Option<BigInt>> {
        self.query(move |state| {
            Ok(annals::leases::last_token(state, &resource)?.map(|token| BigInt::from(token.0)))
        })
    }

    /// The lane lease of `lane`/`key`, or `null`.
    #[napi(ts_return_type = "LaneLease | null")]
    pub fn lane_of(&self, env: Env, lane: String, key: String) -> napi::Result<Made> {
        let lease = self.query(move |state| annals::leases::lane(state, &lane, &key))?;
        to_js(&env, &lease)
    }

    /// Up to `limit` (default 1000) lane leases of `lane`, by key.
    #[napi(ts_return_type = "Array<LaneLease>")]
    pub fn lanes(&self, env: Env, lane: String, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let leases = self.query(move |state| annals::leases::lanes(state, &lane, limit))?;
        to_js(&env, &leases)
    }

    /// The outbox row of `key`, or `null`.
    #[napi(ts_return_type = "OutboxRow | null")]
    pub fn outbox_row(&self, env: Env, key: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::outbox::row(state, &key))?;
        self.with(|store| erasure::row_js(store, &env, &value))
    }

    /// Up to `limit` (default 1000) outbox rows, in enqueue order.
    #[napi(ts_return_type = "Array<OutboxRow>")]
    pub fn outbox_rows(&self, env: Env, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let value = self.query(move |state| annals::outbox::rows_by_enqueue(state, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &value))
    }

    /// The rows the push lane should try at `nowMs`: `pending` and due, in due order.
    #[napi(ts_return_type = "Array<OutboxRow>")]
    pub fn outbox_due(&self, env: Env, now_ms: f64, limit: Option<f64>) -> napi::Result<Made> {
        let now_ms = u64_of_ms(now_ms, "nowMs")?;
        let limit = self::limit(limit)?;
        let value = self.query(move |state| annals::outbox::due(state, now_ms, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &value))
    }

    /// The `pending` rows owed to `peer` that are new or past their backoff at `nowMs`, in
    /// enqueue order: what a push at enqueue sends.
    #[napi(ts_return_type = "Array<OutboxRow>")]
    pub fn outbox_pending_for(
        &self,
        env: Env,
        peer: String,
        now_ms: f64,
        limit: Option<f64>,
    ) -> napi::Result<Made> {
        let now_ms = u64_of_ms(now_ms, "nowMs")?;
        let limit = self::limit(limit)?;
        let value =
            self.query(move |state| annals::outbox::pending_for(state, &peer, now_ms, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &value))
    }

    /// The rows not yet done of `peer`, in enqueue order, at most `limit` (default 100).
    #[napi(ts_return_type = "Array<OutboxRow>")]
    pub fn outbox_open_for(
        &self,
        env: Env,
        peer: String,
        limit: Option<f64>,
    ) -> napi::Result<Made> {
        let limit = limit_or(limit, OPEN_ROWS_LIMIT)?;
        let value = self.query(move |state| annals::outbox::open_for(state, &peer, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &value))
    }

    /// The run `run` (its root and counters), or `null`.
    #[napi(ts_return_type = "Run | null")]
    pub fn run_of(&self, env: Env, run: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::run(state, &run))?;
        to_js(&env, &value)
    }

    /// The span `span` of `run`, or `null`.
    #[napi(ts_return_type = "Span | null")]
    pub fn span_of(&self, env: Env, run: String, span: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::span(state, &run, &span))?;
        to_js(&env, &value)
    }

    /// Every span of `run`, in start order.
    #[napi(ts_return_type = "Array<Span>")]
    pub fn spans(&self, env: Env, run: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::spans(state, &run))?;
        to_js(&env, &value)
    }

    /// The events of one span, in order.
    #[napi(ts_return_type = "Array<SpanEvent>")]
    pub fn span_events(&self, env: Env, run: String, span: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::events(state, &run, &span))?;
        self.with(|store| erasure::rows_js(store, &env, &value))
    }

    /// The run whole (its spans and their events), or `null`.
    #[napi(ts_return_type = "RunSnapshot | null")]
    pub fn run_snapshot(&self, env: Env, run: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::snapshot(state, &run))?;
        let mut made = to_js(&env, &value)?;
        if let (Some(snapshot), Either3::A(object)) = (&value, &mut made) {
            self.with(|store| {
                Opener::new(store).open_property(object, "events", &snapshot.events)
            })?;
        }
        Ok(made)
    }

    /// The changes of `run` after seq `after`, at most `limit` (default 1000): how a follower
    /// catches up.
    #[napi(ts_return_type = "Array<RunChange>")]
    pub fn run_changes_since(
        &self,
        env: Env,
        run: String,
        after: BigInt,
        limit: Option<f64>,
    ) -> napi::Result<Made> {
        let after = annals::runs::RunSeq(u64_of(&after, "after")?);
        let limit = self::limit(limit)?;
        let value =
            self.query(move |state| annals::runs::changes_since(state, &run, after, limit))?;
        to_js(&env, &value)
    }

    /// The rollup stored for a run whose root is still open, or `null`.
    #[napi(ts_return_type = "OpenRunRollup | null")]
    pub fn open_rollup(&self, env: Env, run: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::open_rollup(state, &run))?;
        to_js(&env, &value)
    }

    /// Up to `limit` (default 1000) rollups of closed runs, latest end first.
    #[napi(ts_return_type = "Array<RunRollup>")]
    pub fn rollups(&self, env: Env, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let value = self.query(move |state| annals::runs::rollups(state, limit))?;
        to_js(&env, &value)
    }

    /// Every open root span, latest start first: what is running.
    #[napi(ts_return_type = "Array<Span>")]
    pub fn open_roots(&self, env: Env) -> napi::Result<Made> {
        let value = self.query(move |state| annals::runs::open_roots(state))?;
        to_js(&env, &value)
    }

    /// Open roots that started more than `thresholdMs` before `nowMs`, oldest first.
    #[napi(ts_return_type = "Array<Span>")]
    pub fn stuck_runs(&self, env: Env, threshold_ms: f64, now_ms: f64) -> napi::Result<Made> {
        let threshold_ms = u64_of_ms(threshold_ms, "thresholdMs")?;
        let now_ms = u64_of_ms(now_ms, "nowMs")?;
        let value =
            self.query(move |state| annals::runs::stuck_runs(state, threshold_ms, now_ms))?;
        to_js(&env, &value)
    }

    /// Open roots whose last heartbeat is before `cutoffMs`, oldest heartbeat first.
    #[napi(ts_return_type = "Array<Span>")]
    pub fn silent_roots(&self, env: Env, cutoff_ms: f64) -> napi::Result<Made> {
        let cutoff_ms = u64_of_ms(cutoff_ms, "cutoffMs")?;
        let value = self.query(move |state| annals::runs::silent_roots(state, cutoff_ms))?;
        to_js(&env, &value)
    }

    /// The runs with an open span written by `writer`, in run order.
    #[napi]
    pub fn runs_with_open_spans_of(&self, writer: String) -> napi::Result<Vec<String>> {
        self.query(move |state| annals::runs::runs_with_open_spans_of(state, &writer))
    }

    /// The runs that have a span called `span`.
    #[napi]
    pub fn runs_of_span(&self, span: String) -> napi::Result<Vec<String>> {
        self.query(move |state| annals::runs::runs_of_span(state, &span))
    }

    /// The event ingested under (`project`, `run`, `sequence`), or `null`.
    #[napi(ts_return_type = "IngestedEvent | null")]
    pub fn ingest_event(
        &self,
        env: Env,
        project: String,
        run: String,
        sequence: BigInt,
    ) -> napi::Result<Made> {
        let sequence = u64_of(&sequence, "sequence")?;
        let event =
            self.query(move |state| annals::ingest::event(state, &project, &run, sequence))?;
        self.with(|store| erasure::row_js(store, &env, &event))
    }

    /// Up to `limit` (default 1000) ingested events, by key.
    #[napi(ts_return_type = "Array<IngestedEvent>")]
    pub fn ingest_events(&self, env: Env, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let events = self.query(move |state| annals::ingest::events(state, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &events))
    }

    /// Up to `limit` (default 1000) events a hub project holds, by run and sequence.
    #[napi(ts_return_type = "Array<IngestedEvent>")]
    pub fn hub_project_events(
        &self,
        env: Env,
        hub_project: String,
        limit: Option<f64>,
    ) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let events = self
            .query(move |state| annals::ingest::hub_project_events(state, &hub_project, limit))?;
        self.with(|store| erasure::rows_js(store, &env, &events))
    }

    /// The sync cursor of a run: the highest sequence ingested without a gap before it.
    #[napi]
    pub fn ingest_cursor(&self, project: String, run: String) -> napi::Result<BigInt> {
        self.query(move |state| Ok(BigInt::from(annals::ingest::cursor(state, &project, &run)?)))
    }

    /// The hub project a runtime project is bound to, or `null`.
    #[napi]
    pub fn project_hub(&self, project: String) -> napi::Result<Option<String>> {
        self.query(move |state| annals::ingest::project_hub(state, &project))
    }

    /// The runtime a run lives on, or `null`.
    #[napi]
    pub fn run_home(&self, project: String, run: String) -> napi::Result<Option<String>> {
        self.query(move |state| annals::ingest::run_home(state, &project, &run))
    }

    /// Where `consumer` stopped, or `null`.
    #[napi(ts_return_type = "ConsumerCheckpoint | null")]
    pub fn consumer_checkpoint(&self, env: Env, consumer: String) -> napi::Result<Made> {
        let checkpoint =
            self.query(move |state| annals::consumers::checkpoint(state, &consumer))?;
        to_js(&env, &checkpoint)
    }

    /// Up to `limit` (default 1000) consumers' checkpoints, by name.
    #[napi(ts_return_type = "Array<ConsumerCheckpoint>")]
    pub fn consumer_checkpoints(&self, env: Env, limit: Option<f64>) -> napi::Result<Made> {
        let limit = self::limit(limit)?;
        let checkpoints = self.query(move |state| annals::consumers::checkpoints(state, limit))?;
        to_js(&env, &checkpoints)
    }

    /// Registered instances, oldest first, then by handle.
    #[napi(ts_return_type = "Array<Instance>")]
    pub fn instances(&self, env: Env, options: Option<InstancesOptions>) -> napi::Result<Made> {
        let (status, limit) = match options {
            None => (None, self::limit(None)?),
            Some(options) => (
                options
                    .status
                    .map(|status| convert::named(status, "status"))
                    .transpose()?,
                self::limit(options.limit)?,
            ),
        };
        let value = self.query(move |state| annals::registry::instances(state, status, limit))?;
        to_js(&env, &value)
    }

    /// The enabled instance with identity key `identity`, or `null`.
    #[napi(ts_return_type = "Instance | null")]
    pub fn instance_by_identity(&self, env: Env, identity: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::registry::by_identity(state, &identity))?;
        to_js(&env, &value)
    }

    /// The identity `handle` names in `domain` (a mailbox's owner's), or `null`.
    #[napi]
    pub fn identity_of(&self, handle: String, domain: String) -> napi::Result<Option<String>> {
        self.query(move |state| annals::registry::identity_of(state, &handle, &domain))
    }

    /// The enabled mailbox of `owner` (hex identity), or `null`.
    #[napi(ts_return_type = "Instance | null")]
    pub fn mailbox_of(&self, env: Env, owner: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::registry::mailbox_of(state, &owner))?;
        to_js(&env, &value)
    }

    /// The instance the `host_skein` setting names, or `null`.
    #[napi(ts_return_type = "Instance | null")]
    pub fn host_skein(&self, env: Env) -> napi::Result<Made> {
        let value = self.query(move |state| annals::registry::host_skein(state))?;
        to_js(&env, &value)
    }

    /// The value of a host setting, or `null`.
    #[napi]
    pub fn setting_of(&self, key: String) -> napi::Result<Option<String>> {
        self.query(move |state| annals::registry::setting(state, &key))
    }

    /// Every host setting, by key: the library's `SettingRow`s, crossing by serde.
    #[napi(ts_return_type = "Array<SettingRow>")]
    pub fn settings(&self, env: Env) -> napi::Result<Made> {
        let rows = self.query(move |state| {
            Ok(annals::registry::settings(state)?
                .into_iter()
                .map(|(key, value)| SettingRow { key, value })
                .collect::<Vec<_>>())
        })?;
        to_js(&env, &rows)
    }

    /// The fuel ledger of `instance`: an entry per (caller, op), the costliest first.
    #[napi(ts_return_type = "Array<FuelEntry>")]
    pub fn fuel_ledger(&self, env: Env, instance: String) -> napi::Result<Made> {
        let value = self.query(move |state| annals::registry::fuel_ledger(state, &instance))?;
        to_js(&env, &value)
    }

    /// The fuel `instance` used in all.
    #[napi(ts_return_type = "FuelTotal")]
    pub fn fuel_total(&self, env: Env, instance: String) -> napi::Result<Made> {
        let total = self.query(move |state| annals::registry::fuel_total(state, &instance))?;
        to_js(&env, &total)
    }

    /// The fuel every instance used in all, by instance: the library's `FuelTotalRow`s,
    /// crossing by serde.
    #[napi(ts_return_type = "Array<FuelTotalRow>")]
    pub fn fuel_totals(&self, env: Env) -> napi::Result<Made> {
        let rows = self.query(move |state| {
            Ok(annals::registry::fuel_totals(state)?
                .into_iter()
                .map(|(instance, total)| FuelTotalRow {
                    instance,
                    calls: total.calls,
                    fuel: total.fuel,
                })
                .collect::<Vec<_>>())
        })?;
        to_js(&env, &rows)
    }

    /// Every row of one projection (`'registry'`, `'leases'`, `'outbox'`, `'runs'`,
    /// `'ingest'` or `'consumers'`) as `annals state` shows it: the library's `…Tables` of that
    /// domain, crossing by serde (camelCase, `bigint` counters, `number` milliseconds). A
    /// personal field is as stored (sealed), and hashes and stored bytes are hex, as the CLI
    /// prints them.
    #[napi(
        ts_return_type = "RegistryTables | LeaseTables | OutboxTables | RunTables | IngestTables | ConsumerTables"
    )]
    pub fn state(&self, env: Env, projection: String) -> napi::Result<Made> {
        match projection.as_str() {
            "registry" => self.tables(&env, annals::registry::tables),
            "leases" => self.tables(&env, annals::leases::tables),
            "outbox" => self.tables(&env, annals::outbox::tables),
            "runs" => self.tables(&env, annals::runs::tables),
            "ingest" => self.tables(&env, annals::ingest::tables),
            "consumers" => self.tables(&env, annals::consumers::tables),
            _ => Err(invalid(
                "projection",
                "must be 'registry', 'leases', 'outbox', 'runs', 'ingest' or 'consumers'",
            )),
        }
    }
}
