'use strict'
// What a call costs through the binding beside the same call from Rust (examples/call_cost.rs),
// on logs prepared the same way (1,000 appends of 200 bytes over 10 streams, 10 leases, 10
// outbox rows), in one run. Reads show the binding's own cost (argument conversion, a record's
// hash as hex and payload as a Buffer, the N-API call); a durable write shows how little of a
// commit it is; the same command on an exclusive store with deferred durability (no sync),
// each on a resource of its own, shows the binding's part of a command's CPU.
//
//   cd bindings/node && npm run build && node bench/calls.js
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { Store } = require('../lib.js')

const RECORDS = 1000
const READS = 20_000
const WRITES = 200
const DEFERRED_WRITES = 5_000

function perCall(count, call) {
  for (let i = 0; i < count / 10; i++) call()
  const started = process.hrtime.bigint()
  for (let i = 0; i < count; i++) call()
  return Number(process.hrtime.bigint() - started) / count
}

function prepare(store) {
  for (let i = 0; i < RECORDS; i++) {
    store.append(`stream-${i % 10}`, 'any', [{ kind: 'bench.event', atMs: i, payload: Buffer.alloc(200, 'x') }])
  }
  for (let i = 0; i < 10; i++) {
    store.lease({ type: 'acquire', resource: `resource-${i}`, holder: 'holder', ttlMs: 60_000_000, nowMs: 1 })
    store.outbox({ type: 'enqueue', key: `key-${i}`, peer: 'peer', kind: 'note', payload: Buffer.alloc(200, 'y'), nowMs: 1 })
  }
}

function node(file) {
  const store = Store.open(file)
  prepare(store)
  let nowMs = 10_000_000
  const timings = {
    head: perCall(READS, () => store.head()),
    get: perCall(READS, () => store.get(BigInt(RECORDS / 2))),
    readAll100: perCall(READS / 10, () => store.readAll({ from: 0n, limit: 100 })),
    leaseOf: perCall(READS, () => store.leaseOf('resource-7')),
    outboxRow: perCall(READS, () => store.outboxRow('key-7')),
    leaseAcquire: perCall(WRITES, () => store.lease({ type: 'acquire', resource: 'bench', holder: 'holder', ttlMs: 60_000, nowMs: ++nowMs })),
  }
  store.close()
  const deferred = Store.open(`${file}.deferred`, { sharing: 'exclusive', durability: 'deferred' })
  let resource = 0
  timings.leaseAcquireDeferred = perCall(DEFERRED_WRITES, () => deferred.lease({ type: 'acquire', resource: `cpu-${++resource}`, holder: 'holder', ttlMs: 60_000, nowMs: 1 }))
  deferred.close()
  return timings
}

function rust(file) {
  const root = path.join(__dirname, '..', '..', '..')
  const ran = spawnSync('cargo', ['run', '--quiet', '--release', '-p', 'annals-node', '--example', 'call_cost', '--', file], { cwd: root, encoding: 'utf8' })
  if (ran.status !== 0) throw new Error(`call_cost failed: ${ran.stderr}`)
  return JSON.parse(ran.stdout)
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'annals-calls-'))
try {
  const fromRust = rust(path.join(dir, 'rust.redb'))
  const fromNode = node(path.join(dir, 'node.redb'))
  console.log('| call | Rust, µs | Node binding, µs | the binding\'s part, µs | × Rust |')
  console.log('|---|---:|---:|---:|---:|')
  for (const name of Object.keys(fromNode)) {
    const r = fromRust[name] / 1000
    const n = fromNode[name] / 1000
    console.log(`| ${name} | ${r.toFixed(1)} | ${n.toFixed(1)} | ${(n - r).toFixed(1)} | ${(n / r).toFixed(2)} |`)
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
