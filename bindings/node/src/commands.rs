//! Every domain's commands on the store: each converted once into the write it makes
//! (`<domain>_work`), run either now (`lease`) or on a thread of libuv's pool (`leaseAsync`,
//! a Promise), alone or inside `transaction(fn)` (see `transaction.rs`).

use annals::consumers::{ConsumerCommand, ConsumerOutcome};
use annals::ingest::{IngestCommand, IngestOutcome};
use annals::leases::{LaneCommand, LaneOutcome, LeaseCommand, LeaseOutcome};
use annals::registry::{SetSetting, SettingOutcome};
use napi::Env;
use napi::bindgen_prelude::{AsyncTask, Object};
use napi_derive::napi;

use crate::crossing::{Made, from_js, to_js};

use crate::runs::{self, RunCommand, RunOutcome, SpanCommand, SpanOutcome};
use crate::transaction::{Call, CallOptions, Commit, Crossing, Work};
use crate::{
    FuelCommand, FuelOutcome, InstanceCommand, InstanceOutcome, OutboxCommand, OutboxOutcome,
    Store, convert, fuel_command, fuel_outcome,
};

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
        options: Option<CallOptions>,
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
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Crossing<LeaseOutcome>>> {
        self.crossing_async(Call::of(options)?, lease_work(command)?)
    }

    /// Runs an outbox command against the current state, appending what it decides.
    #[napi]
    pub fn outbox(
        &self,
        command: OutboxCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<OutboxOutcome> {
        self.command(Call::of(options)?, outbox_work(command)?)
    }

    /// `outbox(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(ts_return_type = "Promise<OutboxOutcome>")]
    pub fn outbox_async(
        &self,
        command: OutboxCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Commit<OutboxOutcome>>> {
        self.command_async(Call::of(options)?, outbox_work(command)?)
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
        options: Option<CallOptions>,
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
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Crossing<LaneOutcome>>> {
        self.crossing_async(Call::of(options)?, lane_work(command)?)
    }

    /// Runs a command on whole runs: a heartbeat, a rollup, closing, a sweep or pruning.
    #[napi]
    pub fn run(
        &self,
        command: RunCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<RunOutcome> {
        self.command(Call::of(options)?, run_work(command)?)
    }

    /// `run(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(ts_return_type = "Promise<RunOutcome>")]
    pub fn run_async(
        &self,
        command: RunCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Commit<RunOutcome>>> {
        self.command_async(Call::of(options)?, run_work(command)?)
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
        options: Option<CallOptions>,
    ) -> napi::Result<Made> {
        let outcome = self.command(Call::of(options)?, ingest_work(command)?)?;
        to_js(&env, &outcome)
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
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Crossing<IngestOutcome>>> {
        self.crossing_async(Call::of(options)?, ingest_work(command)?)
    }

    /// Runs a span command of the runs projection.
    #[napi]
    pub fn span(
        &self,
        command: SpanCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<SpanOutcome> {
        self.command(Call::of(options)?, span_work(command)?)
    }

    /// `span(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(ts_return_type = "Promise<SpanOutcome>")]
    pub fn span_async(
        &self,
        command: SpanCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Commit<SpanOutcome>>> {
        self.command_async(Call::of(options)?, span_work(command)?)
    }

    /// Runs a registry command.
    #[napi]
    pub fn registry(
        &self,
        command: InstanceCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<InstanceOutcome> {
        self.command(Call::of(options)?, registry_work(command)?)
    }

    /// `registry(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(ts_return_type = "Promise<InstanceOutcome>")]
    pub fn registry_async(
        &self,
        command: InstanceCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Commit<InstanceOutcome>>> {
        self.command_async(Call::of(options)?, registry_work(command)?)
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
        options: Option<CallOptions>,
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
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Crossing<SettingOutcome>>> {
        self.crossing_async(Call::of(options)?, setting_work(command)?)
    }

    /// Charges fuel to an instance's ledger.
    #[napi]
    pub fn fuel(
        &self,
        command: FuelCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<FuelOutcome> {
        self.command(Call::of(options)?, fuel_work(command)?)
    }

    /// `fuel(command, options)` committed on a thread of libuv's pool: a Promise of its
    /// outcome, the event loop free meanwhile.
    #[napi(ts_return_type = "Promise<FuelOutcome>")]
    pub fn fuel_async(
        &self,
        command: FuelCommand,
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Commit<FuelOutcome>>> {
        self.command_async(Call::of(options)?, fuel_work(command)?)
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
        options: Option<CallOptions>,
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
        options: Option<CallOptions>,
    ) -> napi::Result<AsyncTask<Crossing<ConsumerOutcome>>> {
        self.crossing_async(Call::of(options)?, consumer_work(command)?)
    }
}

/// The write of `lease(command)`.
fn lease_work(command: Object<'_>) -> napi::Result<Work<LeaseOutcome>> {
    let command: LeaseCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `outbox(command)`, converted.
fn outbox_work(command: OutboxCommand) -> napi::Result<Work<OutboxOutcome>> {
    let call = convert::outbox_command(command)?;
    Ok(Box::new(move |session| {
        Ok(match call {
            convert::OutboxCall::Row(command) => {
                convert::outbox_outcome(session.execute(&command)?, convert::row_key(&command))
            }
            convert::OutboxCall::Pull(command) => convert::pull(session.execute(&command)?),
            convert::OutboxCall::Sweep(command) => convert::sweep(session.execute(&command)?),
        })
    }))
}

/// The write of `lane(command)`.
fn lane_work(command: Object<'_>) -> napi::Result<Work<LaneOutcome>> {
    let command: LaneCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `run(command)`, converted.
fn run_work(command: RunCommand) -> napi::Result<Work<RunOutcome>> {
    let command = runs::run_command(command)?;
    Ok(Box::new(move |session| {
        Ok(runs::run_outcome(session.execute(&command)?))
    }))
}

/// The write of `ingest(command)`.
fn ingest_work(command: Object<'_>) -> napi::Result<Work<IngestOutcome>> {
    let command: IngestCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `span(command)`, converted.
fn span_work(command: SpanCommand) -> napi::Result<Work<SpanOutcome>> {
    let command = runs::span_command(command)?;
    Ok(Box::new(move |session| {
        Ok(runs::span_outcome(session.execute(&command)?))
    }))
}

/// The write of `registry(command)`, converted.
fn registry_work(command: InstanceCommand) -> napi::Result<Work<InstanceOutcome>> {
    let command = convert::instance_command(command)?;
    Ok(Box::new(move |session| {
        Ok(convert::instance_outcome(session.execute(&command)?))
    }))
}

/// The write of `setting(command)`.
fn setting_work(command: Object<'_>) -> napi::Result<Work<SettingOutcome>> {
    let command: SetSetting = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}

/// The write of `fuel(command)`, converted.
fn fuel_work(command: FuelCommand) -> napi::Result<Work<FuelOutcome>> {
    let command = fuel_command(command)?;
    Ok(Box::new(move |session| {
        Ok(fuel_outcome(session.execute(&command)?))
    }))
}

/// The write of `consumer(command)`.
fn consumer_work(command: Object<'_>) -> napi::Result<Work<ConsumerOutcome>> {
    let command: ConsumerCommand = from_js(&command)?;
    Ok(Box::new(move |session| session.execute(&command)))
}
