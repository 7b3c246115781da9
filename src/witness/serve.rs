//! The witness over HTTP/1.1 (hyper): `POST /add-checkpoint` as c2sp.org/tlog-witness gives
//! it, and the monitoring `GET /<origin hash>/checkpoint`.
//!
//! Every request is bounded: its headers and body must arrive within
//! [`ServeOptions::request_timeout`] (the wait for a keep-alive connection's next request
//! counts as reading its headers), its body is at most a request's largest size (63 proof
//! lines and a note), and a connection lives at most [`ServeOptions::connection_timeout`]. A
//! request outside those bounds gets a 400 and nothing else.
//!
//! Connections that are idle or slow must never keep an honest request out. At most
//! [`ServeOptions::connections_max`] are open, at most
//! [`ServeOptions::connections_per_peer_max`] from one IP address; a new connection over
//! either bound is made room for by closing the connection that has waited longest without a
//! request being decided on it (idle between requests, or still sending one), from its own
//! address first, else from the address holding most. Only a connection whose request is
//! being decided is never closed; when all are, the new one is.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{Refusal, Witness};
use crate::tlog::consistency::CONSISTENCY_BYTES_MAX;

/// The content type of a 409's body: the latest cosigned size, in decimal, and a newline.
pub const TLOG_SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// The bounds of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Connections open at once. Default 64.
    pub connections_max: usize,
    /// Connections open at once from one IP address. Default 8.
    pub connections_per_peer_max: usize,
    /// How long a request's headers and its body may take to arrive. Default 10 s.
    pub request_timeout: Duration,
    /// How long one connection (with keep-alive, many requests) is served. Default 120 s.
    pub connection_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            connections_max: 64,
            connections_per_peer_max: 8,
            request_timeout: Duration::from_secs(10),
            connection_timeout: Duration::from_secs(120),
        }
    }
}

/// Serves `witness` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    witness: Arc<Witness>,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let connections = Arc::new(Connections::new(&options));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return Ok(()),
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            // A connection that failed before it was accepted (reset, say) is the peer's
            // business; the listener goes on.
            Err(error) if is_per_connection(&error) => continue,
            Err(error) => return Err(error),
        };
        // None: every open connection is deciding a request; this one is closed at once.
        let Some(admitted) = Connections::admit(&connections, peer.ip().to_canonical()) else {
            continue;
        };
        let witness = witness.clone();
        tokio::spawn(async move {
            let service = {
                let admitted = admitted.clone();
                service_fn(move |request| {
                    let (witness, admitted) = (witness.clone(), admitted.clone());
                    async move {
                        Ok::<_, Infallible>(answer(&witness, &admitted, request, options).await)
                    }
                })
            };
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(options.request_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection that errs, outlives its bound or is evicted is dropped: its peer
            // sees it close.
            tokio::select! {
                _ = tokio::time::timeout(options.connection_timeout, connection) => {}
                () = admitted.evicted.notified() => {}
            }
        });
    }
}

/// The open connections, each with its peer and whether a request is being decided on it.
#[derive(Debug)]
struct Connections {
    max: usize,
    per_peer_max: usize,
    open: Mutex<BTreeMap<u64, Open>>,
    next_id: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
struct Open {
    peer: IpAddr,
    /// When it last began to wait: accepted, or a decision ended.
    since: Instant,
    deciding: bool,
    evicted: Arc<Notify>,
}

/// A connection admitted: it leaves [`Connections`] when dropped (its task ended).
#[derive(Debug)]
struct Admitted {
    connections: Arc<Connections>,
    id: u64,
    peer: IpAddr,
    evicted: Arc<Notify>,
}

impl Connections {
    fn new(options: &ServeOptions) -> Connections {
        Connections {
            max: options.connections_max.max(1),
            per_peer_max: options.connections_per_peer_max.max(1),
            open: Mutex::new(BTreeMap::new()),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Admits a connection from `peer`, closing a waiting one to make room if a bound is
    /// reached (see the module's docs); None if none can be closed.
    fn admit(connections: &Arc<Connections>, peer: IpAddr) -> Option<Arc<Admitted>> {
        let mut open = connections.lock();
        let from_peer = open.values().filter(|o| o.peer == peer).count();
        if from_peer >= connections.per_peer_max && !evict(&mut open, |o| o.peer == peer) {
            return None;
        }
        if open.len() >= connections.max {
            let mut counts: BTreeMap<IpAddr, usize> = BTreeMap::new();
            for o in open.values().filter(|o| !o.deciding) {
                *counts.entry(o.peer).or_default() += 1;
            }
            let most = counts.values().copied().max()?;
            if !evict(&mut open, |o| counts.get(&o.peer) == Some(&most)) {
                return None;
            }
        }
        let id = connections
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        open.insert(
            id,
            Open {
                peer,
                since: Instant::now(),
                deciding: false,
                evicted: evicted.clone(),
            },
        );
        debug_assert!(open.len() <= connections.max);
        Some(Arc::new(Admitted {
            connections: connections.clone(),
            id,
            peer,
            evicted,
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Open>> {
        // Each change is one insert, remove or field store: a panic leaves no half of one.
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Closes the connection among those `eligible` and not deciding that has waited longest;
/// false if there is none.
fn evict(open: &mut BTreeMap<u64, Open>, eligible: impl Fn(&Open) -> bool) -> bool {
    let oldest = open
        .iter()
        .filter(|(_, o)| !o.deciding && eligible(o))
        .min_by_key(|(_, o)| o.since)
        .map(|(id, _)| *id);
    let Some(removed) = oldest.and_then(|id| open.remove(&id)) else {
        return false;
    };
    // A permit kept if its task is not yet waiting: it sees it as soon as it does.
    removed.evicted.notify_one();
    true
}

impl Admitted {
    /// Marks whether a request is being decided on the connection.
    fn deciding(&self, deciding: bool) {
        if let Some(open) = self.connections.lock().get_mut(&self.id) {
            open.deciding = deciding;
            open.since = Instant::now();
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

fn is_per_connection(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    )
}

/// The response to one request.
async fn answer(
    witness: &Arc<Witness>,
    admitted: &Admitted,
    request: Request<Incoming>,
    options: ServeOptions,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    if path == "/add-checkpoint" {
        if request.method() != Method::POST {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "add-checkpoint takes a POST\n",
            );
        }
        return add_checkpoint(witness, admitted, request, options).await;
    }
    let monitored = path
        .strip_prefix('/')
        .and_then(|rest| rest.strip_suffix("/checkpoint"))
        .filter(|hash| hash.len() == 64);
    match monitored {
        Some(hash) if request.method() == Method::GET => {
            match witness.latest_by_origin_hash(hash) {
                Some(cosigned) => text(StatusCode::OK, &cosigned.checkpoint),
                None => text(
                    StatusCode::NOT_FOUND,
                    "no checkpoint cosigned for that origin\n",
                ),
            }
        }
        Some(_) => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "a checkpoint is read with a GET\n",
        ),
        None => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

async fn add_checkpoint(
    witness: &Arc<Witness>,
    admitted: &Admitted,
    request: Request<Incoming>,
    options: ServeOptions,
) -> Response<Full<Bytes>> {
    let too_large = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|length| length > CONSISTENCY_BYTES_MAX as u64);
    if too_large {
        return refused(&Refusal::Malformed(format!(
            "the body is larger than the {CONSISTENCY_BYTES_MAX} bytes a request can be"
        )));
    }
    let body = Limited::new(request.into_body(), CONSISTENCY_BYTES_MAX).collect();
    let body = match tokio::time::timeout(options.request_timeout, body).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) => {
            return refused(&Refusal::Malformed(format!(
                "the body was not read: {error}"
            )));
        }
        Err(_) => {
            return refused(&Refusal::Malformed(format!(
                "the body did not arrive within {:?}",
                options.request_timeout
            )));
        }
    };
    let witness = witness.clone();
    let peer = admitted.peer;
    // The decision commits to the state log (a sync): off the runtime's threads. Meanwhile
    // the connection is not closed to make room for another.
    admitted.deciding(true);
    let decided =
        tokio::task::spawn_blocking(move || witness.add_checkpoint(peer, &body, now_seconds()))
            .await;
    admitted.deciding(false);
    match decided {
        Ok(Ok(lines)) => text(StatusCode::OK, &lines),
        Ok(Err(refusal)) => refused(&refusal),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request's decision failed; nothing was cosigned\n",
        ),
    }
}

/// The response to a refusal: its status, and for a 409 the latest size as the spec writes it.
fn refused(refusal: &Refusal) -> Response<Full<Bytes>> {
    let status = StatusCode::from_u16(refusal.status()).expect("a refusal's status is valid");
    if let Refusal::Conflict { latest } = refusal {
        return Response::builder()
            .status(status)
            .header(CONTENT_TYPE, TLOG_SIZE_CONTENT_TYPE)
            .body(Full::new(Bytes::from(format!("{latest}\n"))))
            .expect("a response of valid parts");
    }
    text(status, &format!("{refusal}\n"))
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("a response of valid parts")
}

/// Now in POSIX seconds, at least 1: a cosignature's timestamp is never zero.
fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |elapsed| elapsed.as_secs().max(1))
}
