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
