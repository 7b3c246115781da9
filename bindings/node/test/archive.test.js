'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { freshStore, event } = require('./support/helpers.js')
const { Store, ArchivedError } = require('../lib.js')

test('archiveBefore cuts the log: reads below throw ARCHIVED naming the archive, the rest reads on', (t) => {
  const { store, dir } = freshStore(t)
  for (let n = 0; n < 50; n++) store.append(`s-${n % 3}`, 'any', [event('test.event', n, `record ${n}`)])
  const root = store.head()
  const anchor = store.get(19n).hash
  const archive = path.join(dir, 'log-0.archive')
  const report = store.archiveBefore(20n, archive)
  // The crate's own ArchiveReport, crossed by serde: the cut as its record says it.
  assert.deepEqual([report.cut.from, report.cut.before, report.record, report.archived], [0n, 20n, 50n, 20n])
  assert.match(report.cut.archiveDigest, /^[0-9a-f]{64}$/)
  assert.equal(report.cut.anchor, anchor, 'the anchor is the last archived record\'s hash')
  assert.equal(report.archive, archive)
  assert.equal(report.cut.archive, 'log-0.archive')
  assert.ok(report.cut.projections.length > 0)
  for (const projection of report.cut.projections) assert.equal(typeof projection.version, 'number')
  assert.ok(fs.existsSync(archive))
  assert.equal(store.start(), 20n)
  assert.throws(() => store.get(5n), (error) => {
    assert.equal(error.code, 'ARCHIVED')
    assert.ok(error instanceof ArchivedError)
    assert.equal(error.position, 5n)
    assert.equal(error.before, 20n)
    assert.equal(error.archive, 'log-0.archive')
    assert.equal(error.message, 'position 5 is archived before 20 in log-0.archive')
    return true
  })
  assert.equal(store.get(20n).position, 20n)
  assert.equal(store.readAll({ from: 20n, limit: 100 }).length, 31)
  assert.equal(store.head().next, root.next + 1n)
  // Going back is refused, and writes nothing.
  assert.throws(() => store.archiveBefore(10n, path.join(dir, 'again')), { code: 'ARCHIVE_REFUSED' })
  assert.ok(!fs.existsSync(path.join(dir, 'again')))
})

test('a cut log opens with its archives, and archives that are not its history throw', (t) => {
  const { store, file, dir } = freshStore(t)
  for (let n = 0; n < 30; n++) store.append(`s-${n % 3}`, 'any', [event('test.event', n, `record ${n}`)])
  const archive = path.join(dir, 'log-0.archive')
  store.archiveBefore(12n, archive)
  const head = store.head()
  store.close()
  // The built-in projections are in the cut: the archives are not needed, and not read.
  const reopened = Store.open(file, { archives: [archive] })
  assert.deepEqual(reopened.head(), head)
  assert.equal(reopened.start(), 12n)
  assert.equal(reopened.verify().sound, true)
  reopened.close()
  assert.throws(() => Store.open(file, { archives: [42] }), { code: 'INVALID_ARGUMENT' })
})
