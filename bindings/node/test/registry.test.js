'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('an instance is registered, updated only where it changes, and removed', (t) => {
  const { store } = freshStore(t)
  const added = store.registry({ type: 'upsert', handle: 'alice', fields: { store: '/srv/alice', topics: ['news'] }, nowMs: 1 })
  assert.equal(added.type, 'added')
  assert.equal(added.instance.handle, 'alice')
  assert.equal(added.instance.domain, 'localhost', 'the default domain')
  const same = store.registry({ type: 'upsert', handle: 'alice', fields: { store: '/srv/alice' }, nowMs: 2 })
  assert.equal(same.type, 'unchanged')
  const disabled = store.registry({ type: 'setStatus', handle: 'alice', status: 'disabled', nowMs: 3 })
  assert.equal(disabled.type, 'updated')
  assert.equal(store.instance('alice').status, 'disabled')
  assert.throws(() => store.registry({ type: 'upsert', handle: 'Not A Handle!', fields: { store: 'x' }, nowMs: 4 }), {
    code: 'INVALID_COMMAND',
  })
  assert.throws(() => store.registry({ type: 'upsert', handle: 'bob', fields: {}, nowMs: 4 }), {
    code: 'INVALID_COMMAND',
  })
  assert.equal(store.registry({ type: 'remove', handle: 'alice', nowMs: 5 }).type, 'removed')
  assert.deepEqual(store.registry({ type: 'remove', handle: 'alice', nowMs: 6 }), { type: 'missing' })
  assert.equal(store.instance('alice'), null)
})

test('a consumer checkpoints how far it read, and a checkpoint behind it is refused', (t) => {
  const { store } = freshStore(t)
  for (let i = 0; i < 3; i++) store.append('s', 'any', [{ kind: 'k', atMs: i, payload: Buffer.from(`${i}`) }])
  const [, second] = store.readAll()
  const checkpointed = store.consumer({ consumer: 'exporter', position: second.position, hash: second.hash, nowMs: 10 })
  assert.equal(checkpointed.type, 'checkpointed')
  assert.equal(checkpointed.checkpoint.position, 1n)
  assert.equal(store.consumer({ consumer: 'exporter', position: 1n, hash: second.hash, nowMs: 11 }).type, 'unchanged')
  const first = store.get(0n)
  const behind = store.consumer({ consumer: 'exporter', position: 0n, hash: first.hash, nowMs: 12 })
  assert.equal(behind.type, 'refused')
  assert.equal(behind.checkpoint.position, 1n)
  assert.throws(() => store.consumer({ consumer: 'exporter', position: 2n, hash: 'zz', nowMs: 13 }), {
    code: 'INVALID_ARGUMENT',
  })
})

test('settings are set once per value and fuel adds up per instance, caller and op', (t) => {
  const { store } = freshStore(t)
  assert.deepEqual(store.setting({ key: 'hub.url', value: 'https://a', nowMs: 1 }), { type: 'set' })
  assert.deepEqual(store.setting({ key: 'hub.url', value: 'https://a', nowMs: 2 }), { type: 'unchanged' })
  assert.deepEqual(store.setting({ key: 'hub.url', value: 'https://b', nowMs: 3 }), { type: 'set', previous: 'https://a' })
  assert.equal(store.settingOf('hub.url'), 'https://b')
  store.execute({ type: 'fuel', instance: 'alice', caller: 'bob', op: 'read', fuel: 7, nowMs: 4 })
  const second = store.fuel({ instance: 'alice', caller: 'bob', op: 'read', calls: 2, fuel: 5, nowMs: 5 })
  // Counts are u64s, and cross as every u64 but milliseconds does: bigints.
  assert.equal(second.entry.calls, 3n)
  assert.equal(second.entry.fuel, 12n)
  assert.equal(second.total.fuel, 12n)
  assert.throws(() => store.fuel({ instance: 'alice', caller: 'bob', op: 'read', fuel: -1, nowMs: 6 }), { code: 'INVALID_ARGUMENT' })
})

test('whom an instance knows and its topics are replaced by their own commands', (t) => {
  const { store } = freshStore(t)
  store.registry({ type: 'upsert', handle: 'alice', fields: { store: '/srv/alice' }, nowMs: 1 })
  const knows = store.execute({ type: 'setKnows', handle: 'alice', knows: ['bob', 'carol', 'bob'], nowMs: 2 })
  assert.equal(knows.type, 'updated')
  assert.deepEqual(store.instance('alice').knows, ['bob', 'carol'], 'repeats dropped')
  assert.equal(store.registry({ type: 'setKnows', handle: 'alice', knows: ['bob', 'carol'], nowMs: 3 }).type, 'unchanged')
  assert.deepEqual(store.registry({ type: 'setKnows', handle: 'alice', knows: ['bob', '*'], nowMs: 4 }).instance.knows, ['*'])
  const topics = store.registry({ type: 'setTopics', handle: 'alice', topics: ['news', 'ops'], nowMs: 5 })
  assert.equal(topics.type, 'updated')
  assert.deepEqual(store.instance('alice').topics, ['news', 'ops'])
  assert.deepEqual(store.execute({ type: 'setTopics', handle: 'alice', topics: [], nowMs: 6 }).instance.topics, [])
  assert.deepEqual(store.registry({ type: 'setTopics', handle: 'nobody', topics: ['x'], nowMs: 7 }), { type: 'missing' })
  assert.throws(() => store.registry({ type: 'setKnows', handle: 'alice', knows: 'bob', nowMs: 8 }), { code: 'INVALID_ARGUMENT', field: 'knows' })
})
