'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { AnnalsError, Store } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

test('the writer is shared by 64 concurrent promises, each command once', async (t) => {
  const { store } = freshStore(t)
  const writer = store.writer()
  const outcomes = await Promise.all(
    Array.from({ length: 64 }, (_, i) =>
      writer.append(`client/${i % 8}`, 'any', [event('work', i, `job ${i}`, `job-${i}`)]),
    ),
  )
  assert.ok(outcomes.every((o) => o.type === 'appended'))
  const positions = new Set(outcomes.map((o) => o.firstPosition))
  assert.equal(positions.size, 64, 'every promise got a position of its own')
  // Leases through the writer: of 16 concurrent acquisitions of one resource, one is granted.
  const leases = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      writer.lease({ type: 'acquire', resource: 'r', holder: `h${i}`, ttlMs: 10_000, nowMs: 1 }),
    ),
  )
  assert.equal(leases.filter((l) => l.type === 'granted').length, 1)
  assert.equal(leases.filter((l) => l.type === 'refused' && l.reason === 'held').length, 15)
  // A refused command rejects its promise alone, with its code.
  await assert.rejects(writer.append('client/0', 'none', [event('work', 99, 'late')]), (error) => {
    assert.ok(error instanceof AnnalsError)
    assert.equal(error.code, 'WRONG_EXPECTED_VERSION')
    return true
  })
  await writer.close()
  const records = store.readAll({ limit: 1000 })
  assert.equal(records.length, 64 + 1)
  const payloads = new Set(records.filter((r) => r.kind === 'work').map((r) => r.payload.toString()))
  assert.equal(payloads.size, 64)
})

test("the writer's options are the library's WriterOptions: a deferred writer needs an exclusive store", async (t) => {
  const { store } = freshStore(t)
  // A shared store (the default, single-writer) refuses deferred commits before the writer starts.
  assert.throws(() => store.writer({ durability: 'deferred' }), { code: 'REFUSED', name: 'RefusedError' })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'annals-node-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'log.redb')
  const exclusive = Store.open(file, { sharing: 'exclusive' })
  const writer = exclusive.writer({ durability: 'deferred', batchMax: 4, queueDepth: 8 })
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => writer.append('s', 'any', [event('k', i, `${i}`)])))
  assert.ok(outcomes.every((outcome) => outcome.type === 'appended'))
  // Closing the writer makes its deferred batches durable: the log reopens with every record.
  await writer.close()
  exclusive.close()
  const reopened = Store.open(file)
  t.after(() => reopened.close())
  assert.equal(reopened.readAll().length, 10)
  assert.equal(reopened.verify().sound, true)
})
