'use strict'
// Opened by processes.test.js as a second process: reads the log beside its writer.
const { Store } = require('../../lib.js')
const store = Store.open(process.argv[2], { readOnly: true })
const records = store.readAll()
const report = store.verify()
process.stdout.write(
  JSON.stringify({
    records: records.length,
    last: records[records.length - 1].payload.toString(),
    sound: report.sound,
  }),
)
store.close()
