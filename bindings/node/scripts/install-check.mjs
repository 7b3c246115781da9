// Installs the packed tarballs as a user would, on a machine without Rust: a new folder, a
// PATH with no `cargo` or `rustc` on it, `npm install` of the two tarballs (and TypeScript with
// Node's types from the registry, for the type check). Then runs a smoke program there (open a
// log, a lease command, a read, `verify`) and type-checks the package's example against the
// installed types. Exits non-zero on any failure.
import { accessSync, constants, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pack } from './pack.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const work = mkdtempSync(join(tmpdir(), 'annals-install-'))

/** Whether `name` is an executable in `folder`. */
const holds = (folder, name) => {
  try {
    accessSync(join(folder, name), constants.X_OK)
    return true
  } catch {
    return false
  }
}

try {
  const { platform, main } = pack(join(work, 'tarballs'))
  // The user's machine: the PATH without any folder that holds a Rust toolchain.
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((folder) => folder && !holds(folder, 'cargo') && !holds(folder, 'rustc'))
    .join(delimiter)
  for (const tool of ['cargo', 'rustc']) {
    if (path.split(delimiter).some((folder) => holds(folder, tool))) {
      throw new Error(`${tool} is still on the PATH of the install`)
    }
  }
  const env = { ...process.env, PATH: path, CARGO_HOME: '/nonexistent', RUSTUP_HOME: '/nonexistent' }
  const project = join(work, 'project')
  execFileSync('mkdir', ['-p', project], { env })
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'host', private: true }, null, 2))
  const run = (command, args) =>
    execFileSync(command, args, { cwd: project, env, stdio: ['ignore', 'inherit', 'inherit'] })
  run('npm', ['install', '--no-audit', '--no-fund', platform, main, 'typescript@5.9.3', '@types/node@20'])
  copyFileSync(join(root, 'test', 'install', 'smoke.js'), join(project, 'smoke.js'))
  run('node', ['smoke.js'])
  // The example as a user's program: importing the installed package, not the checkout.
  const example = readFileSync(join(root, 'examples', 'hub.ts'), 'utf8').replace("from '../lib'", "from 'annals'")
  if (!example.includes("from 'annals'")) throw new Error('the example no longer imports ../lib')
  writeFileSync(join(project, 'hub.ts'), example)
  copyFileSync(join(root, 'examples', 'tsconfig.json'), join(project, 'tsconfig.json'))
  run(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.', '--noEmit'])
  console.log('installed without Rust: smoke program and the example\'s type check passed')
} finally {
  rmSync(work, { recursive: true, force: true })
}
