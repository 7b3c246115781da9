//! The mixed workload in SQLite, the way the reference stores keep their state: rows updated
//! in place, one `BEGIN IMMEDIATE` transaction per command (WAL, `synchronous=FULL`,
//! a long `busy_timeout`). The tables and indexes follow the reference stores' shapes (the hub's
//! `leases` with a fencing token and a JSON record, the peer outbox with its idempotency key
//! and state, the activity store's spans, span events, per-run change log and rollups, the
//! host's instances and fuel ledger), written for this bench. Either a connection per client
//! or one connection shared behind a lock; the report takes the better of the two.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::TTL_MS;
use crate::mixed::{Client, MixedRun, Step};
use crate::samples::{in_threads, per_second};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS leases (
    resource TEXT PRIMARY KEY, holder_agent_id TEXT NOT NULL, fencing_token INTEGER NOT NULL,
    expires_at INTEGER NOT NULL, record TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS peer_outbox (
    id INTEGER PRIMARY KEY, peer TEXT NOT NULL, kind TEXT NOT NULL, payload_json TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE, state TEXT NOT NULL, attempts INTEGER NOT NULL,
    next_at INTEGER, created_at INTEGER NOT NULL, claimed_by TEXT, claimed_at INTEGER,
    first_failed_at INTEGER);
CREATE INDEX IF NOT EXISTS peer_outbox_due ON peer_outbox(state, next_at);
CREATE INDEX IF NOT EXISTS peer_outbox_peer ON peer_outbox(peer, state);
CREATE TABLE IF NOT EXISTS activity_spans (
    span_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, parent_span_id TEXT, name TEXT NOT NULL,
    kind TEXT NOT NULL, origin TEXT NOT NULL, session_id TEXT, job_name TEXT, attrs TEXT,
    started_at INTEGER NOT NULL, wait_until INTEGER, ended_at INTEGER, outcome TEXT,
    outcome_reason TEXT, input_tokens INTEGER, output_tokens INTEGER,
    cache_read_tokens INTEGER, cache_creation_tokens INTEGER, cost_usd REAL, model TEXT,
    writer TEXT NOT NULL, last_heartbeat_at INTEGER);
CREATE INDEX IF NOT EXISTS activity_spans_run ON activity_spans(run_id, outcome);
CREATE TABLE IF NOT EXISTS activity_events (
    span_id TEXT NOT NULL, event_index INTEGER NOT NULL, ts INTEGER NOT NULL,
    event_type TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (span_id, event_index));
CREATE TABLE IF NOT EXISTS activity_changes (
    change_id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
    span_id TEXT NOT NULL, event_index INTEGER);
CREATE INDEX IF NOT EXISTS activity_changes_run ON activity_changes(run_id, seq);
CREATE TABLE IF NOT EXISTS activity_run_rollups (
    run_id TEXT PRIMARY KEY, origin TEXT, name TEXT, session_id TEXT, job_name TEXT,
    started_at INTEGER, ended_at INTEGER, outcome TEXT, duration_ms INTEGER,
    span_count INTEGER, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL,
    failure_reason TEXT, detail_pruned INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS instances (
    handle TEXT PRIMARY KEY, domain TEXT NOT NULL DEFAULT 'localhost', identity TEXT,
    store TEXT NOT NULL, tree TEXT, source TEXT, knows TEXT,
    status TEXT NOT NULL DEFAULT 'enabled', created_at INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'agent', owner TEXT, topics TEXT);
CREATE TABLE IF NOT EXISTS fuel_ledger (
    instance TEXT NOT NULL, caller TEXT NOT NULL, op TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0, fuel INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL, PRIMARY KEY (instance, caller, op)) WITHOUT ROWID;
";

/// What SQLite keeps for a history like annals' log: an event row per command, chained by its
/// blake3 hash to the row before, with its stream's version under a `(stream, version)`
/// uniqueness index (the issue's "SQLite keeping the same history").
const HISTORY_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
    kind TEXT NOT NULL, at INTEGER NOT NULL, payload BLOB NOT NULL, hash BLOB NOT NULL,
    UNIQUE (stream, version)) STRICT;
";

/// How long a connection waits for the write lock. The reference stores wait 5 s; 64 clients
/// queued behind a slow disk can wait longer than that, which would fail the run rather than
/// measure it.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// A connection as the reference stores open theirs (but for [`BUSY_TIMEOUT`]).
pub(crate) fn open(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("a SQLite file");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("WAL");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("FULL");
    conn.busy_timeout(BUSY_TIMEOUT).expect("busy_timeout");
    conn.execute_batch(SCHEMA).expect("the schema");
    conn
}

/// A connection whose file also keeps the history ([`HISTORY_SCHEMA`]), for
/// [`command_with_history`].
pub(crate) fn open_with_history(path: &Path) -> Connection {
    let conn = open(path);
    conn.execute_batch(HISTORY_SCHEMA)
        .expect("the history's schema");
    conn
}

/// Runs the client's step in one immediate transaction; the lease token granted, if any.
pub(crate) fn command(conn: &mut Connection, client: &Client) -> Option<u64> {
    let txn = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .expect("a transaction");
    let token = step(&txn, client);
    txn.commit().expect("commit");
    token
}

/// [`command`] as a host adding an audit trail to SQLite would run it: the same rows, and in
/// the same transaction an event row ([`record_event`]).
pub(crate) fn command_with_history(conn: &mut Connection, client: &Client) -> Option<u64> {
    let txn = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .expect("a transaction");
    let token = step(&txn, client);
    record_event(&txn, client, token);
    txn.commit().expect("commit");
    token
}

/// The reference stores' rows for the client's step; the lease token granted, if any.
fn step(txn: &Connection, client: &Client) -> Option<u64> {
    let now = client.now_ms() as i64;
    match client.step() {
        Step::Acquire | Step::Renew => Some(lease(txn, client, now)),
        Step::Release => {
            release(txn, client);
            None
        }
        Step::Enqueue => {
            let added = txn
                .prepare_cached(
                    "INSERT INTO peer_outbox (peer, kind, payload_json, idempotency_key, state,
                     attempts, next_at, created_at) VALUES (?1, 'event', ?2, ?3, 'pending', 0, ?4, ?4)
                     ON CONFLICT (idempotency_key) DO NOTHING",
                )
                .expect("prepare")
                .execute(params![
                    client.peer(),
                    String::from_utf8(client.outbox_payload()).expect("JSON text"),
                    client.outbox_key(),
                    now
                ])
                .expect("enqueue");
            assert_eq!(added, 1, "a fresh key");
            None
        }
        Step::Claim => {
            claim(txn, client, now);
            None
        }
        Step::Ack => {
            let acked = txn
                .prepare_cached(
                    "UPDATE peer_outbox SET state = 'done', claimed_by = NULL
                     WHERE idempotency_key = ?1 AND peer = ?2 AND state = 'claimed' AND claimed_by = ?3",
                )
                .expect("prepare")
                .execute(params![client.outbox_key(), client.peer(), client.claim_token()])
                .expect("ack");
            assert_eq!(acked, 1, "the row claimed");
            None
        }
        Step::Start => {
            let span = span_id(client);
            txn.prepare_cached(
                "INSERT INTO activity_spans (span_id, run_id, parent_span_id, name, kind, origin,
                 session_id, job_name, attrs, started_at, writer, last_heartbeat_at)
                 VALUES (?1, ?2, NULL, 'turn', 'turn', 'session', ?3, NULL, NULL, ?4, ?5, ?4)",
            )
            .expect("prepare")
            .execute(params![
                span,
                client.run(),
                format!("session-{}", client.id),
                now,
                client.holder()
            ])
            .expect("start a span");
            log_change(txn, &client.run(), &span, None);
            None
        }
        Step::Event => {
            span_event(txn, client, now);
            None
        }
        Step::End => {
            end_span(txn, client, now);
            None
        }
        Step::Upsert => {
            upsert_instance(txn, client, now);
            None
        }
        Step::Fuel => {
            txn.prepare_cached(
                "INSERT INTO fuel_ledger (instance, caller, op, calls, fuel, updated_at)
                 VALUES (?1, '', 'read', 1, 7, ?2) ON CONFLICT (instance, caller, op) DO UPDATE SET
                 calls = calls + excluded.calls, fuel = fuel + excluded.fuel,
                 updated_at = excluded.updated_at",
            )
            .expect("prepare")
            .execute(params![client.handle(), now])
            .expect("charge fuel");
            None
        }
    }
}

/// Acquire or renew: read the row, decide as the hub store does, write it back.
fn lease(txn: &Connection, client: &Client, now: i64) -> u64 {
    let current: Option<(String, i64, i64)> = txn
        .prepare_cached(
            "SELECT holder_agent_id, fencing_token, expires_at FROM leases WHERE resource = ?1",
        )
        .expect("prepare")
        .query_row([client.resource()], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()
        .expect("read the lease");
    let token = match (&current, client.step()) {
        (None, Step::Acquire) => 1,
        (Some((holder, token, expires_at)), _)
            if *holder == client.holder() && *expires_at > now =>
        {
            *token as u64
        }
        (Some((_, token, _)), Step::Acquire) => *token as u64 + 1,
        _ => panic!("each client owns its resource"),
    };
    let expires_at = now + TTL_MS as i64;
    let record = format!(
        r#"{{"resource":"{}","holderAgentId":"{}","fencingToken":{token},"acquiredAt":{now},"expiresAt":{expires_at}}}"#,
        client.resource(),
        client.holder()
    );
    txn.prepare_cached(
        "INSERT INTO leases (resource, holder_agent_id, fencing_token, expires_at, record)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (resource) DO UPDATE SET
         holder_agent_id = excluded.holder_agent_id, fencing_token = excluded.fencing_token,
         expires_at = excluded.expires_at, record = excluded.record",
    )
    .expect("prepare")
    .execute(params![
        client.resource(),
        client.holder(),
        token as i64,
        expires_at,
        record
    ])
    .expect("write the lease");
    token
}

fn release(txn: &Connection, client: &Client) {
    let current: Option<(String, i64)> = txn
        .prepare_cached("SELECT holder_agent_id, fencing_token FROM leases WHERE resource = ?1")
        .expect("prepare")
        .query_row([client.resource()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
        .expect("read the lease");
    assert_eq!(
        current,
        Some((client.holder(), client.token as i64)),
        "the client holds its lease"
    );
    txn.prepare_cached("DELETE FROM leases WHERE resource = ?1")
        .expect("prepare")
        .execute([client.resource()])
        .expect("release");
}

/// The peer's claimable rows, oldest first, each marked claimed under the client's token.
fn claim(txn: &Connection, client: &Client, now: i64) {
    let ids: Vec<i64> = txn
        .prepare_cached(
            "SELECT id FROM peer_outbox WHERE peer = ?1 AND (state IN ('pending', 'waiting')
             OR (state = 'claimed' AND claimed_at <= ?2)) ORDER BY id LIMIT ?3",
        )
        .expect("prepare")
        .query_map(
            params![
                client.peer(),
                now - annals::outbox::CLAIM_LEASE_MS as i64,
                1
            ],
            |row| row.get(0),
        )
        .expect("claimable rows")
        .collect::<rusqlite::Result<_>>()
        .expect("claimable rows");
    assert_eq!(ids.len(), 1, "the row enqueued");
    let mut mark = txn
        .prepare_cached(
            "UPDATE peer_outbox SET state = 'claimed', claimed_by = ?1, claimed_at = ?2,
             next_at = NULL WHERE id = ?3",
        )
        .expect("prepare");
    for id in ids {
        mark.execute(params![client.claim_token(), now, id])
            .expect("claim");
    }
}

fn span_id(client: &Client) -> String {
    format!("{}/root", client.run())
}

/// The activity store's change log: the run's next seq, one row.
fn log_change(txn: &Connection, run: &str, span: &str, event_index: Option<i64>) {
    let seq: i64 = txn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM activity_changes WHERE run_id = ?1")
        .expect("prepare")
        .query_row([run], |row| row.get(0))
        .expect("the next seq");
    txn.prepare_cached(
        "INSERT INTO activity_changes (run_id, seq, span_id, event_index) VALUES (?1, ?2, ?3, ?4)",
    )
    .expect("prepare")
    .execute(params![run, seq, span, event_index])
    .expect("log the change");
}

fn span_event(txn: &Connection, client: &Client, now: i64) {
    let span = span_id(client);
    let run: String = txn
        .prepare_cached("SELECT run_id FROM activity_spans WHERE span_id = ?1")
        .expect("prepare")
        .query_row([&span], |row| row.get(0))
        .expect("the span");
    let index: i64 = txn
        .prepare_cached(
            "SELECT COALESCE(MAX(event_index), -1) + 1 FROM activity_events WHERE span_id = ?1",
        )
        .expect("prepare")
        .query_row([&span], |row| row.get(0))
        .expect("the next index");
    txn.prepare_cached(
        "INSERT INTO activity_events (span_id, event_index, ts, event_type, payload)
         VALUES (?1, ?2, ?3, 'tool_call', ?4)",
    )
    .expect("prepare")
    .execute(params![
        span,
        index,
        now,
        r#"{"v":{"tool":"read","path":"README.md"}}"#
    ])
    .expect("append the event");
    log_change(txn, &run, &span, Some(index));
}

/// The write-once end, then the run's rollup, its root being terminal.
fn end_span(txn: &Connection, client: &Client, now: i64) {
    let span = span_id(client);
    let (run, outcome): (String, Option<String>) = txn
        .prepare_cached("SELECT run_id, outcome FROM activity_spans WHERE span_id = ?1")
        .expect("prepare")
        .query_row([&span], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("the span");
    assert!(outcome.is_none(), "ended once");
    txn.prepare_cached(
        "UPDATE activity_spans SET outcome = 'success', outcome_reason = NULL, ended_at = ?1,
         input_tokens = COALESCE(?2, input_tokens), output_tokens = COALESCE(?3, output_tokens)
         WHERE span_id = ?4",
    )
    .expect("prepare")
    .execute(params![now, 1_200, 300, span])
    .expect("end the span");
    log_change(txn, &run, &span, None);
    type SpanRow = (
        String,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<String>,
    );
    let spans: Vec<SpanRow> = txn
        .prepare_cached(
            "SELECT name, started_at, ended_at, input_tokens, output_tokens, outcome
             FROM activity_spans WHERE run_id = ?1 ORDER BY started_at",
        )
        .expect("prepare")
        .query_map([&run], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
            ))
        })
        .expect("the run's spans")
        .collect::<rusqlite::Result<_>>()
        .expect("the run's spans");
    let root = &spans[0];
    txn.prepare_cached(
        "INSERT INTO activity_run_rollups (run_id, origin, name, session_id, started_at,
         ended_at, outcome, duration_ms, span_count, input_tokens, output_tokens, detail_pruned)
         VALUES (?1, 'session', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)
         ON CONFLICT (run_id) DO UPDATE SET ended_at = excluded.ended_at,
         outcome = excluded.outcome, duration_ms = excluded.duration_ms,
         span_count = excluded.span_count, input_tokens = excluded.input_tokens,
         output_tokens = excluded.output_tokens",
    )
    .expect("prepare")
    .execute(params![
        run,
        root.0,
        format!("session-{}", client.id),
        root.1,
        root.2,
        root.5,
        root.2.unwrap_or(root.1) - root.1,
        spans.len() as i64,
        root.3,
        root.4
    ])
    .expect("roll the run up");
}

/// Insert or update, as the host's registry does: read the row, write only what changed.
fn upsert_instance(txn: &Connection, client: &Client, now: i64) {
    let tree: Option<Option<String>> = txn
        .prepare_cached("SELECT tree FROM instances WHERE handle = ?1")
        .expect("prepare")
        .query_row([client.handle()], |row| row.get(0))
        .optional()
        .expect("read the instance");
    match tree {
        None => {
            txn.prepare_cached(
                "INSERT INTO instances (handle, store, tree, created_at) VALUES (?1, ?2, ?3, ?4)",
            )
            .expect("prepare")
            .execute(params![
                client.handle(),
                format!("/var/lib/agents/{}.db", client.handle()),
                client.tree(),
                now
            ])
            .expect("add the instance");
        }
        Some(tree) => {
            assert_ne!(tree, Some(client.tree()), "a new tree each pass");
            txn.prepare_cached("UPDATE instances SET tree = ?1 WHERE handle = ?2")
                .expect("prepare")
                .execute(params![client.tree(), client.handle()])
                .expect("update the instance");
        }
    }
}

/// `clients` OS threads each running the cycle, each command its own durable transaction;
/// with `shared`, on one connection behind a lock, else on a connection each.
pub(crate) fn mixed_sqlite(
    path: &Path,
    clients: usize,
    shared: bool,
    run_for: Duration,
) -> MixedRun {
    let one = Arc::new(Mutex::new(open(path)));
    let (commands, elapsed) = in_threads(clients, run_for, |id| {
        let one = Arc::clone(&one);
        let mut own = (!shared).then(|| open(path));
        let mut client = Client::new(id);
        move || {
            let token = match own.as_mut() {
                Some(conn) => command(conn, &client),
                None => command(&mut one.lock().expect("the connection"), &client),
            };
            client.advance(token);
        }
    });
    // Fold the WAL into the database so the file's size is the data's.
    let conn = one.lock().expect("the connection");
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").ok();
    MixedRun {
        per_s: per_second(commands, elapsed),
        commands,
        commits: commands,
    }
}

/// The size of a new file with the schema, taken off the mixed runs' files.
pub(crate) fn empty_bytes_sqlite(path: &Path) -> f64 {
    let conn = open(path);
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").ok();
    drop(conn);
    crate::samples::disk_bytes(path)
}

/// The step's event: its stream, kind and JSON payload (what happened, with what the decision
/// gave), the stream's next version and the hash chained to the last row's.
fn record_event(txn: &Connection, client: &Client, token: Option<u64>) {
    let now = client.now_ms() as i64;
    let (stream, kind, payload) = match client.step() {
        Step::Acquire | Step::Renew => (
            format!("lease:{}", client.resource()),
            "lease.granted",
            serde_json::json!({"resource": client.resource(), "holder": client.holder(),
                "token": token, "ttl_ms": TTL_MS, "expires_at": now + TTL_MS as i64}),
        ),
        Step::Release => (
            format!("lease:{}", client.resource()),
            "lease.released",
            serde_json::json!({"resource": client.resource(), "holder": client.holder(),
                "token": client.token}),
        ),
        Step::Enqueue => (
            format!("outbox:{}", client.peer()),
            "outbox.enqueued",
            serde_json::json!({"key": client.outbox_key(), "peer": client.peer(), "kind": "event",
                "payload": String::from_utf8(client.outbox_payload()).expect("JSON text")}),
        ),
        Step::Claim => (
            format!("outbox:{}", client.peer()),
            "outbox.claimed",
            serde_json::json!({"peer": client.peer(), "token": client.claim_token(),
                "keys": [client.outbox_key()], "lease_ms": annals::outbox::CLAIM_LEASE_MS}),
        ),
        Step::Ack => (
            format!("outbox:{}", client.peer()),
            "outbox.acked",
            serde_json::json!({"peer": client.peer(), "key": client.outbox_key(),
                "token": client.claim_token()}),
        ),
        Step::Start => (
            format!("run:{}", client.run()),
            "span.started",
            serde_json::json!({"run": client.run(), "span": span_id(client), "name": "turn",
                "kind": "turn", "origin": "session", "session_id": format!("session-{}", client.id),
                "writer": client.holder()}),
        ),
        Step::Event => (
            format!("run:{}", client.run()),
            "span.event",
            serde_json::json!({"run": client.run(), "span": span_id(client),
                "event_type": "tool_call", "payload": {"tool": "read", "path": "README.md"}}),
        ),
        Step::End => (
            format!("run:{}", client.run()),
            "span.ended",
            serde_json::json!({"run": client.run(), "span": span_id(client),
                "outcome": "success", "input_tokens": 1_200, "output_tokens": 300}),
        ),
        Step::Upsert => (
            format!("instance:{}", client.handle()),
            "instance.upserted",
            serde_json::json!({"handle": client.handle(),
                "store": format!("/var/lib/agents/{}.db", client.handle()), "tree": client.tree()}),
        ),
        Step::Fuel => (
            format!("fuel:{}", client.handle()),
            "fuel.recorded",
            serde_json::json!({"instance": client.handle(), "caller": "", "op": "read",
                "fuel": 7}),
        ),
    };
    let payload = serde_json::to_vec(&payload).expect("JSON");
    let version: i64 = txn
        .prepare_cached("SELECT COALESCE(MAX(version), 0) + 1 FROM events WHERE stream = ?1")
        .expect("prepare")
        .query_row([&stream], |row| row.get(0))
        .expect("the stream's next version");
    let previous: Option<Vec<u8>> = txn
        .prepare_cached("SELECT hash FROM events ORDER BY position DESC LIMIT 1")
        .expect("prepare")
        .query_row([], |row| row.get(0))
        .optional()
        .expect("the last event's hash");
    let mut hasher = blake3::Hasher::new();
    hasher.update(previous.as_deref().unwrap_or(&[0; 32]));
    for field in [stream.as_bytes(), kind.as_bytes(), &payload] {
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field);
    }
    hasher.update(&version.to_le_bytes());
    hasher.update(&now.to_le_bytes());
    txn.prepare_cached(
        "INSERT INTO events (stream, version, kind, at, payload, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .expect("prepare")
    .execute(params![
        stream,
        version,
        kind,
        now,
        payload,
        hasher.finalize().as_bytes().as_slice()
    ])
    .expect("append the event");
}

/// The mean payload length of the history's event rows.
pub(crate) fn mean_event_payload(conn: &Connection) -> f64 {
    conn.query_row("SELECT AVG(LENGTH(payload)) FROM events", [], |row| {
        row.get(0)
    })
    .expect("the payloads' mean length")
}
