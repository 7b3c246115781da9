'use strict'
// Personal payloads and their erasure (docs/erasure.md) through the package: `subject` on
// appends, `erase(subject, atMs)`, and every read giving the plaintext while the subject's key
// stands and `payload: null` with `erased: true` after it, never the ciphertext as data.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { Store, InvalidInputError, RefusedError, StateError, decodeEvent } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

const SECRET = 'ada@example.com'

/** Every read of `stream`'s records in `store`: readAll, readStream, get, iterate and history. */
function everyRead(store, stream) {
  const all = store.readAll().filter((record) => record.stream === stream)
  const positions = all.map((record) => record.position)
  return {
    readAll: all,
    readStream: store.readStream(stream),
    get: positions.map((position) => store.get(position)),
    iterateAll: [...store.iterateAll()].filter((record) => record.stream === stream),
    history: store.history(`stream:${stream}`).map((entry) => entry.record),
  }
}

test('a personal payload reads back as its plaintext with its subject, in every read', (t) => {
  const { store } = freshStore(t)
  const outcome = store.append('people/7', 'none', [event('email.set', 1, SECRET)], { subject: 'user-7' })
  assert.equal(outcome.type, 'appended')
  store.append('people/7', 'any', [event('note', 2, 'plain')])
  for (const [read, records] of Object.entries(everyRead(store, 'people/7'))) {
    assert.equal(records.length, 2, read)
    assert.equal(records[0].payload.toString(), SECRET, read)
    assert.equal(records[0].subject, 'user-7', read)
    assert.equal(records[0].erased, undefined, read)
    assert.equal(records[1].payload.toString(), 'plain', read)
    assert.equal('subject' in records[1], false, `${read}: a plain payload has no subject`)
  }
})

test('after erase every read gives payload null and erased true, and the log still verifies', async (t) => {
  const { store } = freshStore(t)
  store.append('people/7', 'none', [event('email.set', 1, SECRET), event('name.set', 2, 'Ada')], { subject: 'user-7' })
  store.append('people/8', 'none', [event('email.set', 3, 'bob@example.com')], { subject: 'user-8' })
  const hashes = store.readAll().map((record) => record.hash)
  const erasure = store.erase('user-7', 10)
  assert.equal(erasure.subject, 'user-7')
  assert.equal(erasure.appended, true)
  assert.equal(erasure.keyDestroyed, true)
  assert.equal(typeof erasure.position, 'bigint')
  const marker = store.get(erasure.position)
  assert.equal(marker.kind, 'subject.erased')
  assert.equal(marker.stream, 'annals.erased/user-7')
  for (const [read, records] of Object.entries(everyRead(store, 'people/7'))) {
    assert.equal(records.length, 2, read)
    for (const record of records) {
      assert.equal(record.payload, null, read)
      assert.equal(record.erased, true, read)
      assert.equal(record.subject, 'user-7', read)
    }
  }
  // Another subject's payload is untouched.
  assert.equal(store.readStream('people/8')[0].payload.toString(), 'bob@example.com')
  // The records, their hashes and the chain are the same: over the ciphertext.
  assert.deepEqual(store.readAll().slice(0, 3).map((record) => record.hash), hashes)
  assert.equal(store.verify().sound, true)
  // An erased record serialises, and history decodes no event from it.
  const json = JSON.parse(JSON.stringify(store.readStream('people/7')[0], (_, value) => (typeof value === 'bigint' ? String(value) : value)))
  assert.equal(json.payload, null)
  assert.equal(json.erased, true)
  const entry = store.history('stream:people/7')[0]
  assert.equal(entry.event, undefined)
  assert.equal(entry.undecodable, undefined)
  assert.throws(() => decodeEvent(entry.record), { code: 'INVALID_ARGUMENT', field: 'payload' })
  // A subscription delivers the erased mark too.
  const subscription = store.subscribe({ from: 0n })
  const first = (await subscription.next()).value
  assert.equal(first.payload, null)
  assert.equal(first.erased, true)
  await subscription.return()
  // Erasing again appends nothing and destroys nothing.
  const again = store.erase('user-7', 11)
  assert.equal(again.appended, false)
  assert.equal(again.keyDestroyed, false)
  assert.equal(again.position, erasure.position)
})

test('no file of the store holds a personal payload in clear', (t) => {
  const { store, dir } = freshStore(t)
  store.append('people/7', 'none', [event('email.set', 1, SECRET)], { subject: 'user-7' })
  store.flush()
  const backup = path.join(dir, 'backup.redb')
  store.backup(backup)
  const needle = Buffer.from(SECRET)
  const files = fs.readdirSync(dir)
  assert.ok(files.includes('log.redb.keys'), `a key store beside the log: ${files.join(', ')}`)
  for (const name of files) {
    assert.equal(fs.readFileSync(path.join(dir, name)).includes(needle), false, `${name} holds the plaintext`)
  }
  // A backup carries the ciphertext and no key: it reads the payload as erased.
  const copy = Store.open(backup, { readOnly: true })
  t.after(() => copy.close())
  const [record] = copy.readStream('people/7')
  assert.equal(record.payload, null)
  assert.equal(record.erased, true)
  assert.equal(record.subject, 'user-7')
})

test('appendAsync and the writer append personal payloads too', async (t) => {
  const { store } = freshStore(t)
  const outcome = await store.appendAsync('people/1', 'none', [event('email.set', 1, 'one@example.com')], { subject: 'user-1' })
  assert.equal(outcome.type, 'appended')
  const writer = store.writer()
  const batched = await writer.append('people/2', 'none', [event('email.set', 2, 'two@example.com')], { subject: 'user-2' })
  assert.equal(batched.type, 'appended')
  await writer.close()
  assert.equal(store.readStream('people/1')[0].subject, 'user-1')
  assert.equal(store.readStream('people/2')[0].payload.toString(), 'two@example.com')
  store.erase('user-2', 3)
  assert.equal(store.readStream('people/2')[0].erased, true)
  assert.equal(store.readStream('people/1')[0].payload.toString(), 'one@example.com')
})

test('a personal append for an erased subject is refused, naming the subject and the erasure', (t) => {
  const { store } = freshStore(t)
  store.append('people/7', 'none', [event('email.set', 1, SECRET)], { subject: 'user-7' })
  const { position } = store.erase('user-7', 2)
  const head = store.head().next
  assert.throws(() => store.append('people/7', 'any', [event('email.set', 3, 'new@example.com')], { subject: 'user-7' }), (error) => {
    assert.ok(error instanceof RefusedError)
    assert.equal(error.code, 'APPEND_REFUSED')
    assert.equal(error.field, 'subject')
    assert.equal(error.subject, 'user-7')
    assert.equal(error.position, position)
    return true
  })
  assert.equal(store.head().next, head, 'nothing written')
})

test('a subject or an erase the package cannot take is refused naming its field', async (t) => {
  const { store } = freshStore(t)
  const refusals = [
    [() => store.append('s', 'any', [event('k', 1, 'x')], { subject: '' }), 'subject', InvalidInputError],
    [() => store.append('s', 'any', [event('k', 1, 'x')], { subject: 'a/b' }), 'subject', InvalidInputError],
    [() => store.append('s', 'any', [event('k', 1, 'x')], { subject: 7 }), 'subject', InvalidInputError],
    [() => store.append('s', 'any', [event('k', 1, 'x')], { subject: 'u', durability: 'deferred' }), 'durability', InvalidInputError],
    [() => store.append('s', 'any', [event('k', 1, 'x')], { subject: 'u', guard: { resource: 'r', token: 1n, nowMs: 1 } }), 'guard', InvalidInputError],
    [() => store.erase('a/b', 1), 'subject', InvalidInputError],
    [() => store.erase('u', -1), 'atMs', InvalidInputError],
    [() => store.erase('u'), 'atMs', InvalidInputError],
  ]
  for (const [call, field, Class] of refusals) {
    assert.throws(call, (error) => {
      assert.ok(error instanceof Class, `${field}: ${error}`)
      assert.equal(error.field, field, error.message)
      assert.doesNotMatch(error.message, /[{}]/, 'no JSON in the message')
      return true
    })
  }
  await assert.rejects(store.writer().append('s', 'any', [event('k', 1, 'x')], { subject: '' }), { code: 'INVALID_ARGUMENT', field: 'subject' })
  // Inside a transaction: a personal append commits alone.
  const run = store.transaction(() => store.append('s', 'any', [event('k', 1, 'x')], { subject: 'u' }))
  assert.throws(run, { code: 'INVALID_ARGUMENT', field: 'subject' })
  // A view reads only.
  const view = store.snapshot()
  assert.throws(() => view.erase('u', 1), (error) => error instanceof StateError && error.code === 'READ_ONLY')
  view.close()
  assert.equal(store.head().next, 0n, 'nothing written')
})

test('another process erases a subject while this one has the log open, and this one reads it erased', (t) => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'annals-node-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'log.redb')
  const store = Store.open(file, { sharing: 'multi-writer' })
  t.after(() => store.close())
  store.append('people/7', 'none', [event('email.set', 1, SECRET)], { subject: 'user-7' })
  assert.equal(store.readStream('people/7')[0].payload.toString(), SECRET)
  const child = spawnSync(process.execPath, [path.join(__dirname, 'support', 'eraser.js'), file, 'user-7', '5'], {
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(child.status, 0, child.stderr)
  const erased = JSON.parse(child.stdout)
  assert.equal(erased.appended, true)
  assert.equal(erased.keyDestroyed, true)
  assert.deepEqual(erased.read, [{ erased: true, payload: null }])
  const [record] = store.readStream('people/7')
  assert.equal(record.payload, null)
  assert.equal(record.erased, true)
  assert.equal(store.get(BigInt(erased.position)).kind, 'subject.erased')
  assert.equal(store.verify().sound, true)
})
