'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { Store, AnnalsError } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

test('appends, reads back and verifies', (t) => {
  const { store } = freshStore(t)
  const first = store.append('deploy/web', 'none', [event('deploy.started', 1000, 'v1')])
  // The crate's own AppendOutcome, crossed by serde: its head too.
  assert.deepEqual(first, { type: 'appended', firstPosition: 0n, firstVersion: 0n, count: 1n, head: { next: 1n, hash: store.get(0n).hash } })
  assert.deepEqual(store.head(), first.head)
  const second = store.append('deploy/web', 0n, [
    event('deploy.step', 1001, 'a'),
    event('deploy.step', 1002, 'b'),
  ])
  assert.equal(second.type, 'appended')
  assert.equal(second.firstPosition, 1n)
  assert.equal(second.count, 2n)
  const all = store.readAll()
  assert.deepEqual(all.map((r) => r.position), [0n, 1n, 2n])
  assert.equal(all[2].payload.toString(), 'b')
  assert.equal(all[0].atMs, 1000)
  assert.match(all[0].hash, /^[0-9a-f]{64}$/)
  const backward = store.readStream('deploy/web', { direction: 'backward', limit: 2 })
  assert.deepEqual(backward.map((r) => r.version), [2n, 1n])
  assert.equal(store.get(1n).kind, 'deploy.step')
  assert.equal(store.get(99n), null)
  const head = store.head()
  assert.equal(head.next, 3n)
  assert.equal(head.hash, all[2].hash)
  assert.deepEqual([...store.iterateAll({ limit: 1 })].map((r) => r.position), [0n, 1n, 2n])
  assert.deepEqual([...store.iterateStream('deploy/web', { limit: 2, direction: 'backward' })].map((r) => r.version), [2n, 1n, 0n])
  const report = store.verify()
  assert.equal(report.sound, true)
  assert.equal(report.records, 3n)
  // The library's `VerifyReport` as it serialises, camelCase, its 64-bit integers bigints.
  assert.deepEqual(report, { sound: true, records: 3n, streams: 1n, head, root: report.root, findings: [], behind: [] })
  assert.match(report.root, /^[0-9a-f]{64}$/)
})

test('a repeated idempotency key is a duplicate, and refusals carry stable codes', (t) => {
  const { store } = freshStore(t)
  store.append('s', 'any', [event('k', 1, 'x', 'key-1')])
  const again = store.append('s', 'any', [event('k', 1, 'x', 'key-1')])
  assert.deepEqual(again, { type: 'duplicate', positions: [0n] })
  assert.throws(() => store.append('s', 'none', [event('k', 2, 'y')]), (error) => {
    assert.ok(error instanceof AnnalsError)
    assert.equal(error.code, 'WRONG_EXPECTED_VERSION')
    return true
  })
  assert.throws(() => store.append('s', 'any', [event('k', 2, 'other', 'key-1')]), {
    code: 'IDEMPOTENCY_CONFLICT',
  })
  assert.throws(() => store.append('s', 'any', [event('k', 2, 'x'.repeat(1024 * 1024 + 1))]), (e) => {
    assert.equal(e.code, 'LIMIT')
    assert.equal(e.field, 'payload')
    assert.equal(e.limit, 1024 * 1024)
    return true
  })
  assert.throws(() => store.append('s', 'maybe', []), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => store.append('s', 'any', [event('k', -1, 'x')]), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => store.get(-1n), { code: 'INVALID_ARGUMENT' })
  assert.equal(store.head().next, 1n, 'nothing refused was written')
})

test('a missing file opened read-only and a closed store have their own codes', (t) => {
  const { store, dir } = freshStore(t)
  assert.throws(() => Store.open(`${dir}/missing.redb`, { readOnly: true }), { code: 'NOT_FOUND' })
  assert.throws(() => Store.open(`${dir}/x.redb`, { sharing: 'sideways' }), {
    code: 'INVALID_ARGUMENT',
  })
  store.close()
  assert.throws(() => store.head(), { code: 'CLOSED' })
})

test('a backup holds every commit, the journal\'s too, and flush drains the journal into the file', (t) => {
  const { store, dir } = freshStore(t)
  for (let i = 0; i < 5; i++) store.append(`s${i % 2}`, 'any', [event('k', 1000 + i, `p${i}`)])
  const target = require('node:path').join(dir, 'copy.redb')
  const backup = store.backup(target)
  assert.equal(backup.path, target)
  assert.deepEqual(backup.head, store.head())
  assert.equal(backup.start, 0n)
  assert.equal(typeof backup.tables, 'bigint')
  assert.ok(backup.tables > 0n)
  assert.ok(backup.bytes > 0n)
  assert.throws(() => store.backup(target), { code: 'REFUSED' })
  const copy = Store.open(target, { readOnly: true })
  assert.deepEqual(copy.readAll().map((r) => r.hash), store.readAll().map((r) => r.hash))
  const report = copy.verify()
  assert.equal(report.sound, true, report.findings.join('\n'))
  assert.deepEqual(report.behind, [])
  copy.close()
  store.flush()
  assert.equal(store.head().next, 5n)
})
