'use strict'
// Run by erasure.test.js as another process: opens the log beside its writer (multi-writer),
// erases a subject, and prints what each of its reads gives after.
const { Store } = require('../../lib.js')
const [file, subject, atMs] = process.argv.slice(2)
const store = Store.open(file, { sharing: 'multi-writer', busyTimeoutMs: 60_000 })
const erasure = store.erase(subject, Number(atMs))
const records = store.readAll().filter((record) => record.subject === subject)
process.stdout.write(
  JSON.stringify({
    position: String(erasure.position),
    appended: erasure.appended,
    keyDestroyed: erasure.keyDestroyed,
    read: records.map((record) => ({ erased: record.erased === true, payload: record.payload })),
  }),
)
store.close()
