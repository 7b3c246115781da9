//! The one HTTP exchange a log has with a witness: a POST of a text body to a URL under the
//! witness's submission prefix, bounded in time and in the size of the answer read.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::tlog::consistency::ConsistencyFileError;

/// The largest answer read: a witness's cosignature lines are a few hundred bytes.
const ANSWER_BYTES_MAX: usize = 64 * 1024;

/// A witness's submission prefix, `http://host[:port][/path]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prefix {
    host: String,
    port: u16,
    path: String,
}

impl Prefix {
    /// Parses `url`; only `http://` is spoken (a bastion or proxy gives TLS).
    pub(crate) fn parse(url: &str) -> Result<Prefix, UrlProblem> {
        let rest = url.strip_prefix("http://").ok_or(UrlProblem::NotHttp)?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let (host, port) = match authority.strip_prefix('[') {
            Some(inner) => {
                let (host, after) = inner.split_once(']').ok_or(UrlProblem::UnclosedIpv6)?;
                (host, after.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let port = match port {
            Some(port) => port.parse::<u16>().map_err(|_| UrlProblem::Port {
                port: port.to_owned(),
            })?,
            None => 80,
        };
        if host.is_empty() {
            return Err(UrlProblem::NoHost);
        }
        if path.contains(['?', '#']) {
            return Err(UrlProblem::QueryOrFragment);
        }
        Ok(Prefix {
            host: host.to_owned(),
            port,
            path: path.trim_end_matches('/').to_owned(),
        })
    }
}

/// What a witness answered.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    pub(crate) body: String,
}

/// POSTs `body` to `prefix` + `endpoint` (e.g. `/add-checkpoint`), all of it within `timeout`.
pub(crate) async fn post(
    prefix: &Prefix,
    endpoint: &str,
    body: String,
    timeout: Duration,
) -> Result<Answer, ExchangeProblem> {
    match tokio::time::timeout(timeout, exchange(prefix, endpoint, body, timeout)).await {
        Ok(answer) => answer,
        Err(_) => Err(ExchangeProblem::Timeout { timeout }),
    }
}

/// The first pause before a refused connection is tried again, and the longest.
const REFUSED_PAUSE_MIN: Duration = Duration::from_millis(20);
const REFUSED_PAUSE_MAX: Duration = Duration::from_millis(500);

/// POSTs `body` to `prefix` + `endpoint` and reads the answer, the connection tried again
/// while refused ([`connect`]).
async fn exchange(
    prefix: &Prefix,
    endpoint: &str,
    body: String,
    timeout: Duration,
) -> Result<Answer, ExchangeProblem> {
    let stream = connect(prefix, timeout).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| ExchangeProblem::Handshake {
            cause: error.to_string(),
        })?;
    let driver = tokio::spawn(connection);
    let host = if prefix.port == 80 {
        prefix.host.clone()
    } else {
        format!("{}:{}", prefix.host, prefix.port)
    };
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("{}{endpoint}", prefix.path))
        .header(HOST, host)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)))
        .map_err(|error| ExchangeProblem::InvalidRequest {
            cause: error.to_string(),
        })?;
    let response =
        sender
            .send_request(request)
            .await
            .map_err(|error| ExchangeProblem::Request {
                cause: error.to_string(),
            })?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let bytes = Limited::new(response.into_body(), ANSWER_BYTES_MAX)
        .collect()
        .await
        .map_err(|error| ExchangeProblem::AnswerUnread {
            cause: error.to_string(),
        })?
        .to_bytes();
    driver.abort();
    let body = String::from_utf8(bytes.to_vec()).map_err(|_| ExchangeProblem::AnswerNotUtf8)?;
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

/// A connection to the witness at `prefix`. A witness starting or restarting refuses
/// connections for a moment: tried again, with growing pauses, while they stay within
/// `timeout`, after which the refusal is the answer.
async fn connect(prefix: &Prefix, timeout: Duration) -> Result<TcpStream, ExchangeProblem> {
    let mut pause = REFUSED_PAUSE_MIN;
    // The pauses so far, counted rather than read from a clock: `post`'s timeout bounds the
    // whole exchange, and the last refusal is the answer once the pauses would reach it.
    let mut paused = Duration::ZERO;
    loop {
        match TcpStream::connect((prefix.host.as_str(), prefix.port)).await {
            Ok(stream) => return Ok(stream),
            Err(error)
                if error.kind() == std::io::ErrorKind::ConnectionRefused
                    && paused + pause < timeout =>
            {
                tokio::time::sleep(pause).await;
                paused += pause;
                pause = (pause * 2).min(REFUSED_PAUSE_MAX);
            }
            Err(error) => {
                return Err(ExchangeProblem::Connect {
                    cause: error.to_string(),
                });
            }
        }
    }
}

/// Why a witness's URL is not a submission prefix (`http://host[:port][/path]`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlProblem {
    /// Another scheme than `http://`.
    #[error("the URL does not start with http:// (only plain HTTP is spoken)")]
    NotHttp,
    /// An IPv6 address opened with `[` and never closed.
    #[error("the URL's IPv6 address has no closing ]")]
    UnclosedIpv6,
    /// A port that is not a number up to 65535.
    #[error("the port {port:?} is not a number up to 65535")]
    Port {
        /// The port as given.
        port: String,
    },
    /// No host before the port or the path.
    #[error("the URL names no host")]
    NoHost,
    /// A `?` or a `#` in the path.
    #[error("the URL has a query or a fragment; give the submission prefix")]
    QueryOrFragment,
}

/// Why an exchange with a witness gave no answer ([`RequestError::Unreachable`](super::request::RequestError::Unreachable)). A `cause` is
/// the account of the library that failed (the operating system's, hyper's, the store's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExchangeProblem {
    /// The request was not built: the log has no consistency proof from the size the witness
    /// cosigned.
    #[error("no consistency proof from {old_size}: {cause}")]
    NoProof {
        /// The size the witness cosigned.
        old_size: u64,
        /// The store's account.
        cause: String,
    },
    /// The request was not built: the checkpoint and its proof do not make an
    /// `add-checkpoint` body.
    #[error("{0}")]
    Body(ConsistencyFileError),
    /// The whole exchange took longer than the request's timeout.
    #[error("no answer within {timeout:?}")]
    Timeout {
        /// The timeout.
        timeout: Duration,
    },
    /// The TCP connection failed.
    #[error("cannot connect: {cause}")]
    Connect {
        /// The operating system's account.
        cause: String,
    },
    /// The HTTP handshake failed.
    #[error("the HTTP handshake failed: {cause}")]
    Handshake {
        /// The HTTP client's account.
        cause: String,
    },
    /// The request could not be made into HTTP.
    #[error("the request is not valid HTTP: {cause}")]
    InvalidRequest {
        /// The HTTP client's account.
        cause: String,
    },
    /// Sending the request or reading the response's head failed.
    #[error("the request failed: {cause}")]
    Request {
        /// The HTTP client's account.
        cause: String,
    },
    /// The answer's body was not read (cut off, or larger than the client reads).
    #[error("the answer was not read: {cause}")]
    AnswerUnread {
        /// The HTTP client's account.
        cause: String,
    },
    /// The answer's body is not UTF-8.
    #[error("the answer is not UTF-8")]
    AnswerNotUtf8,
    /// The exchange's task ended (panicked or was cancelled) without an answer.
    #[error("the exchange ended without an answer")]
    NoAnswer,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_reads_its_host_port_and_path() {
        let p = Prefix::parse("http://127.0.0.1:8080/witness/").unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.path.as_str()),
            ("127.0.0.1", 8080, "/witness")
        );
        let p = Prefix::parse("http://example.com").unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.path.as_str()),
            ("example.com", 80, "")
        );
        let p = Prefix::parse("http://[::1]:9/").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", 9));
        for bad in [
            "https://example.com",
            "example.com",
            "http://:80",
            "http://h:99999",
            "http://h/?q",
        ] {
            assert!(Prefix::parse(bad).is_err(), "{bad}");
        }
    }
}
