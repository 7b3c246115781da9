'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('an outbox row is enqueued once, claimed, and acked only under its token', (t) => {
  const { store } = freshStore(t)
  const enqueue = () =>
    store.outbox({ type: 'enqueue', key: 'msg-1', peer: 'hub', kind: 'note', payload: Buffer.from('hi'), nowMs: 1 })
  const queued = enqueue()
  assert.equal(queued.type, 'enqueued')
  assert.equal(queued.row.state, 'pending')
  assert.equal(enqueue().type, 'duplicate')
  const claimed = store.outbox({ type: 'claim', peer: 'hub', token: 'claim-a', limit: 10, leaseMs: 1000, nowMs: 2 })
  assert.equal(claimed.type, 'claimed')
  assert.deepEqual(claimed.rows.map((r) => r.key), ['msg-1'])
  const wrong = store.outbox({ type: 'ack', peer: 'hub', acks: [{ key: 'msg-1', token: 'claim-b' }], nowMs: 3 })
  assert.equal(wrong.type, 'acked')
  assert.deepEqual(wrong.acked, [])
  assert.equal(wrong.refused.length, 1)
  assert.equal(wrong.refused[0].key, 'msg-1')
  const right = store.outbox({ type: 'ack', peer: 'hub', acks: [{ key: 'msg-1', token: 'claim-a' }], nowMs: 4 })
  assert.deepEqual(right.acked, ['msg-1'])
})
