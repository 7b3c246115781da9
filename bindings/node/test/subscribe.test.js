'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore, event } = require('./support/helpers.js')

test('a subscription delivers the history, then each record as it commits', async (t) => {
  const { store } = freshStore(t)
  for (let i = 0; i < 3; i++) store.append('s', 'any', [event('k', i, `old ${i}`)])
  const seen = []
  for await (const record of store.subscribe({ from: 1n })) {
    seen.push(record.payload.toString())
    // Once the history is read, a record committed now arrives live.
    if (seen.length === 2) store.append('s', 'any', [event('k', 9, 'live')])
    if (seen.length === 3) break
  }
  assert.deepEqual(seen, ['old 1', 'old 2', 'live'])
})
