// Packs the package as it would be published: `annals` (JavaScript and types, no binary) and
// the platform package `annals-linux-x64-gnu` holding the addon `npm run build` made, each an
// `npm pack` tarball in the folder given (default `dist/`). As napi-rs's `prepublish` does, the
// main package's manifest names the platform package as an optional dependency only in the
// tarball: the checkout's own `package.json` cannot, while the platform package is not on the
// registry for `npm ci` to lock. Prints the tarballs' paths.
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const addon = 'annals.linux-x64-gnu.node'
const platform = join(root, 'npm', 'linux-x64-gnu')

/** `npm pack` of `folder` into `destination`: the tarball's path. */
function tarball(folder, destination) {
  const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', destination], {
    cwd: folder,
    encoding: 'utf8',
  })
  return join(destination, out.trim().split('\n').pop())
}

export function pack(destination = join(root, 'dist')) {
  if (!existsSync(join(root, addon))) {
    throw new Error(`${addon} is missing: run \`npm run build\` first`)
  }
  mkdirSync(destination, { recursive: true })
  copyFileSync(join(root, addon), join(platform, addon))
  const platformManifest = JSON.parse(readFileSync(join(platform, 'package.json'), 'utf8'))
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  if (platformManifest.version !== manifest.version) {
    throw new Error(`annals is ${manifest.version} but ${platformManifest.name} is ${platformManifest.version}`)
  }
  // The main package staged with its published manifest.
  const staged = mkdtempSync(join(tmpdir(), 'annals-pack-'))
  try {
    for (const file of [...manifest.files, 'README.md']) {
      cpSync(join(root, file), join(staged, file))
    }
    const published = { ...manifest, optionalDependencies: { [platformManifest.name]: platformManifest.version } }
    delete published.devDependencies
    delete published.overrides
    delete published.scripts
    writeFileSync(join(staged, 'package.json'), JSON.stringify(published, null, 2) + '\n')
    return { platform: tarball(platform, destination), main: tarball(staged, destination) }
  } finally {
    rmSync(staged, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const made = pack(process.argv[2] ? resolve(process.argv[2]) : undefined)
  console.log(made.platform)
  console.log(made.main)
}
