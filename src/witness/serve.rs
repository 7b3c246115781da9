//! The witness over HTTP/1.1 (hyper): `POST /add-checkpoint` as c2sp.org/tlog-witness gives
//! it, and the monitoring `GET /<origin hash>/checkpoint`.
//!
//! Every request is bounded: its headers and body must arrive within
//! [`ServeOptions::request_timeout`], its body is at most a request's largest size (63 proof
//! lines and a note), a connection lives at most [`ServeOptions::connection_timeout`], and at
//! most [`ServeOptions::connections_max`] are served at once (further ones wait in the
//! listener's backlog). A request outside those bounds gets a 400 and nothing else.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::{Refusal, Witness};
use crate::tlog::consistency::CONSISTENCY_BYTES_MAX;

/// The content type of a 409's body: the latest cosigned size, in decimal, and a newline.
pub const TLOG_SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// The bounds of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Connections served at once. Default 64.
    pub connections_max: usize,
    /// How long a request's headers and its body may take to arrive. Default 10 s.
    pub request_timeout: Duration,
    /// How long one connection (with keep-alive, many requests) is served. Default 120 s.
    pub connection_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            connections_max: 64,
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
    let permits = Arc::new(Semaphore::new(options.connections_max.max(1)));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => {
                permit.expect("the semaphore is never closed")
            }
            () = &mut shutdown => return Ok(()),
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // A connection that failed before it was accepted (reset, say) is the peer's
            // business; the listener goes on.
            Err(error) if is_per_connection(&error) => continue,
            Err(error) => return Err(error),
        };
        let witness = witness.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = service_fn(move |request| {
                let witness = witness.clone();
                async move { Ok::<_, Infallible>(answer(&witness, request, options).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(options.request_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection that errs or outlives its bound is dropped: its peer sees it close.
            let _ = tokio::time::timeout(options.connection_timeout, connection).await;
        });
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
        return add_checkpoint(witness, request, options).await;
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
    // The decision commits to the state log (a sync): off the runtime's threads.
    let decided =
        tokio::task::spawn_blocking(move || witness.add_checkpoint(&body, now_seconds())).await;
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
