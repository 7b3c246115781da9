'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('an ingested event is accepted once; the same bytes are a duplicate, others a conflict', (t) => {
  const { store } = freshStore(t)
  const push = (sequence, text, overrides = {}) =>
    store.ingest({
      project: 'proj', run: 'run-1', sequence, hubProject: 'hub-a', homeRuntime: 'rt-1',
      eventType: 'step', bytes: Buffer.from(text), receivedAtMs: 1000 + Number(sequence),
      ...overrides,
    })
  const accepted = push(1n, 'first')
  assert.equal(accepted.type, 'accepted')
  assert.equal(accepted.event.sequence, 1n)
  const duplicate = push(1n, 'first')
  assert.equal(duplicate.type, 'duplicate')
  assert.equal(duplicate.event.receivedAtMs, 1001, 'the first receipt time is kept')
  const reused = push(1n, 'other bytes')
  assert.equal(reused.type, 'conflict')
  assert.equal(reused.reason, 'sequence_reused')
  assert.equal(reused.existingHash, accepted.event.contentHash)
  const elsewhere = push(2n, 'second', { homeRuntime: 'rt-2' })
  assert.equal(elsewhere.type, 'conflict')
  assert.equal(elsewhere.reason, 'home_runtime_mismatch')
  assert.throws(() => push(0n, 'zero'), { code: 'INVALID_COMMAND' })
})
