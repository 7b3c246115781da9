'use strict'
// Reads held still (snapshot, stateAt), an entity's history with its events decoded, the
// decoder itself, and the reference constants.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const { Store, decodeEvent, constants } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

const acquire = (resource, holder, nowMs, ttlMs = 10) => ({ type: 'acquire', resource, holder, ttlMs, nowMs })

/**
 * The replay files this process holds open (Linux: annals unlinks a replay's file as it makes
 * it, so only the open descriptor shows it).
 */
function replays() {
  const held = []
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`)
      if (target.includes(`annals-replay-${process.pid}-`)) held.push(target)
    } catch {
      // The descriptor readdir itself used, gone already.
    }
  }
  return held
}

test("a snapshot's reads and queries stay as of its commit while the store goes on", (t) => {
  const { store } = freshStore(t)
  store.lease(acquire('deploy', 'agent-1', 1))
  store.append('notes', 'none', [event('note', 1, 'first')])
  const snapshot = store.snapshot()
  store.lease(acquire('deploy', 'agent-2', 100))
  store.append('notes', 0n, [event('note', 100, 'second')])
  assert.equal(snapshot.leaseOf('deploy').holder, 'agent-1')
  assert.equal(store.leaseOf('deploy').holder, 'agent-2')
  assert.equal(snapshot.head().next, 2n)
  assert.equal(snapshot.readAll().length, 2)
  assert.equal(snapshot.get(2n), null)
  assert.deepEqual(snapshot.readStream('notes').map((record) => record.payload.toString()), ['first'])
  assert.equal(snapshot.state('leases').held[0].holder, 'agent-1')
  assert.equal(snapshot.history('lease:deploy').length, 1)
  assert.throws(() => snapshot.lease(acquire('x', 'a', 1)), { code: 'READ_ONLY' })
  assert.throws(() => snapshot.append('s', 'any', [event('k', 1, 'x')]), { code: 'READ_ONLY' })
  assert.throws(() => snapshot.transaction(() => 1)(), { code: 'READ_ONLY' })
  assert.throws(() => snapshot.flush(), { code: 'READ_ONLY' })
  snapshot.close()
  assert.throws(() => snapshot.head(), { code: 'CLOSED' })
  assert.equal(store.head().next, 4n, 'closing a view leaves the store open')
})

test('stateAt answers every query as the store did after the first n records, and shows only those', (t) => {
  const { store } = freshStore(t)
  store.lease(acquire('deploy', 'agent-1', 1))
  store.registry({ type: 'upsert', handle: 'alice', fields: { store: '/srv/alice' }, nowMs: 2 })
  store.lease(acquire('deploy', 'agent-2', 100))
  const then = store.stateAt(1n)
  assert.equal(replays().length, 1, 'the view keeps its replay')
  assert.equal(then.leaseOf('deploy').holder, 'agent-1')
  assert.equal(then.instance('alice'), null, 'the registry as of one record')
  assert.deepEqual(then.head(), { next: 1n, hash: store.get(0n).hash })
  assert.deepEqual(then.readAll().map((record) => record.position), [0n])
  assert.deepEqual(then.readAll({ direction: 'backward' }).map((record) => record.position), [0n])
  assert.equal(then.get(1n), null)
  assert.equal(then.history('lease:deploy').length, 1)
  const now = store.stateAt(3n)
  assert.equal(now.leaseOf('deploy').holder, 'agent-2')
  now.close()
  const empty = store.stateAt(0n)
  assert.equal(empty.leaseOf('deploy'), null)
  assert.deepEqual(empty.readAll(), [])
  assert.equal(empty.head().next, 0n)
  empty.close()
  then.close()
  assert.deepEqual(replays(), [], 'a closed view removes its replay')
  assert.throws(() => store.stateAt(4n), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => store.stateAt(-1n), { code: 'INVALID_ARGUMENT' })
})

test("an entity's history comes with its events decoded, as annals history shows them", (t) => {
  const { store, file } = freshStore(t)
  const granted = store.lease(acquire('deploy', 'agent-1', 1, 30))
  store.lease({ type: 'release', resource: 'deploy', holder: 'agent-1', token: granted.lease.token, nowMs: 5 })
  store.append('lease-notes', 'none', [event('note', 6, 'not a lease event')])
  const history = store.history('lease:deploy')
  assert.deepEqual(history.map(({ record }) => record.kind), ['lease.acquired', 'lease.released'])
  const [acquired, released] = history
  assert.equal(acquired.event.holder, 'agent-1')
  assert.equal(acquired.event.resource, 'deploy')
  assert.equal(acquired.event.expiresAtMs, 31, 'fields spelled as JavaScript spells them')
  assert.equal(acquired.event.token, granted.lease.token, 'a token is a bigint, as in the outcome')
  assert.equal(released.event.token, granted.lease.token)
  assert.equal(typeof acquired.event.expiresAtMs, 'number', 'milliseconds are numbers, as in the outcome')
  assert.equal(acquired.undecodable, undefined)
  // As every result, with integers: 'number' it serialises with JSON.stringify.
  const numbers = Store.open(file, { readOnly: true, integers: 'number' })
  t.after(() => numbers.close())
  const [numbered] = numbers.history('lease:deploy')
  assert.equal(numbered.event.token, Number(granted.lease.token))
  assert.match(JSON.stringify(numbers.history('lease:deploy').map(({ event: decoded }) => decoded)), /"token":1\b/)
  const stream = store.history('stream:lease-notes')
  assert.equal(stream.length, 1)
  assert.equal(stream[0].event, undefined, 'a kind of the program\'s own is not decoded')
  assert.throws(() => store.history('nonsense'), { code: 'INVALID_ARGUMENT', field: 'entity' })
})

test('decodeEvent decodes any built-in record read back, and refuses damaged bytes', (t) => {
  const { store } = freshStore(t)
  store.outbox({ type: 'enqueue', key: 'k1', peer: 'hub', kind: 'ping', payload: Buffer.from('hello'), nowMs: 7 })
  store.append('own', 'none', [event('mine', 8, '{"a":1}')])
  const [enqueued, own] = store.readAll()
  assert.equal(typeof enqueued.schema, 'number')
  const decoded = decodeEvent(enqueued)
  assert.equal(decoded.key, 'k1')
  assert.equal(decoded.peer, 'hub')
  // Integers and bytes as the row the query gives: the enqueue id a bigint, the payload a Buffer.
  const row = store.outboxRow('k1')
  assert.equal(typeof decoded.enqueueId, 'bigint')
  assert.equal(decoded.enqueueId, row.enqueueId)
  assert.deepEqual(decoded.payload, Buffer.from('hello'))
  assert.equal(decodeEvent(own), null)
  assert.throws(() => decodeEvent({ ...enqueued, payload: Buffer.from([1, 2, 3]) }), { code: 'CORRUPT' })
  assert.throws(() => decodeEvent({ kind: 'outbox.enqueued', schema: 99, payload: enqueued.payload }), { code: 'CORRUPT' })
  assert.throws(() => decodeEvent({ kind: 'x', payload: Buffer.alloc(0) }), { code: 'INVALID_ARGUMENT', field: 'record.schema' })
  assert.throws(() => decodeEvent(null), { code: 'INVALID_ARGUMENT', field: 'record' })
})

test('the reference constants are exported, frozen, and are the defaults commands take', (t) => {
  const { store } = freshStore(t)
  assert.equal(constants.outbox.claimLeaseMs, 10 * 60_000)
  assert.equal(constants.outbox.maxAgeMs, 30 * 24 * 60 * 60_000)
  assert.deepEqual(constants.outbox.backoff, { baseMs: 30_000, maxMs: 60 * 60_000 })
  assert.equal(constants.registry.knowsAll, '*')
  assert.equal(constants.registry.defaultDomain, 'localhost')
  assert.ok(Object.isFrozen(constants) && Object.isFrozen(constants.outbox.backoff))
  store.outbox({ type: 'enqueue', key: 'k1', peer: 'hub', kind: 'ping', payload: Buffer.from('x'), nowMs: 1 })
  const claimed = store.outbox({ type: 'claim', peer: 'hub', token: 't1', limit: 10, nowMs: 1000 })
  assert.equal(claimed.type, 'claimed')
  assert.equal(claimed.expiresAtMs, 1000 + constants.outbox.claimLeaseMs, 'a claim without leaseMs lasts the reference length')
})
