'use strict'
// The reference stores' command mix through the binding and through better-sqlite3, in one
// run, every commit durable: the cycle of the Rust side-by-side bench
// (benches/side_by_side/mixed.rs), eleven commands: a lease acquired, renewed and released
// under its fencing token; an outbox row enqueued, claimed and acked; a span started, given an
// event and ended (its run rolled up); a registry upsert; a fuel charge. annals one command per
// transaction, and through the Writer with 8 and 64 concurrent clients; SQLite with the
// reference stores' SQL (mixed_sqlite.rs's) in WAL mode with synchronous=FULL, one BEGIN
// IMMEDIATE transaction per command (the way those stores run; concurrency does not help one
// connection). Prints commands per second and the ratios; ROUNDS rounds, interleaved, medians.
//
//   cd bindings/node && npm run build && cd bench && npm ci && npm run bench
//   CYCLES=400 ROUNDS=3 npm run bench
//   HISTORY=1 npm run bench     (also appends the figures to docs/performance-history.csv)
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const Database = require('better-sqlite3')
const { Store } = require('../lib.js')

const CYCLES = Number(process.env.CYCLES || 100)
const ROUNDS = Number(process.env.ROUNDS || 3)
const TTL = 30_000
const CLAIM_LEASE_MS = 60_000
const EPOCH_MS = 1_767_225_600_000

const SCHEMA = `
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
  updated_at INTEGER NOT NULL, PRIMARY KEY (instance, caller, op)) WITHOUT ROWID;`

const CYCLE = ['acquire', 'enqueue', 'start', 'renew', 'event', 'claim', 'upsert', 'ack', 'end', 'fuel', 'release']

function fresh(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `annals-bench-${name}-`))
  return { dir, file: path.join(dir, 'db') }
}

/** A client's place in the cycle: each works on entities of its own, so every command succeeds. */
class Client {
  constructor(id) {
    this.id = id
    this.done = 0
    this.token = 0n
  }
  get step() { return CYCLE[this.done % CYCLE.length] }
  get pass() { return Math.floor(this.done / CYCLE.length) }
  get now() { return EPOCH_MS + this.done }
  get resource() { return `mixed-${this.id}` }
  get holder() { return `holder-${this.id}` }
  get peer() { return `peer-${this.id}` }
  get key() { return `mixed-${this.id}-${this.pass}` }
  get claimToken() { return `claim-${this.id}-${this.pass}` }
  get run() { return `run-${this.id}-${this.pass}` }
  get span() { return `${this.run}/root` }
  get handle() { return `agent-${this.id}` }
  get tree() { return `tree-${this.pass}` }
  get payload() {
    const head = `{"client":${this.id},"pass":${this.pass},"pad":"`
    return head + 'x'.repeat(200 - 2 - head.length) + '"}'
  }
  /** This step's command, as the binding takes it. */
  command() {
    const nowMs = this.now
    switch (this.step) {
      case 'acquire': return { type: 'acquire', resource: this.resource, holder: this.holder, ttlMs: TTL, nowMs }
      case 'renew': return { type: 'renew', resource: this.resource, holder: this.holder, token: this.token, ttlMs: TTL, nowMs }
      case 'release': return { type: 'release', resource: this.resource, holder: this.holder, token: this.token, nowMs }
      case 'enqueue': return { type: 'enqueue', key: this.key, peer: this.peer, kind: 'event', payload: Buffer.from(this.payload), nowMs }
      case 'claim': return { type: 'claim', peer: this.peer, token: this.claimToken, limit: 1, leaseMs: CLAIM_LEASE_MS, nowMs }
      case 'ack': return { type: 'ack', peer: this.peer, acks: [{ key: this.key, token: this.claimToken }], nowMs }
      case 'start': return { type: 'start', run: this.run, span: this.span, name: 'turn', kind: 'turn', origin: 'session', sessionId: `session-${this.id}`, writer: this.holder, nowMs }
      case 'event': return { type: 'event', run: this.run, span: this.span, eventType: 'tool_call', payload: '{"tool":"read","path":"README.md"}', nowMs }
      case 'end': return { type: 'end', run: this.run, span: this.span, outcome: 'success', usage: { inputTokens: 1200, outputTokens: 300 }, nowMs }
      case 'upsert': return { type: 'upsert', handle: this.handle, fields: { store: `/var/lib/agents/${this.handle}.db`, tree: this.tree }, nowMs }
      case 'fuel': return { type: 'fuel', instance: this.handle, caller: 'host', op: 'read', fuel: 7, nowMs }
    }
    throw new Error(`no step ${this.step}`)
  }
  /** After a command: a lease grant's token is the one to renew and release. */
  advance(outcome) {
    if (outcome && outcome.type === 'granted') this.token = outcome.lease.token
    else if (outcome && outcome.type === 'refused') throw new Error(`${this.step} refused: ${JSON.stringify(outcome)}`)
    this.done++
  }
}

/** The cycle in SQL, as mixed_sqlite.rs runs it: rows updated in place. */
function sqliteSteps(db) {
  const q = (sql) => db.prepare(sql)
  const readLease = q('SELECT holder_agent_id, fencing_token, expires_at FROM leases WHERE resource = ?')
  const writeLease = q(`INSERT INTO leases (resource, holder_agent_id, fencing_token, expires_at, record)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (resource) DO UPDATE SET holder_agent_id = excluded.holder_agent_id,
    fencing_token = excluded.fencing_token, expires_at = excluded.expires_at, record = excluded.record`)
  const deleteLease = q('DELETE FROM leases WHERE resource = ?')
  const enqueue = q(`INSERT INTO peer_outbox (peer, kind, payload_json, idempotency_key, state, attempts,
    next_at, created_at) VALUES (?, 'event', ?, ?, 'pending', 0, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`)
  const claimable = q(`SELECT id FROM peer_outbox WHERE peer = ? AND (state IN ('pending', 'waiting')
    OR (state = 'claimed' AND claimed_at <= ?)) ORDER BY id LIMIT 1`)
  const mark = q(`UPDATE peer_outbox SET state = 'claimed', claimed_by = ?, claimed_at = ?, next_at = NULL WHERE id = ?`)
  const ack = q(`UPDATE peer_outbox SET state = 'done', claimed_by = NULL
    WHERE idempotency_key = ? AND peer = ? AND state = 'claimed' AND claimed_by = ?`)
  const startSpan = q(`INSERT INTO activity_spans (span_id, run_id, parent_span_id, name, kind, origin,
    session_id, job_name, attrs, started_at, writer, last_heartbeat_at)
    VALUES (?, ?, NULL, 'turn', 'turn', 'session', ?, NULL, NULL, ?, ?, ?)`)
  const nextSeq = q('SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM activity_changes WHERE run_id = ?')
  const logChange = q('INSERT INTO activity_changes (run_id, seq, span_id, event_index) VALUES (?, ?, ?, ?)')
  const runOf = q('SELECT run_id, outcome FROM activity_spans WHERE span_id = ?')
  const nextIndex = q('SELECT COALESCE(MAX(event_index), -1) + 1 AS i FROM activity_events WHERE span_id = ?')
  const addEvent = q(`INSERT INTO activity_events (span_id, event_index, ts, event_type, payload) VALUES (?, ?, ?, 'tool_call', ?)`)
  const endSpan = q(`UPDATE activity_spans SET outcome = 'success', outcome_reason = NULL, ended_at = ?,
    input_tokens = COALESCE(?, input_tokens), output_tokens = COALESCE(?, output_tokens) WHERE span_id = ?`)
  const runSpans = q(`SELECT name, started_at, ended_at, input_tokens, output_tokens, outcome
    FROM activity_spans WHERE run_id = ? ORDER BY started_at`)
  const rollup = q(`INSERT INTO activity_run_rollups (run_id, origin, name, session_id, started_at,
    ended_at, outcome, duration_ms, span_count, input_tokens, output_tokens, detail_pruned)
    VALUES (?, 'session', ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
    ON CONFLICT (run_id) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome,
    duration_ms = excluded.duration_ms, span_count = excluded.span_count,
    input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens`)
  const readInstance = q('SELECT tree FROM instances WHERE handle = ?')
  const addInstance = q('INSERT INTO instances (handle, store, tree, created_at) VALUES (?, ?, ?, ?)')
  const setTree = q('UPDATE instances SET tree = ? WHERE handle = ?')
  const fuel = q(`INSERT INTO fuel_ledger (instance, caller, op, calls, fuel, updated_at)
    VALUES (?, '', 'read', 1, 7, ?) ON CONFLICT (instance, caller, op) DO UPDATE SET
    calls = calls + excluded.calls, fuel = fuel + excluded.fuel, updated_at = excluded.updated_at`)
  const change = (run, span, index) => logChange.run(run, nextSeq.get(run).seq, span, index)
  const lease = (c) => {
    const row = readLease.get(c.resource)
    let token
    if (!row) token = 1
    else if (row.holder_agent_id === c.holder && row.expires_at > c.now) token = row.fencing_token
    else token = row.fencing_token + 1
    const expires = c.now + TTL
    writeLease.run(c.resource, c.holder, token, expires,
      JSON.stringify({ resource: c.resource, holderAgentId: c.holder, fencingToken: token, acquiredAt: c.now, expiresAt: expires }))
    return { type: 'granted', lease: { token: BigInt(token) } }
  }
  const steps = {
    acquire: lease,
    renew: lease,
    release: (c) => {
      const row = readLease.get(c.resource)
      if (!row || BigInt(row.fencing_token) !== c.token) throw new Error('the client holds its lease')
      deleteLease.run(c.resource)
    },
    enqueue: (c) => enqueue.run(c.peer, c.payload, c.key, c.now, c.now),
    claim: (c) => mark.run(c.claimToken, c.now, claimable.get(c.peer, c.now - CLAIM_LEASE_MS).id),
    ack: (c) => {
      if (ack.run(c.key, c.peer, c.claimToken).changes !== 1) throw new Error('the row claimed')
    },
    start: (c) => {
      startSpan.run(c.span, c.run, `session-${c.id}`, c.now, c.holder, c.now)
      change(c.run, c.span, null)
    },
    event: (c) => {
      const { run_id: run } = runOf.get(c.span)
      const { i } = nextIndex.get(c.span)
      addEvent.run(c.span, i, c.now, '{"v":{"tool":"read","path":"README.md"}}')
      change(run, c.span, i)
    },
    end: (c) => {
      const { run_id: run, outcome } = runOf.get(c.span)
      if (outcome !== null) throw new Error('ended once')
      endSpan.run(c.now, 1200, 300, c.span)
      change(run, c.span, null)
      const spans = runSpans.all(run)
      const root = spans[0]
      rollup.run(run, root.name, `session-${c.id}`, root.started_at, root.ended_at, root.outcome,
        (root.ended_at ?? root.started_at) - root.started_at, spans.length, root.input_tokens, root.output_tokens)
    },
    upsert: (c) => {
      const row = readInstance.get(c.handle)
      if (!row) addInstance.run(c.handle, `/var/lib/agents/${c.handle}.db`, c.tree, c.now)
      else setTree.run(c.tree, c.handle)
    },
    fuel: (c) => fuel.run(c.handle, c.now),
  }
  const transactions = Object.fromEntries(Object.entries(steps).map(([name, step]) => [name, db.transaction(step)]))
  return (c) => transactions[c.step].immediate(c)
}

function sqlite() {
  const { dir, file } = fresh('sqlite')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 120000')
  db.exec(SCHEMA)
  const step = sqliteSteps(db)
  const client = new Client(0)
  const started = process.hrtime.bigint()
  for (let n = 0; n < CYCLES * CYCLE.length; n++) client.advance(step(client))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return client.done / seconds
}

function annalsSequential() {
  const { dir, file } = fresh('annals')
  const store = Store.open(file)
  const client = new Client(0)
  const started = process.hrtime.bigint()
  for (let n = 0; n < CYCLES * CYCLE.length; n++) client.advance(store.execute(client.command()))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (!store.verify().sound) throw new Error('the bench log is not sound')
  store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return client.done / seconds
}

/** `clients` clients at once, each awaiting its commands through the Writer (`writer`, group
 * commit) or `executeAsync` (`async`, a commit each on libuv's pool). */
async function annalsConcurrent(clients, through) {
  const { dir, file } = fresh(through)
  const store = Store.open(file)
  const writer = through === 'writer' ? store.writer() : null
  const run = writer ? (command) => writer.execute(command) : (command) => store.executeAsync(command)
  const cycles = Math.max(1, Math.floor((CYCLES * 4) / clients))
  const all = Array.from({ length: clients }, (_, id) => new Client(id))
  const started = process.hrtime.bigint()
  await Promise.all(all.map(async (client) => {
    for (let n = 0; n < cycles * CYCLE.length; n++) client.advance(await run(client.command()))
  }))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (writer) await writer.close()
  if (!store.verify().sound) throw new Error('the bench log is not sound')
  store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return all.reduce((sum, client) => sum + client.done, 0) / seconds
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main() {
  const results = { sqlite: [], annals: [], async1: [], async8: [], writer8: [], writer64: [] }
  for (let round = 0; round < ROUNDS; round++) {
    results.sqlite.push(sqlite())
    results.annals.push(annalsSequential())
    results.async1.push(await annalsConcurrent(1, 'async'))
    results.async8.push(await annalsConcurrent(8, 'async'))
    results.writer8.push(await annalsConcurrent(8, 'writer'))
    results.writer64.push(await annalsConcurrent(64, 'writer'))
  }
  const sqlite1 = median(results.sqlite)
  const rows = [
    ['better-sqlite3, reference SQL, one command per transaction', sqlite1],
    ['annals binding, one command per transaction', median(results.annals)],
    ['annals binding, executeAsync, one client awaiting each command', median(results.async1)],
    ['annals binding, executeAsync, 8 concurrent clients', median(results.async8)],
    ['annals binding, Writer, 8 concurrent clients', median(results.writer8)],
    ['annals binding, Writer, 64 concurrent clients', median(results.writer64)],
  ]
  console.log(`| work (cycles of ${CYCLE.length} commands, ${ROUNDS} rounds, medians) | commands/s | × better-sqlite3 |`)
  console.log('|---|---:|---:|')
  for (const [name, rate] of rows) console.log(`| ${name} | ${Math.round(rate).toLocaleString('en')} | ${(rate / sqlite1).toFixed(2)} |`)
  if (process.env.HISTORY === '1') appendHistory(rows, sqlite1)
}

/** With HISTORY=1: each row's figures appended to docs/performance-history.csv, a row each. */
function appendHistory(rows, sqlite1) {
  const history = path.join(__dirname, '..', '..', '..', 'docs', 'performance-history.csv')
  const now = new Date().toISOString()
  let commit = ''
  try {
    commit = require('node:child_process').execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  } catch {
    // Not a git checkout: the row names no commit.
  }
  const quoted = (text) => (/[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text)
  const bench = quoted(`cd bindings/node/bench && CYCLES=${CYCLES} ROUNDS=${ROUNDS} HISTORY=1 npm run bench`)
  const table = 'Node against better-sqlite3 (bindings/node/README.md)'
  const lines = rows.flatMap(([name, rate]) => [
    [now.slice(0, 10), now.slice(11, 16), commit, bench, quoted(table), quoted(name), 'commands/s', Math.round(rate), ''].join(','),
    [now.slice(0, 10), now.slice(11, 16), commit, bench, quoted(table), quoted(name), '× better-sqlite3', (rate / sqlite1).toFixed(2), ''].join(','),
  ])
  fs.appendFileSync(history, `${lines.join('\n')}\n`)
  console.log(`${lines.length} figures appended to ${history}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
