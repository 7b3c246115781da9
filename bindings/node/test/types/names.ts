// Type-checked by test/names.test.js: each `@ts-expect-error` must meet an error, or tsc fails
// ("Unused '@ts-expect-error' directive"), so a reason, status or kind typed `string` again
// is caught.
import { Store, type LeaseOutcome, type ErrorCode } from '../../lib'

declare const store: Store
declare const outcome: LeaseOutcome

if (outcome.type === 'refused') {
  const held: boolean = outcome.reason === 'held'
  // @ts-expect-error a reason no lease refusal has
  const misspelt: boolean = outcome.reason === 'helld'
  void held
  void misspelt
}

const instances = store.instances({ status: 'enabled' })
// @ts-expect-error a status no instance has
store.instances({ status: 'enabeld' })
for (const instance of instances) {
  // @ts-expect-error an instance's kind is 'agent' or 'mailbox'
  const robot: boolean = instance.kind === 'robot'
  void robot
}

const code: ErrorCode = 'HELD'
// @ts-expect-error a code annals never throws
const unknown: ErrorCode = 'HELLD'
void code
void unknown

// `execute`'s outcome follows its command's `type` (lib.d.ts's `OutcomeOf`, generated from the
// store's command methods), for a domain of one command (`checkpoint`) as for a union's.
const checkpointed = store.execute({ type: 'checkpoint', consumer: 'c', position: 0n, hash: '0'.repeat(64), nowMs: 1 })
if (checkpointed.type === 'refused') {
  // @ts-expect-error a consumer's refusal is 'behind' or 'diverged'
  const missing: boolean = checkpointed.reason === 'held'
  void missing
}
const granted = store.execute({ type: 'acquire', resource: 'r', holder: 'h', ttlMs: 1, nowMs: 1 })
// @ts-expect-error a lease command's outcome is no consumer's
const behind: boolean = granted.type === 'checkpointed'
void behind
// @ts-expect-error a command of no domain
store.execute({ type: 'checkpoints', consumer: 'c', position: 0n, hash: '', nowMs: 1 })
