'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('each projection is queried as the commands left it', (t) => {
  const { store } = freshStore(t)
  store.lease({ type: 'acquire', resource: 'r', holder: 'a', ttlMs: 100, nowMs: 1 })
  store.outbox({ type: 'enqueue', key: 'm1', peer: 'p', kind: 'k', payload: Buffer.from('x'), nowMs: 1 })
  store.outbox({ type: 'enqueue', key: 'm2', peer: 'p', kind: 'k', payload: Buffer.from('y'), nowMs: 2 })
  store.ingest({ project: 'pr', run: 'r1', sequence: 1n, hubProject: 'h', homeRuntime: 'rt', eventType: 'e', bytes: Buffer.from('1'), receivedAtMs: 3 })
  store.ingest({ project: 'pr', run: 'r1', sequence: 2n, hubProject: 'h', homeRuntime: 'rt', eventType: 'e', bytes: Buffer.from('2'), receivedAtMs: 4 })
  assert.equal(store.outboxRow('m1').state, 'pending')
  assert.equal(store.outboxRow('nope'), null)
  assert.deepEqual(store.outboxOpenFor('p').map((r) => r.key), ['m1', 'm2'])
  assert.equal(store.ingestCursor('pr', 'r1'), 2n)
  assert.equal(store.consumerCheckpoint('nobody'), null)
  const leases = store.state('leases')
  assert.ok(JSON.stringify(leases).includes('"holder":"a"'), JSON.stringify(leases))
  for (const projection of ['registry', 'outbox', 'runs', 'ingest', 'consumers']) {
    assert.equal(typeof store.state(projection), 'object')
  }
  assert.throws(() => store.state('nope'), { code: 'INVALID_ARGUMENT' })
})
