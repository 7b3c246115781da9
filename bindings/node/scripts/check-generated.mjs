// The build regenerates index.d.ts and index.js from the Rust: the checked-in copies must be
// what it generated, so that the published types are the binding's.
import { execFileSync } from 'node:child_process'

try {
  execFileSync('git', ['diff', '--exit-code', '--stat', '--', 'index.d.ts', 'index.js'], {
    stdio: 'inherit',
  })
} catch {
  console.error('index.d.ts or index.js differ from what the build generated: commit them')
  process.exit(1)
}
