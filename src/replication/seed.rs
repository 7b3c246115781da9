//! A new replica's start without the log's first records: the seed, a copy of the writer's
//! log ([`crate::maintenance::Backup::write`]) kept in the log's JetStream object store bucket
//! ([`ReplicatedLog::seed_bucket`]).
//!
//! After a cut (`crate::archive::Archives::archive_before`) the stream's operator may bound the stream to the
//! messages from the cut on, and a replica with nothing then has no record to start from but
//! the cut's archive. A seed taken after the cut is the cut log itself: the anchor, the
//! archived records' hashes and the tree over them, the stream and idempotency indexes, the
//! projections and their snapshot at the cut, and the records kept. A replica fetches it into
//! a new file ([`fetch_seed`]), opens its log there, and follows the stream from the seed's
//! head. A JetStream message is bounded (1 MiB here, [`super::wire::MESSAGE_BYTES_MAX`]) and a
//! cut log's kept state is not (about 17% of the uncut file at a million demo records), so the
//! seed is an object, which the object store cuts into chunks and checks with SHA-256, beside
//! the stream rather than its first message.
//!
//! What a replica checks before it keeps a seed: its bytes' blake3 against the one its
//! metadata names, that it opens as a log holding the head its metadata names, and that
//! `verify` finds that log sound (the chain from the anchor, the cut record's claims, the
//! projections replayed from the snapshot). The stream checks the rest: the first message the
//! replica appends must continue the seed's head record, or the replica stops at a fork.
//! Only one seed is kept per log: a new one replaces the last.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::{self, ErrorCode, object_store};

use super::stream::{ReplicatedLog, retry};
use super::{NatsOperation, ReplicationError, SeedProblem};
use crate::hash::Digest;
use crate::log::Head;
use crate::output_path::{Output, create_new, private_name};
use crate::record::Position;
use crate::store::open::publish;
use crate::store::{Store, StoreError};

/// The name of a log's seed in its bucket.
pub const SEED_OBJECT: &str = "seed";

/// The metadata field holding the seed's record count (its head position), decimal.
const HEAD_FIELD: &str = "annals-head";
/// The metadata field holding the seed's head hash, hex.
const HEAD_HASH_FIELD: &str = "annals-head-hash";
/// The metadata field holding the first position the seed holds a record of, decimal.
const START_FIELD: &str = "annals-start";
/// The metadata field holding the blake3 of the seed's bytes, hex.
const DIGEST_FIELD: &str = "annals-blake3";

/// A seed: which log state it holds, and which bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seed {
    /// The head of the log it holds: a replica starting from it follows the stream from
    /// `head.next`.
    pub head: Head,
    /// The first position it holds a record of: 0, or its log's last cut.
    pub start: Position,
    /// Its length, in bytes.
    pub bytes: u64,
    /// blake3 of its bytes.
    pub digest: Digest,
}

impl Seed {
    fn metadata(&self) -> HashMap<String, String> {
        HashMap::from([
            (HEAD_FIELD.to_owned(), self.head.next.0.to_string()),
            (HEAD_HASH_FIELD.to_owned(), self.head.hash.to_hex()),
            (START_FIELD.to_owned(), self.start.0.to_string()),
            (DIGEST_FIELD.to_owned(), self.digest.to_hex()),
        ])
    }

    fn from_metadata(metadata: &HashMap<String, String>, bytes: u64) -> Result<Seed, SeedProblem> {
        let field =
            |field: &'static str| metadata.get(field).ok_or(SeedProblem::Metadata { field });
        let number = |name: &'static str| {
            field(name)?
                .parse::<u64>()
                .map_err(|_| SeedProblem::Metadata { field: name })
        };
        let digest = |name: &'static str| {
            Digest::from_hex(field(name)?).ok_or(SeedProblem::Metadata { field: name })
        };
        Ok(Seed {
            head: Head {
                next: Position(number(HEAD_FIELD)?),
                hash: digest(HEAD_HASH_FIELD)?,
            },
            start: Position(number(START_FIELD)?),
            bytes,
            digest: digest(DIGEST_FIELD)?,
        })
    }
}

/// Publishes a seed of `store`'s log: a [`crate::maintenance::Backup::write`] of it as of now, put into the log's
/// bucket (created with the log's replicas when missing) in place of the last seed. The copy
/// is made beside the log under a name of this process's own and removed once put. A host
/// publishes one after each cut, so that a new replica can start where the stream does.
pub async fn publish_seed(
    store: Arc<Store>,
    jetstream: &jetstream::Context,
    log: &ReplicatedLog,
) -> Result<Seed, ReplicationError> {
    let copy = private_name(store.path(), "seed");
    let made = {
        let copy = copy.clone();
        tokio::task::spawn_blocking(move || -> Result<Seed, ReplicationError> {
            if copy.exists() {
                fs::remove_file(&copy).map_err(crate::error::Error::from)?;
            }
            // The copy is the store's own file beside its log, which `backup` refuses to a
            // caller.
            let backup = store.backup_unchecked(&copy)?;
            Ok(Seed {
                head: backup.head,
                start: backup.start,
                bytes: backup.bytes,
                digest: digest_of(&copy)?,
            })
        })
        .await
        .map_err(ReplicationError::nats(NatsOperation::SeedTask))
        .and_then(|made| made)
    };
    let put = match made {
        Ok(seed) => put(jetstream, log, &copy, seed).await,
        Err(error) => Err(error),
    };
    // Best effort: the copy is this process's own, and the error that matters is the put's.
    let _ = fs::remove_file(&copy);
    put
}

async fn put(
    jetstream: &jetstream::Context,
    log: &ReplicatedLog,
    copy: &Path,
    seed: Seed,
) -> Result<Seed, ReplicationError> {
    let bucket = log.seed_bucket();
    let objects = match find_bucket(jetstream, &bucket).await? {
        Some(objects) => objects,
        None => {
            retry(|| async {
                jetstream
                    .create_object_store(object_store::Config {
                        bucket: bucket.clone(),
                        description: Some(format!("the seed of the annals log {}", log.subject())),
                        num_replicas: log.replicas(),
                        storage: jetstream::stream::StorageType::File,
                        ..Default::default()
                    })
                    .await
                    .map_err(ReplicationError::nats(NatsOperation::PutSeed))
            })
            .await?
        }
    };
    let meta = object_store::ObjectMetadata {
        name: SEED_OBJECT.to_owned(),
        description: Some(format!(
            "annals log {} at {} records",
            log.subject(),
            seed.head.next
        )),
        metadata: seed.metadata(),
        ..Default::default()
    };
    // A put that fails is made again whole: it replaces the object, and readers see only a
    // put that completed.
    retry(|| async {
        let mut file = tokio::fs::File::open(copy)
            .await
            .map_err(crate::error::Error::from)?;
        objects
            .put(meta.clone(), &mut file)
            .await
            .map(|_info| ())
            .map_err(ReplicationError::nats(NatsOperation::PutSeed))
    })
    .await?;
    Ok(seed)
}

/// Fetches the log's seed into a new file at `to`, checked (module docs), and returns what
/// it holds; `None` when the log has no seed (no bucket, or no seed in it), with nothing
/// written. `to` must not exist ([`StoreError::BackupTargetExists`]); the seed is published
/// there only once checked, so a refused or broken-off fetch leaves nothing at `to`.
pub async fn fetch_seed(
    jetstream: &jetstream::Context,
    log: &ReplicatedLog,
    to: &Path,
) -> Result<Option<Seed>, ReplicationError> {
    crate::output_path::check(to, Output::File, None).map_err(crate::error::Error::from)?;
    if to.exists() {
        return Err(crate::error::Error::from(StoreError::BackupTargetExists {
            path: to.to_path_buf(),
        })
        .into());
    }
    let bucket = log.seed_bucket();
    let Some(objects) = find_bucket(jetstream, &bucket).await? else {
        return Ok(None);
    };
    let found = retry(|| async {
        match objects.info(SEED_OBJECT).await {
            Ok(info) if !info.deleted => Ok(Some(info)),
            Ok(_) => Ok(None),
            Err(error) => match error.kind() {
                object_store::InfoErrorKind::NotFound => Ok(None),
                _ => Err(ReplicationError::nats(NatsOperation::GetSeed)(error)),
            },
        }
    })
    .await?;
    let Some(info) = found else {
        return Ok(None);
    };
    let refused = |problem| ReplicationError::SeedRefused {
        bucket: bucket.clone(),
        problem,
    };
    let claimed = Seed::from_metadata(&info.metadata, info.size as u64).map_err(refused)?;
    let arriving = private_name(to, "seeding");
    let fetched = fetch_into(&objects, &bucket, &arriving).await;
    let checked = match fetched {
        Ok(()) => {
            let arriving = arriving.clone();
            let to = to.to_path_buf();
            tokio::task::spawn_blocking(move || check_and_publish(&arriving, &to, claimed))
                .await
                .map_err(ReplicationError::nats(NatsOperation::SeedTask))
                .and_then(|checked| checked)
        }
        Err(error) => Err(error),
    };
    let _ = fs::remove_file(&arriving);
    match checked {
        Ok(Ok(seed)) => Ok(Some(seed)),
        Ok(Err(problem)) => Err(refused(problem)),
        Err(error) => Err(error),
    }
}

/// The bucket, `None` when it does not exist (any other failure is NATS's).
async fn find_bucket(
    jetstream: &jetstream::Context,
    bucket: &str,
) -> Result<Option<object_store::ObjectStore>, ReplicationError> {
    // The object store keeps a bucket as the stream `OBJ_<bucket>`; looking the stream up
    // tells a missing bucket from a failure, which the bucket's own lookup does not. A
    // cluster still electing its leaders fails for a while: retried, as every request is.
    retry(|| async {
        match jetstream.get_stream(format!("OBJ_{bucket}")).await {
            Ok(_) => {}
            Err(error) => {
                return match error.kind() {
                    GetStreamErrorKind::JetStream(api)
                        if api.error_code() == ErrorCode::STREAM_NOT_FOUND =>
                    {
                        Ok(None)
                    }
                    _ => Err(ReplicationError::nats(NatsOperation::GetSeed)(error)),
                };
            }
        }
        jetstream
            .get_object_store(bucket)
            .await
            .map(Some)
            .map_err(ReplicationError::nats(NatsOperation::GetSeed))
    })
    .await
}

/// Downloads the seed into `path`, synced; a transfer that breaks off or whose SHA-256
/// differs is [`SeedProblem::Transfer`].
async fn fetch_into(
    objects: &object_store::ObjectStore,
    bucket: &str,
    path: &Path,
) -> Result<(), ReplicationError> {
    if path.exists() {
        fs::remove_file(path).map_err(crate::error::Error::from)?;
    }
    let mut object = retry(|| async {
        objects
            .get(SEED_OBJECT)
            .await
            .map_err(ReplicationError::nats(NatsOperation::GetSeed))
    })
    .await?;
    let mut file =
        tokio::fs::File::from_std(create_new(path, None).map_err(crate::error::Error::from)?);
    if let Err(error) = tokio::io::copy(&mut object, &mut file).await {
        return Err(ReplicationError::SeedRefused {
            bucket: bucket.to_owned(),
            problem: SeedProblem::Transfer {
                cause: error.to_string(),
            },
        });
    }
    file.sync_all().await.map_err(crate::error::Error::from)?;
    Ok(())
}

/// Checks the seed that arrived at `arriving` against what its metadata `claimed`, then
/// publishes it at `to`. The outer error is the local file system's; the inner, the seed's.
fn check_and_publish(
    arriving: &Path,
    to: &Path,
    claimed: Seed,
) -> Result<Result<Seed, SeedProblem>, ReplicationError> {
    let found = digest_of(arriving)?;
    if found != claimed.digest {
        return Ok(Err(SeedProblem::Digest {
            expected: claimed.digest,
            found,
        }));
    }
    {
        let store = match Store::open_read_only(arriving) {
            Ok(store) => store,
            Err(error) => {
                return Ok(Err(SeedProblem::NotALog {
                    cause: error.to_string(),
                }));
            }
        };
        let head = store.head()?;
        if head != claimed.head {
            return Ok(Err(SeedProblem::Head {
                claimed: claimed.head.next,
                claimed_hash: claimed.head.hash,
                found: head.next,
                found_hash: head.hash,
            }));
        }
        let report = store.verify()?;
        if let Some(problem) = report.problem {
            return Ok(Err(SeedProblem::Unsound {
                problem: problem.to_string(),
            }));
        }
    }
    publish(arriving, to).map_err(|error| match error.kind() {
        std::io::ErrorKind::AlreadyExists => {
            crate::error::Error::from(StoreError::BackupTargetExists {
                path: to.to_path_buf(),
            })
        }
        _ => crate::error::Error::from(error),
    })?;
    Ok(Ok(claimed))
}

/// blake3 of the file at `path`, read in full.
fn digest_of(path: &Path) -> Result<Digest, ReplicationError> {
    let mut hasher = blake3::Hasher::new();
    let _read = hasher
        .update_reader(fs::File::open(path).map_err(crate::error::Error::from)?)
        .map_err(crate::error::Error::from)?;
    Ok(Digest(*hasher.finalize().as_bytes()))
}
