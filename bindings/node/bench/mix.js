'use strict'
// The reference stores' command mix through the binding and through better-sqlite3, in one
// run, every commit durable: per client a lease acquired and renewed, an outbox row enqueued,
// claimed and acked (five commands a cycle). annals one command per transaction, and through
// the Writer with 8 and 64 concurrent clients; SQLite with the reference stores' SQL in WAL
// mode with synchronous=FULL, one BEGIN IMMEDIATE transaction per command (the way those
// stores run; concurrency does not help one connection). Prints commands per second and the
// ratios; ROUNDS rounds, interleaved, medians.
//
//   cd bindings/node && npm run build && cd bench && npm ci && npm run bench
//   CYCLES=400 ROUNDS=3 npm run bench
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const Database = require('better-sqlite3')
const { Store } = require('../lib.js')

const CYCLES = Number(process.env.CYCLES || 200)
const ROUNDS = Number(process.env.ROUNDS || 3)
const TTL = 30_000

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
CREATE INDEX IF NOT EXISTS peer_outbox_peer ON peer_outbox(peer, state);`

function fresh(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `annals-bench-${name}-`))
  return { dir, file: path.join(dir, 'db') }
}

/** The five commands of a client's cycle `i`, as data. */
function cycle(client, i, now) {
  const resource = `res-${client}`
  const holder = `agent-${client}`
  const key = `msg-${client}-${i}`
  const peer = `peer-${client}`
  const token = `claim-${client}-${i}`
  return { resource, holder, key, peer, token, now, first: i === 0 }
}

function sqlite(clients) {
  const { dir, file } = fresh('sqlite')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 120000')
  db.exec(SCHEMA)
  const read = db.prepare('SELECT holder_agent_id, fencing_token, expires_at FROM leases WHERE resource = ?')
  const write = db.prepare(`INSERT INTO leases (resource, holder_agent_id, fencing_token, expires_at, record)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (resource) DO UPDATE SET holder_agent_id = excluded.holder_agent_id,
    fencing_token = excluded.fencing_token, expires_at = excluded.expires_at, record = excluded.record`)
  const enqueue = db.prepare(`INSERT INTO peer_outbox (peer, kind, payload_json, idempotency_key, state, attempts,
    next_at, created_at) VALUES (?, 'event', ?, ?, 'pending', 0, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`)
  const claimable = db.prepare(`SELECT id FROM peer_outbox WHERE peer = ? AND (state IN ('pending', 'waiting')
    OR (state = 'claimed' AND claimed_at <= ?)) ORDER BY id LIMIT 1`)
  const mark = db.prepare(`UPDATE peer_outbox SET state = 'claimed', claimed_by = ?, claimed_at = ?, next_at = NULL WHERE id = ?`)
  const ack = db.prepare(`UPDATE peer_outbox SET state = 'done', claimed_by = NULL
    WHERE idempotency_key = ? AND peer = ? AND state = 'claimed' AND claimed_by = ?`)
  const lease = db.transaction((c) => {
    const row = read.get(c.resource)
    const token = row ? (row.holder_agent_id === c.holder && row.expires_at > c.now ? row.fencing_token : row.fencing_token + 1) : 1
    const expires = c.now + TTL
    write.run(c.resource, c.holder, token, expires,
      JSON.stringify({ resource: c.resource, holderAgentId: c.holder, fencingToken: token, acquiredAt: c.now, expiresAt: expires }))
  })
  const steps = [
    (c) => lease.immediate(c),
    (c) => db.transaction(() => enqueue.run(c.peer, '{"n":1}', c.key, c.now, c.now)).immediate(),
    (c) => db.transaction(() => {
      const row = claimable.get(c.peer, c.now - 60_000)
      mark.run(c.token, c.now, row.id)
    }).immediate(),
    (c) => db.transaction(() => ack.run(c.key, c.peer, c.token)).immediate(),
    (c) => lease.immediate(c),
  ]
  const started = process.hrtime.bigint()
  let commands = 0
  for (let i = 0; i < CYCLES; i++) {
    for (let client = 0; client < clients; client++) {
      const c = cycle(client, i, 1_000_000 + i * 10)
      for (const step of steps) {
        step(c)
        commands++
      }
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return commands / seconds
}

function annalsCommands(c) {
  return [
    { lease: { type: 'acquire', resource: c.resource, holder: c.holder, ttlMs: TTL, nowMs: c.now } },
    { outbox: { type: 'enqueue', key: c.key, peer: c.peer, kind: 'event', payload: Buffer.from('{"n":1}'), nowMs: c.now } },
    { outbox: { type: 'claim', peer: c.peer, token: c.token, limit: 1, leaseMs: 60_000, nowMs: c.now } },
    { outbox: { type: 'ack', peer: c.peer, acks: [{ key: c.key, token: c.token }], nowMs: c.now } },
    { lease: { type: 'acquire', resource: c.resource, holder: c.holder, ttlMs: TTL, nowMs: c.now } },
  ]
}

function annalsSequential() {
  const { dir, file } = fresh('annals')
  const store = Store.open(file)
  const started = process.hrtime.bigint()
  let commands = 0
  for (let i = 0; i < CYCLES; i++) {
    const c = cycle(0, i, 1_000_000 + i * 10)
    for (const command of annalsCommands(c)) {
      if (command.lease) store.lease(command.lease)
      else store.outbox(command.outbox)
      commands++
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return commands / seconds
}

async function annalsWriter(clients) {
  const { dir, file } = fresh('writer')
  const store = Store.open(file)
  const writer = store.writer()
  const cycles = Math.max(1, Math.floor(CYCLES / clients) * 4)
  const started = process.hrtime.bigint()
  let commands = 0
  await Promise.all(Array.from({ length: clients }, async (_, client) => {
    for (let i = 0; i < cycles; i++) {
      const c = cycle(client, i, 1_000_000 + i * 10)
      for (const command of annalsCommands(c)) {
        if (command.lease) await writer.lease(command.lease)
        else await writer.outbox(command.outbox)
        commands++
      }
    }
  }))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  await writer.close()
  store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return commands / seconds
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main() {
  const results = { sqlite: [], annals: [], writer8: [], writer64: [] }
  for (let round = 0; round < ROUNDS; round++) {
    results.sqlite.push(sqlite(1))
    results.annals.push(annalsSequential())
    results.writer8.push(await annalsWriter(8))
    results.writer64.push(await annalsWriter(64))
  }
  const sqlite1 = median(results.sqlite)
  const rows = [
    ['better-sqlite3, reference SQL, one command per transaction', sqlite1],
    ['annals binding, one command per transaction', median(results.annals)],
    ['annals binding, Writer, 8 concurrent clients', median(results.writer8)],
    ['annals binding, Writer, 64 concurrent clients', median(results.writer64)],
  ]
  console.log(`| work (${CYCLES} cycles of 5 commands, ${ROUNDS} rounds, medians) | commands/s | × better-sqlite3 |`)
  console.log('|---|---:|---:|')
  for (const [name, rate] of rows) console.log(`| ${name} | ${Math.round(rate).toLocaleString('en')} | ${(rate / sqlite1).toFixed(2)} |`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
