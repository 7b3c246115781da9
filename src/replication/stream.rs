//! The JetStream side of one log: its subject, the stream that holds it, connecting, and the
//! questions every host asks the stream (where it ends, which message holds a position).

use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::{CreateStreamErrorKind, GetStreamErrorKind};
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::{self, stream};

use super::{Damage, NatsOperation, NatsProblem, ReplicationError, wire};
use crate::hash::Digest;
use crate::record::{Position, Record};

/// Replicas of a log's stream unless told otherwise: a 3-node cluster's RAFT group survives
/// one node lost.
pub const REPLICAS_DEFAULT: usize = 3;
/// How long the server remembers a `Nats-Msg-Id` to deduplicate a repeated publish.
pub(crate) const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// How long `connect` tries to reach a server before it gives up (the CLI's `--wait`).
pub const CONNECT_WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// How long a JetStream request or acknowledgement may take before it is retried: long enough
/// for a RAFT group to elect a new leader after a node dies.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One log's place in JetStream: the subject its records are published on and the stream
/// that holds them (named after the subject).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicatedLog {
    subject: String,
    stream: String,
    replicas: usize,
}

impl ReplicatedLog {
    /// The log published on `subject` (e.g. `annals.orders`), with [`REPLICAS_DEFAULT`]
    /// replicas. Refuses an empty subject, wildcards and whitespace.
    pub fn new(subject: impl Into<String>) -> Result<Self, ReplicationError> {
        let subject = subject.into();
        let refuse = |reason| {
            Err(ReplicationError::BadSubject {
                subject: subject.clone(),
                reason,
            })
        };
        if subject.is_empty() || subject.split('.').any(str::is_empty) {
            return refuse("it is empty or has an empty token");
        }
        if subject.contains(['*', '>']) {
            return refuse("it has a wildcard");
        }
        if subject.chars().any(char::is_whitespace) {
            return refuse("it has whitespace");
        }
        let stream = format!("ANNALS_{}", subject.replace('.', "_"));
        Ok(ReplicatedLog {
            subject,
            stream,
            replicas: REPLICAS_DEFAULT,
        })
    }

    /// The same log with `replicas` replicas of its stream (when this host creates it).
    pub fn with_replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas.max(1);
        self
    }

    /// The subject records are published on.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.stream
    }

    /// The JetStream object store bucket that holds the log's seed
    /// ([`crate::replication::publish_seed`]): `<stream>_SEED`, or for a subject with
    /// characters a bucket name cannot hold, `ANNALS_SEED_` and 32 hex digits of the subject's
    /// blake3.
    pub fn seed_bucket(&self) -> String {
        let fits = self
            .stream
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if fits {
            format!("{}_SEED", self.stream)
        } else {
            let digest = blake3::hash(self.subject.as_bytes()).to_hex();
            format!("ANNALS_SEED_{}", &digest[..32])
        }
    }

    /// The stream's configuration: one subject, file storage, every message kept.
    fn config(&self) -> stream::Config {
        stream::Config {
            name: self.stream.clone(),
            subjects: vec![self.subject.clone()],
            num_replicas: self.replicas,
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window: DUPLICATE_WINDOW,
            deny_delete: true,
            deny_purge: true,
            ..Default::default()
        }
    }

    /// How many replicas the stream is created with.
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// The stream, created when missing; retried while the cluster cannot answer. A server
    /// that refuses to create it for good (more replicas than it has servers, say) is
    /// [`ReplicationError::StreamRefused`] at once.
    pub(crate) async fn open(
        &self,
        jetstream: &jetstream::Context,
    ) -> Result<stream::Stream, ReplicationError> {
        self.prepare(jetstream).await.map(|(stream, _)| stream)
    }

    /// `ReplicatedLog::open`, saying also whether this call created the stream and with how
    /// many replicas the stream is kept (its own configuration, when it existed before).
    pub async fn prepare(
        &self,
        jetstream: &jetstream::Context,
    ) -> Result<(stream::Stream, StreamPlacement), ReplicationError> {
        let found = retry(|| async {
            match jetstream.get_stream(&self.stream).await {
                Ok(stream) => Ok(Some(stream)),
                Err(error) => match error.kind() {
                    GetStreamErrorKind::JetStream(api)
                        if api.error_code() == ErrorCode::STREAM_NOT_FOUND =>
                    {
                        Ok(None)
                    }
                    _ => Err(ReplicationError::nats(NatsOperation::LookUpStream)(error)),
                },
            }
        })
        .await?;
        let created = found.is_none();
        let stream = match found {
            Some(stream) => stream,
            None => {
                retry(|| async {
                    jetstream
                        .get_or_create_stream(self.config())
                        .await
                        .map_err(|error| self.creation_failed(error))
                })
                .await?
            }
        };
        let replicas = stream.cached_info().config.num_replicas;
        Ok((stream, StreamPlacement { replicas, created }))
    }

    /// Why creating the stream failed: a refusal the server would repeat is final, anything
    /// else (no leader yet, a node away, a timeout) is retried as a NATS error.
    fn creation_failed(&self, error: jetstream::context::CreateStreamError) -> ReplicationError {
        let CreateStreamErrorKind::JetStream(api) = error.kind() else {
            return ReplicationError::nats(NatsOperation::CreateStream)(error);
        };
        let code = api.error_code();
        if code == ErrorCode::CLUSTER_NOT_AVAILABLE || code == ErrorCode::CLUSTER_NO_PEERS {
            // A cluster electing its meta leader, or with a node restarting.
            return ReplicationError::nats(NatsOperation::CreateStream)(error);
        }
        let for_replicas = code == ErrorCode::STREAM_REPLICAS_NOT_SUPPORTED
            || code == ErrorCode::INSUFFICIENT_RESOURCES;
        ReplicationError::StreamRefused {
            stream: self.stream.clone(),
            cause: api.to_string(),
            replicas_asked: for_replicas.then_some(self.replicas),
        }
    }
}

/// How a log's stream is kept, as [`ReplicatedLog::prepare`] found or made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamPlacement {
    /// Its replicas.
    pub replicas: usize,
    /// Whether this host created it.
    pub created: bool,
}

/// A connection to NATS, with what the server that answered says of its cluster.
pub struct Connection {
    /// The JetStream context.
    pub jetstream: jetstream::Context,
    /// How many servers that server knows in its cluster (its `connect_urls`, itself
    /// among them), 1 for a server that is not clustered.
    pub servers: usize,
}

impl Connection {
    /// The replicas a new stream can have here: [`REPLICAS_DEFAULT`], or fewer when the
    /// cluster has fewer servers (1 on a single server).
    pub fn replicas_offered(&self) -> usize {
        self.servers.clamp(1, REPLICAS_DEFAULT)
    }
}

/// Connects to NATS at `urls` (see [`connect_within`]), giving up after
/// [`CONNECT_WAIT_DEFAULT`].
pub async fn connect(urls: &str) -> Result<jetstream::Context, ReplicationError> {
    connect_within(urls, CONNECT_WAIT_DEFAULT)
        .await
        .map(|connection| connection.jetstream)
}

/// Connects to NATS at `urls` (one or several, comma-separated), trying again until one
/// answers or `wait` has passed ([`ReplicationError::Unreachable`], naming them). Once
/// connected, the client reconnects on its own for as long as the process runs.
pub async fn connect_within(urls: &str, wait: Duration) -> Result<Connection, ReplicationError> {
    let not_an_address = |cause: String| ReplicationError::Nats {
        operation: NatsOperation::Address,
        problem: NatsProblem::NotAnAddress {
            urls: urls.to_owned(),
            cause,
        },
    };
    let addresses = urls
        .split(',')
        .map(|url| match url.trim() {
            // An empty address would be taken for a host named "" and looked up in DNS again
            // and again until the wait ran out.
            "" => Err(not_an_address("an empty address".to_owned())),
            url => url
                .parse::<async_nats::ServerAddr>()
                .map_err(|error| not_an_address(error.to_string()))
                .and_then(|address| match address.host().is_empty() {
                    true => Err(not_an_address(format!("{url}: no host"))),
                    false => Ok(address),
                }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let started = tokio::time::Instant::now();
    let mut pause = PAUSE_MIN;
    loop {
        let left = wait.saturating_sub(started.elapsed());
        let attempt = async_nats::ConnectOptions::new()
            .max_reconnects(None)
            .request_timeout(Some(REQUEST_TIMEOUT))
            .connection_timeout(left.clamp(PAUSE_MIN, REQUEST_TIMEOUT))
            .connect(addresses.clone());
        let failed = match tokio::time::timeout(left, attempt).await {
            Ok(Ok(client)) => {
                let info = client.server_info();
                let mut known: Vec<&str> = info.connect_urls.iter().map(String::as_str).collect();
                known.sort_unstable();
                known.dedup();
                let servers = known.len().max(1);
                let mut jetstream = jetstream::new(client);
                jetstream.set_timeout(REQUEST_TIMEOUT);
                has_jetstream(&jetstream, urls).await?;
                return Ok(Connection { jetstream, servers });
            }
            Ok(Err(error)) => Some(error.to_string()),
            Err(_) => None,
        };
        if started.elapsed() + pause >= wait {
            return Err(ReplicationError::Unreachable {
                urls: urls.to_owned(),
                waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                cause: failed,
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(PAUSE_MAX);
    }
}

/// How long a server that answered is given to show it has JetStream: one without answers at
/// once ("no responders" on its JetStream API), so the wait only covers a server still
/// starting its JetStream.
pub const JETSTREAM_WAIT: Duration = Duration::from_secs(3);

/// Refuses, with [`ReplicationError::NoJetStream`], a server that offers no JetStream, asking
/// its JetStream API for the account's information. An answer of any other kind (a cluster
/// still electing its leader, a timeout) is left to the operations that follow, which retry.
async fn has_jetstream(jetstream: &jetstream::Context, urls: &str) -> Result<(), ReplicationError> {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::context::AccountErrorKind;
    let started = tokio::time::Instant::now();
    let mut pause = PAUSE_MIN;
    loop {
        let asked = tokio::time::timeout(JETSTREAM_WAIT, jetstream.query_account()).await;
        let cause = match asked {
            Ok(Err(error)) => match error.kind() {
                AccountErrorKind::JetStreamUnavailable => {
                    "nothing answers on its JetStream API".to_owned()
                }
                AccountErrorKind::JetStream(refusal)
                    if [
                        ErrorCode::JETSTREAM_NOT_ENABLED,
                        ErrorCode::JETSTREAM_NOT_ENABLED_FOR_ACCOUNT,
                    ]
                    .contains(&refusal.error_code()) =>
                {
                    return Err(ReplicationError::NoJetStream {
                        urls: urls.to_owned(),
                        cause: refusal.to_string(),
                    });
                }
                _ => return Ok(()),
            },
            Ok(Ok(_)) | Err(_) => return Ok(()),
        };
        if started.elapsed() + pause >= JETSTREAM_WAIT {
            return Err(ReplicationError::NoJetStream {
                urls: urls.to_owned(),
                cause,
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(PAUSE_MAX);
    }
}

/// The stream's last sequence (how many messages it holds), retried while the cluster cannot
/// answer (a leader election after a node died, a reconnect).
pub(crate) async fn last_sequence(stream: &stream::Stream) -> Result<u64, ReplicationError> {
    retry(|| async {
        let info = stream
            .get_info()
            .await
            .map_err(ReplicationError::nats(NatsOperation::StreamInfo))?;
        Ok(info.state.last_sequence)
    })
    .await
}

/// The stream's first and last sequences, retried as [`last_sequence`] is.
async fn sequences(stream: &stream::Stream) -> Result<(u64, u64), ReplicationError> {
    retry(|| async {
        let info = stream
            .get_info()
            .await
            .map_err(ReplicationError::nats(NatsOperation::StreamInfo))?;
        Ok((info.state.first_sequence, info.state.last_sequence))
    })
    .await
}

/// The stream's message of `sequence` (from 1).
pub(crate) async fn message_at(
    stream: &stream::Stream,
    sequence: u64,
) -> Result<StreamMessage, ReplicationError> {
    retry(|| async {
        stream
            .get_raw_message(sequence)
            .await
            .map_err(ReplicationError::nats(NatsOperation::GetMessage))
    })
    .await
}

/// The records of the stream's message of `sequence`, checked (`wire::checked_records`).
pub(crate) async fn records_of(
    stream: &stream::Stream,
    sequence: u64,
) -> Result<Vec<Record>, ReplicationError> {
    let message = message_at(stream, sequence).await?;
    let id = message
        .headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .map(|value| value.as_str());
    match wire::checked_records(&message.payload, id) {
        Err(ReplicationError::Damaged {
            position, problem, ..
        }) => {
            if wire::frame_span(&message.payload).is_ok() {
                return Err(ReplicationError::Damaged {
                    position,
                    message: Some(sequence),
                    problem,
                });
            }
            // A frame whose header cannot be read names no position: the message sat where
            // the one before it ends.
            Err(ReplicationError::Damaged {
                position: position_after(stream, sequence - 1)
                    .await
                    .unwrap_or(position),
                message: Some(sequence),
                problem,
            })
        }
        other => other,
    }
}

/// The position after the records of the stream's message of `sequence` (0 for none), read
/// from its frame header; `None` when that message cannot be read.
async fn position_after(stream: &stream::Stream, sequence: u64) -> Option<Position> {
    if sequence == 0 {
        return Some(Position(0));
    }
    let message = stream.get_raw_message(sequence).await.ok()?;
    let (first, records) = wire::frame_span(&message.payload).ok()?;
    Some(Position(first.0 + u64::from(records)))
}

/// Where the stream ends: its last message, and the records it holds up to there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamEnd {
    /// The last sequence (0 for an empty stream).
    pub sequence: u64,
    /// The first sequence it still holds: 1, or more once its limits or a purge removed the
    /// messages before it.
    pub first: u64,
    /// The position after its last record: how many records it holds.
    pub next: Position,
    /// Its last record's hash (none for an empty stream).
    pub last_hash: Option<Digest>,
}

/// The stream's end, its last message checked (`wire::checked_records`).
pub(crate) async fn stream_end(stream: &stream::Stream) -> Result<StreamEnd, ReplicationError> {
    let (first, sequence) = sequences(stream).await?;
    if sequence == 0 {
        return Ok(StreamEnd {
            sequence,
            first: 1,
            next: Position(0),
            last_hash: None,
        });
    }
    let records = records_of(stream, sequence).await?;
    let last = records.last().expect("a checked message holds a record");
    Ok(StreamEnd {
        sequence,
        first: first.max(1),
        next: Position(last.position.0 + 1),
        last_hash: Some(last.hash),
    })
}

/// The sequence of the message that holds the record at `position`, which the stream holds
/// (`position` is before the end of the message of `last`, and at or after the start of the
/// message of `first`, the first the stream still holds). Messages start where the one
/// before ends and hold at least one record, so the message of `position` is at most
/// `position + 1`: that one is read first (where every message holds one record, it is the
/// one), then a binary search below it, reading each probed message's frame header only.
pub(crate) async fn sequence_holding(
    stream: &stream::Stream,
    position: Position,
    first: u64,
    last: u64,
) -> Result<u64, ReplicationError> {
    let span = |sequence: u64| async move {
        let message = message_at(stream, sequence).await?;
        wire::frame_span(&message.payload)
    };
    let holds = |(first, records): (Position, u32)| {
        first <= position && position.0 < first.0 + u64::from(records)
    };
    let guess = position.0.saturating_add(1).min(last).max(first);
    let found = span(guess).await?;
    if holds(found) {
        return Ok(guess);
    }
    // The largest sequence below `guess` whose message starts at or before `position`.
    let (mut low, mut high) = (first, guess - 1);
    if found.0 < position || high < first {
        return Err(ReplicationError::Damaged {
            position,
            message: None,
            problem: Damage::Span {
                sequence: guess,
                first: found.0,
                end: Position(found.0.0 + u64::from(found.1)),
            },
        });
    }
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        let (first, _) = span(middle).await?;
        if first <= position {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    if holds(span(low).await?) {
        Ok(low)
    } else {
        Err(ReplicationError::Damaged {
            position,
            message: None,
            problem: Damage::NotHeld,
        })
    }
}

/// Tries `attempt` again on a NATS error, pausing from 50 ms up to 1 s, up to
/// [`RETRIES_MAX`] times; every other error returns at once.
pub(crate) async fn retry<T, F, Fut>(mut attempt: F) -> Result<T, ReplicationError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ReplicationError>>,
{
    let mut pause = PAUSE_MIN;
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(ReplicationError::Nats { .. }) if tries < RETRIES_MAX => {
                tries += 1;
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(PAUSE_MAX);
            }
            other => return other,
        }
    }
}

/// The first pause before a NATS request is tried again.
pub(crate) const PAUSE_MIN: Duration = Duration::from_millis(50);
/// The longest pause between two tries.
pub(crate) const PAUSE_MAX: Duration = Duration::from_secs(1);
/// Tries of one request before its error is returned: about two minutes of a cluster without
/// a quorum.
pub(crate) const RETRIES_MAX: u32 = 120;
