//! Outbox reads from the projection tables: no replay, usable on a snapshot or inside a
//! write (where commands decide). Owns the row type, the table definitions and the scans
//! over the index tables; never writes.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::log::read::Direction;
use crate::projection::key::KeyCodec;
use crate::projection::table::{Table, TableSource};

/// The token a peer's claim is fenced with, chosen by the caller (fresh for every claim).
/// Only an ack under the same token (and from the same peer) marks the rows done.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClaimToken(pub String);

/// Where a row stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutboxState {
    /// The push lane may push it once due; the peer's pull may claim it.
    Pending,
    /// Only the peer's own pull may take it.
    Waiting,
    /// A pull holds it under a claim token until the claim lapses.
    Claimed,
    /// Delivered (pushed, or acked by the pull that claimed it).
    Done,
    /// Given up on.
    Expired,
}

impl OutboxState {
    /// Every state, in code order.
    pub const ALL: [OutboxState; 5] = [
        OutboxState::Pending,
        OutboxState::Waiting,
        OutboxState::Claimed,
        OutboxState::Done,
        OutboxState::Expired,
    ];

    /// The state's code in the `outbox.by_state` index key.
    pub fn code(self) -> u8 {
        match self {
            OutboxState::Pending => 0,
            OutboxState::Waiting => 1,
            OutboxState::Claimed => 2,
            OutboxState::Done => 3,
            OutboxState::Expired => 4,
        }
    }

    /// Whether the row is still owed to its peer (pending, waiting or claimed).
    pub fn is_open(self) -> bool {
        matches!(
            self,
            OutboxState::Pending | OutboxState::Waiting | OutboxState::Claimed
        )
    }

    /// Its name, as in the reference and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Waiting => "waiting",
            OutboxState::Claimed => "claimed",
            OutboxState::Done => "done",
            OutboxState::Expired => "expired",
        }
    }
}

impl std::fmt::Display for OutboxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A peer's claim on a row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Claim {
    /// The token it is fenced with.
    pub token: ClaimToken,
    /// When it was taken.
    pub claimed_at_ms: u64,
    /// When it lapses: live while `now_ms < expires_at_ms`.
    pub expires_at_ms: u64,
}

impl Claim {
    /// Whether it has lapsed at `now_ms` (so the row may be claimed again).
    pub fn has_lapsed(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// One row of the outbox: something owed to a peer, keyed by its idempotency key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutboxRow {
    /// The idempotency key.
    pub key: String,
    /// The peer it is owed to; only that peer may claim and ack it.
    pub peer: String,
    /// What kind of row it is (empty for a row enqueued before rows had kinds).
    pub kind: String,
    /// Its place in enqueue order: due rows, claims and listings go in this order.
    pub enqueue_id: u64,
    /// What is delivered.
    #[serde(serialize_with = "crate::event::readable_bytes")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub payload: Vec<u8>,
    /// Where it stands.
    pub state: OutboxState,
    /// Failed pushes so far.
    pub attempts: u32,
    /// When the push lane may push it: set while `pending`, `None` otherwise.
    pub next_at_ms: Option<u64>,
    /// When a push of it first failed.
    pub first_failed_at_ms: Option<u64>,
    /// What the last failed push reported.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at_ms: u64,
    /// The claim on it: set exactly while `claimed`.
    pub claim: Option<Claim>,
    /// Every token it has been claimed under, oldest first: a row is never claimed twice
    /// under one token, so an ack under a token can only answer that one claim.
    pub claim_tokens: Vec<ClaimToken>,
}

impl OutboxRow {
    /// Whether its peer's pull may claim it at `now_ms`: `pending`, `waiting`, or `claimed`
    /// under a lapsed claim.
    pub fn is_claimable(&self, now_ms: u64) -> bool {
        match self.state {
            OutboxState::Pending | OutboxState::Waiting => true,
            OutboxState::Claimed => self.claim.as_ref().is_none_or(|c| c.has_lapsed(now_ms)),
            OutboxState::Done | OutboxState::Expired => false,
        }
    }
}

/// `outbox.rows`: key → row.
pub(crate) const ROWS: Table<String, OutboxRow> = Table::new("outbox.rows");
/// `outbox.due`: (enqueue_id, key) → next_at_ms for exactly the `pending` rows, in enqueue
/// order as the reference's `dueRows` reads them.
pub(crate) const DUE: Table<(u64, String), u64> = Table::new("outbox.due");
/// `outbox.by_peer`: (peer, enqueue_id, key) for exactly the open rows (pending, waiting,
/// claimed), in enqueue order per peer.
pub(crate) const BY_PEER: Table<(String, u64, String), ()> = Table::new("outbox.by_peer");
/// `outbox.by_enqueue`: enqueue_id → key for every row, in enqueue order.
pub(crate) const BY_ENQUEUE: Table<u64, String> = Table::new("outbox.by_enqueue");
/// `outbox.by_state`: (state code, created_at_ms, key) for every row, oldest first per state.
pub(crate) const BY_STATE: Table<(u8, u64, String), ()> = Table::new("outbox.by_state");

/// The names of every outbox table.
pub const TABLES: &[&str] = &[
    "outbox.rows",
    "outbox.due",
    "outbox.by_peer",
    "outbox.by_state",
    "outbox.by_enqueue",
];

/// Rows read per page when a scan filters as it goes.
const PAGE_ROWS: usize = 256;

/// Visits the rows of `table` with `from <= key < to` in key order, a page at a time, until
/// `visit` returns `false`. For scans that skip rows, so a fixed limit cannot bound them.
pub(crate) fn visit_between<K, V>(
    table: Table<K, V>,
    source: &(impl TableSource + ?Sized),
    from: K,
    to: &K,
    mut visit: impl FnMut(K, V) -> Result<bool>,
) -> Result<()>
where
    K: KeyCodec + Clone + PartialEq,
    V: Serialize + serde::de::DeserializeOwned,
{
    let mut from = from;
    let mut seen: Option<K> = None;
    loop {
        let page = table.scan_between(source, &from, to, Direction::Forward, PAGE_ROWS)?;
        let full = page.len() == PAGE_ROWS;
        let mut last = None;
        for (key, value) in page {
            last = Some(key.clone());
            // Each page after the first starts at the last key of the one before.
            if seen.as_ref() == Some(&key) {
                continue;
            }
            if !visit(key, value)? {
                return Ok(());
            }
        }
        match last {
            Some(last) if full => {
                from = last.clone();
                seen = Some(last);
            }
            _ => return Ok(()),
        }
    }
}

/// The row keyed `key`, in whatever state.
pub fn row(state: &dyn TableSource, key: &str) -> Result<Option<OutboxRow>> {
    ROWS.get(state, &key.to_owned())
}

/// Up to `limit` rows in key order, in every state.
pub fn rows(state: &dyn TableSource, limit: usize) -> Result<Vec<OutboxRow>> {
    Ok(ROWS
        .scan_prefix(state, &(), Direction::Forward, limit)?
        .into_iter()
        .map(|(_, row)| row)
        .collect())
}

/// Up to `limit` rows in enqueue order, in every state.
pub fn rows_by_enqueue(state: &dyn TableSource, limit: usize) -> Result<Vec<OutboxRow>> {
    let entries = BY_ENQUEUE.scan_prefix(state, &(), Direction::Forward, limit)?;
    let mut rows = Vec::with_capacity(entries.len());
    for (_, key) in entries {
        rows.push(indexed_row(state, &key)?);
    }
    Ok(rows)
}

/// The enqueue id the next row takes: one above the highest a row has (1 for the first).
pub fn next_enqueue_id(state: &dyn TableSource) -> Result<u64> {
    let last = BY_ENQUEUE.scan_prefix(state, &(), Direction::Backward, 1)?;
    let highest = last.first().map_or(0, |(id, _)| *id);
    crate::validate::next_counter("enqueue_id", highest)
}

/// The rows the push lane may push at `now_ms`: `pending` with `next_at_ms <= now_ms`, in
/// enqueue order, at most `limit` (the reference's `dueRows`). `waiting` rows have no
/// `next_at_ms`: only the peer's pull takes them.
pub fn due(state: &dyn TableSource, now_ms: u64, limit: usize) -> Result<Vec<OutboxRow>> {
    let mut due = Vec::new();
    if limit == 0 {
        return Ok(due);
    }
    // The index is in enqueue order; rows still backing off are skipped, as the
    // reference's `WHERE next_at <= now ORDER BY id` skips them.
    let (from, to) = ((0, String::new()), (u64::MAX, String::new()));
    visit_between(DUE, state, from, &to, |(_, key), next_at_ms| {
        if next_at_ms <= now_ms {
            due.push(indexed_row(state, &key)?);
        }
        Ok(due.len() < limit)
    })?;
    Ok(due)
}

/// The `pending` rows owed to `peer` that are new or due at `now_ms` (never failed, or
/// past their backoff), in enqueue order, at most `limit`: what a push at enqueue sends.
pub fn pending_for(
    state: &dyn TableSource,
    peer: &str,
    now_ms: u64,
    limit: usize,
) -> Result<Vec<OutboxRow>> {
    open_rows_for(state, peer, limit, |row| {
        row.state == OutboxState::Pending
            && (row.attempts == 0 || row.next_at_ms.is_some_and(|at| at <= now_ms))
    })
}

/// The open rows (pending, waiting, claimed) owed to `peer`, in enqueue order, at most
/// `limit`.
pub fn open_for(state: &dyn TableSource, peer: &str, limit: usize) -> Result<Vec<OutboxRow>> {
    open_rows_for(state, peer, limit, |_| true)
}

/// Up to `limit` open rows of `peer` that pass `keep`, in enqueue order.
pub(crate) fn open_rows_for(
    state: &dyn TableSource,
    peer: &str,
    limit: usize,
    mut keep: impl FnMut(&OutboxRow) -> bool,
) -> Result<Vec<OutboxRow>> {
    let mut found = Vec::new();
    if limit == 0 {
        return Ok(found);
    }
    let (from, to) = peer_range(peer);
    visit_between(BY_PEER, state, from, &to, |(_, _, key), ()| {
        let row = indexed_row(state, &key)?;
        if keep(&row) {
            found.push(row);
        }
        Ok(found.len() < limit)
    })?;
    Ok(found)
}

/// The `by_peer` keys of `peer`: from its first possible entry to the first entry of the
/// next peer (`peer` followed by NUL is the next string in order).
fn peer_range(peer: &str) -> ((String, u64, String), (String, u64, String)) {
    (
        (peer.to_owned(), 0, String::new()),
        (format!("{peer}\0"), 0, String::new()),
    )
}

/// The `by_state` keys of `state` created before `before_ms`.
pub(crate) fn state_range(
    state: OutboxState,
    before_ms: u64,
) -> ((u8, u64, String), (u8, u64, String)) {
    (
        (state.code(), 0, String::new()),
        (state.code(), before_ms, String::new()),
    )
}

/// The row an index entry points at; an entry without its row is corruption.
pub(crate) fn indexed_row(state: &dyn TableSource, key: &str) -> Result<OutboxRow> {
    row(state, key)?.ok_or_else(|| crate::error::Error::CorruptProjection {
        table: "outbox.rows".into(),
        fault: crate::error::TableFault::RowMissing {
            key: format!("{key:?}"),
        },
    })
}

/// Every row of the outbox projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('outbox')` gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutboxTables {
    /// Every row, by key.
    pub rows: Vec<OutboxRowShown>,
    /// The rows the push lane may push, by enqueue order, with when.
    pub due: Vec<DueRow>,
    /// The open rows of each peer, in enqueue order.
    pub by_peer: Vec<PeerRow>,
    /// Every row by its state, oldest first per state.
    pub by_state: Vec<StateRow>,
    /// Every row in enqueue order.
    pub by_enqueue: Vec<EnqueuedRow>,
}

/// An outbox row as the state shows it: its payload in hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutboxRowShown {
    /// The idempotency key.
    pub key: String,
    /// The peer it is owed to.
    pub peer: String,
    /// What kind of row it is.
    pub kind: String,
    /// Its place in enqueue order.
    pub enqueue_id: u64,
    /// What is delivered, as stored (an envelope, for a personal one), in lower-case hex.
    pub payload_hex: String,
    /// Where it stands.
    pub state: OutboxState,
    /// Failed pushes so far.
    pub attempts: u32,
    /// When the push lane may push it.
    pub next_at_ms: Option<u64>,
    /// When a push of it first failed.
    pub first_failed_at_ms: Option<u64>,
    /// What the last failed push reported.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at_ms: u64,
    /// The claim on it.
    pub claim: Option<Claim>,
    /// Every token it has been claimed under, oldest first.
    pub claim_tokens: Vec<ClaimToken>,
}

/// A row the push lane may push, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DueRow {
    /// Its place in enqueue order.
    pub enqueue_id: u64,
    /// Its key.
    pub key: String,
    /// When it may be pushed.
    pub next_at_ms: u64,
}

/// An open row of a peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PeerRow {
    /// The peer.
    pub peer: String,
    /// Its place in enqueue order.
    pub enqueue_id: u64,
    /// Its key.
    pub key: String,
}

/// A row by its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StateRow {
    /// The state's code, as the index stores it.
    pub state: u8,
    /// When the row was enqueued.
    pub created_at_ms: u64,
    /// Its key.
    pub key: String,
}

/// A row in enqueue order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EnqueuedRow {
    /// Its place in enqueue order.
    pub enqueue_id: u64,
    /// Its key.
    pub key: String,
}

/// Every row of the outbox projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<OutboxTables> {
    let all = Direction::Forward;
    let rows = rows(state, usize::MAX)?
        .into_iter()
        .map(|row| OutboxRowShown {
            payload_hex: crate::hash::hex(&row.payload),
            key: row.key,
            peer: row.peer,
            kind: row.kind,
            enqueue_id: row.enqueue_id,
            state: row.state,
            attempts: row.attempts,
            next_at_ms: row.next_at_ms,
            first_failed_at_ms: row.first_failed_at_ms,
            last_error: row.last_error,
            created_at_ms: row.created_at_ms,
            claim: row.claim,
            claim_tokens: row.claim_tokens,
        })
        .collect();
    let due = DUE
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((enqueue_id, key), next_at_ms)| DueRow {
            enqueue_id,
            key,
            next_at_ms,
        })
        .collect();
    let by_peer = BY_PEER
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((peer, enqueue_id, key), ())| PeerRow {
            peer,
            enqueue_id,
            key,
        })
        .collect();
    let by_enqueue = BY_ENQUEUE
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|(enqueue_id, key)| EnqueuedRow { enqueue_id, key })
        .collect();
    let by_state = BY_STATE
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((state, created_at_ms, key), ())| StateRow {
            state,
            created_at_ms,
            key,
        })
        .collect();
    Ok(OutboxTables {
        rows,
        due,
        by_peer,
        by_state,
        by_enqueue,
    })
}

/// Every row of the outbox projection as JSON, in key order: what `annals state` prints.
/// Payloads are shown as lower-case hex.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}
