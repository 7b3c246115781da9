//! The writers beside the `annals` processes of the tests that write a log from several
//! processes as the reference hosts do: a long-lived server that keeps the log open in
//! multi-writer mode and serves one small transaction per request, and a writer that holds one
//! write open until told to commit. Run on a thread of the command line's tests
//! (`cli/tests/cli/writers.rs`), a process other than the `annals` ones they start.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Result;
use crate::leases::{LeaseCommand, LeaseOutcome};
use crate::log::append::{AppendOutcome, ExpectedVersion};
use crate::record::NewEvent;
use crate::store::{Sharing, Store, StoreOptions};

/// A store of `path` open in multi-writer mode, created when missing, waiting `busy_timeout`
/// for other writers.
fn open_multi_writer(path: &Path, busy_timeout: std::time::Duration) -> Result<Store> {
    Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing: Sharing::MultiWriter,
            busy_timeout,
            ..StoreOptions::default()
        },
    )
}

/// Serves requests on `path` until `input` ends: each request one transaction of its own,
/// an append of `request.served` with the idempotency key `host-<n>` to the stream
/// `host/requests`, or a lease acquired for the resource `job-<n>`, by turns. Prints `open`
/// once the log is open, then for every acknowledged request `appended host-<n> <position>`
/// or `granted job-<n> <token>`, flushed at once; the clock of a request is its number.
pub fn serve(
    path: &Path,
    input: impl BufRead + Send + 'static,
    out: &mut impl Write,
) -> Result<()> {
    let store = open_multi_writer(path, std::time::Duration::from_secs(30))?;
    writeln!(out, "open")?;
    out.flush()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    std::thread::spawn(move || {
        // The test closes the host's standard input to stop it.
        for _ in input.lines() {}
        stopping.store(true, Ordering::SeqCst);
    });
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        if n.is_multiple_of(2) {
            let key = format!("host-{n}");
            let event = NewEvent::new("request.served", n, format!("request {n}").into_bytes())
                .with_idempotency_key(key.clone());
            let outcome = store.append("host/requests", ExpectedVersion::Any, &[event])?;
            if let AppendOutcome::Appended(appended) = outcome {
                writeln!(out, "appended {key} {}", appended.first_position.0)?;
            }
        } else {
            let acquire = LeaseCommand::Acquire {
                resource: format!("job-{n}"),
                holder: "host".into(),
                ttl_ms: 60_000,
                now_ms: n,
            };
            if let LeaseOutcome::Granted { lease, .. } = store.execute(&acquire)? {
                writeln!(out, "granted job-{n} {}", lease.token.0)?;
            }
        }
        out.flush()?;
        n += 1;
    }
    store.close()
}

/// Opens `path` in multi-writer mode, begins one write, prints `holding` and waits for a
/// line on `input` (or its end) before it appends one event to the stream `held` and
/// commits, printing `committed <position>`: a test holds another process's write open for
/// as long as it needs, with no clock.
pub fn hold_write(path: &Path, input: &mut impl BufRead, out: &mut impl Write) -> Result<()> {
    let store = open_multi_writer(path, std::time::Duration::from_secs(30))?;
    let position = store.write(|session| {
        writeln!(out, "holding")?;
        out.flush()?;
        let mut line = String::new();
        input.read_line(&mut line)?;
        let event = NewEvent::new("held.write", 0, b"held".to_vec());
        let appended = session.append("held", ExpectedVersion::Any, &[event])?;
        Ok(appended)
    })?;
    if let AppendOutcome::Appended(appended) = position {
        writeln!(out, "committed {}", appended.first_position.0)?;
    }
    out.flush()?;
    store.close()
}
