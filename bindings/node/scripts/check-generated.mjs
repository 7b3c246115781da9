// The build regenerates index.d.ts and index.js from the Rust, and schema.json from index.d.ts:
// in a git checkout, the committed copies must be what it generated, so that the published
// types, and the shapes lib.js checks arguments against, are the binding's.
import { execFileSync } from 'node:child_process'

const git = (args, stdio) => execFileSync('git', args, { stdio })
try {
  git(['rev-parse', '--is-inside-work-tree'], 'ignore')
} catch {
  process.exit(0) // not a git checkout (a package from the registry): nothing to compare
}
try {
  git(['diff', '--exit-code', '--stat', '--', 'index.d.ts', 'index.js', 'schema.json', 'lib.d.ts'], 'inherit')
} catch {
  console.error('index.d.ts, index.js, schema.json or the ErrorCode of lib.d.ts differ from what the build generated: commit them')
  process.exit(1)
}
