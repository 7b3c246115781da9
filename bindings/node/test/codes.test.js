'use strict'
// What lib.js leans on agrees with what it describes. The codes an AnnalsError can carry are
// listed three times for three readers: the TypeScript `ErrorCode` union, README's table, and
// the code that throws them (the Rust's `describe` and `coded` calls, lib.js's own refusals);
// they must be one set. And schema.json, which every call is checked against, has each method.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { documentedCodes } = require('./support/helpers.js')

const root = path.join(__dirname, '..')
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8')
const all = (text, pattern) => new Set([...text.matchAll(pattern)].map((match) => match[1]))
const sorted = (set) => [...set].sort()

test('the ErrorCode union, README table and the codes thrown are the same set', () => {
  const declared = read('lib.d.ts')
  const union = declared.slice(declared.indexOf('export type ErrorCode'), declared.indexOf('export declare class AnnalsError'))
  const typed = all(union, /\| '([A-Z_]+)'/g)
  const documented = documentedCodes()
  const rust = fs.readdirSync(path.join(root, 'src')).map((file) => read(path.join('src', file))).join('\n')
  const thrown = new Set([
    // A code is the first of a `(code, fields)` pair or of a `coded(code, …)` call.
    ...all(rust, /\(\s*"([A-Z][A-Z_]+)"\s*,/g),
    ...all(read('lib.js'), /new AnnalsError\('([A-Z_]+)'/g),
  ])
  assert.ok(typed.size > 20 && thrown.has('INTERNAL') && thrown.has('INVALID_ARGUMENT'), sorted(thrown).join(' '))
  assert.deepEqual(sorted(typed), sorted(thrown), 'lib.d.ts ErrorCode against the codes thrown')
  assert.deepEqual(sorted(documented), sorted(thrown), "README's table against the codes thrown")
})

test('every method of the native classes has its parameters in schema.json', () => {
  // lib.js checks each call against schema.json: a method missing there would go unchecked.
  const native = require('../index.js')
  const schema = require('../schema.json')
  for (const [name, Class] of [['Store', native.Store], ['Writer', native.Writer]]) {
    const methods = Object.getOwnPropertyNames(Class.prototype).filter((method) => method !== 'constructor')
    assert.ok(methods.length > 5, name)
    assert.deepEqual(methods.filter((method) => !(method in schema.methods[name])), [], `${name}: methods without a schema`)
  }
  assert.ok('open' in schema.methods.Store)
})
