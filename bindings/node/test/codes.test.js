'use strict'
// What lib.js leans on agrees with what it describes. The codes an AnnalsError can carry are
// listed by the native module (constants.errorCodes: the library's kinds, then the package's
// own); the TypeScript `ErrorCode` union is generated from that list and README's table must
// document each of them; every code the binding and lib.js throw of their own is in it. And
// schema.json, which every call is checked against, has each method.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { documentedCodes } = require('./support/helpers.js')
const { constants } = require('../lib.js')

const root = path.join(__dirname, '..')
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8')
const all = (text, pattern) => new Set([...text.matchAll(pattern)].map((match) => match[1]))
const sorted = (set) => [...set].sort()

test('the ErrorCode union, README table and the codes the package lists are the same set', () => {
  const declared = read('lib.d.ts')
  const union = declared.slice(declared.indexOf('export type ErrorCode'), declared.indexOf('export declare class AnnalsError'))
  const typed = all(union, /\| '([A-Z_]+)'/g)
  const listed = new Set(constants.errorCodes)
  assert.ok(listed.size > 20 && listed.has('INTERNAL') && listed.has('INVALID_ARGUMENT'), sorted(listed).join(' '))
  assert.equal(listed.size, constants.errorCodes.length, 'each code listed once')
  assert.deepEqual(sorted(typed), sorted(listed), 'lib.d.ts ErrorCode against constants.errorCodes')
  assert.deepEqual(sorted(documentedCodes()), sorted(listed), "README's table against constants.errorCodes")
})

test('every code the binding throws of its own is one the package lists', () => {
  // The library's codes come from its classification (annals::ErrorKind); these are the
  // binding's own and lib.js's.
  const rust = fs.readdirSync(path.join(root, 'src')).map((file) => read(path.join('src', file))).join('\n')
  const own = new Set([
    ...all(rust, /coded\(\s*"([A-Z][A-Z_]+)"/g),
    ...all(rust, /OWN_CODES: \[&str; \d+\] = \[([^\]]+)\]/g),
    ...all(read('lib.js'), /annalsError\('([A-Z_]+)'/g),
  ].flatMap((found) => found.split(',').map((code) => code.trim().replaceAll('"', ''))))
  assert.ok(own.has('UNSAFE_INTEGER') && own.has('IN_TRANSACTION'), sorted(own).join(' '))
  for (const code of own) assert.ok(constants.errorCodes.includes(code), code)
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
