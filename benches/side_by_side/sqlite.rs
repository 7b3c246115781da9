//! The SQLite contender of the lease work: an event row chained by hash and the lease row.

use std::path::Path;

use annals::NewEvent;
use annals::command::DomainEvent;
use annals::leases::events::LeaseEvent;

use crate::work::holder;
use crate::{EPOCH_MS, TTL_MS};

/// A SQLite store doing what the reference stores do: the event row with its hash chained to
/// the previous one, and the lease row updated, in one transaction.
pub(crate) struct Sqlite {
    pub(crate) conn: rusqlite::Connection,
    pub(crate) prev: [u8; 32],
    pub(crate) position: i64,
}

impl Sqlite {
    pub(crate) fn open(path: &Path) -> Sqlite {
        let conn = rusqlite::Connection::open(path).expect("a SQLite file");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("FULL");
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS events (
                 position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
                 kind TEXT NOT NULL, at_ms INTEGER NOT NULL, payload BLOB NOT NULL,
                 prev BLOB NOT NULL, hash BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS leases (
                 resource TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
                 acquired_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL);
             CREATE UNIQUE INDEX IF NOT EXISTS events_stream ON events (stream, version);",
        )
        .expect("the schema");
        Sqlite {
            conn,
            prev: [0; 32],
            position: 0,
        }
    }

    /// Appends one event as version `version` of `stream` and upserts its lease row, inside
    /// the caller's transaction.
    pub(crate) fn event(
        conn: &rusqlite::Connection,
        prev: &mut [u8; 32],
        position: &mut i64,
        stream: &str,
        version: i64,
        event: &NewEvent,
        lease: (&str, &str, u64, u64),
    ) {
        let hash = chain_hash(
            prev,
            *position,
            stream,
            &event.kind,
            event.at_ms,
            &event.payload,
        );
        conn.prepare_cached(
            "INSERT INTO events (position, stream, version, kind, at_ms, payload, prev, hash)
             VALUES (?1, ?2, ?8, ?3, ?4, ?5, ?6, ?7)",
        )
        .expect("prepare")
        .execute(rusqlite::params![
            *position,
            stream,
            event.kind,
            event.at_ms as i64,
            event.payload,
            &prev[..],
            &hash[..],
            version
        ])
        .expect("insert the event");
        let (resource, holder, token, expires_at_ms) = lease;
        conn.prepare_cached(
            "INSERT INTO leases (resource, holder, token, acquired_at_ms, expires_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (resource) DO UPDATE SET holder = excluded.holder,
                 token = max(token, excluded.token), expires_at_ms = excluded.expires_at_ms",
        )
        .expect("prepare")
        .execute(rusqlite::params![
            resource,
            holder,
            token as i64,
            event.at_ms as i64,
            expires_at_ms as i64
        ])
        .expect("upsert the lease");
        *prev = hash;
        *position += 1;
    }

    /// One lease command in its own durable transaction: read the lease row, decide, append.
    pub(crate) fn command(&mut self, task: usize, step: u64) {
        let txn = self.conn.transaction().expect("a transaction");
        Sqlite::command_in(&txn, &mut self.prev, &mut self.position, task, step);
        txn.commit().expect("commit");
    }

    /// One lease command inside the caller's transaction, its event chained after `prev` at
    /// `position`: read the lease row, decide, append.
    pub(crate) fn command_in(
        txn: &rusqlite::Transaction<'_>,
        prev: &mut [u8; 32],
        position: &mut i64,
        task: usize,
        step: u64,
    ) {
        let resource = format!("resource-{task}");
        let holder = holder(task);
        let now_ms = EPOCH_MS + step;
        let current: Option<(String, i64)> = txn
            .prepare_cached("SELECT holder, token FROM leases WHERE resource = ?1")
            .expect("prepare")
            .query_row([&resource], |row| Ok((row.get(0)?, row.get(1)?)))
            .ok();
        let token = match current {
            Some((ref h, token)) if *h == holder => token as u64,
            Some((_, token)) => token as u64 + 1,
            None => 1,
        };
        let event = LeaseEvent::Renewed(annals::leases::events::Renewed {
            resource: resource.clone(),
            token,
            expires_at_ms: now_ms + TTL_MS,
            labels: None,
        })
        .to_new_event(now_ms);
        // Each task's stream holds its commands, but only the position is counted here.
        let version = *position;
        Sqlite::event(
            txn,
            prev,
            position,
            &format!("lease/{resource}"),
            version,
            &event,
            (&resource, &holder, token, now_ms + TTL_MS),
        );
    }
}

/// An event row's hash: the previous row's, chained with this row's fields and its payload's
/// hash.
pub(crate) fn chain_hash(
    prev: &[u8; 32],
    position: i64,
    stream: &str,
    kind: &str,
    at_ms: u64,
    payload: &[u8],
) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(prev);
    hasher.update(&position.to_le_bytes());
    hasher.update(stream.as_bytes());
    hasher.update(kind.as_bytes());
    hasher.update(&at_ms.to_le_bytes());
    hasher.update(blake3::hash(payload).as_bytes());
    *hasher.finalize().as_bytes()
}
