//! annals for Node.js: the store, appends and reads, verification, and the leases and outbox
//! commands, converted to JavaScript's conventions (camelCase, `bigint` positions and
//! versions, `number` milliseconds, `Buffer` payloads, outcomes as unions on `type`). It holds
//! no rule of its own: every call is one of the `annals` crate's.

// napi-rs registers a module's own functions (`constants`, `decodeEvent`) only outside a test
// build, where they would count as unused.
mod commands;
#[cfg_attr(test, allow(dead_code))]
mod constants;
mod convert;
mod crossing;
mod erasure;
mod error;
#[cfg_attr(test, allow(dead_code))]
mod events;
#[cfg_attr(test, allow(dead_code))]
mod names;
mod packed;
mod queries;
#[cfg_attr(test, allow(dead_code))]
mod schemas;
mod transaction;
mod view;

use std::sync::{Arc, Mutex};

use annals::{Durability, Position, Sharing, Store as Inner, StoreOptions};
use napi::Env;
use napi::bindgen_prelude::{BigInt, Object, PromiseRaw, Unknown};
use napi_derive::napi;

use convert::{position, record_js};
use crossing::Made;
use error::{at_path, invalid, to_js};
use transaction::{Call, CallOptions};

/// Notes the thread the module loads on (the main thread, or a worker's) as one that runs
/// JavaScript, where the binding makes its errors as it meets them (`error.rs`).
#[napi(module_exports)]
pub fn on_load(_exports: Object<'_>, env: Env) -> napi::Result<()> {
    error::on_js_thread(&env);
    Ok(())
}

// Declared here, not crossed by serde: no library type has this shape. Three fields are the
// package's own choices (`integers`, how results come back; `readOnly`, which of the crate's
// opens; `durability`, the store's default for each call), and the rest name the few
// `annals::StoreOptions` a host sets, as strings and milliseconds: `StoreOptions` has no serde
// form (a `Duration`, the configured limits, a storage backend).
/// How a store is opened.
#[napi(object)]
pub struct OpenOptions {
    /// `'single-writer'` (the default: readers may open the file beside it), `'multi-writer'`
    /// (other writers too) or `'exclusive'`.
    pub sharing: Option<String>,
    /// How long to wait for another process to let go of the file, in milliseconds.
    pub busy_timeout_ms: Option<f64>,
    /// Open an existing log read-only, beside its writer.
    pub read_only: Option<bool>,
    /// The archive files of a cut log's cuts, in any order: a writable open replays from them
    /// a projection the last cut kept no snapshot of (a new version of one), which without
    /// them throws `NOT_IN_CUT`.
    pub archives: Option<Vec<String>>,
    /// How its commands commit unless a call says otherwise: `'immediate'` (the default:
    /// durable when the call returns) or `'deferred'` (visible at once, durable at the next
    /// immediate commit or `flush()`; exclusive stores only, for bulk loads and tests).
    #[napi(ts_type = "Durability")]
    pub durability: Option<String>,
    /// How integers come back: `'bigint'` (the default: positions, versions, tokens and seqs
    /// exact however large) or `'number'` (as better-sqlite3 without safe integers; one past
    /// 2^53 - 1 throws `UNSAFE_INTEGER` rather than come back rounded). Inputs take either.
    pub integers: Option<String>,
}

// The package's own: a call's options (as `CallOptions`) and the subject that makes the crate's
// `append` an `append_personal`; no library type has this shape.
/// How an append commits, and whose personal data it holds.
#[napi(object, object_to_js = false)]
pub struct AppendOptions<'a> {
    /// `'immediate'` or `'deferred'`, as for any command. Default: the store's.
    #[napi(ts_type = "Durability")]
    pub durability: Option<String>,
    /// A lease the append is fenced by, checked in the same commit: the library's
    /// `LeaseGuard`, read by serde.
    #[napi(ts_type = "LeaseGuard")]
    pub guard: Option<Unknown<'a>>,
    /// The subject (a person's pseudonymous id, 1 to 128 bytes, no control character and no
    /// `/`) the events' payloads are personal to: each is sealed under the subject's key
    /// before its record is hashed, and reads give it back until `erase(subject)`. A personal
    /// append commits alone and durably: not inside `transaction(fn)`, fenced by a `guard`,
    /// nor `'deferred'`.
    pub subject: Option<String>,
}

// The package's own: the subject that makes the writer's `append` its `append_personal`.
/// How the writer takes an append.
#[napi(object)]
pub struct WriterAppendOptions {
    /// The subject the events' payloads are personal to, as for `Store.append`.
    pub subject: Option<String>,
}

// The package's own: the crate's reads take these as arguments (a position, a `Direction`, a
// count), not as a type.
/// Where a read starts and how far it goes.
#[napi(object)]
pub struct ReadOptions {
    /// The first position (or stream version) read; default 0 forward, the end backward.
    pub from: Option<BigInt>,
    /// `'forward'` (default) or `'backward'`.
    pub direction: Option<String>,
    /// At most this many records; default 1000.
    pub limit: Option<f64>,
}

/// An annals log file.
#[napi]
pub struct Store {
    inner: Mutex<Option<Arc<Inner>>>,
    /// How a command commits when its call does not say.
    durability: Durability,
    /// The transaction `transaction()` has open, if any.
    transaction: transaction::Open,
    /// What a view (`snapshot()`, `stateAt()`) reads; none for the store itself.
    view: view::Pinned,
}

#[napi]
impl Store {
    /// Opens (creating it unless `readOnly`) the log at `path`.
    #[napi(factory)]
    pub fn open(path: String, options: Option<OpenOptions>) -> napi::Result<Store> {
        let options = options.unwrap_or(OpenOptions {
            sharing: None,
            busy_timeout_ms: None,
            read_only: None,
            archives: None,
            durability: None,
            integers: None,
        });
        // Every option is converted, read-only or not: a bad one is refused either way.
        let sharing = match options.sharing.as_deref() {
            None => Sharing::SingleWriter,
            Some(text) => text
                .parse::<Sharing>()
                .map_err(|error| invalid("sharing", &error.to_string()))?,
        };
        let busy_timeout_ms = convert::optional_ms(options.busy_timeout_ms, "busyTimeoutMs")?;
        // `lib.js` converts the results; a value it does not know is refused here.
        if let Some(integers) = options.integers.as_deref()
            && integers != "bigint"
            && integers != "number"
        {
            return Err(invalid(
                "integers",
                &format!("must be 'bigint' or 'number', not '{integers}'"),
            ));
        }
        let durability = match options.durability.as_deref() {
            None => Durability::Immediate,
            Some(text) => transaction::durability(text, "durability")?,
        };
        let opened = if options.read_only.unwrap_or(false) {
            Inner::open_read_only(&path)
        } else {
            Inner::open_with(
                &path,
                StoreOptions {
                    create: true,
                    sharing,
                    busy_timeout: std::time::Duration::from_millis(busy_timeout_ms.unwrap_or(0)),
                    archives: options
                        .archives
                        .unwrap_or_default()
                        .into_iter()
                        .map(std::path::PathBuf::from)
                        .collect(),
                    ..StoreOptions::default()
                },
            )
        };
        let inner = opened.map_err(|error| at_path(error, &path))?;
        Ok(Store {
            inner: Mutex::new(Some(Arc::new(inner))),
            durability,
            transaction: transaction::Open::default(),
            view: view::Pinned::default(),
        })
    }

    /// An append's options: how it commits, and the subject its payloads are personal to,
    /// refused with what a personal append cannot be (the crate's `Store::append_personal`
    /// commits alone, durably, unfenced).
    fn append_call(
        &self,
        options: Option<AppendOptions<'_>>,
    ) -> napi::Result<(Call, Option<String>)> {
        let Some(options) = options else {
            return Ok((Call::plain(), None));
        };
        let call = Call::of(Some(CallOptions {
            durability: options.durability,
            guard: options.guard,
        }))?;
        let Some(subject) = options.subject else {
            return Ok((call, None));
        };
        self.not_a_view("append")?;
        if self.transaction_open() {
            return Err(invalid(
                "subject",
                "a personal append commits alone: make it outside transaction()",
            ));
        }
        if call.guard().is_some() {
            return Err(invalid(
                "guard",
                "a personal append is not fenced by a lease: give either subject or guard",
            ));
        }
        if call.durability() == Some(Durability::Deferred) {
            return Err(invalid(
                "durability",
                "a personal append is durable when it returns: it cannot be 'deferred'",
            ));
        }
        Ok((call, Some(subject)))
    }

    /// An append as `call` says: in the open transaction, or committed alone.
    fn append_with(
        &self,
        stream: String,
        expected: annals::ExpectedVersion,
        events: Vec<annals::NewEvent>,
        call: Call,
    ) -> napi::Result<annals::AppendOutcome> {
        self.not_a_view("append")?;
        if !self.transaction_open()
            && !call.chooses_durability()
            && self.durability == Durability::Immediate
        {
            // annals' own append, which refuses a kind a projection owns before it touches
            // the file.
            return self.with(|store| {
                let outcome = match call.guard() {
                    Some(guard) => store.append_guarded(&stream, expected, &events, guard),
                    None => store.append(&stream, expected, &events),
                };
                outcome.map_err(to_js)
            });
        }
        self.command(call, move |session| {
            session.append(&stream, expected, &events)
        })
    }

    fn with<T>(&self, call: impl FnOnce(&Inner) -> napi::Result<T>) -> napi::Result<T> {
        call(self.shared()?.as_ref())
    }

    fn shared(&self) -> napi::Result<Arc<Inner>> {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        guard.clone().ok_or_else(closed)
    }

    /// Starts the group-commit writer on a thread of its own: commands queued while a batch
    /// runs share its transaction and its one durable commit, and each promise resolves once
    /// its batch committed.
    ///
    /// `options` is the library's `WriterOptions`, read by serde: a field left out takes its
    /// default, and a `'deferred'` writer (its batches durable when it is closed) needs an
    /// exclusive store.
    #[napi(ts_args_type = "options?: WriterOptions | undefined | null")]
    pub fn writer(&self, options: Option<Object<'_>>) -> napi::Result<Writer> {
        self.not_a_view("writer")?;
        let settings: annals::writer::WriterOptions = match options {
            Some(options) => crossing::from_js(&options)?,
            None => annals::writer::WriterOptions::default(),
        };
        let writer = annals::Writer::start(self.shared()?, settings).map_err(to_js)?;
        Ok(Writer {
            inner: Mutex::new(Some(writer)),
        })
    }

    /// Appends `events` to `stream` in one durable transaction if the stream is in the
    /// `expected` state: `'any'`, `'none'` (no record yet), `'exists'`, or the `bigint` version
    /// of its last record. `options` may fence it by a lease guard, choose its durability and
    /// make its payloads personal to a `subject`; inside `transaction(fn)` it joins the
    /// transaction.
    #[napi(
        ts_args_type = "stream: string, expected: string | bigint, events: Array<NewEvent>, options?: AppendOptions | undefined | null",
        ts_return_type = "AppendOutcome"
    )]
    pub fn append(
        &self,
        env: Env,
        stream: String,
        expected: napi::Either<String, BigInt>,
        events: Unknown<'_>,
        options: Option<AppendOptions<'_>>,
    ) -> napi::Result<Made> {
        let expected = convert::expected(expected)?;
        let events = convert::events(events)?;
        let (call, subject) = self.append_call(options)?;
        let outcome = match subject {
            Some(subject) => self.with(|store| {
                store
                    .append_personal(&subject, &stream, expected, &events)
                    .map_err(to_js)
            })?,
            None => self.append_with(stream, expected, events, call)?,
        };
        crossing::to_js(&env, &outcome)
    }

    /// `append(stream, expected, events, options)` committed on a thread of libuv's pool: a
    /// Promise of its outcome, the event loop free meanwhile.
    #[napi(
        ts_args_type = "stream: string, expected: string | bigint, events: Array<NewEvent>, options?: AppendOptions | undefined | null",
        ts_return_type = "Promise<AppendOutcome>"
    )]
    pub fn append_async(
        &self,
        stream: String,
        expected: napi::Either<String, BigInt>,
        events: Unknown<'_>,
        options: Option<AppendOptions<'_>>,
    ) -> napi::Result<napi::bindgen_prelude::AsyncTask<transaction::Crossing<annals::AppendOutcome>>>
    {
        let expected = convert::expected(expected)?;
        let events = convert::events(events)?;
        let (call, subject) = self.append_call(options)?;
        if let Some(subject) = subject {
            return self.alone_async(move |store| {
                store.append_personal(&subject, &stream, expected, &events)
            });
        }
        self.crossing_async(call, move |session| {
            session.append(&stream, expected, &events)
        })
    }

    /// [`Store::append`] fenced by `guard`, checked in the same transaction.
    #[napi(
        ts_args_type = "stream: string, expected: string | bigint, events: Array<NewEvent>, guard: LeaseGuard",
        ts_return_type = "AppendOutcome"
    )]
    pub fn append_guarded(
        &self,
        env: Env,
        stream: String,
        expected: napi::Either<String, BigInt>,
        events: Unknown<'_>,
        guard: Unknown<'_>,
    ) -> napi::Result<Made> {
        let expected = convert::expected(expected)?;
        let events = convert::events(events)?;
        let guard = crossing::argument(guard, "guard")?;
        let outcome = self.append_with(stream, expected, events, Call::guarded(guard))?;
        crossing::to_js(&env, &outcome)
    }

    /// Walks the whole log and checks every projection against a replay: the library's
    /// `VerifyReport`, crossing by serde (`sound`, `findings` and `behind` among its fields).
    #[napi(ts_return_type = "VerifyReport")]
    pub fn verify(&self, env: Env) -> napi::Result<Made> {
        self.not_a_view("verify")?;
        self.outside_transaction("verify")?;
        let report = self.with(|store| annals::Audit::of(store).verify().map_err(to_js))?;
        crossing::to_js(&env, &report)
    }

    /// Copies the log as of its latest commit into a new file at `path` (which must not
    /// exist), while writers go on: every record, index, the tree, checkpoints and every
    /// projection, including commits the journal holds and the file does not yet. The copy
    /// opens as this log at the returned head.
    #[napi(ts_return_type = "BackupReport")]
    pub fn backup(&self, env: Env, path: String) -> napi::Result<Made> {
        self.not_a_view("backup")?;
        self.outside_transaction("backup")?;
        let backup =
            self.with(|store| annals::maintenance::Backup::write(store, &path).map_err(to_js))?;
        crossing::to_js(&env, &backup)
    }

    /// Makes every commit durable in the log file itself: drains the commit journal into it
    /// (a commit is already durable when it returns, in the journal).
    #[napi]
    pub fn flush(&self) -> napi::Result<()> {
        self.not_a_view("flush")?;
        self.outside_transaction("flush")?;
        self.with(|store| store.flush().map_err(to_js))
    }

    /// Cuts the log before `before`: the records from its start to there go to the new
    /// archive file at `path` (synced first), and leave the log, which keeps its tree, its
    /// indexes, every projection and the records a projection still reads. Reads below the
    /// cut then throw `ARCHIVED`, naming the archive.
    #[napi(ts_return_type = "ArchiveReport")]
    pub fn archive_before(&self, env: Env, before: BigInt, path: String) -> napi::Result<Made> {
        self.not_a_view("archiveBefore")?;
        self.outside_transaction("archiveBefore")?;
        let before = position(&before, "before")?;
        let report = self.with(|store| {
            annals::archive::Archives::of(store)
                .archive_before(Position(before), &path)
                .map_err(|error| at_path(error, &path))
        })?;
        crossing::to_js(&env, &report)
    }

    /// The rollup of a closed run (its spans' usage and costs summed), or `null`.
    #[napi(ts_return_type = "RunRollup | null")]
    pub fn rollup(&self, env: Env, run: String) -> napi::Result<Made> {
        let rollup = self.query(move |state| annals::runs::rollup(state, &run))?;
        crossing::to_js(&env, &rollup)
    }

    /// The instance registered under `handle` (as annals describes it), or `null`.
    #[napi(ts_return_type = "Instance | null")]
    pub fn instance(&self, env: Env, handle: String) -> napi::Result<Made> {
        let instance = self.query(move |state| annals::registry::instance(state, &handle))?;
        crossing::to_js(&env, &instance)
    }

    /// Every record from `options.from` (default 0) on: the history, then each record as it
    /// commits, in this process or another. `lib.js` makes it an async iterator.
    #[napi]
    pub fn subscribe(&self, options: Option<SubscribeOptions>) -> napi::Result<Subscription> {
        self.not_a_view("subscribe")?;
        let from = match options.and_then(|options| options.from) {
            Some(from) => position(&from, "from")?,
            None => 0,
        };
        let store = self.shared()?;
        let subscription = annals::subscribe::subscribe(Arc::clone(&store), Position(from));
        Ok(Subscription {
            inner: Arc::new(tokio::sync::Mutex::new(subscription)),
            store,
        })
    }

    /// Closes the store; every later call throws with code `CLOSED`. (A writer started from
    /// it keeps the file open until the writer is closed too.)
    #[napi]
    pub fn close(&self) -> napi::Result<()> {
        self.outside_transaction("close")?;
        if self.is_view() {
            // A view lets go of its commit (and a replay's file); the store stays open.
            self.view.close();
            self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
            return Ok(());
        }
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match guard.take().map(Arc::try_unwrap) {
            Some(Ok(inner)) => inner.close().map_err(to_js),
            Some(Err(_)) | None => Ok(()),
        }
    }
}

fn closed() -> napi::Error {
    error::coded(annals::ErrorKind::Closed.code(), "the store is closed")
}

// The package's own: the crate's `subscribe` takes a position.
/// Where a subscription starts.
#[napi(object)]
pub struct SubscribeOptions {
    /// The first position delivered; default 0.
    pub from: Option<BigInt>,
}

/// Records as they commit: `next()` resolves with the next record, waiting for a commit when
/// it has delivered every one so far.
#[napi]
pub struct Subscription {
    inner: Arc<tokio::sync::Mutex<annals::subscribe::Subscription>>,
    /// The store its personal payloads are opened with.
    store: Arc<Inner>,
}

#[napi]
impl Subscription {
    /// The next record, once there is one.
    #[napi(ts_return_type = "Promise<LogRecord>")]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Object<'static>>> {
        let inner = Arc::clone(&self.inner);
        let store = Arc::clone(&self.store);
        promise(
            env,
            async move {
                let record = inner.lock().await.next().await?;
                erasure::opened(&store, record)
            },
            record_js,
        )
    }
}

/// A Promise of what `future` gives, made a JavaScript value by `made` when it settles on the
/// main thread, as is an error (`error::Failure`): the future runs on a thread where no error
/// object can be made.
fn promise<'env, T: Send + 'static, V: napi::bindgen_prelude::ToNapiValue>(
    env: &'env Env,
    future: impl std::future::Future<Output = annals::Result<T>> + Send + 'static,
    made: impl FnOnce(&'env Env, T) -> napi::Result<V> + 'static,
) -> napi::Result<PromiseRaw<'env, V>> {
    env.spawn_future_with_callback(
        async move { Ok(future.await.map_err(|error| error::Failure::of(&error))) },
        move |env, outcome| match outcome {
            Ok(value) => made(env, value),
            Err(failure) => Err(failure.thrown(env)),
        },
    )
}

/// The group-commit writer: every method returns a Promise, resolved after the durable commit
/// of the batch its command ran in; Node's event loop is never blocked.
#[napi]
pub struct Writer {
    inner: Mutex<Option<annals::Writer>>,
}

impl Writer {
    /// `command` queued, a Promise of its outcome, which crosses by serde (`crossing.rs`).
    fn crossing<'env, C>(&self, env: &'env Env, command: C) -> napi::Result<PromiseRaw<'env, Made>>
    where
        C: annals::Command + Send + 'static,
        C::Outcome: serde::Serialize + Send + 'static,
    {
        let writer = self.handle()?;
        promise(
            env,
            async move { writer.execute(command).await },
            |env, outcome| crossing::to_js(env, &outcome),
        )
    }

    /// [`Self::crossing`] of a command whose outcome holds rows with a personal field, which
    /// `open` opens (`erasure.rs`) as the Promise settles.
    fn crossing_opened<'env, C>(
        &self,
        env: &'env Env,
        command: C,
        open: transaction::OpenCrossed<C::Outcome>,
    ) -> napi::Result<PromiseRaw<'env, Made>>
    where
        C: annals::Command + Send + 'static,
        C::Outcome: serde::Serialize + Send + 'static,
    {
        let writer = self.handle()?;
        let store = Arc::clone(writer.store());
        promise(
            env,
            async move { writer.execute(command).await },
            move |env, outcome| {
                let mut made = crossing::to_js(env, &outcome)?;
                if let napi::bindgen_prelude::Either3::A(object) = &mut made {
                    open(&store, &outcome, object)?;
                }
                Ok(made)
            },
        )
    }

    fn handle(&self) -> napi::Result<annals::Writer> {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        guard
            .clone()
            .ok_or_else(|| error::coded(annals::ErrorKind::Closed.code(), "the writer is closed"))
    }
}

#[napi]
impl Writer {
    /// `Store.append`, batched; `options.subject` makes its payloads personal to a subject.
    #[napi(
        ts_args_type = "stream: string, expected: string | bigint, events: Array<NewEvent>, options?: WriterAppendOptions | undefined | null",
        ts_return_type = "Promise<AppendOutcome>"
    )]
    pub fn append<'env>(
        &self,
        env: &'env Env,
        stream: String,
        expected: napi::Either<String, BigInt>,
        events: Unknown<'_>,
        options: Option<WriterAppendOptions>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let expected = convert::expected(expected)?;
        let events = convert::events(events)?;
        let writer = self.handle()?;
        let subject = options.and_then(|options| options.subject);
        promise(
            env,
            async move {
                match subject {
                    Some(subject) => {
                        writer
                            .append_personal(subject, stream, expected, events)
                            .await
                    }
                    None => writer.append(stream, expected, events).await,
                }
            },
            |env, outcome| crossing::to_js(env, &outcome),
        )
    }

    /// `Store.lease`, batched.
    #[napi(
        ts_args_type = "command: LeaseCommand",
        ts_return_type = "Promise<LeaseOutcome>"
    )]
    pub fn lease<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::leases::LeaseCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.outbox`, batched.
    #[napi(
        ts_args_type = "command: OutboxCommand",
        ts_return_type = "Promise<OutboxOutcome>"
    )]
    pub fn outbox<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        match commands::OutboxCall::of(&command)? {
            commands::OutboxCall::Row(command) => {
                self.crossing_opened(env, command, commands::open_outbox)
            }
            commands::OutboxCall::Pull(command) => {
                self.crossing_opened(env, command, commands::open_pulled)
            }
            commands::OutboxCall::Sweep(command) => self.crossing(env, command),
        }
    }

    /// `Store.lane`, batched.
    #[napi(
        ts_args_type = "command: LaneCommand",
        ts_return_type = "Promise<LaneOutcome>"
    )]
    pub fn lane<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::leases::LaneCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.run`, batched.
    #[napi(
        ts_args_type = "command: RunCommand",
        ts_return_type = "Promise<RunOutcome>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::runs::RunCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.setting`, batched.
    #[napi(
        ts_args_type = "command: SettingCommand",
        ts_return_type = "Promise<SettingOutcome>"
    )]
    pub fn setting<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::registry::SetSetting = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.fuel`, batched.
    #[napi(
        ts_args_type = "command: FuelCommand",
        ts_return_type = "Promise<FuelOutcome>"
    )]
    pub fn fuel<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::registry::ChargeFuel = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.span`, batched.
    #[napi(
        ts_args_type = "command: SpanCommand",
        ts_return_type = "Promise<SpanOutcome>"
    )]
    pub fn span<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::runs::SpanCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.ingest`, batched.
    #[napi(
        ts_args_type = "command: IngestCommand",
        ts_return_type = "Promise<IngestOutcome>"
    )]
    pub fn ingest<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::ingest::IngestCommand = crossing::from_js(&command)?;
        self.crossing_opened(env, command, commands::open_ingested)
    }

    /// `Store.registry`, batched.
    #[napi(
        ts_args_type = "command: InstanceCommand",
        ts_return_type = "Promise<InstanceOutcome>"
    )]
    pub fn registry<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::registry::InstanceCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// `Store.consumer`, batched.
    #[napi(
        ts_args_type = "command: ConsumerCommand",
        ts_return_type = "Promise<ConsumerOutcome>"
    )]
    pub fn consumer<'env>(
        &self,
        env: &'env Env,
        command: Object<'_>,
    ) -> napi::Result<PromiseRaw<'env, Made>> {
        let command: annals::consumers::ConsumerCommand = crossing::from_js(&command)?;
        self.crossing(env, command)
    }

    /// Commands queued now and not yet committed.
    #[napi]
    pub fn queued(&self) -> napi::Result<u32> {
        Ok(u32::try_from(self.handle()?.queued()).unwrap_or(u32::MAX))
    }

    /// Waits for every queued command, then stops the writer's thread.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        promise(
            env,
            async move {
                match taken {
                    Some(writer) => writer.close().await,
                    None => Ok(()),
                }
            },
            |_, ()| Ok(()),
        )
    }
}
