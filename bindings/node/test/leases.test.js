'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore, event } = require('./support/helpers.js')

test('a lease is granted, renewed, held against others, taken over after expiry', (t) => {
  const { store } = freshStore(t)
  const acquire = (holder, nowMs) =>
    store.lease({ type: 'acquire', resource: 'deploy-lock', holder, ttlMs: 1000, nowMs })
  const granted = acquire('agent-1', 10_000)
  assert.equal(granted.type, 'granted')
  assert.equal(granted.lease.token, 1n)
  assert.equal(granted.renewed, false)
  const renewed = store.lease({
    type: 'renew', resource: 'deploy-lock', holder: 'agent-1', token: 1n, ttlMs: 1000, nowMs: 10_500,
  })
  assert.equal(renewed.type, 'granted')
  assert.equal(renewed.lease.expiresAtMs, 11_500)
  const held = acquire('agent-2', 11_000)
  assert.equal(held.type, 'refused')
  assert.equal(held.reason, 'held')
  assert.equal(held.lease.holder, 'agent-1')
  const takeover = acquire('agent-2', 20_000)
  assert.equal(takeover.type, 'granted')
  assert.equal(takeover.lease.token, 2n, 'a takeover gets the next fencing token')
  assert.equal(store.leaseOf('deploy-lock').holder, 'agent-2')
  const stale = store.lease({
    type: 'release', resource: 'deploy-lock', holder: 'agent-1', token: 1n, nowMs: 20_001,
  })
  assert.equal(stale.type, 'refused')
  assert.equal(stale.reason, 'superseded')
})

test('a write fenced by a stale token is refused with FENCED, the live one appends', (t) => {
  const { store } = freshStore(t)
  store.lease({ type: 'acquire', resource: 'r', holder: 'a', ttlMs: 100, nowMs: 0 })
  store.lease({ type: 'acquire', resource: 'r', holder: 'b', ttlMs: 100, nowMs: 500 })
  const before = store.head().next
  assert.throws(
    () => store.appendGuarded('work', 'any', [event('step', 501, 'x')], { resource: 'r', token: 1n, nowMs: 501 }),
    { code: 'FENCED' },
  )
  assert.equal(store.head().next, before)
  const written = store.appendGuarded('work', 'any', [event('step', 502, 'x')], {
    resource: 'r', token: 2n, nowMs: 502,
  })
  assert.equal(written.type, 'appended')
})
