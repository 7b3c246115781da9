'use strict'
// Rows of projections that keep a personal field (docs/erasure.md): an outbox row enqueued for
// a subject, a span event appended for one and an event ingested for one read back, from every
// query and from the command's outcome, with the plaintext while the subject's key stands and
// with `payload` (an ingested event's `bytes`) null and `erased: true` after, never the
// ciphertext as data.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { freshStore } = require('./support/helpers.js')

const SECRET = 'ada@example.com wrote this'

function assertOpened(row, field, text, read) {
  assert.equal(Buffer.from(row[field]).toString(), text, read)
  assert.equal(row.subject, 'user-7', read)
  assert.equal(row.erased, undefined, read)
}

function assertErased(row, field, read) {
  assert.equal(row[field], null, read)
  assert.equal(row.erased, true, read)
  assert.equal(row.subject, 'user-7', read)
}

test('an outbox row enqueued for a subject reads as its plaintext, then as erased', (t) => {
  const { store } = freshStore(t)
  const enqueue = (key, payload, subject) =>
    store.outbox(
      subject === undefined
        ? { type: 'enqueue', key, peer: 'hub', kind: 'note', payload: Buffer.from(payload), nowMs: 1 }
        : { type: 'enqueueFor', subject, key, peer: 'hub', kind: 'note', payload: Buffer.from(payload), nowMs: 1 },
    )
  const queued = enqueue('msg-1', SECRET, 'user-7')
  assert.equal(queued.type, 'enqueued')
  assertOpened(queued.row, 'payload', SECRET, 'the outcome')
  const plain = enqueue('msg-2', 'plain words')
  assert.equal(plain.row.payload.toString(), 'plain words')
  assert.equal('subject' in plain.row, false, 'a plain row has no subject')
  const reads = () => ({
    outboxRow: [store.outboxRow('msg-1')],
    outboxRows: store.outboxRows().filter((row) => row.key === 'msg-1'),
    outboxDue: store.outboxDue(10).filter((row) => row.key === 'msg-1'),
    outboxPendingFor: store.outboxPendingFor('hub', 10).filter((row) => row.key === 'msg-1'),
    outboxOpenFor: store.outboxOpenFor('hub').filter((row) => row.key === 'msg-1'),
  })
  const again = enqueue('msg-1', SECRET, 'user-7')
  assert.equal(again.type, 'alreadyEnqueued')
  assertOpened(again.row, 'payload', SECRET, 'a repeated enqueue')
  for (const [read, rows] of Object.entries(reads())) {
    assert.equal(rows.length, 1, read)
    assertOpened(rows[0], 'payload', SECRET, read)
  }
  store.erase('user-7', 5)
  for (const [read, rows] of Object.entries(reads())) {
    assert.equal(rows.length, 1, read)
    assertErased(rows[0], 'payload', read)
  }
  assert.throws(() => enqueue('msg-1', SECRET, 'user-7'), { subject: 'user-7' })
  assert.equal(store.outboxRow('msg-2').payload.toString(), 'plain words')
  assert.equal(store.verify().sound, true)
})

test('a span event appended for a subject reads as its text, then as erased', (t) => {
  const { store } = freshStore(t)
  store.span({ type: 'start', run: 'run-1', span: 'turn', name: 'turn', kind: 'turn', origin: 'cron', writer: 'rt-1', nowMs: 1 })
  const appended = store.span({ type: 'eventFor', subject: 'user-7', run: 'run-1', span: 'turn', eventType: 'prompt', payload: Buffer.from(SECRET), nowMs: 2 })
  assert.equal(appended.type, 'eventAppended')
  store.span({ type: 'event', run: 'run-1', span: 'turn', eventType: 'log', payload: 'plain words', nowMs: 3 })
  const reads = () => ({
    spanEvents: store.spanEvents('run-1', 'turn'),
    runSnapshot: store.runSnapshot('run-1').events,
  })
  for (const [read, events] of Object.entries(reads())) {
    assert.equal(events.length, 2, read)
    assert.equal(events[0].payload, SECRET, `${read}: the text`)
    assert.equal(events[0].subject, 'user-7', read)
    assert.equal('personal' in events[0], false, `${read}: no envelope beside it`)
    assert.equal(events[1].payload, 'plain words', read)
    assert.equal('subject' in events[1], false, read)
  }
  store.erase('user-7', 5)
  for (const [read, events] of Object.entries(reads())) {
    assertErased(events[0], 'payload', read)
    assert.equal(events[1].payload, 'plain words', read)
  }
  assert.equal(store.verify().sound, true)
})

test('an event ingested for a subject reads as its bytes, a retry is a duplicate, then it reads as erased', (t) => {
  const { store, dir } = freshStore(t)
  const push = (sequence, text, subject) =>
    store.ingest({
      project: 'proj', run: 'run-1', sequence, hubProject: 'hub-a', homeRuntime: 'rt-1',
      eventType: 'message', bytes: Buffer.from(text), receivedAtMs: 1000 + Number(sequence), subject,
    })
  const accepted = push(1n, SECRET, 'user-7')
  assert.equal(accepted.type, 'accepted')
  assertOpened(accepted.event, 'bytes', SECRET, 'the outcome')
  const duplicate = push(1n, SECRET, 'user-7')
  assert.equal(duplicate.type, 'duplicate', 'a retry seals to the same envelope')
  assertOpened(duplicate.event, 'bytes', SECRET, 'the duplicate')
  assert.equal(duplicate.event.contentHash, accepted.event.contentHash)
  assert.equal(push(1n, 'other words', 'user-7').reason, 'sequence_reused')
  push(2n, 'plain words')
  const reads = () => ({
    ingestEvent: [store.ingestEvent('proj', 'run-1', 1n)],
    ingestEvents: store.ingestEvents().filter((event) => event.sequence === 1n),
    hubProjectEvents: store.hubProjectEvents('hub-a').filter((event) => event.sequence === 1n),
  })
  for (const [read, events] of Object.entries(reads())) {
    assertOpened(events[0], 'bytes', SECRET, read)
  }
  store.erase('user-7', 5)
  for (const [read, events] of Object.entries(reads())) {
    assertErased(events[0], 'bytes', read)
  }
  assert.equal(store.ingestEvent('proj', 'run-1', 2n).bytes.toString(), 'plain words')
  assert.throws(() => push(1n, SECRET, 'user-7'), { subject: 'user-7' })
  assert.equal(store.verify().sound, true)
  store.close()
  for (const name of fs.readdirSync(dir)) {
    const bytes = fs.readFileSync(path.join(dir, name))
    assert.equal(bytes.includes(Buffer.from(SECRET)), false, `${name} holds the plaintext`)
  }
})

test('the outcomes of outboxAsync, ingestAsync and the writer open their rows too', async (t) => {
  const { store } = freshStore(t)
  const enqueue = (key) => ({ type: 'enqueueFor', subject: 'user-7', key, peer: 'hub', kind: 'note', payload: Buffer.from(SECRET), nowMs: 1 })
  const ingest = {
    project: 'proj', run: 'run-1', sequence: 1n, hubProject: 'hub-a', homeRuntime: 'rt-1',
    eventType: 'message', bytes: Buffer.from(SECRET), receivedAtMs: 1001, subject: 'user-7',
  }
  assertOpened((await store.outboxAsync(enqueue('msg-1'))).row, 'payload', SECRET, 'outboxAsync')
  assertOpened((await store.ingestAsync(ingest)).event, 'bytes', SECRET, 'ingestAsync')
  const writer = store.writer()
  assertOpened((await writer.outbox(enqueue('msg-2'))).row, 'payload', SECRET, 'the writer\'s outbox')
  const duplicate = await writer.ingest(ingest)
  assert.equal(duplicate.type, 'duplicate')
  assertOpened(duplicate.event, 'bytes', SECRET, 'the writer\'s ingest')
  const pulled = store.outbox({ type: 'claim', peer: 'hub', token: 't-1', limit: 10, leaseMs: 60_000, nowMs: 2 })
  assert.equal(pulled.type, 'claimed')
  assert.equal(pulled.rows.length, 2)
  for (const row of pulled.rows) assertOpened(row, 'payload', SECRET, 'a pull')
  await writer.close()
  store.erase('user-7', 5)
  assertErased(store.outboxRow('msg-2'), 'payload', 'after the erasure')
})

test('plain rows read as they are whatever the key store holds; a personal one needs it whole', (t) => {
  const { store, file } = freshStore(t)
  const row = { peer: 'hub', kind: 'note', nowMs: 1 }
  store.outbox({ type: 'enqueue', key: 'plain', payload: Buffer.from('plain words'), ...row })
  store.outbox({ type: 'enqueueFor', subject: 'user-7', key: 'personal', payload: Buffer.from(SECRET), ...row })
  fs.writeFileSync(`${file}.keys`, 'not a key store')
  assert.equal(store.outboxRow('plain').payload.toString(), 'plain words')
  // A damaged key store is refused, never guessed at: the personal row is not read as erased.
  assert.throws(() => store.outboxRow('personal'), (error) => error.code !== undefined)
  assert.throws(() => store.outboxRows())
})
