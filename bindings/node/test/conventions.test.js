'use strict'
// The package takes what JavaScript programs pass and gives back what they can use: numbers
// or bigints for integers, Buffers, Uint8Arrays or strings for bytes, results as numbers for
// a store opened with integers: 'number', and a store per worker thread.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { Store } = require('../lib.js')
const { freshStore } = require('./support/helpers.js')

test('an integer input takes a safe number or a bigint alike', (t) => {
  const { store } = freshStore(t)
  const granted = store.lease({ type: 'acquire', resource: 'deploy', holder: 'a', ttlMs: 10n, nowMs: 1n })
  assert.equal(granted.type, 'granted')
  const token = Number(granted.lease.token)
  const renewed = store.lease({ type: 'renew', resource: 'deploy', holder: 'a', token, ttlMs: 10, nowMs: 2 })
  assert.equal(renewed.type, 'granted')
  store.append('s', 'none', [{ kind: 'k', atMs: 3, payload: Buffer.from('x') }], { guard: { resource: 'deploy', token, nowMs: 3 } })
  assert.equal(store.append('s', 0, [{ kind: 'k', atMs: 4n, payload: Buffer.from('y') }]).type, 'appended')
  assert.equal(store.get(3).payload.toString(), 'y')
  assert.deepEqual(store.readAll({ from: 2 }).map((record) => record.position), [2n, 3n])
  assert.throws(() => store.get(2 ** 53), { code: 'INVALID_ARGUMENT', field: 'position' })
})

test('a payload takes a Buffer, a Uint8Array or a string, and comes back a Buffer of the same bytes', (t) => {
  const { store } = freshStore(t)
  const bytes = new Uint8Array([0, 1, 2, 255])
  const window = new Uint8Array(new Uint8Array([9, 9, 7, 8, 9]).buffer, 2, 2)
  store.append('s', 'any', [
    { kind: 'k', atMs: 1, payload: Buffer.from('buffer') },
    { kind: 'k', atMs: 1, payload: bytes },
    { kind: 'k', atMs: 1, payload: 'text é' },
    { kind: 'k', atMs: 1, payload: window },
  ])
  const payloads = store.readAll().map((record) => record.payload)
  assert.ok(payloads.every((payload) => Buffer.isBuffer(payload)))
  assert.deepEqual(payloads.map((payload) => [...payload]), [[...Buffer.from('buffer')], [0, 1, 2, 255], [...Buffer.from('text é')], [7, 8]])
  const enqueued = store.outbox({ type: 'enqueue', key: 'k', peer: 'hub', kind: 'ping', payload: '{"hello":1}', nowMs: 1 })
  assert.equal(enqueued.type, 'enqueued')
  assert.equal(store.outboxRow('k').payload.toString(), '{"hello":1}')
  assert.throws(() => store.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 'lone \ud800' }]), { code: 'INVALID_ARGUMENT', field: 'events[0].payload' })
})

test("integers: 'number' gives every result with numbers, which JSON.stringify takes", (t) => {
  const { dir } = freshStore(t)
  const store = Store.open(path.join(dir, 'numbers.redb'), { integers: 'number' })
  t.after(() => store.close())
  const granted = store.lease({ type: 'acquire', resource: 'deploy', holder: 'a', ttlMs: 10, nowMs: 1 })
  assert.equal(granted.lease.token, 1)
  const appended = store.append('s', 'none', [{ kind: 'k', atMs: 2, payload: 'x' }])
  assert.deepEqual(appended, { type: 'appended', firstPosition: 1, firstVersion: 0, count: 1, head: { next: 2, hash: store.get(1).hash } })
  assert.deepEqual(store.head().next, 2)
  assert.equal(typeof store.leaseOf('deploy').token, 'number')
  assert.deepEqual([...store.iterateAll()].map((record) => record.position), [0, 1])
  assert.deepEqual(store.snapshot().readAll().map((record) => record.position), [0, 1])
  assert.doesNotThrow(() => JSON.stringify([store.head(), store.readAll().map(({ payload, ...rest }) => rest), store.state('leases')]))
  assert.equal(store.readAll()[1].payload.toString(), 'x', 'bytes stay a Buffer')
  assert.throws(() => Store.open(path.join(dir, 'other.redb'), { integers: 'float' }), { code: 'INVALID_ARGUMENT', field: 'integers' })
})

test("integers: 'number' resolves the writer's promises with numbers too", async (t) => {
  const { dir } = freshStore(t)
  const store = Store.open(path.join(dir, 'numbers.redb'), { integers: 'number' })
  const writer = store.writer()
  const outcome = await writer.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 'x' }])
  assert.equal(outcome.firstPosition, 0)
  await writer.close()
  store.close()
})

test('a store per worker thread works, each beside the others', async (t) => {
  const { store, dir } = freshStore(t)
  store.append('main', 'none', [{ kind: 'k', atMs: 1, payload: 'from main' }])
  const program = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { Store } = require(${JSON.stringify(path.join(__dirname, '..', 'lib.js'))})
    const own = Store.open(workerData.own)
    for (let i = 0; i < 50; i++) own.lease({ type: 'acquire', resource: 'r' + i, holder: 'w', ttlMs: 5, nowMs: i })
    const main = Store.open(workerData.main, { readOnly: true })
    parentPort.postMessage({ own: own.head().next, sound: own.verify().sound, main: main.readAll()[0].payload.toString() })
    own.close()
    main.close()
  `
  const results = await Promise.all(
    [0, 1, 2, 3].map(
      (index) =>
        new Promise((resolve, reject) => {
          const worker = new Worker(program, { eval: true, workerData: { own: path.join(dir, `worker-${index}.redb`), main: path.join(dir, 'log.redb') } })
          worker.once('message', resolve)
          worker.once('error', reject)
        }),
    ),
  )
  assert.deepEqual(results, Array(4).fill({ own: 50n, sound: true, main: 'from main' }))
})

test('a list bounded by a limit says whether there was more', (t) => {
  const { store, dir } = freshStore(t)
  for (let i = 0; i < 5; i++) store.lease({ type: 'acquire', resource: `r${i}`, holder: 'h', ttlMs: 100, nowMs: 1 })
  const three = store.leases(3)
  assert.deepEqual(three.map((lease) => lease.resource), ['r0', 'r1', 'r2'])
  assert.equal(three.more, true)
  assert.equal(store.leases(5).more, false)
  assert.equal(store.leases().more, false)
  assert.equal(store.leases(0).length, 0)
  assert.equal(store.leases(0).more, true)
  assert.deepEqual(Object.keys(three), ['0', '1', '2'], '`more` is not one of the rows')
  const records = store.readAll({ limit: 4 })
  assert.equal(records.length, 4)
  assert.equal(records.more, true)
  assert.equal(store.readAll({ from: 1n, limit: 4 }).more, false)
  assert.equal(store.readStream('lease:r0', { limit: 1 }).more, false)
  for (let i = 0; i < 3; i++) store.outbox({ type: 'enqueue', key: `k${i}`, peer: 'hub', kind: 'ping', payload: 'x', nowMs: 1 })
  assert.equal(store.outboxOpenFor('hub', 2).more, true)
  assert.equal(store.outboxOpenFor('hub').more, false)
  assert.equal(store.instances({ limit: 1 }).more, false)
  const numbers = Store.open(path.join(dir, 'numbers.redb'), { integers: 'number' })
  numbers.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 'a' }, { kind: 'k', atMs: 1, payload: 'b' }])
  assert.equal(numbers.readAll({ limit: 1 }).more, true)
  numbers.close()
  const { constants } = require('../lib.js')
  assert.deepEqual(constants.limits, { query: 1000, outboxOpenFor: 100, read: 1000 })
})
