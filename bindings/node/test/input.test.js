'use strict'
// Hostile arguments at every kind of entry point: each is refused with an AnnalsError of code
// INVALID_ARGUMENT naming the field as JavaScript spells it, before anything reaches the log.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const { Store, AnnalsError } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

const LONE = 'x\uD800' // a high surrogate with no low one after it
const LOW = '\uDC00y' // a low surrogate with no high one before it

const acquire = (fields) => ({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 10, nowMs: 1, ...fields })
const enqueue = (fields) => ({ type: 'enqueue', key: 'k', peer: 'p', kind: 'x', payload: Buffer.from('1'), nowMs: 1, ...fields })
const start = (fields) => ({ type: 'start', run: 'run', span: 'root', name: 'n', kind: 'cron', origin: 'cron', writer: 'w', nowMs: 1, ...fields })
const upsert = (fields) => ({ type: 'upsert', handle: 'alice', fields: { store: '/s' }, nowMs: 1, ...fields })
const ingest = (fields) => ({ type: 'ingest', project: 'p', run: 'r', sequence: 1n, hubProject: 'h', homeRuntime: 'rt', eventType: 'e', bytes: Buffer.from('x'), receivedAtMs: 1, ...fields })
const guard = { resource: 'r', token: 1n, nowMs: 1 }

// [what, call on the store, the field named]
const STRINGS = [
  ['a stream', (s) => s.append(LONE, 'any', [event('k', 1, 'x')]), 'stream'],
  ['a stream led by a low surrogate', (s) => s.append(LOW, 'any', [event('k', 1, 'x')]), 'stream'],
  ['a kind', (s) => s.append('s', 'any', [event(LONE, 1, 'x')]), 'events[0].kind'],
  ['an idempotency key', (s) => s.append('s', 'any', [event('k', 1, 'x', 'ok'), event('k', 1, 'x', LONE)]), 'events[1].idempotencyKey'],
  ['an expected version', (s) => s.append('s', `any${LOW}`, [event('k', 1, 'x')]), 'expected'],
  ['a guarded stream', (s) => s.appendGuarded(LONE, 'any', [event('k', 1, 'x')], guard), 'stream'],
  ['a guard', (s) => s.appendGuarded('s', 'any', [event('k', 1, 'x')], { ...guard, resource: LONE }), 'guard.resource'],
  ['a stream read', (s) => s.readStream('a\uD800'), 'stream'],
  ['a stream iterated', (s) => [...s.iterateStream(LOW)], 'stream'],
  ['a read direction', (s) => s.readAll({ direction: `forward${LONE}` }), 'direction'],
  ['a lease resource', (s) => s.lease(acquire({ resource: LONE })), 'resource'],
  ['a lease holder', (s) => s.execute(acquire({ holder: LOW })), 'holder'],
  ['a lease label', (s) => s.lease(acquire({ labels: { project: LONE, name: 'n', holderName: 'h' } })), 'labels.project'],
  ['a lane owner', (s) => s.lane({ type: 'laneClaim', lane: 'l', key: 'k', owner: LONE, ttlMs: 10, nowMs: 1 }), 'owner'],
  ['an outbox key', (s) => s.outbox(enqueue({ key: LONE })), 'key'],
  ['an outbox kind', (s) => s.execute(enqueue({ kind: LOW })), 'kind'],
  ['an ack key', (s) => s.outbox({ type: 'ack', peer: 'p', acks: [{ key: LONE, token: 't' }], nowMs: 1 }), 'acks[0].key'],
  ['a span name', (s) => s.span(start({ name: LONE })), 'name'],
  ['an attribute value', (s) => s.span(start({ attributes: { model: LONE } })), 'attributes.model'],
  ['an attribute key', (s) => s.span(start({ attributes: { [LONE]: 'v' } })), 'attributes (a key)'],
  ['a usage model', (s) => s.span({ type: 'patch', run: 'run', span: 'root', usage: { model: LONE }, nowMs: 1 }), 'usage.model'],
  ['a registry handle', (s) => s.registry(upsert({ handle: LONE })), 'handle'],
  ['a known handle', (s) => s.registry(upsert({ fields: { store: '/s', knows: ['bob', LOW] } })), 'fields.knows[1]'],
  ['a setting value', (s) => s.setting({ key: 'k', value: LONE, nowMs: 1 }), 'value'],
  ['a fuel operation', (s) => s.execute({ type: 'fuel', instance: 'i', caller: 'c', op: LONE, fuel: 1, nowMs: 1 }), 'op'],
  ['an ingest project', (s) => s.execute(ingest({ project: LONE })), 'project'],
  ['a consumer', (s) => s.consumer({ consumer: LONE, position: 0n, hash: '0'.repeat(64), nowMs: 1 }), 'consumer'],
  ['a query key', (s) => s.leaseOf(LONE), 'resource'],
  ['a query of two keys', (s) => s.laneOf('l', LOW), 'key'],
  ['a query option', (s) => s.instances({ status: LONE }), 'status'],
  ['a projection', (s) => s.state(LONE), 'projection'],
  ['an archive path', (s) => s.archiveBefore(0n, LONE), 'path'],
]

const SHAPES = [
  ['a prototype name as a command type', (s) => s.execute({ type: 'constructor' }), 'type'],
  ['__proto__ as a command type', (s) => s.execute({ type: '__proto__' }), 'type'],
  ['toString as a command type', (s) => s.execute({ type: 'toString' }), 'type'],
  ['a prototype name as a lease type', (s) => s.lease({ type: 'hasOwnProperty' }), 'type'],
  ['an inherited type', (s) => s.execute(Object.create({ type: 'acquire' })), 'type'],
  ['a command that is not an object', (s) => s.execute('acquire'), 'command'],
  ['__proto__ as an attribute key', (s) => s.span(start({ attributes: JSON.parse('{"__proto__": "x", "a": "b"}') })), 'attributes.__proto__'],
  ['__proto__ as a field', (s) => s.lease(JSON.parse('{"type": "acquire", "resource": "r", "holder": "h", "ttlMs": 10, "nowMs": 1, "__proto__": {}}')), '__proto__'],
  ['an unknown command field', (s) => s.lease(acquire({ ttl: 5 })), 'ttl'],
  ['an unknown event field', (s) => s.append('s', 'any', [{ ...event('k', 1, 'x'), idempotency_key: 'k' }]), 'events[0].idempotency_key'],
  ['an unknown nested field', (s) => s.registry(upsert({ fields: { store: '/s', sotre: '/t' } })), 'fields.sotre'],
  ['an unknown read option', (s) => s.readAll({ limt: 5 }), 'limt'],
  ['an unknown iterate option', (s) => [...s.iterateAll({ form: 0n })], 'form'],
  ['an unknown writer option', (s) => s.writer({ batchmax: 1 }), 'batchmax'],
  ['an unknown writer durability', (s) => s.writer({ durability: 'later' }), 'durability'],
  ['an unknown guard field', (s) => s.appendGuarded('s', 'any', [event('k', 1, 'x')], { ...guard, bogus: 1 }), 'guard.bogus'],
  ["an unknown field of a call's guard", (s) => s.lease(acquire(), { guard: { ...guard, bogus: 1 } }), 'guard.bogus'],
  ['a guard without its token', (s) => s.append('s', 'any', [event('k', 1, 'x')], { guard: { resource: 'r', nowMs: 1 } }), 'guard.token'],
  ['an unknown subscribe option', (s) => s.subscribe({ form: 0n }), 'form'],
  ['a field of another command', (s) => s.lease(acquire({ token: 1n })), 'token'],
  ['a required field null', (s) => s.lease(acquire({ resource: null })), 'resource'],
  ['a required field absent', (s) => s.lease({ type: 'acquire', holder: 'h', ttlMs: 10, nowMs: 1 }), 'resource'],
  ['read options as a string', (s) => s.readAll('limit'), 'options'],
  ['read options as an array', (s) => s.readAll([5]), 'options'],
  ['writer options as a string', (s) => s.writer('fast'), 'options'],
  ['subscribe options as a number', (s) => s.subscribe(5), 'options'],
  ['query options as a string', (s) => s.instances('enabled'), 'options'],
  ['a fraction for a bigint', (s) => s.lease({ type: 'renew', resource: 'r', holder: 'h', token: 1.5, ttlMs: 10, nowMs: 1 }), 'token'],
  ['an unsafe number for a bigint', (s) => s.lease({ type: 'renew', resource: 'r', holder: 'h', token: 2 ** 60, ttlMs: 10, nowMs: 1 }), 'token'],
  ['a bigint past 2^53 for a number', (s) => s.lease(acquire({ nowMs: 2n ** 60n })), 'nowMs'],
  ['a string for the events', (s) => s.append('s', 'any', 'events'), 'events'],
  ['a hole among the events', (s) => s.append('s', 'any', [event('k', 1, 'x'), , event('k', 1, 'y')]), 'events[1]'],
  ['a number for a payload', (s) => s.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 5 }]), 'events[0].payload'],
  ['an array for a payload', (s) => s.append('s', 'any', [{ kind: 'k', atMs: 1, payload: [1, 2] }]), 'events[0].payload'],
  ['an argument too many', (s) => s.head(1), 'arguments[0]'],
]

// Numbers that napi-rs would wrap or truncate, each refused against its field's own range.
const NUMBERS = [
  ['a negative read limit', (s) => s.readAll({ limit: -1 }), 'limit'],
  ['a read limit past 2^32 - 1', (s) => s.readAll({ limit: 2 ** 32 }), 'limit'],
  ['a fractional read limit', (s) => s.readStream('s', { limit: 1.5 }), 'limit'],
  ['a NaN read limit', (s) => s.readAll({ limit: NaN }), 'limit'],
  ['a query limit past 2^32 - 1', (s) => s.leases(2 ** 32), 'limit'],
  ['a negative query limit', (s) => s.outboxOpenFor('p', -1), 'limit'],
  ['a query option limit', (s) => s.instances({ limit: Infinity }), 'limit'],
  ['a negative queue depth', (s) => s.writer({ queueDepth: -1 }), 'queueDepth'],
  ['a batch size past 2^32 - 1', (s) => s.writer({ batchMax: 2 ** 32 }), 'batchMax'],
  ['a batch size of 0', (s) => s.writer({ batchMax: 0 }), 'batchMax'],
  ['a negative claim limit', (s) => s.outbox({ type: 'claim', peer: 'p', token: 't', limit: -1, leaseMs: 10, nowMs: 1 }), 'limit'],
  ['fractional attempts', (s) => s.outbox({ type: 'markWaiting', key: 'k', attempts: 1.5, nowMs: 1 }), 'attempts'],
  ['an event cap past 2^32 - 1', (s) => s.span({ type: 'event', run: 'r', span: 's', eventType: 'e', payload: 'p', payloadBytesMax: 2 ** 32, nowMs: 1 }), 'payloadBytesMax'],
  ['a negative prune batch', (s) => s.run({ type: 'pruneRuns', digestFloorAtMs: 0, detailRetentionMs: 0, hardCeilingMs: 0, batch: -1, nowMs: 1 }), 'batch'],
  ['a negative ttl', (s) => s.lease(acquire({ ttlMs: -1 })), 'ttlMs'],
  ['a NaN clock', (s) => s.execute(acquire({ nowMs: NaN })), 'nowMs'],
  ['a clock past 2^53 - 1', (s) => s.lease(acquire({ nowMs: 2 ** 53 })), 'nowMs'],
  ['an infinite event time', (s) => s.append('s', 'any', [event('k', Infinity, 'x')]), 'events[0].atMs'],
  ["a negative second event's time", (s) => s.append('s', 'any', [event('k', 1, 'x'), event('k', -1, 'y')]), 'events[1].atMs'],
  ['an event schema past 2^16 - 1', (s) => s.append('s', 'any', [{ ...event('k', 1, 'x'), schema: 2 ** 16 }]), 'events[0].schema'],
  ['a negative guard token', (s) => s.appendGuarded('s', 'any', [event('k', 1, 'x')], { ...guard, token: -1n }), 'guard.token'],
  ["a fractional clock in a call's guard", (s) => s.lease(acquire(), { guard: { ...guard, nowMs: 1.5 } }), 'guard.nowMs'],
  ['fractional fuel calls', (s) => s.fuel({ instance: 'i', caller: 'c', op: 'o', calls: 1.5, fuel: 1, nowMs: 1 }), 'calls'],
  ['a fraction for a position', (s) => s.get(1.5), 'position'],
  ['a negative position', (s) => s.get(-1n), 'position'],
  ['a position past 2^64 - 1', (s) => s.get(2n ** 64n), 'position'],
  ['a negative read start', (s) => s.readAll({ from: -1n }), 'from'],
]

/** Runs each case against the store, checking its refusal and that the log did not move. */
function refuses(store, cases) {
  const head = store.head()
  const records = store.readAll().length
  for (const [what, run, field] of cases) {
    assert.throws(() => run(store), (error) => {
      assert.ok(error instanceof AnnalsError, `${what}: ${error}`)
      assert.equal(error.code, 'INVALID_ARGUMENT', `${what}: ${error.message}`)
      assert.equal(error.field, field, `${what}: ${error.message}`)
      assert.ok(error.message.includes(field) && error.message.length > field.length + 2, `${what}: ${error.message}`)
      return true
    })
    assert.deepEqual(store.head(), head, `${what}: the log moved`)
    assert.equal(store.readAll().length, records, `${what}: a record was written`)
  }
  assert.equal(store.verify().sound, true)
}

test('a lone surrogate in any string argument or field is refused, naming the field', (t) => {
  const { store } = freshStore(t)
  store.append('a\uFFFD', 'none', [event('k', 1, 'replacement')]) // where a lossy conversion would land
  refuses(store, STRINGS)
})

test('prototype names, unknown fields, absent or mistyped fields and options are refused, naming the field', (t) => {
  const { store } = freshStore(t)
  assert.equal(store.lease(acquire()).type, 'granted')
  refuses(store, SHAPES)
})

test('numbers out of range, negative, fractional or NaN are refused, naming the field', (t) => {
  const { store } = freshStore(t)
  assert.equal(store.lease(acquire()).type, 'granted')
  refuses(store, NUMBERS)
})

test('a zero ttl is refused by the lease rule, naming the field as a negative one is named', (t) => {
  const { store } = freshStore(t)
  // The crate's rule (INVALID_COMMAND) and the binding's conversion (INVALID_ARGUMENT) spell
  // the field alike.
  assert.throws(() => store.lease(acquire({ ttlMs: 0 })), { code: 'INVALID_COMMAND', field: 'ttlMs' })
  assert.throws(() => store.lease(acquire({ ttlMs: -1 })), { code: 'INVALID_ARGUMENT', field: 'ttlMs' })
  assert.throws(() => store.lane({ type: 'laneClaim', lane: 'l', key: 'k', owner: 'o', ttlMs: 0, nowMs: 1 }), { code: 'INVALID_COMMAND', field: 'ttlMs' })
  assert.equal(store.head().next, 0n)
})

test('an open that fails names the path, and open options are checked read-only too', (t) => {
  const { dir, file } = freshStore(t)
  const missing = '/nonexistent/x.redb'
  assert.throws(() => Store.open(missing), (error) => {
    assert.ok(error instanceof AnnalsError, String(error))
    assert.equal(error.code, 'NOT_FOUND')
    assert.equal(error.path, missing)
    assert.ok(error.message.includes(missing), error.message)
    return true
  })
  assert.throws(() => Store.open(`${dir}/nothing.redb`, { readOnly: true }), { code: 'NOT_FOUND', path: `${dir}/nothing.redb` })
  for (const busyTimeoutMs of [-1, NaN, 1.5]) {
    assert.throws(() => Store.open(file, { readOnly: true, busyTimeoutMs }), { code: 'INVALID_ARGUMENT', field: 'busyTimeoutMs' })
    assert.throws(() => Store.open(`${dir}/other.redb`, { busyTimeoutMs }), { code: 'INVALID_ARGUMENT', field: 'busyTimeoutMs' })
  }
  assert.ok(!fs.existsSync(`${dir}/other.redb`), 'no file was created')
})

test('the writer rejects the same arguments, and writes nothing', async (t) => {
  const { store } = freshStore(t)
  const writer = store.writer()
  const cases = [
    [() => writer.append(LONE, 'any', [event('k', 1, 'x')]), 'stream'],
    [() => writer.append('s', 'any', [event('k', 1, 'x', LOW)]), 'events[0].idempotencyKey'],
    [() => writer.append('s', 'any', [event('k', 1, 'x'), event('k', 2 ** 53, 'y')]), 'events[1].atMs'],
    [() => writer.execute(enqueue({ peer: LONE })), 'peer'],
    [() => writer.execute({ type: 'constructor' }), 'type'],
    [() => writer.lease(acquire({ extra: true })), 'extra'],
    [() => writer.setting({ type: 'setting', key: 'k', value: 'v', nowMs: 1 }), 'type'],
  ]
  for (const [run, field] of cases) {
    await assert.rejects(run(), (error) => {
      assert.ok(error instanceof AnnalsError, String(error))
      assert.equal(error.code, 'INVALID_ARGUMENT')
      assert.equal(error.field, field, error.message)
      return true
    })
  }
  assert.throws(() => writer.queued(1), { code: 'INVALID_ARGUMENT', field: 'arguments[0]' })
  await writer.close()
  assert.equal(store.head().next, 0n)
})

test('a path or an open option with a lone surrogate opens nothing', (t) => {
  const { dir, file } = freshStore(t)
  const before = fs.readdirSync(dir).sort()
  const cases = [
    [() => Store.open(`${dir}/log\uD800.redb`), 'path'],
    [() => Store.open(file.replace('log', '\uDC00')), 'path'],
    [() => Store.open(`${dir}/other.redb`, { sharing: LONE }), 'sharing'],
    [() => Store.open(`${dir}/other.redb`, { archives: ['a.archive', LONE] }), 'archives[1]'],
    [() => Store.open(`${dir}/other.redb`, 'readOnly'), 'options'],
    [() => Store.open(`${dir}/other.redb`, { readonly: true }), 'readonly'],
    [() => Store.open(`${dir}/other.redb`, { readOnly: 'yes' }), 'readOnly'],
  ]
  for (const [run, field] of cases) {
    assert.throws(run, (error) => error instanceof AnnalsError && error.code === 'INVALID_ARGUMENT' && error.field === field)
  }
  assert.deepEqual(fs.readdirSync(dir).sort(), before, 'no file was created')
})

test('well-formed strings, surrogate pairs among them, and null for an optional field are taken', (t) => {
  const { store } = freshStore(t)
  const outcome = store.append('deploy/😀', 'none', [{ ...event('k😀', 1, 'x'), idempotencyKey: null }])
  assert.equal(outcome.type, 'appended')
  assert.equal(store.readStream('deploy/😀')[0].kind, 'k😀')
  assert.equal(store.readStream('deploy/😀', null).length, 1)
  assert.equal(store.readAll({ from: null, limit: null, direction: null }).length, 1)
  assert.equal(store.lease(acquire({ labels: null })).type, 'granted')
  assert.equal(store.execute(ingest({})).type, 'accepted')
})
