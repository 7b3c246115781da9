//! `annals replicate` and `annals follow` (the `jetstream` feature): a log published to, or
//! followed from, a NATS JetStream stream until interrupted (SIGINT or SIGTERM), with progress
//! on standard error.
//! Everything they do is `annals::replication`'s; this file only wires it to the arguments
//! and says on standard error what they do and what they wait for. A closed standard error
//! (`2>&1 | head`) ends them quietly, as a closed standard output ends the other commands.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::args::{FollowArgs, ReplicateArgs, ReplicateCommand};
use super::command::{NamedFile, Run};
use super::failure::Failure;
use annals::Store;
use annals::display::grouped;
use annals::replication::{
    Connection, Follower, FollowerOptions, Publisher, ReplicatedLog, ReplicationError,
    connect_within, fetch_seed, publish_seed,
};

/// How often progress is printed while something changes.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The subject a log is published on unless `--subject` says otherwise: `annals.` and the
/// file's name without its extension, characters a subject cannot hold made `-`.
fn default_subject(db: &Path) -> String {
    let stem = db
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let token: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("annals.{}", if token.is_empty() { "log" } else { &token })
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Prints `annals: <line>` on standard error, or with `json` `{"status": "<line>"}` on
/// standard output, one JSON object a line (a script reads the status of a command that runs
/// until stopped as it comes); a closed stream is [`Failure::Closed`] (the command ends
/// quietly), never a panic as `eprintln!`'s.
fn say(json: bool, line: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let written = match json {
        true => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::json!({ "status": line.to_string() }))
                .and_then(|()| out.flush())
        }
        false => writeln!(std::io::stderr().lock(), "annals: {line}"),
    };
    written.map_err(|error| match error.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::Closed,
        _ => Failure::from(error),
    })
}

/// The log `args` publishes (`replicate`, `seed`): its subject, and its file opened read-only,
/// since the process that writes the log goes on writing it while this one publishes.
fn published(args: &ReplicateArgs) -> Result<(ReplicatedLog, Arc<Store>), Failure> {
    let subject = args
        .subject
        .clone()
        .unwrap_or_else(|| default_subject(&args.db));
    let log = ReplicatedLog::new(subject).map_err(failure)?;
    Ok((log, Arc::new(Store::open_read_only(&args.db)?)))
}

/// The replicas of what a publishing command creates: `--replicas`, or what the server that
/// answered offers; and why.
fn chosen_replicas(asked: Option<u16>, connection: &Connection) -> (usize, String) {
    match asked {
        Some(replicas) => (usize::from(replicas), "--replicas asks so".to_owned()),
        None => (connection.replicas_offered(), offered(connection)),
    }
}

/// Opens the stream `log` replicates to, creating it with the replicas chosen when it is
/// not there, and says which it did.
async fn open_stream(
    args: &ReplicateArgs,
    log: ReplicatedLog,
    connection: &Connection,
) -> Result<ReplicatedLog, Failure> {
    let json = args.json;
    let (replicas, why) = chosen_replicas(args.replicas, connection);
    let log = log.with_replicas(replicas);
    say(
        json,
        format_args!(
            "opening the stream {} on {}; if it is created here it gets {replicas} replica(s): {why}",
            log.stream_name(),
            args.url
        ),
    )?;
    let (_, placement) = log.prepare(&connection.jetstream).await.map_err(failure)?;
    if placement.created {
        say(
            json,
            format_args!(
                "created the stream {} with {} replica(s)",
                log.stream_name(),
                placement.replicas
            ),
        )?;
    } else {
        say(
            json,
            format_args!(
                "the stream {} exists, with {} replica(s)",
                log.stream_name(),
                placement.replicas
            ),
        )?;
    }
    Ok(log)
}

pub(crate) fn replicate(command: ReplicateCommand) -> Result<ExitCode, Failure> {
    let args = command.log;
    let json = args.json;
    let (log, store) = published(&args)?;
    // With `--once`, what the log holds as the command starts is what it waits for.
    let target = store.snapshot()?.head()?.next;
    runtime()?.block_on(async {
        let connection = connect_within(&args.url, args.wait)
            .await
            .map_err(failure)?;
        let log = open_stream(&args, log, &connection).await?;
        say(
            json,
            format_args!("replicating {} to {}", args.db.display(), log.subject()),
        )?;
        let publisher = Publisher::new(store, connection.jetstream, log);
        let mut status = publisher.status();
        let mut stored = publisher.status();
        let once = async {
            if !command.once {
                return std::future::pending().await;
            }
            while stored.borrow_and_update().stored < target {
                if stored.changed().await.is_err() {
                    // The publisher stopped: its error ends the command.
                    return std::future::pending().await;
                }
            }
            say(json, format_args!("{target} records stored by the stream"))?;
            Ok(ExitCode::SUCCESS)
        };
        let progress = async {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                if status.has_changed().unwrap_or(false) {
                    let now = status.borrow_and_update().clone();
                    say(
                        json,
                        format_args!("{} records stored by the stream", now.stored),
                    )?;
                }
            }
        };
        tokio::select! {
            error = publisher.run() => Err(failure(error)),
            done = once => done,
            stopped = progress => stopped,
            interrupted = interrupted() => interrupted.map(|()| ExitCode::SUCCESS),
        }
    })
}

/// Why a stream created without `--replicas` gets the replicas it gets: what the server that
/// answered says of its cluster (the client URLs it announces, its own among them).
fn offered(connection: &Connection) -> String {
    match connection.servers {
        1 => "the server is not clustered (give --replicas to choose)".to_owned(),
        servers => {
            format!("the server's cluster has {servers} servers (give --replicas to choose)")
        }
    }
}

/// `--from-seed` for a log not there yet: starts it from the seed in the log's bucket, or
/// from nothing when there is none, and says which.
async fn start_from_seed(
    args: &FollowArgs,
    log: &ReplicatedLog,
    connection: &Connection,
) -> Result<(), Failure> {
    let json = args.json;
    say(
        json,
        format_args!(
            "fetching the seed of {} from the bucket {}",
            log.subject(),
            log.seed_bucket()
        ),
    )?;
    match fetch_seed(&connection.jetstream, log, &args.db)
        .await
        .map_err(failure)?
    {
        Some(seed) => say(
            json,
            format_args!(
                "started {} from the seed: {} records (held from position {}), head hash {}",
                args.db.display(),
                grouped(seed.head.next.0),
                seed.start,
                seed.head.hash.to_hex()
            ),
        )?,
        None => say(
            json,
            format_args!(
                "the log has no seed; starting {} from nothing",
                args.db.display()
            ),
        )?,
    }
    Ok(())
}

pub(crate) fn follow(args: FollowArgs) -> Result<ExitCode, Failure> {
    let json = args.json;
    let log = ReplicatedLog::new(args.subject.clone()).map_err(failure)?;
    runtime()?.block_on(async {
        let connection = connect_within(&args.url, args.wait)
            .await
            .map_err(failure)?;
        if args.from_seed && !args.db.exists() {
            start_from_seed(&args, &log, &connection).await?;
        }
        let store = Arc::new(Store::open(&args.db)?);
        say(
            json,
            format_args!("following {} into {}", log.subject(), args.db.display()),
        )?;
        let follower = Follower::new(
            Arc::clone(&store),
            connection.jetstream,
            log,
            FollowerOptions::default(),
        )
        .map_err(failure)?;
        let mut head = follower.head();
        let mut waiting = follower.waiting();
        let progress = async {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                if head.has_changed().unwrap_or(false) {
                    let now = *head.borrow_and_update();
                    say(json, format_args!("{now} records checked and appended"))?;
                }
                if waiting.has_changed().unwrap_or(false)
                    && let Some(what) = waiting.borrow_and_update().clone()
                {
                    say(json, format_args!("{what}"))?;
                }
            }
        };
        if args.once {
            let head = tokio::select! {
                caught_up = follower.catch_up() => caught_up
                    .map_err(|error| refused_following(error, &args.db, &store))?,
                interrupted = interrupted() => return interrupted.map(|()| ExitCode::SUCCESS),
            };
            say(
                json,
                format_args!("caught up: {head} records checked and appended"),
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        tokio::select! {
            error = follower.run() => Err(refused_following(error, &args.db, &store)),
            stopped = progress => stopped,
            interrupted = interrupted() => interrupted.map(|()| ExitCode::SUCCESS),
        }
    })
}

/// `annals seed`: a seed of the log published to its bucket, once.
pub(crate) fn seed(args: ReplicateArgs) -> Result<ExitCode, Failure> {
    let json = args.json;
    let (log, store) = published(&args)?;
    runtime()?.block_on(async {
        let connection = connect_within(&args.url, args.wait)
            .await
            .map_err(failure)?;
        let (replicas, _why) = chosen_replicas(args.replicas, &connection);
        let log = log.with_replicas(replicas);
        say(json, format_args!(
            "copying {} and putting it as the seed of {} in the bucket {}",
            args.db.display(),
            log.subject(),
            log.seed_bucket()
        ))?;
        let seed = publish_seed(store, &connection.jetstream, &log)
            .await
            .map_err(failure)?;
        say(json, format_args!(
            "stored the seed: {} records (held from position {}), head hash {}, {} bytes, blake3 {}",
            grouped(seed.head.next.0),
            seed.start,
            seed.head.hash.to_hex(),
            grouped(seed.bytes),
            seed.digest.to_hex()
        ))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// [`failure`], saying for a message refused or damaged what the local log kept: every record
/// before that message, nothing of it.
fn refused_following(error: ReplicationError, db: &Path, store: &Store) -> Failure {
    let kept = matches!(
        error,
        ReplicationError::Refused { .. }
            | ReplicationError::Damaged { .. }
            | ReplicationError::Fork { .. }
    );
    match (kept, store.snapshot().and_then(|snapshot| snapshot.head())) {
        (true, Ok(head)) => Failure::Finding(format!(
            "{error}; {} holds the {} records before it and nothing of it: \
             follow a stream its writer alone publishes to",
            db.display(),
            head.next
        )),
        _ => failure(error),
    }
}

/// Waits for SIGINT (Ctrl-C) or, on Unix, SIGTERM: either ends `replicate` and `follow`
/// cleanly (exit 0). What was appended is committed; a publish in flight is published again by
/// the next run or deduplicated.
async fn interrupted() -> Result<(), Failure> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => Ok(interrupted?),
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        Ok(tokio::signal::ctrl_c().await?)
    }
}

/// A fork, a refusal or a damaged record is a finding (exit 1); a bad subject, NATS out of
/// reach or a stream the server will not create is a usage or I/O failure (exit 2).
fn failure(error: ReplicationError) -> Failure {
    match error {
        ReplicationError::Store(error) => Failure::from(*error),
        ReplicationError::BadSubject { .. }
        | ReplicationError::Nats { .. }
        | ReplicationError::Unreachable { .. }
        | ReplicationError::NoJetStream { .. }
        | ReplicationError::StreamRefused { .. } => Failure::Usage(error.to_string()),
        other => Failure::Finding(other.to_string()),
    }
}

impl Run for ReplicateCommand {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.log.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        replicate(self)
    }
}

impl Run for FollowArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        follow(self)
    }
}

impl Run for ReplicateArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        seed(self)
    }
}
