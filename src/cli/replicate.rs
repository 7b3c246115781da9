//! `annals replicate` and `annals follow` (the `jetstream` feature): a log published to, or
//! followed from, a NATS JetStream stream until interrupted (SIGINT or SIGTERM), with progress
//! on standard error.
//! Everything they do is `annals::replication`'s; this file only wires it to the arguments.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::Failure;
use super::args::{FollowArgs, ReplicateArgs};
use crate::replication::{
    Follower, FollowerOptions, Publisher, ReplicatedLog, ReplicationError, connect,
};
use crate::store::Store;

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

pub(crate) fn replicate(args: ReplicateArgs) -> Result<ExitCode, Failure> {
    let subject = args.subject.unwrap_or_else(|| default_subject(&args.db));
    let log = ReplicatedLog::new(subject).map_err(failure)?;
    // Read-only: the process that writes the log goes on writing it; this one follows its
    // commits and publishes them.
    let store = Arc::new(Store::open_read_only(&args.db)?);
    runtime()?.block_on(async {
        let jetstream = connect(&args.url).await.map_err(failure)?;
        eprintln!(
            "annals: replicating {} to {}",
            args.db.display(),
            log.subject()
        );
        let publisher = Publisher::new(store, jetstream, log);
        let mut status = publisher.status();
        let progress = async {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                if status.has_changed().unwrap_or(false) {
                    let now = status.borrow_and_update().clone();
                    eprintln!("annals: {} records stored by the stream", now.stored);
                }
            }
        };
        tokio::select! {
            error = publisher.run() => Err(failure(error)),
            _ = progress => Ok(ExitCode::SUCCESS),
            interrupted = interrupted() => interrupted.map(|()| ExitCode::SUCCESS),
        }
    })
}

pub(crate) fn follow(args: FollowArgs) -> Result<ExitCode, Failure> {
    let log = ReplicatedLog::new(args.subject).map_err(failure)?;
    let store = Arc::new(Store::open(&args.db)?);
    runtime()?.block_on(async {
        let jetstream = connect(&args.url).await.map_err(failure)?;
        eprintln!(
            "annals: following {} into {}",
            log.subject(),
            args.db.display()
        );
        let follower =
            Follower::new(store, jetstream, log, FollowerOptions::default()).map_err(failure)?;
        let mut head = follower.head();
        let progress = async {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                if head.has_changed().unwrap_or(false) {
                    let now = *head.borrow_and_update();
                    eprintln!("annals: {now} records checked and appended");
                }
            }
        };
        tokio::select! {
            error = follower.run() => Err(failure(error)),
            _ = progress => Ok(ExitCode::SUCCESS),
            interrupted = interrupted() => interrupted.map(|()| ExitCode::SUCCESS),
        }
    })
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

/// A fork, a refusal or a damaged record is a finding (exit 1); a bad subject or NATS out of
/// reach is a usage or I/O failure (exit 2).
fn failure(error: ReplicationError) -> Failure {
    match error {
        ReplicationError::Store(error) => Failure::from(*error),
        ReplicationError::BadSubject { .. } | ReplicationError::Nats { .. } => {
            Failure::Usage(error.to_string())
        }
        other => Failure::Finding(other.to_string()),
    }
}
