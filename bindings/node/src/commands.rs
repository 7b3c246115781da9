//! Every domain's commands on the store: each converted once into the write it makes
//! (`<domain>_work`), run either now (`lease`) or on a thread of libuv's pool (`leaseAsync`,
//! a Promise), alone or inside `transaction(fn)` (see `transaction.rs`).

use annals::consumers::{ConsumerCommand, ConsumerOutcome};
use annals::ingest::{IngestCommand, IngestOutcome};
use annals::leases::{LaneCommand, LaneOutcome, LeaseCommand, LeaseOutcome};
use annals::outbox::{
    OutboxCommand, OutboxOutcome, PullCommand, PullOutcome, SweepCommand, SweepOutcome,
};
use annals::registry::{
    ChargeFuel, FuelOutcome, InstanceCommand, InstanceOutcome, SetSetting, SettingOutcome,
};
use annals::runs::{RunCommand, RunCommandOutcome, SpanCommand, SpanCommandOutcome};
use napi::Env;
use napi::bindgen_prelude::{AsyncTask, Either3, JsObjectValue, Object};
use napi_derive::napi;
use serde::Serialize;
use std::sync::OnceLock;

use crate::Store;
use crate::crossing::{Made, from_js, tag, to_js};
use crate::erasure::Opener;
use crate::names::serde_names;
use crate::transaction::{Call, CallOptions, Crossing, Work};

/// An outbox command as JavaScript gives it: the library declares a row's commands, a peer's
/// pull and the sweeps as three enums, which cross as one union told apart by `type`.
pub enum OutboxCall {
    Row(OutboxCommand),
    Pull(PullCommand),
    Sweep(SweepCommand),
}

impl OutboxCall {
    /// The outbox command `command` is, by its `type` (a row's command if it is neither a
    /// pull's nor a sweep's: one that is none of them is refused naming the row's).
    pub(crate) fn of(command: &Object<'_>) -> napi::Result<OutboxCall> {
        // serde's own lists of the pull's and the sweeps' variants, taken once.
        static PULL: OnceLock<&'static [&'static str]> = OnceLock::new();
        static SWEEP: OnceLock<&'static [&'static str]> = OnceLock::new();
        let tag = tag(command)?;
        let tag = tag.as_str();
        if PULL.get_or_init(serde_names::<PullCommand>).contains(&tag) {
            return Ok(OutboxCall::Pull(from_js(command)?));
        }
        if SWEEP
            .get_or_init(serde_names::<SweepCommand>)
            .contains(&tag)
        {
            return Ok(OutboxCall::Sweep(from_js(command)?));
        }
        Ok(OutboxCall::Row(from_js(command)?))
    }
}

/// What an outbox command got: the outcome of the library's enum it was, as it is.
#[derive(Serialize)]
#[serde(untagged)]
pub enum OutboxResult {
    Row(OutboxOutcome),
    Pull(PullOutcome),
    Sweep(SweepOutcome),
}

/// `object`, an ingest's `outcome` crossed, with the personal bytes of the event it holds
/// opened (`erasure.rs`).
pub(crate) fn open_ingested(
    store: &annals::Store,
    outcome: &IngestOutcome,
    object: &mut Object<'_>,
) -> napi::Result<()> {
    match outcome {
        IngestOutcome::Accepted { event } | IngestOutcome::Duplicate { event } => {
            let mut crossed: Object<'_> = object.get_named_property("event")?;
            Opener::new(store).open_crossed(event, &mut crossed)
        }
        _ => Ok(()),
    }
}

impl Store {
    /// `outcome` as JavaScript's, the rows it holds opened by `open`.
    fn opened_js<T: Serialize>(
        &self,
        env: &Env,
        outcome: &T,
        open: crate::transaction::OpenCrossed<T>,
    ) -> napi::Result<Made> {
        let mut made = to_js(env, outcome)?;
        if let Either3::A(object) = &mut made {
            self.with(|store| open(store, outcome, object))?;
        }
        Ok(made)
    }
}

impl OutboxResult {
    /// `object`, an outbox `outcome` crossed, with the personal payload of each row it holds
    /// opened (`erasure.rs`): the plaintext while the subject's key stands, `null` with
    /// `erased: true` after.
    fn open_rows(
        store: &annals::Store,
        outcome: &OutboxResult,
        object: &mut Object<'_>,
    ) -> napi::Result<()> {
        match outcome {
            OutboxResult::Row(outcome) => open_outbox(store, outcome, object),
            OutboxResult::Pull(outcome) => open_pulled(store, outcome, object),
            OutboxResult::Sweep(_) => Ok(()),
        }
    }
}

/// `object`, a row command's `outcome` crossed, with its row's personal payload opened.
pub(crate) fn open_outbox(
    store: &annals::Store,
    outcome: &OutboxOutcome,
    object: &mut Object<'_>,
) -> napi::Result<()> {
    match outcome {
        OutboxOutcome::Enqueued { row }
        | OutboxOutcome::AlreadyEnqueued { row }
        | OutboxOutcome::Updated { row }
        | OutboxOutcome::Refused { row: Some(row), .. } => {
            let mut crossed: Object<'_> = object.get_named_property("row")?;
            Opener::new(store).open_crossed(row, &mut crossed)
        }
        _ => Ok(()),
    }
}

/// `object`, a pull's `outcome` crossed, with the personal payloads of the rows it claimed
/// opened.
pub(crate) fn open_pulled(
    store: &annals::Store,
    outcome: &PullOutcome,
    object: &mut Object<'_>,
) -> napi::Result<()> {
    match outcome {
        PullOutcome::Claimed { rows, .. } => Opener::new(store).open_property(object, "rows", rows),
        _ => Ok(()),
    }
}

#[napi]
impl Store {
    /// Runs a lease command against the current state, appending what it decides.
    #[napi(
        ts_args_type = "command: LeaseCommand, options?: CallOptions | undefined | null",
        ts_return_type = "LeaseOutcome"
    )]
    pub fn lease(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, lease_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `lease(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: LeaseCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<LeaseOutcome>"
    )]
    pub fn lease_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<LeaseOutcome>>> {
        self.crossing_async(Call::of(options)?, lease_work(command)?)
    }

    /// Runs an outbox command against the current state, appending what it decides.
    #[napi(
        ts_args_type = "command: OutboxCommand, options?: CallOptions | undefined | null",
        ts_return_type = "OutboxOutcome"
    )]
    pub fn outbox(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, outbox_work(command)?)?;
        self.opened_js(&env, &outcome, OutboxResult::open_rows)
    }

    /// `outbox(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: OutboxCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<OutboxOutcome>"
    )]
    pub fn outbox_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<OutboxResult>>> {
        self.crossing_async_opened(
            Call::of(options)?,
            outbox_work(command)?,
            OutboxResult::open_rows,
        )
    }

    /// Runs a lane lease command (a reconciler's claim on one key of a lane).
    #[napi(
        ts_args_type = "command: LaneCommand, options?: CallOptions | undefined | null",
        ts_return_type = "LaneOutcome"
    )]
    pub fn lane(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, lane_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `lane(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: LaneCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<LaneOutcome>"
    )]
    pub fn lane_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<LaneOutcome>>> {
        self.crossing_async(Call::of(options)?, lane_work(command)?)
    }

    /// Runs a command on whole runs: a heartbeat, a rollup, closing, a sweep or pruning.
    #[napi(
        ts_args_type = "command: RunCommand, options?: CallOptions | undefined | null",
        ts_return_type = "RunOutcome"
    )]
    pub fn run(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, run_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `run(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: RunCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<RunOutcome>"
    )]
    pub fn run_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<RunCommandOutcome>>> {
        self.crossing_async(Call::of(options)?, run_work(command)?)
    }

    /// Runs an ingest command: the hub's exactly-once sync ingest.
    #[napi(
        ts_args_type = "command: IngestCommand, options?: CallOptions | undefined | null",
        ts_return_type = "IngestOutcome"
    )]
    pub fn ingest(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, ingest_work(command)?)?;
        self.opened_js(&env, &outcome, open_ingested)
    }

    /// `ingest(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: IngestCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<IngestOutcome>"
    )]
    pub fn ingest_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<IngestOutcome>>> {
        self.crossing_async_opened(Call::of(options)?, ingest_work(command)?, open_ingested)
    }

    /// Runs a span command of the runs projection.
    #[napi(
        ts_args_type = "command: SpanCommand, options?: CallOptions | undefined | null",
        ts_return_type = "SpanOutcome"
    )]
    pub fn span(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, span_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `span(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: SpanCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<SpanOutcome>"
    )]
    pub fn span_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<SpanCommandOutcome>>> {
        self.crossing_async(Call::of(options)?, span_work(command)?)
    }

    /// Runs a registry command.
    #[napi(
        ts_args_type = "command: InstanceCommand, options?: CallOptions | undefined | null",
        ts_return_type = "InstanceOutcome"
    )]
    pub fn registry(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, registry_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `registry(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: InstanceCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<InstanceOutcome>"
    )]
    pub fn registry_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<InstanceOutcome>>> {
        self.crossing_async(Call::of(options)?, registry_work(command)?)
    }

    /// Sets a host setting.
    #[napi(
        ts_args_type = "command: SettingCommand, options?: CallOptions | undefined | null",
        ts_return_type = "SettingOutcome"
    )]
    pub fn setting(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, setting_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `setting(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: SettingCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<SettingOutcome>"
    )]
    pub fn setting_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<SettingOutcome>>> {
        self.crossing_async(Call::of(options)?, setting_work(command)?)
    }

    /// Charges fuel to an instance's ledger.
    #[napi(
        ts_args_type = "command: FuelCommand, options?: CallOptions | undefined | null",
        ts_return_type = "FuelOutcome"
    )]
    pub fn fuel(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, fuel_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `fuel(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: FuelCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<FuelOutcome>"
    )]
    pub fn fuel_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<FuelOutcome>>> {
        self.crossing_async(Call::of(options)?, fuel_work(command)?)
    }

    /// Records a consumer's checkpoint.
    #[napi(
        ts_args_type = "command: ConsumerCommand, options?: CallOptions | undefined | null",
        ts_return_type = "ConsumerOutcome"
    )]
    pub fn consumer(
        &self,
        env: Env,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, consumer_work(command)?)?;
        to_js(&env, &outcome)
    }

    /// `consumer(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "command: ConsumerCommand, options?: CallOptions | undefined | null",
        ts_return_type = "Promise<ConsumerOutcome>"
    )]
    pub fn consumer_async(
        &self,
        command: Object<'_>,
        options: Option<CallOptions<'_>>,
    ) -> napi::Result<AsyncTask<Crossing<ConsumerOutcome>>> {
        self.crossing_async(Call::of(options)?, consumer_work(command)?)
    }
}

/// The write of `lease(command)`.
fn lease_work(command: Object<'_>) -> napi::Result<Work<LeaseOutcome>> {
    let command: LeaseCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `outbox(command)`.
fn outbox_work(command: Object<'_>) -> napi::Result<Work<OutboxResult>> {
    let call = OutboxCall::of(&command)?;
    Ok(Box::new(move |session| {
        Ok(match call {
            OutboxCall::Row(command) => OutboxResult::Row(session.execute(&command)?),
            OutboxCall::Pull(command) => OutboxResult::Pull(session.execute(&command)?),
            OutboxCall::Sweep(command) => OutboxResult::Sweep(session.execute(&command)?),
        })
    }))
}

/// The write of `lane(command)`.
fn lane_work(command: Object<'_>) -> napi::Result<Work<LaneOutcome>> {
    let command: LaneCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `run(command)`.
fn run_work(command: Object<'_>) -> napi::Result<Work<RunCommandOutcome>> {
    let command: RunCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `ingest(command)`.
fn ingest_work(command: Object<'_>) -> napi::Result<Work<IngestOutcome>> {
    let command: IngestCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `span(command)`.
fn span_work(command: Object<'_>) -> napi::Result<Work<SpanCommandOutcome>> {
    let command: SpanCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `registry(command)`.
fn registry_work(command: Object<'_>) -> napi::Result<Work<InstanceOutcome>> {
    let command: InstanceCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `setting(command)`.
fn setting_work(command: Object<'_>) -> napi::Result<Work<SettingOutcome>> {
    let command: SetSetting = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `fuel(command)`.
fn fuel_work(command: Object<'_>) -> napi::Result<Work<FuelOutcome>> {
    let command: ChargeFuel = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `consumer(command)`.
fn consumer_work(command: Object<'_>) -> napi::Result<Work<ConsumerOutcome>> {
    let command: ConsumerCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}
