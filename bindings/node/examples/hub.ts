// A small hub, as the reference hosts keep one, on annals instead of SQLite rows: a deploy
// lease with fencing, an outbox of deliveries to a peer, and a run's span tree with its
// rollup. Every change is an append; `annals history` shows what happened to the lease.
//
//   npm run example -- hub.redb
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import * as path from 'node:path'
import { AnnalsError, Store } from '../lib'

const file = process.argv[2] ?? 'hub.redb'
const store = Store.open(file)
let now = 1_767_225_600_000 // the host's clock, passed in with every command

// A lease with fencing: the holder's writes carry its token, and a taken-over token is refused.
const granted = store.lease({ type: 'acquire', resource: 'deploy-lock', holder: 'agent-1', ttlMs: 5_000, nowMs: now })
if (granted.type !== 'granted') throw new Error(`the lease is ${granted.type}`)
const token = granted.lease.token
store.appendGuarded('deploy/web', 'any', [{ kind: 'deploy.step', atMs: now, payload: Buffer.from('migrate') }], {
  resource: 'deploy-lock', token, nowMs: now,
})
now += 10_000 // agent-1 stalls; its lease lapses and agent-2 takes over
const takeover = store.lease({ type: 'acquire', resource: 'deploy-lock', holder: 'agent-2', ttlMs: 5_000, nowMs: now })
console.log(`agent-2 took the lease over: ${takeover.type}, token ${takeover.type === 'granted' ? takeover.lease.token : '-'}`)
try {
  store.appendGuarded('deploy/web', 'any', [{ kind: 'deploy.step', atMs: now, payload: Buffer.from('late') }], {
    resource: 'deploy-lock', token, nowMs: now,
  })
} catch (error) {
  if (!(error instanceof AnnalsError) || error.code !== 'FENCED') throw error
  console.log(`agent-1's late write was refused: ${error.code}`)
}

// The outbox: enqueued once, claimed, acked under the claim's token.
store.outbox({ type: 'enqueue', key: 'notify-1', peer: 'peer-a', kind: 'deploy.done', payload: Buffer.from('{}'), nowMs: now })
const claimed = store.outbox({ type: 'claim', peer: 'peer-a', token: 'claim-1', limit: 10, leaseMs: 30_000, nowMs: now })
if (claimed.type === 'claimed') {
  const acked = store.outbox({ type: 'ack', peer: 'peer-a', acks: claimed.rows.map((row) => ({ key: row.key, token: claimed.token })), nowMs: now + 1 })
  console.log(`delivered: ${acked.type === 'acked' ? acked.acked.join(', ') : acked.type}`)
}

// A scheduled run: its children's usage rolled up when the root ends.
const span = (type: 'start' | 'end', id: string, extra: object) =>
  store.span({ type, run: 'nightly', span: id, ...extra } as Parameters<Store['span']>[0])
span('start', 'root', { name: 'nightly', kind: 'cron', origin: 'cron', writer: 'hub', nowMs: now })
span('start', 'step-1', { parent: 'root', name: 'index', kind: 'tool', origin: 'cron', writer: 'hub', nowMs: now + 1 })
span('end', 'step-1', { outcome: 'success', usage: { inputTokens: 1200, costMicroUsd: 900 }, nowMs: now + 50 })
const ended = span('end', 'root', { outcome: 'success', nowMs: now + 60 })
// Counts are bigints (as every u64 but milliseconds): JSON is given them as numbers.
const numbers = (_: string, value: unknown) => (typeof value === 'bigint' ? Number(value) : value)
if (ended.type === 'ended') console.log(`run rolled up: ${JSON.stringify(ended.rollup, numbers)}`)

const report = store.verify()
console.log(`verify: ${report.sound ? 'sound' : report.findings.join('; ')}, ${report.records} records`)
store.close()

// What happened to the lease, as an auditor reads it with the annals command line.
const cli = ['annals', '../../target/release/annals', '../../target/debug/annals']
  .map((candidate) => (candidate.includes('/') ? path.resolve(__dirname, '..', candidate) : candidate))
  .find((candidate) => !candidate.includes('/') ? spawnSync(candidate, ['--version']).status === 0 : existsSync(candidate))
if (cli) {
  const history = spawnSync(cli, ['history', file, 'lease:deploy-lock'], { encoding: 'utf8' })
  process.stdout.write(history.stdout)
} else {
  console.log('(the annals command line is not built: `cargo build` at the repository root)')
}
