'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')
const { freshStore, event } = require('./support/helpers.js')

test('a second Node process reads the log read-only while this one writes', (t) => {
  const { store, file } = freshStore(t)
  const reader = path.join(__dirname, 'support', 'reader.js')
  for (let round = 1; round <= 5; round++) {
    store.append('s', 'any', [event('k', round, `record ${round}`)])
    const child = spawnSync(process.execPath, [reader, file], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(child.status, 0, child.stderr)
    const seen = JSON.parse(child.stdout)
    assert.equal(seen.records, round, 'the reader sees every committed record')
    assert.equal(seen.last, `record ${round}`)
    assert.equal(seen.sound, true)
  }
})
