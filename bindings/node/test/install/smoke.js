// Run in a new folder where the packed package is installed (scripts/install-check.mjs): what
// a host does first with it, through the prebuilt addon alone.
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Store } = require('annals')

const resolved = require.resolve('annals-linux-x64-gnu')
assert.ok(resolved.includes(`node_modules${path.sep}annals-linux-x64-gnu`), `the addon from its package: ${resolved}`)
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'annals-smoke-'))
try {
  const store = Store.open(path.join(folder, 'host.redb'))
  const now = 1_767_225_600_000
  const outcome = store.lease({ type: 'acquire', resource: 'deploy-lock', holder: 'agent-7', ttlMs: 30_000, nowMs: now })
  assert.strictEqual(outcome.type, 'granted')
  assert.strictEqual(store.head().next, 1n)
  const record = store.get(0n)
  assert.strictEqual(record.kind, 'lease.acquired')
  const report = store.verify()
  assert.strictEqual(report.sound, true, report.findings.join('\n'))
  store.close()
  console.log('smoke: opened, leased, read and verified through the installed package')
} finally {
  fs.rmSync(folder, { recursive: true, force: true })
}
