//! The JetStream side of one log: its subject, the stream that holds it, connecting, and the
//! questions every host asks the stream (where it ends, which message holds a position).

use std::time::Duration;

use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::{self, stream};

use super::{ReplicationError, wire};
use crate::hash::Digest;
use crate::record::{Position, Record};

/// Replicas of a log's stream unless told otherwise: a 3-node cluster's RAFT group survives
/// one node lost.
pub const REPLICAS_DEFAULT: usize = 3;
/// How long the server remembers a `Nats-Msg-Id` to deduplicate a repeated publish.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// How long a JetStream request or acknowledgement may take before it is retried: long enough
/// for a RAFT group to elect a new leader after a node dies.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

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

    /// The stream, created when missing; retried until the cluster can answer.
    pub(crate) async fn open(
        &self,
        jetstream: &jetstream::Context,
    ) -> Result<stream::Stream, ReplicationError> {
        retry(|| async {
            jetstream
                .get_or_create_stream(self.config())
                .await
                .map_err(ReplicationError::nats)
        })
        .await
    }
}

/// Connects to NATS at `urls` (one or several, comma-separated) and returns a JetStream
/// context. The client reconnects on its own for as long as the process runs.
pub async fn connect(urls: &str) -> Result<jetstream::Context, ReplicationError> {
    let addresses = urls
        .split(',')
        .map(|url| url.trim().parse::<async_nats::ServerAddr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| ReplicationError::Nats {
            detail: format!("{urls:?} is not a NATS address: {error}"),
        })?;
    let client = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .max_reconnects(None)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .connect(addresses)
        .await
        .map_err(ReplicationError::nats)?;
    let mut context = jetstream::new(client);
    context.set_timeout(REQUEST_TIMEOUT);
    Ok(context)
}

/// The stream's last sequence (how many messages it holds), retried while the cluster cannot
/// answer (a leader election after a node died, a reconnect).
pub(crate) async fn last_sequence(stream: &stream::Stream) -> Result<u64, ReplicationError> {
    retry(|| async {
        let info = stream.get_info().await.map_err(ReplicationError::nats)?;
        Ok(info.state.last_sequence)
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
            .map_err(ReplicationError::nats)
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
    wire::checked_records(&message.payload, id)
}

/// Where the stream ends: its last message, and the records it holds up to there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamEnd {
    /// The last sequence (0 for an empty stream).
    pub sequence: u64,
    /// The position after its last record: how many records it holds.
    pub next: Position,
    /// Its last record's hash (none for an empty stream).
    pub last_hash: Option<Digest>,
}

/// The stream's end, its last message checked (`wire::checked_records`).
pub(crate) async fn stream_end(stream: &stream::Stream) -> Result<StreamEnd, ReplicationError> {
    let sequence = last_sequence(stream).await?;
    if sequence == 0 {
        return Ok(StreamEnd {
            sequence,
            next: Position(0),
            last_hash: None,
        });
    }
    let records = records_of(stream, sequence).await?;
    let last = records.last().expect("a checked message holds a record");
    Ok(StreamEnd {
        sequence,
        next: Position(last.position.0 + 1),
        last_hash: Some(last.hash),
    })
}

/// The sequence of the message that holds the record at `position`, which the stream holds
/// (`position` is before the end of the message of `last`). Messages start where the one
/// before ends and hold at least one record, so the message of `position` is at most
/// `position + 1`: that one is read first (where every message holds one record, it is the
/// one), then a binary search below it, reading each probed message's frame header only.
pub(crate) async fn sequence_holding(
    stream: &stream::Stream,
    position: Position,
    last: u64,
) -> Result<u64, ReplicationError> {
    let span = |sequence: u64| async move {
        let message = message_at(stream, sequence).await?;
        wire::frame_span(&message.payload)
    };
    let holds = |(first, records): (Position, u32)| {
        first <= position && position.0 < first.0 + u64::from(records)
    };
    let guess = position.0.saturating_add(1).min(last);
    let found = span(guess).await?;
    if holds(found) {
        return Ok(guess);
    }
    // The largest sequence below `guess` whose message starts at or before `position`.
    let (mut low, mut high) = (1, guess - 1);
    if found.0 < position || high == 0 {
        return Err(ReplicationError::Damaged {
            position,
            detail: format!(
                "the stream's message {guess} holds positions {} .. {}, which cannot be",
                found.0,
                found.0.0 + u64::from(found.1)
            ),
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
            detail: "no message of the stream holds this position".into(),
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
