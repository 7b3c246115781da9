'use strict'
// executeAsync and the <domain>Async methods: each command committed on a thread of libuv's
// pool, its Promise settling with the same outcome or AnnalsError the synchronous call gives.
const test = require('node:test')
const assert = require('node:assert/strict')
const { AnnalsError } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

const acquire = (resource, holder, nowMs, ttlMs = 10) => ({ type: 'acquire', resource, holder, ttlMs, nowMs })

test('executeAsync commits off the main thread and resolves with the outcome execute gives', async (t) => {
  const { store } = freshStore(t)
  const pending = store.executeAsync(acquire('deploy', 'agent-1', 1))
  assert.ok(pending instanceof Promise)
  const granted = await pending
  assert.equal(granted.type, 'granted')
  assert.equal(store.leaseOf('deploy').holder, 'agent-1')
  const refused = await store.leaseAsync(acquire('deploy', 'agent-2', 2))
  assert.deepEqual(refused, store.lease(acquire('deploy', 'agent-2', 2)))
  const appended = await store.appendAsync('s', 'none', [event('k', 3, 'x')])
  assert.equal(appended.type, 'appended')
  assert.equal((await store.executeAsync({ type: 'setting', key: 'k', value: 'v', nowMs: 4 })).type, 'set')
})

test('a hundred commands at once each commit, in some order, and the log verifies', async (t) => {
  const { store } = freshStore(t)
  const outcomes = await Promise.all(
    Array.from({ length: 100 }, (_, i) => store.appendAsync(`stream-${i % 7}`, 'any', [event('k', i, `record ${i}`)])),
  )
  const positions = outcomes.map((outcome) => outcome.firstPosition).sort((a, b) => (a < b ? -1 : 1))
  assert.deepEqual(positions, Array.from({ length: 100 }, (_, i) => BigInt(i)))
  assert.equal(store.head().next, 100n)
  assert.equal(store.verify().sound, true)
})

test('errors reject with AnnalsError, never throw, and a refused guard writes nothing', async (t) => {
  const { store } = freshStore(t)
  const granted = store.lease(acquire('deploy', 'agent-1', 1))
  store.lease(acquire('deploy', 'agent-2', 50))
  const stale = { resource: 'deploy', token: granted.lease.token, nowMs: 50 }
  await assert.rejects(store.executeAsync(acquire('x', 'a', 50), { guard: stale }), { code: 'FENCED' })
  await assert.rejects(store.executeAsync({ type: 'nonsense' }), (error) => error instanceof AnnalsError && error.code === 'INVALID_ARGUMENT')
  await assert.rejects(store.leaseAsync(acquire('x', 'a', -1)), { code: 'INVALID_ARGUMENT', field: 'nowMs' })
  await assert.rejects(store.appendAsync('s', 'none', [event('lease.acquired', 1, 'x')]), { code: 'RESERVED_KIND' })
  assert.equal(store.leaseOf('x'), null)
  assert.equal(store.head().next, 2n)
  await assert.rejects(store.snapshot().executeAsync(acquire('y', 'a', 1)), { code: 'READ_ONLY' })
  let inside
  store.transaction(() => {
    inside = store.executeAsync(acquire('z', 'a', 1))
  })()
  await assert.rejects(inside, { code: 'IN_TRANSACTION' })
  assert.equal(store.leaseOf('z'), null)
})
