'use strict'
// Every error is an AnnalsError of its code's family (constants.errorFamilies), with `code`,
// `field` where it names a field and `path` where it names a file, made by the binding as an
// error object: nothing is carried in, or parsed back from, its message. Each way an error
// reaches a caller is here: lib.js's own checks, the crossing's, the library's refusals on the
// main thread, commits on libuv's pool and the writer's thread, and another process's hold.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const annals = require('../lib.js')
const { freshStore } = require('./support/helpers.js')

const { AnnalsError, constants } = annals

/** `error` is of `family` with `code`, and its message carries no payload to parse. */
function check(error, family, code) {
  assert.ok(error instanceof AnnalsError, `${error}`)
  assert.ok(error instanceof annals[family], `${error.name} is not a ${family}`)
  assert.equal(error.name, family)
  assert.equal(error.code, code)
  assert.doesNotMatch(error.message, /annals:|[{}]/, 'no JSON in the message')
  return true
}

test('every code is in one family, and each family is a class the package exports and declares', () => {
  const families = Object.entries(constants.errorFamilies)
  const seen = families.flatMap(([, codes]) => codes)
  assert.deepEqual([...seen].sort(), [...constants.errorCodes].sort(), 'each code in exactly one family')
  const declared = fs.readFileSync(path.join(__dirname, '..', 'lib.d.ts'), 'utf8')
  for (const [family, codes] of families) {
    assert.equal(typeof annals[family], 'function', family)
    assert.ok(Object.getPrototypeOf(annals[family]) === AnnalsError, `${family} extends AnnalsError`)
    const declaration = declared.match(new RegExp(`export declare class ${family} extends AnnalsError \\{\\n  readonly code: ([^\\n]+)`))
    assert.ok(declaration, `lib.d.ts declares ${family}`)
    assert.deepEqual(declaration[1].split(' | ').map((code) => code.slice(1, -1)), codes)
  }
})

test("lib.js's own check and the crossing's name the field", (t) => {
  const { store } = freshStore(t)
  assert.throws(() => store.lease({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 'soon', nowMs: 1 }), (error) =>
    check(error, 'InvalidInputError', 'INVALID_ARGUMENT') && error.field === 'ttlMs')
  // A safe integer past the field's own width passes lib.js's check and is refused by the crossing.
  assert.throws(() => store.outbox({ type: 'claim', peer: 'p', token: 't', limit: 2 ** 33, nowMs: 1 }), (error) =>
    check(error, 'InvalidInputError', 'INVALID_ARGUMENT') && error.field === 'limit')
})

test("the library's refusals: a command's field, a fenced write, a conflicting key with its position", (t) => {
  const { store } = freshStore(t)
  assert.throws(() => store.lease({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 0, nowMs: 1 }), (error) =>
    check(error, 'InvalidInputError', 'INVALID_COMMAND') && error.field === 'ttlMs' && /ttlMs/.test(error.message))
  const granted = store.lease({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 10, nowMs: 1 })
  store.lease({ type: 'acquire', resource: 'r', holder: 'other', ttlMs: 10, nowMs: 100 })
  const guard = { resource: 'r', token: granted.lease.token, nowMs: 100 }
  assert.throws(() => store.appendGuarded('s', 'any', [{ kind: 'k', atMs: 1, payload: 'x' }], guard), (error) => check(error, 'RefusedError', 'FENCED'))
  store.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 'one', idempotencyKey: 'key-1' }])
  assert.throws(() => store.append('s', 'any', [{ kind: 'k', atMs: 1, payload: 'two', idempotencyKey: 'key-1' }]), (error) =>
    check(error, 'RefusedError', 'IDEMPOTENCY_CONFLICT') && error.key === 'key-1' && typeof error.position === 'bigint')
})

test('a file the error names is its path; a closed store is a StateError', (t) => {
  const { store, dir } = freshStore(t)
  const missing = path.join(dir, 'no-such-folder', 'log.redb')
  assert.throws(() => annals.Store.open(missing), (error) => check(error, 'FileError', 'NOT_FOUND') && error.path === missing)
  const other = annals.Store.open(path.join(dir, 'other.redb'))
  other.close()
  assert.throws(() => other.head(), (error) => check(error, 'StateError', 'CLOSED'))
  store.head()
})

test('errors met off the main thread reject with the same classes and fields', async (t) => {
  const { store } = freshStore(t)
  // A commit on libuv's pool.
  await assert.rejects(store.leaseAsync({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 0, nowMs: 1 }), (error) =>
    check(error, 'InvalidInputError', 'INVALID_COMMAND') && error.field === 'ttlMs')
  // The writer's thread.
  const writer = store.writer()
  await assert.rejects(writer.outbox({ type: 'retry', key: 'k', backoff: { baseMs: 0, maxMs: 1 }, nowMs: 1 }), (error) =>
    check(error, 'InvalidInputError', 'INVALID_COMMAND') && error.field === 'backoff.baseMs')
  await assert.rejects(writer.append('s', 'exists', [{ kind: 'k', atMs: 1, payload: 'x' }]), (error) =>
    check(error, 'RefusedError', 'WRONG_EXPECTED_VERSION'))
  await writer.close()
})

test('a log another process holds is HELD, a BusyError naming its path', (t) => {
  const { dir } = freshStore(t)
  const file = path.join(dir, 'held.redb')
  const holder = annals.Store.open(file, { sharing: 'exclusive' })
  t.after(() => holder.close())
  const lib = JSON.stringify(path.join(__dirname, '..', 'lib.js'))
  const opener = `
    const annals = require(${lib})
    try { annals.Store.open(${JSON.stringify(file)}, { busyTimeoutMs: 10 }); console.log('{}') }
    catch (error) { console.log(JSON.stringify({ code: error.code, path: error.path, busy: error instanceof annals.BusyError })) }`
  const child = spawnSync(process.execPath, ['-e', opener], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(child.status, 0, child.stderr)
  assert.deepEqual(JSON.parse(child.stdout), { code: 'HELD', path: file, busy: true })
})
