'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

test('a scheduled run is rolled up when its root ends, its children\'s usage summed', (t) => {
  const { store } = freshStore(t)
  const start = (span, parent, kind, nowMs) =>
    store.span({ type: 'start', run: 'run-1', span, parent, name: span, kind, origin: 'cron', writer: 'rt-1', nowMs })
  const end = (span, usage, nowMs) =>
    store.span({ type: 'end', run: 'run-1', span, outcome: 'success', usage, nowMs })
  assert.deepEqual(start('root', undefined, 'turn', 1000), { type: 'started', seq: 1n, depth: 0 })
  assert.equal(start('tool-a', 'root', 'tool', 1010).depth, 1)
  assert.equal(start('tool-b', 'root', 'tool', 1020).depth, 1)
  assert.equal(end('tool-a', { inputTokens: 100, outputTokens: 10, costMicroUsd: 500 }, 1100).rollup, undefined)
  end('tool-b', { inputTokens: 50, outputTokens: 5, costMicroUsd: 250 }, 1200)
  const closed = end('root', {}, 1300)
  assert.equal(closed.type, 'ended')
  assert.equal(closed.rollup.spanCount, 3n)
  assert.equal(closed.rollup.inputTokens, 150n)
  assert.equal(closed.rollup.costMicroUsd, 750n)
  assert.equal(closed.rollup.durationMs, 300)
  assert.deepEqual(store.rollup('run-1'), closed.rollup)
  assert.equal(store.rollup('no-such-run'), null)
  assert.throws(() => start('x', undefined, 'not_a_kind', 1), { code: 'INVALID_ARGUMENT' })
})
