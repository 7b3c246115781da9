'use strict'
// The rest of the runs domain through the binding: patches, heartbeats, events, rollups of
// open runs, cascade closes, sweeps of orphaned and silent runs, pruning, and the queries.
const test = require('node:test')
const assert = require('node:assert/strict')
const { freshStore } = require('./support/helpers.js')

function starter(store, run, writer = 'rt-1', origin = 'session') {
  return (span, parent, nowMs, kind = 'tool') =>
    store.span({ type: 'start', run, span, parent, name: span, kind, origin, writer, sessionId: 's-1', nowMs })
}

test('a span is patched, heartbeats, records events (cut to the cap), and is read back', (t) => {
  const { store } = freshStore(t)
  const start = starter(store, 'run-1')
  start('root', undefined, 1000, 'turn')
  start('tool', 'root', 1010)
  const patched = store.span({ type: 'patch', run: 'run-1', span: 'tool', attributes: { step: 'fetch' }, usage: { inputTokens: 7, model: 'm-1' }, waitUntilMs: 5000, billingMode: 'api', nowMs: 1020 })
  assert.deepEqual(patched, { type: 'patched', seq: 3n })
  assert.deepEqual(store.span({ type: 'spanHeartbeat', run: 'run-1', span: 'root', nowMs: 1030 }), { type: 'heartbeatRecorded' })
  const first = store.span({ type: 'event', run: 'run-1', span: 'tool', eventType: 'log', payload: 'hello', nowMs: 1040 })
  // A heartbeat is liveness, not a change of the run: it takes no seq.
  assert.deepEqual(first, { type: 'eventAppended', seq: 4n, eventIndex: 0n, truncated: false })
  const cut = store.span({ type: 'event', run: 'run-1', span: 'tool', eventType: 'log', payload: 'x'.repeat(100), payloadBytesMax: 10, nowMs: 1050 })
  assert.equal(cut.truncated, true)
  assert.equal(cut.eventIndex, 1n)

  const tool = store.spanOf('run-1', 'tool')
  assert.equal(tool.parent, 'root')
  assert.equal(tool.depth, 1)
  assert.deepEqual(tool.attributes, { step: 'fetch' })
  assert.equal(tool.usage.inputTokens, 7n, 'counts are u64s: bigints, as every u64 but milliseconds')
  assert.equal(tool.usage.model, 'm-1')
  assert.equal(tool.waitUntilMs, 5000)
  assert.equal(tool.billingMode, 'api')
  assert.equal(tool.sessionId, 's-1')
  assert.equal(tool.eventCount, 2n)
  assert.equal(tool.outcome, undefined)
  assert.equal(store.spanOf('run-1', 'root').lastHeartbeatAtMs, 1030)
  assert.equal(store.spanOf('run-1', 'nope'), null)
  assert.deepEqual(store.spans('run-1').map((s) => s.span), ['root', 'tool'])
  const events = store.spanEvents('run-1', 'tool')
  assert.deepEqual(events.map((e) => [e.eventIndex, e.payload, e.truncated]), [[0n, 'hello', false], [1n, 'x'.repeat(10), true]])
  assert.equal(typeof events[0].position, 'bigint')

  const run = store.runOf('run-1')
  assert.deepEqual({ ...run }, { run: 'run-1', rootSpan: 'root', highWaterSeq: 5n, spanCount: 2n, openSpanCount: 2n, closed: false })
  const snapshot = store.runSnapshot('run-1')
  assert.equal(snapshot.spans.length, 2)
  assert.equal(snapshot.events.length, 2)
  assert.equal(snapshot.highWaterSeq, 5n)
  const changes = store.runChangesSince('run-1', 2n)
  assert.deepEqual(changes.map((c) => [c.seq, c.kind, c.eventIndex]), [[3n, 'span_patched', undefined], [4n, 'event_appended', 0n], [5n, 'event_appended', 1n]])
  assert.deepEqual(store.openRoots().map((s) => s.span), ['root'])
  assert.deepEqual(store.runsWithOpenSpansOf('rt-1'), ['run-1'])
  assert.deepEqual(store.runsOfSpan('tool'), ['run-1'])
  assert.equal(store.runOf('nope'), null)

  const refused = store.span({ type: 'patch', run: 'run-1', span: 'nope', nowMs: 1060 })
  assert.deepEqual(refused, { type: 'refused', reason: 'span_missing' })
  assert.throws(() => store.span({ type: 'patch', run: 'run-1', span: 'tool', billingMode: 'free', nowMs: 1 }), { code: 'INVALID_ARGUMENT' })
})

test('a run is rolled up while open, heartbeats, and a cascade close ends every open span', (t) => {
  const { store } = freshStore(t)
  // A scheduled run sums its children's usage (a session's root reports its own).
  const start = starter(store, 'run-2', 'rt-1', 'cron')
  start('root', undefined, 2000, 'turn')
  start('a', 'root', 2010)
  start('b', 'a', 2020)
  store.span({ type: 'end', run: 'run-2', span: 'b', outcome: 'success', usage: { outputTokens: 4 }, nowMs: 2030 })
  assert.deepEqual(store.run({ type: 'heartbeat', run: 'run-2', nowMs: 2040 }), { type: 'heartbeatRecorded' })
  const open = store.run({ type: 'rollup', run: 'run-2', nowMs: 2050 })
  assert.equal(open.type, 'rolledUpWhileOpen')
  assert.equal(open.rollup.spanCount, 3n)
  assert.equal(open.rollup.outputTokens, 4n)
  assert.equal(store.openRollup('run-2').spanCount, 3n)
  assert.equal(store.rollup('run-2'), null)

  const closed = store.run({ type: 'cascadeClose', run: 'run-2', outcome: 'cancelled', reason: 'operator', nowMs: 2060 })
  assert.equal(closed.type, 'closed')
  assert.equal(closed.runs.length, 1)
  assert.deepEqual(closed.runs[0].spans, ['a', 'root'], 'children first')
  assert.equal(closed.runs[0].rollup.outcome, 'cancelled')
  assert.equal(store.spanOf('run-2', 'a').outcome, 'cancelled')
  assert.equal(store.spanOf('run-2', 'b').outcome, 'success', 'an ended span keeps its outcome')
  assert.equal(store.rollup('run-2').durationMs, 60)
  assert.deepEqual(store.rollups().map((r) => r.run), ['run-2'])
  assert.deepEqual(store.run({ type: 'heartbeat', run: 'run-2', nowMs: 2070 }), { type: 'refused', reason: 'run_closed' })
  assert.deepEqual(store.run({ type: 'rollup', run: 'nope', nowMs: 1 }), { type: 'refused', reason: 'run_missing' })
})

test('orphaned and silent runs are swept, the sweeper\'s own spared, and finished detail pruned', (t) => {
  const { store } = freshStore(t)
  // A span id belongs to one run: each run's root has its own.
  for (const [run, writer, at] of [['orphan', 'gone', 1000], ['silent', 'rt-2', 1000], ['mine', 'rt-3', 1000], ['fresh', 'rt-2', 9000]]) {
    assert.equal(starter(store, run, writer)(`${run}-root`, undefined, at, 'turn').type, 'started')
  }
  assert.deepEqual(starter(store, 'other')('mine-root', undefined, 1000), { type: 'refused', reason: 'span_in_another_run' })
  store.run({ type: 'heartbeat', run: 'fresh', nowMs: 9500 })
  assert.deepEqual(store.stuckRuns(5000, 10_000).map((s) => s.run).sort(), ['mine', 'orphan', 'silent'])
  assert.ok(store.silentRoots(2000).length >= 3)

  const orphans = store.run({ type: 'sweepOrphans', writer: 'gone', nowMs: 10_000 })
  assert.deepEqual(orphans.runs.map((r) => r.run), ['orphan'])
  assert.equal(orphans.runs[0].rollup.outcome, 'interrupted')
  const stale = store.run({ type: 'sweepStale', staleAfterMs: 5000, sweeper: 'rt-3', nowMs: 10_000 })
  assert.equal(stale.type, 'closed')
  assert.deepEqual(stale.runs.map((r) => r.run), ['silent'])
  assert.equal(store.runOf('mine').closed, false, 'the sweeper\'s own run is live')
  assert.equal(store.runOf('fresh').closed, false, 'a run that heartbeat recently is live')

  const pruned = store.run({ type: 'pruneRuns', digestFloorAtMs: 0, detailRetentionMs: 0, hardCeilingMs: 1000, batch: 10, nowMs: 20_000 })
  assert.equal(pruned.type, 'pruned')
  assert.deepEqual(pruned.runs.sort(), ['orphan', 'silent'])
  assert.equal(pruned.spansDeleted, 2n)
  assert.equal(store.spanOf('orphan', 'orphan-root'), null)
  assert.equal(store.rollup('orphan').detailPruned, true)
})
