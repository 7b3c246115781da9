'use strict'
// Records read in bulk cross packed (src/packed.rs) and are rebuilt in lib.js: they must be
// the very records a record-at-a-time read gives (subscribe's), field for field and in order.
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore, event } = require('./support/helpers.js')

/** `value` as JSON, bigints as strings and Buffers as hex, keys in their order. */
function shown(value) {
  return JSON.stringify(value, (key, inner) => {
    if (typeof inner === 'bigint') return `${inner}n`
    if (inner && inner.type === 'Buffer' && Array.isArray(inner.data)) return Buffer.from(inner.data).toString('hex')
    return inner
  })
}

/** The first `count` records as subscribe gives them, one at a time. */
async function subscribed(store, count) {
  const records = []
  for await (const record of store.subscribe({ from: 0n })) {
    records.push(record)
    if (records.length === count) break
  }
  return records
}

test('records read in bulk are the records read one at a time, whatever their text and bytes', async (t) => {
  const { store } = freshStore(t)
  // Streams, kinds and keys past the Basic Multilingual Plane (two UTF-16 units a character),
  // empty and binary payloads, with and without an idempotency key.
  store.append('tasks-😀-ü', 'none', [
    event('note.𝄞', 1, '', 'key-😀'),
    { kind: 'bytes', atMs: 2 ** 40, payload: Buffer.from([0, 255, 1, 254]) },
  ])
  store.append('plain', 'none', [event('note', 3, 'x'.repeat(300))])
  store.append('tasks-😀-ü', 1n, [event('ü', 4, 'ünïcödé', 'k')])
  const one = await subscribed(store, 4)
  const all = store.readAll()
  assert.equal(shown(all), shown(one))
  assert.equal(all.more, false)
  assert.equal(Object.hasOwn(all[1], 'idempotencyKey'), false, 'no key is an absent field')
  assert.equal(all[0].idempotencyKey, 'key-😀')
  assert.deepEqual([...all[1].payload], [0, 255, 1, 254])
  assert.equal(all[1].atMs, 2 ** 40)
  assert.equal(shown(store.readStream('tasks-😀-ü')), shown([one[0], one[1], one[3]]))
  assert.equal(shown(store.readAll({ from: 3n, direction: 'backward' })), shown([...one].reverse()))
  for (const record of one) assert.equal(shown(store.get(record.position)), shown(record))
  assert.equal(store.get(4n), null)
  assert.equal(shown(store.readAll({ from: 1n, limit: 2 })), shown(one.slice(1, 3)))
})

test("a bulk read's payloads are each their own bytes, however they share a buffer", (t) => {
  const { store } = freshStore(t)
  store.append('s', 'none', [event('a', 1, 'first'), event('b', 2, 'second')])
  const [first, second] = store.readAll()
  assert.equal(first.payload.toString(), 'first')
  assert.equal(second.payload.toString(), 'second')
  const copy = Buffer.from(first.payload)
  copy.fill(0)
  assert.equal(first.payload.toString(), 'first')
  assert.equal(second.payload.toString(), 'second')
})

test("an event crosses as the library's NewEvent: its schema version is kept, 1 when left out", (t) => {
  const { store } = freshStore(t)
  store.append('s', 'none', [event('a', 1, 'first'), { ...event('b', 2, 'second'), schema: 3 }, { ...event('c', 3, 'third'), schema: null }])
  assert.deepEqual(store.readAll().map((record) => record.schema), [1, 3, 1])
})
