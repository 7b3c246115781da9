'use strict'
// The example hub type-checks against lib.d.ts and index.d.ts (the generated types) and runs.
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.join(__dirname, '..')

test('the example hub compiles with tsc in strict mode and runs its rules', (t) => {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'examples')], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  assert.equal(compiled.status, 0, compiled.stdout + compiled.stderr)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'annals-hub-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const ran = spawnSync(process.execPath, [path.join(root, 'examples', 'hub.js'), path.join(dir, 'hub.redb')], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  assert.equal(ran.status, 0, ran.stderr)
  assert.match(ran.stdout, /agent-1's late write was refused: FENCED/)
  assert.match(ran.stdout, /delivered: notify-1/)
  assert.match(ran.stdout, /"inputTokens":1200/)
  assert.match(ran.stdout, /verify: sound/)
  // The lease's history as `annals history` prints it, when the command line is built (CI
  // builds it with `cargo test` before these tests run).
  const built = ['release', 'debug'].some((profile) => fs.existsSync(path.join(root, '..', '..', 'target', profile, 'annals')))
  if (built) {
    assert.match(ran.stdout, /^0 lease\/deploy-lock@0 lease\.acquired .*"holder":"agent-1","token":1/m)
    assert.match(ran.stdout, /^2 lease\/deploy-lock@1 lease\.acquired .*"holder":"agent-2","token":2/m)
  } else {
    t.diagnostic('the annals command line is not built: its history was not checked')
  }
})
