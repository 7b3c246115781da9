//! The one HTTP exchange a log has with a witness: a POST of a text body to a URL under the
//! witness's submission prefix, bounded in time and in the size of the answer read.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

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
    pub(crate) fn parse(url: &str) -> Result<Prefix, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or("the URL does not start with http:// (only plain HTTP is spoken)")?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let (host, port) = match authority.strip_prefix('[') {
            Some(inner) => {
                let (host, after) = inner
                    .split_once(']')
                    .ok_or("the URL's IPv6 address has no closing ]")?;
                (host, after.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let port = match port {
            Some(port) => port
                .parse::<u16>()
                .map_err(|_| format!("the port {port:?} is not a number up to 65535"))?,
            None => 80,
        };
        if host.is_empty() {
            return Err("the URL names no host".into());
        }
        if path.contains(['?', '#']) {
            return Err("the URL has a query or a fragment; give the submission prefix".into());
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
) -> Result<Answer, String> {
    match tokio::time::timeout(timeout, exchange(prefix, endpoint, body)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

async fn exchange(prefix: &Prefix, endpoint: &str, body: String) -> Result<Answer, String> {
    let stream = TcpStream::connect((prefix.host.as_str(), prefix.port))
        .await
        .map_err(|error| format!("cannot connect: {error}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| format!("the HTTP handshake failed: {error}"))?;
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
        .map_err(|error| format!("the request is not valid HTTP: {error}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| format!("the request failed: {error}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let bytes = Limited::new(response.into_body(), ANSWER_BYTES_MAX)
        .collect()
        .await
        .map_err(|error| format!("the answer was not read: {error}"))?
        .to_bytes();
    driver.abort();
    let body =
        String::from_utf8(bytes.to_vec()).map_err(|_| "the answer is not UTF-8".to_owned())?;
    Ok(Answer {
        status,
        content_type,
        body,
    })
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
