//! The JetStream side of one log: its subject, the stream that holds it, connecting, and the
//! two questions every host asks the stream (how many records, which record at a position).

use std::time::Duration;

use async_nats::jetstream::{self, stream};

use super::{ReplicationError, wire};
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

/// How many records the stream holds (its last sequence), retried while the cluster cannot
/// answer (a leader election after a node died, a reconnect).
pub(crate) async fn stream_records(stream: &stream::Stream) -> Result<u64, ReplicationError> {
    retry(|| async {
        let info = stream.get_info().await.map_err(ReplicationError::nats)?;
        Ok(info.state.last_sequence)
    })
    .await
}

/// The stream's record at `position`, checked at its position.
pub(crate) async fn record_at(
    stream: &stream::Stream,
    position: Position,
) -> Result<Record, ReplicationError> {
    let sequence = wire::sequence_of(position);
    let message = retry(|| async {
        stream
            .get_raw_message(sequence)
            .await
            .map_err(ReplicationError::nats)
    })
    .await?;
    let id = message
        .headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .map(|value| value.as_str().to_owned());
    wire::checked_record(&message.payload, message.sequence, id.as_deref())
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
