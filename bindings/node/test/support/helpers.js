'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const assert = require('node:assert/strict')
const { Store } = require('../../lib.js')

/** A fresh log in a temporary folder; verified sound and closed by `done`. */
function freshStore(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'annals-node-'))
  const file = path.join(dir, 'log.redb')
  const store = Store.open(file)
  t.after(() => {
    try {
      const report = store.verify()
      assert.equal(report.sound, true, report.findings.join('\n'))
      store.close()
    } catch (error) {
      if (error.code !== 'CLOSED') throw error
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return { store, file, dir }
}

/** The codes README's table documents, one row each. */
function documentedCodes() {
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8')
  return new Set([...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]))
}

function event(kind, atMs, text, idempotencyKey) {
  return { kind, atMs, payload: Buffer.from(text), idempotencyKey }
}

module.exports = { freshStore, event, documentedCodes }
