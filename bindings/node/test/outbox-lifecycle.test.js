'use strict'
// The push lane's side of the outbox through the binding: deliveries, parking, retries with
// backoff, the reference's markWaiting/markRetry, giving up, and the housekeeping sweeps.
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

const DAY = 24 * 60 * 60_000

function enqueue(store, key, nowMs, peer = 'hub') {
  return store.outbox({ type: 'enqueue', key, peer, kind: 'note', payload: Buffer.from(key), nowMs })
}

test('a push fails with backoff, is parked, delivered, or given up; each move refused from the wrong state', (t) => {
  const { store } = freshStore(t)
  for (const key of ['a', 'b', 'c', 'd']) enqueue(store, key, 1000)
  assert.deepEqual(store.outboxDue(1000).map((r) => r.key), ['a', 'b', 'c', 'd'])

  const retried = store.outbox({ type: 'retry', key: 'a', backoff: { baseMs: 100, maxMs: 1000 }, lastError: 'timeout', nowMs: 2000 })
  assert.equal(retried.type, 'updated')
  assert.equal(retried.row.state, 'pending')
  assert.equal(retried.row.attempts, 1)
  assert.equal(retried.row.nextAtMs, 2100)
  assert.equal(retried.row.firstFailedAtMs, 2000)
  assert.equal(retried.row.lastError, 'timeout')
  const again = store.outbox({ type: 'retry', key: 'a', backoff: { baseMs: 100, maxMs: 1000 }, nowMs: 2100 })
  assert.equal(again.row.nextAtMs, 2300, 'the wait doubles')
  assert.equal(again.row.firstFailedAtMs, 2000, 'the first failure is kept')
  assert.deepEqual(store.outboxDue(2200).map((r) => r.key), ['b', 'c', 'd'], 'a is not due yet')
  assert.throws(() => store.outbox({ type: 'retry', key: 'a', backoff: { baseMs: 0, maxMs: 1 }, nowMs: 1 }), { code: 'INVALID_COMMAND' })

  const parked = store.outbox({ type: 'park', key: 'b', nowMs: 2000 })
  assert.equal(parked.row.state, 'waiting')
  assert.deepEqual(store.outboxDue(3000).map((r) => r.key), ['a', 'c', 'd'], 'a waiting row is left to the pull')
  assert.deepEqual(store.outboxPendingFor('hub', 2200).map((r) => r.key), ['c', 'd'], 'pending, and new or past its backoff')
  assert.deepEqual(store.outboxOpenFor('hub').map((r) => r.key), ['a', 'b', 'c', 'd'])
  // A refusal of a row's command carries the row as it stands (the library's `row`), if any.
  const refusedPark = store.outbox({ type: 'park', key: 'b', nowMs: 2001 })
  assert.deepEqual([refusedPark.type, refusedPark.reason, refusedPark.row.key, refusedPark.row.state], ['refused', 'wrong_state', 'b', 'waiting'])

  assert.equal(store.outbox({ type: 'deliver', key: 'b', nowMs: 2500 }).row.state, 'done')
  assert.equal(store.outbox({ type: 'giveUp', key: 'c', nowMs: 2500 }).row.state, 'expired')
  const refusedDeliver = store.outbox({ type: 'deliver', key: 'c', nowMs: 2600 })
  assert.deepEqual([refusedDeliver.type, refusedDeliver.reason, refusedDeliver.row.state], ['refused', 'wrong_state', 'expired'])
  assert.deepEqual(store.outbox({ type: 'deliver', key: 'nope', nowMs: 2600 }), { type: 'refused', reason: 'missing' }, 'no row: none carried')

  const waiting = store.outbox({ type: 'markWaiting', key: 'd', attempts: 5, nowMs: 2700 })
  assert.deepEqual([waiting.row.state, waiting.row.attempts], ['waiting', 5])
  enqueue(store, 'e', 2800)
  const marked = store.outbox({ type: 'markRetry', key: 'e', attempts: 2, nextAtMs: 9000, firstFailedAtMs: 2750, nowMs: 2800 })
  assert.deepEqual([marked.row.state, marked.row.attempts, marked.row.nextAtMs, marked.row.firstFailedAtMs], ['pending', 2, 9000, 2750])
  assert.deepEqual(store.outboxRows().map((r) => [r.key, r.state]), [['a', 'pending'], ['b', 'done'], ['c', 'expired'], ['d', 'waiting'], ['e', 'pending']])
  assert.equal(typeof store.outboxRows()[0].enqueueId, 'bigint')
})

test('sweeps expire rows too old or under a lapsed claim, and prune finished ones, in bounded batches', (t) => {
  const { store } = freshStore(t)
  enqueue(store, 'old', 0)
  enqueue(store, 'claimed', 0, 'peer-2')
  enqueue(store, 'young', 10 * DAY)
  store.outbox({ type: 'claim', peer: 'peer-2', token: 't-1', limit: 10, leaseMs: 60_000, nowMs: 1000 })
  const expired = store.outbox({ type: 'expire', nowMs: 2 * DAY, maxAgeMs: DAY })
  assert.equal(expired.type, 'expired')
  const reasons = Object.fromEntries(expired.rows.map((row) => [row.key, row.reason]))
  assert.deepEqual(reasons, { old: 'max_age', claimed: 'claim_lapsed' })
  assert.equal(expired.more, false)
  assert.equal(store.outboxRow('young').state, 'pending')

  const pruned = store.outbox({ type: 'pruneOutbox', nowMs: 3 * DAY })
  assert.equal(pruned.type, 'pruned')
  assert.deepEqual(pruned.keys.sort(), ['claimed', 'old'])
  assert.equal(store.outboxRow('old'), null)
  assert.deepEqual(store.outbox({ type: 'pruneOutbox', nowMs: 3 * DAY }), { type: 'pruned', keys: [], more: false })
})

test('the writer runs every outbox move, batched', async (t) => {
  const { store } = freshStore(t)
  const writer = store.writer()
  await Promise.all(['w1', 'w2', 'w3'].map((key) => writer.outbox({ type: 'enqueue', key, peer: 'hub', kind: 'k', payload: Buffer.from(key), nowMs: 1 })))
  const moves = await Promise.all([
    writer.execute({ type: 'deliver', key: 'w1', nowMs: 2 }),
    writer.execute({ type: 'park', key: 'w2', nowMs: 2 }),
    writer.execute({ type: 'giveUp', key: 'w3', nowMs: 2 }),
  ])
  assert.deepEqual(moves.map((m) => m.row.state), ['done', 'waiting', 'expired'])
  assert.equal((await writer.execute({ type: 'pruneOutbox', nowMs: 2, olderThanMs: 0 })).type, 'pruned')
  await writer.close()
})
