//! How a command commits: alone, with the call's options (a lease guard, a durability), or
//! inside `store.transaction(fn)` with the other commands `fn` runs, in one commit.
//!
//! A transaction's write session is annals' `Store::write`, which runs a closure; JavaScript's
//! `fn` runs on the main thread, in calls of its own. So the session lives on a thread of its
//! own for the length of `fn`, and each command or query `fn` makes is sent to it as a job and
//! answered before the call returns: JavaScript never runs while a job does, and the session
//! never outlives the call that opened it (a scoped thread). A throw in `fn` aborts the session
//! (nothing is written); its end commits it, as one append would.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use annals::leases::LeaseGuard;
use annals::projection::TableSource;
use annals::{Durability, writer::WriteSession};
use napi::bindgen_prelude::{AsyncTask, Either3, Function, Object, Unknown};
use napi::{Env, Task};
use napi_derive::napi;
use serde::Serialize;

use crate::Store;
use crate::crossing::{Made, to_js as crossed};
use crate::error::{Failure, coded, invalid, to_js};

// The package's own: the crate takes a guard and a durability as arguments of its calls.
/// How one command commits.
#[napi(object, object_to_js = false)]
pub struct CallOptions<'a> {
    /// `'immediate'` (durable when the call returns) or `'deferred'` (visible at once, durable
    /// at the next immediate commit or `flush()`; exclusive stores only). Default: the store's.
    #[napi(ts_type = "Durability")]
    pub durability: Option<String>,
    /// A lease the command is fenced by: refused with `FENCED` unless `guard.token` is the
    /// resource's live token at `guard.nowMs`, checked in the same commit. The library's
    /// `LeaseGuard`, read by serde.
    #[napi(ts_type = "LeaseGuard")]
    pub guard: Option<Unknown<'a>>,
}

// The package's own, as `CallOptions`.
/// How a transaction commits.
#[napi(object)]
pub struct TransactionOptions {
    /// `'immediate'` or `'deferred'`, as for one command. Default: the store's.
    #[napi(ts_type = "Durability")]
    pub durability: Option<String>,
}

/// `'immediate'` or `'deferred'`: the library's `Durability` by its serde name, named `field`
/// in a refusal.
pub(crate) fn durability(text: &str, field: &str) -> napi::Result<Durability> {
    crate::convert::named(text.to_owned(), field)
}

/// A call's options, converted.
pub(crate) struct Call {
    durability: Option<Durability>,
    guard: Option<LeaseGuard>,
}

impl Call {
    pub(crate) fn of(options: Option<CallOptions<'_>>) -> napi::Result<Call> {
        let Some(options) = options else {
            return Ok(Call::plain());
        };
        Ok(Call {
            durability: options
                .durability
                .as_deref()
                .map(|text| durability(text, "durability"))
                .transpose()?,
            guard: options
                .guard
                .map(|guard| crate::crossing::argument(guard, "guard"))
                .transpose()?,
        })
    }

    /// No options: the store's durability, no guard.
    pub(crate) fn plain() -> Call {
        Call {
            durability: None,
            guard: None,
        }
    }

    /// Whether it chooses a durability.
    pub(crate) fn chooses_durability(&self) -> bool {
        self.durability.is_some()
    }

    /// The durability it chooses, if any.
    pub(crate) fn durability(&self) -> Option<Durability> {
        self.durability
    }

    /// The guard it is fenced by, if any.
    pub(crate) fn guard(&self) -> Option<&LeaseGuard> {
        self.guard.as_ref()
    }

    pub(crate) fn guarded(guard: LeaseGuard) -> Call {
        Call {
            durability: None,
            guard: Some(guard),
        }
    }
}

/// A command's write, converted from JavaScript's and run in a session (`commands.rs`).
pub(crate) type Work<T> = Box<dyn FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send>;

/// A command's commit, to run on a thread of libuv's pool. An error met there is carried back
/// as a `Failure`, made a JavaScript error when the Promise settles, on the main thread.
type OffThread<T> = Box<dyn FnOnce() -> Result<T, Failure> + Send>;

/// Runs the commit a task holds, which napi-rs asks for once.
fn run_once<T>(commit: &mut Option<OffThread<T>>) -> Result<T, Failure> {
    match commit.take() {
        Some(commit) => commit(),
        None => Err(Failure::coded(
            annals::ErrorKind::Internal.code(),
            "a command's commit ran twice",
        )),
    }
}

/// A command of the library's own types committed on a thread of libuv's pool: its outcome
/// crosses to JavaScript (`crossing.rs`) when the Promise settles, on the main thread.
pub struct Crossing<T> {
    commit: Option<OffThread<T>>,
    /// For an outcome holding rows with a personal field: the store and how its crossed rows
    /// are opened (`erasure.rs`), as the Promise settles.
    open: Option<(Arc<annals::Store>, OpenCrossed<T>)>,
}

/// How the rows an outcome holds are opened once it crossed: with the store's key store, the
/// outcome as the library gave it, and the object it crossed as.
pub(crate) type OpenCrossed<T> = fn(&annals::Store, &T, &mut Object<'_>) -> napi::Result<()>;

impl<T: Serialize + Send + 'static> Task for Crossing<T> {
    type Output = Result<T, Failure>;
    type JsValue = Made;

    fn compute(&mut self) -> napi::Result<Result<T, Failure>> {
        Ok(run_once(&mut self.commit))
    }

    fn resolve(&mut self, env: Env, outcome: Result<T, Failure>) -> napi::Result<Made> {
        match outcome {
            Ok(outcome) => {
                let mut made = crossed(&env, &outcome)?;
                if let (Some((store, open)), Either3::A(object)) = (&self.open, &mut made) {
                    open(store, &outcome, object)?;
                }
                Ok(made)
            }
            Err(failure) => Err(failure.thrown(&env)),
        }
    }
}

/// What the transaction's thread is sent.
enum Message {
    /// Run this in the session; it answers through a channel of its own.
    Job(Box<dyn FnOnce(&mut WriteSession<'_>) + Send>),
    /// `fn` returned: commit. (A dropped sender, `fn` having thrown, aborts.)
    Commit,
}

/// The transaction open on a store, if any: where its jobs go.
#[derive(Default)]
pub(crate) struct Open(Mutex<Option<mpsc::Sender<Message>>>);

impl Open {
    fn jobs(&self) -> std::sync::MutexGuard<'_, Option<mpsc::Sender<Message>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_open(&self) -> bool {
        self.jobs().is_some()
    }
}

/// Why `work` ran no further: the transaction's session has ended (a failed begin or commit,
/// reported by `transaction` itself).
fn session_gone() -> napi::Error {
    coded(
        crate::error::IN_TRANSACTION,
        "the transaction's session ended: the transaction fails",
    )
}

/// Runs `work` in the open transaction's session and waits for its answer.
fn in_session<T: Send + 'static>(
    jobs: &mpsc::Sender<Message>,
    work: impl FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send + 'static,
) -> napi::Result<T> {
    let (answer, answered) = mpsc::sync_channel(1);
    let job = Box::new(move |session: &mut WriteSession<'_>| {
        // The caller waits for this answer, so it is received unless the caller is gone.
        let _ = answer.send(work(session));
    });
    jobs.send(Message::Job(job)).map_err(|_| session_gone())?;
    answered.recv().map_err(|_| session_gone())?.map_err(to_js)
}

impl Store {
    /// Runs `work` as one command: in the open transaction's session, or in a write of its own
    /// committed with `call`'s durability (the store's if it gives none), fenced by its guard.
    pub(crate) fn command<T: Send + 'static>(
        &self,
        call: Call,
        work: impl FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send + 'static,
    ) -> napi::Result<T> {
        self.not_a_view("a command")?;
        let guarded = move |session: &mut WriteSession<'_>| {
            if let Some(guard) = &call.guard {
                session.guard(guard)?;
            }
            work(session)
        };
        if let Some(jobs) = self.transaction.jobs().clone() {
            if call.durability.is_some() {
                return Err(invalid(
                    "durability",
                    "a command in a transaction commits with the transaction: give it to transaction()",
                ));
            }
            return in_session(&jobs, guarded);
        }
        let durability = call.durability.unwrap_or(self.durability);
        self.with(|store| store.write_with(durability, guarded).map_err(to_js))
    }

    /// `run` on the store, a call of the crate's that commits alone (a personal append),
    /// off the main thread: a Promise. Not inside `transaction(fn)`.
    pub(crate) fn alone_async<T: Serialize + Send + 'static>(
        &self,
        run: impl FnOnce(&annals::Store) -> annals::Result<T> + Send + 'static,
    ) -> napi::Result<AsyncTask<Crossing<T>>> {
        self.not_a_view("an async command")?;
        self.outside_transaction("an async command")?;
        let store = self.shared()?;
        Ok(AsyncTask::new(Crossing {
            commit: Some(Box::new(move || {
                run(&store).map_err(|error| Failure::of(&error))
            })),
            open: None,
        }))
    }

    /// The commit of `work` with `call`'s options, to run on another thread.
    fn off_thread<T: Send + 'static>(
        &self,
        call: Call,
        work: impl FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send + 'static,
    ) -> napi::Result<OffThread<T>> {
        self.not_a_view("an async command")?;
        self.outside_transaction("an async command")?;
        let store = self.shared()?;
        let durability = call.durability.unwrap_or(self.durability);
        Ok(Box::new(move || {
            store
                .write_with(durability, |session| {
                    if let Some(guard) = &call.guard {
                        session.guard(guard)?;
                    }
                    work(session)
                })
                .map_err(|error| Failure::of(&error))
        }))
    }

    /// `work` as one command committed off the main thread, with `call`'s options: a Promise
    /// of its outcome, which crosses by serde. Not inside `transaction(fn)`, whose commands run
    /// in its own commit, in order.
    pub(crate) fn crossing_async<T: Serialize + Send + 'static>(
        &self,
        call: Call,
        work: impl FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send + 'static,
    ) -> napi::Result<AsyncTask<Crossing<T>>> {
        Ok(AsyncTask::new(Crossing {
            commit: Some(self.off_thread(call, work)?),
            open: None,
        }))
    }

    /// [`Self::crossing_async`] of an outcome holding rows with a personal field, which
    /// `open` opens as the Promise settles.
    pub(crate) fn crossing_async_opened<T: Serialize + Send + 'static>(
        &self,
        call: Call,
        work: impl FnOnce(&mut WriteSession<'_>) -> annals::Result<T> + Send + 'static,
        open: OpenCrossed<T>,
    ) -> napi::Result<AsyncTask<Crossing<T>>> {
        Ok(AsyncTask::new(Crossing {
            commit: Some(self.off_thread(call, work)?),
            open: Some((self.shared()?, open)),
        }))
    }

    /// Runs `read` on the projections: the open transaction's, its own commands included, or
    /// the last commit's.
    pub(crate) fn query<T: Send + 'static>(
        &self,
        read: impl FnOnce(&dyn TableSource) -> annals::Result<T> + Send + 'static,
    ) -> napi::Result<T> {
        if let Some(jobs) = self.transaction.jobs().clone() {
            return in_session(&jobs, move |session| read(session.state()));
        }
        if let Some(view) = self.view.get() {
            return view.query(read);
        }
        self.with(|store| {
            let state = store
                .snapshot()
                .map(|snapshot| snapshot.state())
                .map_err(to_js)?;
            read(&state).map_err(to_js)
        })
    }

    /// Whether `transaction(fn)` is running.
    pub(crate) fn transaction_open(&self) -> bool {
        self.transaction.is_open()
    }

    /// Runs `session`'s `read` in the open transaction, if one is.
    pub(crate) fn in_open_transaction<T: Send + 'static>(
        &self,
        read: impl FnOnce(&WriteSession<'_>) -> T + Send + 'static,
    ) -> Option<napi::Result<T>> {
        let jobs = self.transaction.jobs().clone()?;
        Some(in_session(&jobs, move |session| Ok(read(session))))
    }

    /// Refuses `method` while a transaction is open: it writes outside the transaction, or
    /// waits for the write lock the transaction holds.
    pub(crate) fn outside_transaction(&self, method: &str) -> napi::Result<()> {
        match self.transaction.is_open() {
            true => Err(coded(
                crate::error::IN_TRANSACTION,
                &format!("{method}() cannot run inside a transaction: call it after it"),
            )),
            false => Ok(()),
        }
    }
}

#[napi]
impl Store {
    /// Runs `callback` with every command it makes in one commit, which is made when it
    /// returns `true`; `false` (the callback threw) aborts it, writing nothing. `lib.js` makes
    /// it `store.transaction(fn)`, as better-sqlite3's `db.transaction(fn)`.
    #[napi]
    pub fn transaction(
        &self,
        callback: Function<(), bool>,
        options: Option<TransactionOptions>,
    ) -> napi::Result<()> {
        self.not_a_view("transaction")?;
        self.outside_transaction("transaction")?;
        let durability = match options.and_then(|options| options.durability) {
            Some(text) => durability(&text, "durability")?,
            None => self.durability,
        };
        let store = self.shared()?;
        let (jobs, queue) = mpsc::channel::<Message>();
        // Whether the session ran to `callback`'s end: a session that failed before (its begin)
        // is the error to throw, whatever `callback` did with what its commands threw.
        let ended = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let ended = &ended;
            let session = scope.spawn(move || {
                store.write_with(durability, |session| {
                    for message in queue.iter() {
                        match message {
                            Message::Job(job) => job(session),
                            Message::Commit => return Ok(true),
                        }
                    }
                    ended.store(true, std::sync::atomic::Ordering::Relaxed);
                    // `callback` threw: nothing it did is committed.
                    Err(annals::Error::Io(std::io::Error::other(
                        "the transaction's callback threw",
                    )))
                })
            });
            *self.transaction.jobs() = Some(jobs);
            let committing = callback.call(());
            let jobs = self.transaction.jobs().take();
            if let (Ok(true), Some(jobs)) = (&committing, &jobs) {
                // If the session ended already, its own error is the answer, below.
                let _ = jobs.send(Message::Commit);
            }
            drop(jobs);
            let committed = session.join().map_err(|_| {
                coded(
                    annals::ErrorKind::Internal.code(),
                    "the transaction's session panicked",
                )
            })?;
            match (committing, committed) {
                (Ok(true), committed) => committed.map(drop).map_err(to_js),
                // `callback` threw: aborted, unless the session had failed first.
                (Ok(false), Err(error)) if !ended.load(std::sync::atomic::Ordering::Relaxed) => {
                    Err(to_js(error))
                }
                (Ok(false), _) => Ok(()),
                (Err(error), _) => Err(error),
            }
        })
    }
}
