'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('execute runs any domain command by its type, on the store and through the writer', async (t) => {
  const { store } = freshStore(t)
  assert.equal(store.execute({ type: 'acquire', resource: 'r', holder: 'a', ttlMs: 10, nowMs: 1 }).type, 'granted')
  assert.equal(store.execute({ type: 'upsert', handle: 'alice', fields: { store: '/s' }, nowMs: 1 }).type, 'added')
  assert.equal(
    store.execute({ type: 'ingest', project: 'p', run: 'r', sequence: 1n, hubProject: 'h', homeRuntime: 'rt', eventType: 'e', bytes: Buffer.from('x'), receivedAtMs: 1 }).type,
    'accepted',
  )
  assert.throws(() => store.execute({ type: 'explode' }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => store.execute(null), { code: 'INVALID_ARGUMENT' })
  const writer = store.writer()
  const outcomes = await Promise.all([
    writer.execute({ type: 'enqueue', key: 'k', peer: 'p', kind: 'x', payload: Buffer.from('1'), nowMs: 2 }),
    writer.execute({ type: 'start', run: 'run', span: 'root', name: 'n', kind: 'cron', origin: 'cron', writer: 'w', nowMs: 2 }),
    writer.execute({ type: 'setStatus', handle: 'alice', status: 'disabled', nowMs: 2 }),
  ])
  assert.deepEqual(outcomes.map((o) => o.type), ['enqueued', 'started', 'updated'])
  await assert.rejects(writer.execute({ type: 'nope' }), { code: 'INVALID_ARGUMENT' })
  await writer.close()
})
