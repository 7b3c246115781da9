'use strict'
// Random values thrown at every function: each call returns or throws an AnnalsError, and
// the process lives on.
const test = require('node:test')
const assert = require('node:assert/strict')
const { AnnalsError, Store, Writer } = require('../lib.js')
const { freshStore, documentedCodes } = require('./support/helpers.js')

const CODES = documentedCodes()

/** An error of the binding: an AnnalsError with a documented code and a message. */
function isAnnalsError(error, method) {
  assert.ok(error instanceof AnnalsError, `${method}: ${error}`)
  assert.ok(CODES.has(error.code), `${method}: ${error.code} is not documented`)
  assert.ok(error.message.length > 0, `${method}: ${error.code} without a message`)
}

// Every command type, so that random objects reach each conversion.
const WORDS = ['any', 'none', 'exists', 'acquire', 'renew', 'release', 'laneClaim', 'laneRenew', 'laneAdvance', 'laneRelease', 'enqueue', 'claim', 'ack', 'deliver', 'park', 'retry', 'markWaiting', 'markRetry', 'giveUp', 'expire', 'pruneOutbox', 'start', 'patch', 'end', 'spanHeartbeat', 'event', 'heartbeat', 'rollup', 'cascadeClose', 'sweepOrphans', 'sweepStale', 'pruneRuns', 'upsert', 'setStatus', 'remove', 'ingest', 'checkpoint', 'setting', 'fuel', 'success', 'cron', 'turn', 'enabled', 'constructor', '__proto__', 'toString', 'a\uD800', '\uDC00b']

/** Every method of a class but `close`: the binding's whole surface. */
function methodsOf(Class) {
  return Object.getOwnPropertyNames(Class.prototype).filter((name) => name !== 'constructor' && name !== 'close')
}

function random(seed) {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
}

function value(next, depth = 0) {
  const pick = Math.floor(next() * 12)
  switch (pick) {
    case 0: return undefined
    case 1: return null
    case 2: return Math.floor(next() * 2 ** 60) * (next() < 0.5 ? -1 : 1)
    case 3: return BigInt(Math.floor(next() * 2 ** 40)) * (next() < 0.2 ? -1n : 1n)
    case 4: return 'x'.repeat(Math.floor(next() * 300))
    case 5: return Buffer.alloc(Math.floor(next() * 64))
    case 6: return next() < 0.5
    case 7: return NaN
    case 8: return depth > 2 ? {} : Array.from({ length: 3 }, () => value(next, depth + 1))
    case 9: return WORDS[Math.floor(next() * WORDS.length)]
    default: {
      if (depth > 2) return {}
      const keys = ['type', 'resource', 'holder', 'ttlMs', 'nowMs', 'token', 'key', 'peer', 'kind', 'payload', 'atMs', 'limit', 'leaseMs', 'acks', 'from', 'direction', 'sharing', 'run', 'span', 'name', 'origin', 'writer', 'outcome', 'usage', 'project', 'sequence', 'hubProject', 'homeRuntime', 'eventType', 'bytes', 'receivedAtMs', 'batchMax', 'queueDepth', 'lane', 'owner', 'cursor', 'labels', 'backoff', 'attempts', 'nextAtMs', 'firstFailedAtMs', 'maxAgeMs', 'olderThanMs', 'attributes', 'billingMode', 'waitUntilMs', 'staleAfterMs', 'batch', 'status', 'fields', 'handle', 'value', 'fuel', 'consumer', 'position', 'hash']
      const object = {}
      for (const key of keys) if (next() < 0.5) object[key] = value(next, depth + 1)
      return object
    }
  }
}

test('random arguments to every method never crash the process', async (t) => {
  const { store } = freshStore(t)
  const next = random(7)
  const methods = methodsOf(Store)
  assert.ok(methods.length > 60, `every method: ${methods.length}`)
  let thrown = 0
  const pending = []
  for (let i = 0; i < 40 * methods.length; i++) {
    const method = methods[i % methods.length]
    const args = Array.from({ length: 4 }, () => value(next))
    try {
      const result = store[method](...args)
      // The async methods reject rather than throw.
      if (result instanceof Promise) pending.push(result.catch((error) => isAnnalsError(error, method)))
    } catch (error) {
      isAnnalsError(error, method)
      thrown++
    }
  }
  await Promise.all(pending)
  assert.ok(thrown > 0)
  assert.equal(store.verify().sound, true)
})

test('random calls inside transactions never crash, and each transaction commits whole or not at all', async (t) => {
  const { store } = freshStore(t)
  const pending = []
  const next = random(13)
  const methods = methodsOf(Store).filter((name) => name !== 'subscribe' && name !== 'writer')
  for (let round = 0; round < 30; round++) {
    const before = store.head().next
    let inside
    const commits = next() < 0.5
    const run = store.transaction(() => {
      for (let i = 0; i < methods.length; i++) {
        const method = methods[Math.floor(next() * methods.length)]
        try {
          const result = store[method](...Array.from({ length: 4 }, () => value(next)))
          if (result instanceof Promise) pending.push(result.catch((error) => isAnnalsError(error, method)))
        } catch (error) {
          isAnnalsError(error, method)
        }
      }
      inside = store.head().next
      if (!commits) throw new Error('rolled back')
    })
    if (commits) run()
    else assert.throws(run, { message: 'rolled back' })
    assert.equal(store.head().next, commits ? inside : before, `round ${round}`)
  }
  // An async command inside a transaction is refused (IN_TRANSACTION), never run.
  await Promise.all(pending)
  assert.equal(store.verify().sound, true)
})

test('random arguments to the writer reject with AnnalsError, never crash', async (t) => {
  const { store } = freshStore(t)
  const writer = store.writer()
  const next = random(11)
  let rejected = 0
  const methods = methodsOf(Writer)
  for (let i = 0; i < 40 * methods.length; i++) {
    const method = methods[i % methods.length]
    const args = Array.from({ length: 3 }, () => value(next))
    try {
      await writer[method](...args)
      if (method === 'queued') continue
    } catch (error) {
      isAnnalsError(error, method)
      rejected++
    }
  }
  assert.ok(rejected > 0)
  await writer.close()
  assert.equal(store.verify().sound, true)
})
