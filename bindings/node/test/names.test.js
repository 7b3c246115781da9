'use strict'
// Reasons, statuses and kinds are unions of names generated from the Rust enums: the
// declarations type them (test/types/names.ts fails to compile where they would be `string`),
// constants.names lists them, the values the store gives are among them, and a name that is
// none of them is refused naming the field and the names it may be.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { constants } = require('../lib.js')
const { freshStore } = require('./support/helpers.js')

const root = path.join(__dirname, '..')

test('a reason, status or kind that is none of its names does not type-check', () => {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const checked = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types')], { encoding: 'utf8' })
  assert.equal(checked.status, 0, checked.stdout + checked.stderr)
})

test('each union the declarations name is declared with the names constants.names lists', () => {
  const declared = require('node:fs').readFileSync(path.join(root, 'index.d.ts'), 'utf8')
  assert.ok(Object.keys(constants.names).length >= 14)
  for (const [name, values] of Object.entries(constants.names)) {
    const union = declared.match(new RegExp(`export type ${name} =\\n((?:  \\| '[a-z_]+'\\n)+)`))
    assert.ok(union, `index.d.ts declares ${name}`)
    assert.deepEqual([...union[1].matchAll(/'([a-z_]+)'/g)].map((match) => match[1]), values, name)
    assert.ok(new RegExp(`: ${name}\\b`).test(declared), `a field is typed ${name}`)
  }
  assert.ok(constants.names.LeaseRefusal.includes('held'))
  assert.deepEqual(constants.names.InstanceStatus, ['enabled', 'disabled'])
})

test('the names the store gives back are among the listed ones', (t) => {
  const { store } = freshStore(t)
  store.lease({ type: 'acquire', resource: 'deploy', holder: 'a', ttlMs: 10, nowMs: 1 })
  const refused = store.lease({ type: 'acquire', resource: 'deploy', holder: 'b', ttlMs: 10, nowMs: 2 })
  assert.equal(refused.type, 'refused')
  assert.ok(constants.names.LeaseRefusal.includes(refused.reason), refused.reason)
  store.registry({ type: 'upsert', handle: 'alice', fields: { store: '/srv/alice' }, nowMs: 1 })
  const [alice] = store.instances()
  assert.ok(constants.names.InstanceStatus.includes(alice.status))
  assert.ok(constants.names.InstanceKind.includes(alice.kind))
})

test('a name that is none of its union is refused naming the field and the names', (t) => {
  const { store } = freshStore(t)
  assert.throws(() => store.instances({ status: 'enabeld' }), {
    code: 'INVALID_ARGUMENT',
    field: 'status',
    message: /status: must be one of 'enabled', 'disabled'; not 'enabeld'/,
  })
  assert.throws(() => store.registry({ type: 'setStatus', handle: 'alice', status: 7, nowMs: 1 }), {
    code: 'INVALID_ARGUMENT',
    field: 'status',
  })
  assert.equal(store.head().next, 0n, 'nothing was written')
})
