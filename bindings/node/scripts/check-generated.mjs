// The build regenerates index.d.ts and index.js from the Rust: in a git checkout, the
// committed copies must be what it generated, so that the published types are the binding's.
import { execFileSync } from 'node:child_process'

const git = (args, stdio) => execFileSync('git', args, { stdio })
try {
  git(['rev-parse', '--is-inside-work-tree'], 'ignore')
} catch {
  process.exit(0) // not a git checkout (a package from the registry): nothing to compare
}
try {
  git(['diff', '--exit-code', '--stat', '--', 'index.d.ts', 'index.js'], 'inherit')
} catch {
  console.error('index.d.ts or index.js differ from what the build generated: commit them')
  process.exit(1)
}
