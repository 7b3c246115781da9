'use strict'
// store.transaction(fn): every command fn makes is one commit, or none; the call options
// (a lease guard, a durability) of a single command.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { Store } = require('../lib.js')
const { freshStore, event } = require('./support/helpers.js')

const acquire = (resource, holder, nowMs, ttlMs = 1000) => ({ type: 'acquire', resource, holder, ttlMs, nowMs })

/** The bytes of the log and every file beside it (its journal). */
function filesOf(dir) {
  return Object.fromEntries(fs.readdirSync(dir).sort().map((name) => [name, fs.readFileSync(path.join(dir, name))]))
}

test('a transaction commits every command of fn at once, and its queries see its own commands', (t) => {
  const { store } = freshStore(t)
  const grantBoth = store.transaction((first, second) => {
    const a = store.lease(acquire(first, 'agent-1', 10))
    assert.equal(store.leaseOf(first).holder, 'agent-1', 'a query inside sees the transaction')
    assert.equal(store.head().next, 1n, 'head() inside sees the transaction')
    const b = store.execute(acquire(second, 'agent-1', 10))
    store.append('notes', 'none', [event('note', 10, 'both granted')])
    return [a.type, b.type]
  })
  assert.deepEqual(grantBoth('deploy', 'migrate'), ['granted', 'granted'])
  assert.equal(store.head().next, 3n)
  assert.equal(store.leaseOf('migrate').holder, 'agent-1')
  const records = store.readAll()
  assert.deepEqual(records.map((record) => record.kind), ['lease.acquired', 'lease.acquired', 'note'])
})

test('a throw inside fn writes nothing, leaves the files as they were, and is thrown as it is', (t) => {
  const { store, dir } = freshStore(t)
  store.lease(acquire('deploy', 'agent-1', 1))
  store.flush()
  const before = filesOf(dir)
  const head = store.head()
  const failing = store.transaction(() => {
    store.lease(acquire('migrate', 'agent-1', 2))
    store.append('notes', 'any', [event('note', 2, 'half')])
    throw new RangeError('changed my mind')
  })
  assert.throws(() => failing(), (error) => error instanceof RangeError && error.message === 'changed my mind')
  assert.deepEqual(store.head(), head)
  assert.equal(store.leaseOf('migrate'), null)
  assert.deepEqual(filesOf(dir), before, "the log's and the journal's bytes are as they were")
  // The store goes on as before.
  assert.equal(store.lease(acquire('migrate', 'agent-2', 3)).type, 'granted')
})

test('a refusal caught inside fn leaves the rest of it to commit', (t) => {
  const { store } = freshStore(t)
  store.append('s', 'none', [event('k', 1, 'first')])
  const result = store.transaction(() => {
    assert.throws(() => store.append('s', 'none', [event('k', 2, 'again')]), { code: 'WRONG_EXPECTED_VERSION' })
    const refused = store.lease({ type: 'renew', resource: 'nothing', holder: 'a', token: 1n, ttlMs: 5, nowMs: 2 })
    store.append('s', 0n, [event('k', 2, 'second')])
    return refused.type
  })()
  assert.equal(result, 'refused')
  assert.deepEqual(store.readStream('s').map((record) => record.payload.toString()), ['first', 'second'])
})

test('an async fn is refused before anything commits', async (t) => {
  const { store } = freshStore(t)
  const asynchronous = store.transaction(async () => {
    store.lease(acquire('deploy', 'agent-1', 1))
  })
  assert.throws(() => asynchronous(), { code: 'INVALID_ARGUMENT', field: 'fn' })
  assert.equal(store.head().next, 0n)
  assert.equal(store.leaseOf('deploy'), null)
})

test('what cannot run inside a transaction throws IN_TRANSACTION, and the transaction goes on', (t) => {
  const { store, dir } = freshStore(t)
  const seen = store.transaction(() => {
    const codes = []
    for (const call of [
      () => store.flush(),
      () => store.verify(),
      () => store.backup(path.join(dir, 'copy.redb')),
      () => store.archiveBefore(0n, path.join(dir, 'cut.archive')),
      () => store.close(),
      () => store.transaction(() => 1)(),
    ]) {
      try {
        call()
        codes.push('none')
      } catch (error) {
        codes.push(error.code)
      }
    }
    store.lease(acquire('deploy', 'agent-1', 1))
    return codes
  })()
  assert.deepEqual(seen, Array(6).fill('IN_TRANSACTION'))
  assert.equal(store.leaseOf('deploy').holder, 'agent-1')
  assert.equal(fs.existsSync(path.join(dir, 'copy.redb')), false)
})

test('a transaction is bad input for a command given its own durability, and for a bad option', (t) => {
  const { store } = freshStore(t)
  assert.throws(() => store.transaction(() => {}, { durability: 'sometimes' })(), { code: 'INVALID_ARGUMENT', field: 'durability' })
  assert.throws(() => store.transaction('not a function'), { code: 'INVALID_ARGUMENT', field: 'fn' })
  const run = store.transaction(() => store.lease(acquire('deploy', 'a', 1), { durability: 'deferred' }))
  assert.throws(() => run(), { code: 'INVALID_ARGUMENT', field: 'durability' })
  assert.equal(store.head().next, 0n)
})

test('another process sees none of a transaction until it commits, then all of it', (t) => {
  const { store, file } = freshStore(t)
  const reader = path.join(__dirname, 'support', 'reader.js')
  const look = () => {
    const child = spawnSync(process.execPath, [reader, file], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(child.status, 0, child.stderr)
    return JSON.parse(child.stdout)
  }
  store.append('s', 'any', [event('k', 1, 'before')])
  store.transaction(() => {
    store.append('s', 'any', [event('k', 2, 'inside 1')])
    store.append('s', 'any', [event('k', 3, 'inside 2')])
    const during = look()
    assert.equal(during.records, 1, 'a reader process sees no part of an open transaction')
    assert.equal(during.last, 'before')
  })()
  const after = look()
  assert.equal(after.records, 3)
  assert.equal(after.last, 'inside 2')
  assert.equal(after.sound, true)
})

test("a writer's promises queued during a transaction commit after it", async (t) => {
  const { store } = freshStore(t)
  const writer = store.writer()
  t.after(() => writer.close())
  let queued
  store.transaction(() => {
    store.append('s', 'none', [event('k', 1, 'in the transaction')])
    queued = writer.append('s', 0n, [event('k', 2, 'from the writer')])
  })()
  const outcome = await queued
  assert.equal(outcome.type, 'appended')
  assert.equal(outcome.firstVersion, 1n)
})

test('executeGuarded and a guard option fence a command by a lease, in the same commit', (t) => {
  const { store } = freshStore(t)
  const granted = store.lease(acquire('deploy', 'agent-1', 1, 10))
  const guard = { resource: 'deploy', token: granted.lease.token, nowMs: 5 }
  assert.equal(store.executeGuarded({ type: 'enqueue', key: 'k1', peer: 'p', kind: 'ping', payload: Buffer.from('x'), nowMs: 5 }, guard).type, 'enqueued')
  // The lease expires and another holder takes it over: the old token is fenced.
  store.lease(acquire('deploy', 'agent-2', 20, 10))
  const late = { ...guard, nowMs: 21 }
  assert.throws(() => store.executeGuarded(acquire('other', 'agent-1', 21), late), { code: 'FENCED' })
  assert.throws(() => store.outbox({ type: 'deliver', key: 'k1', nowMs: 21 }, { guard: late }), { code: 'FENCED' })
  assert.throws(() => store.append('s', 'any', [event('k', 21, 'late')], { guard: late }), { code: 'FENCED' })
  assert.equal(store.leaseOf('other'), null)
  assert.equal(store.outboxRow('k1').state, 'pending')
  // Inside a transaction, a guard is checked against the transaction's own commands.
  const fenced = store.transaction(() => {
    const mine = store.lease(acquire('build', 'agent-3', 30, 10))
    store.append('s', 'any', [event('k', 30, 'guarded')], { guard: { resource: 'build', token: mine.lease.token, nowMs: 30 } })
    return store.readStream('s').length
  })()
  assert.equal(fenced, 0, 'reads of records inside see the last commit')
  assert.equal(store.readStream('s').length, 1)
  assert.throws(() => store.executeGuarded(acquire('x', 'a', 1)), { code: 'INVALID_ARGUMENT', field: 'guard' })
})

test('durability: deferred commits in an exclusive store are visible at once and kept by flush; a shared store refuses them', (t) => {
  const { dir } = freshStore(t)
  const file = path.join(dir, 'exclusive.redb')
  const exclusive = Store.open(file, { sharing: 'exclusive', durability: 'deferred' })
  exclusive.lease(acquire('deploy', 'agent-1', 1))
  exclusive.append('s', 'any', [event('k', 2, 'deferred')], { durability: 'immediate' })
  exclusive.transaction(() => exclusive.append('s', 'any', [event('k', 3, 'deferred too')]))()
  assert.equal(exclusive.head().next, 3n)
  exclusive.flush()
  exclusive.close()
  const reopened = Store.open(file, { sharing: 'exclusive' })
  assert.equal(reopened.head().next, 3n)
  assert.equal(reopened.verify().sound, true)
  reopened.close()
  assert.throws(() => Store.open(file, { durability: 'later' }), { code: 'INVALID_ARGUMENT', field: 'durability' })
  const shared = Store.open(file)
  t.after(() => shared.close())
  assert.throws(() => shared.lease(acquire('deploy', 'agent-2', 5), { durability: 'deferred' }), { code: 'REFUSED' })
  assert.equal(shared.head().next, 3n)
})
