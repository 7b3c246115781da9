// Writes schema.json: the shape of every argument the native classes take (each method's
// parameters, and every interface and command union they reach), read from the generated
// index.d.ts with the TypeScript compiler. lib.js checks each call against it before napi-rs
// converts anything, so that the shapes are declared once, in the Rust, and never restated
// by hand; the build's generated-files check holds the committed copy to it.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const CLASSES = ['Store', 'Writer']

/** The schema of index.d.ts's `text`: `{ methods: { Store: { name: params } }, types }`. */
function schemaOf(text) {
  const file = ts.createSourceFile('index.d.ts', text, ts.ScriptTarget.Latest, true)
  const declarations = new Map()
  for (const statement of file.statements) {
    if (statement.name) declarations.set(statement.name.text, statement)
  }
  const types = {}
  const reach = (name) => {
    if (name in types) return
    const declaration = declarations.get(name)
    if (!declaration) throw new Error(`index.d.ts: no declaration of ${name}`)
    types[name] = null // reserved first: a type may reach itself
    types[name] = declared(declaration, reach)
  }
  const methods = {}
  for (const name of CLASSES) {
    methods[name] = {}
    for (const member of declarations.get(name).members) {
      if (!ts.isMethodDeclaration(member)) continue
      methods[name][member.name.text] = member.parameters.map((parameter) => ({
        name: parameter.name.text,
        ...typed(parameter, reach),
      }))
    }
  }
  // The module's own functions, under `functions`.
  methods.functions = {}
  for (const statement of file.statements) {
    if (!ts.isFunctionDeclaration(statement) || !statement.name) continue
    methods.functions[statement.name.text] = statement.parameters.map((parameter) => ({
      name: parameter.name.text,
      ...typed(parameter, reach),
    }))
  }
  // Sorted by code unit, not by locale: the file must come out the same on every machine.
  return { methods, types: Object.fromEntries(Object.entries(types).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) }
}

/** An interface's fields, a union's variants by their `type`, or a union of names. */
function declared(declaration, reach) {
  if (ts.isInterfaceDeclaration(declaration)) return { fields: fieldsOf(declaration.members, reach) }
  if (ts.isTypeAliasDeclaration(declaration) && ts.isUnionTypeNode(declaration.type)) {
    const literals = declaration.type.types.filter((member) => ts.isLiteralTypeNode(member) && ts.isStringLiteral(member.literal))
    if (literals.length === declaration.type.types.length) return { names: literals.map((member) => member.literal.text) }
    const variants = {}
    for (const member of declaration.type.types) {
      const tag = member.members.find((field) => field.name.text === 'type')
      const fields = member.members.filter((field) => field !== tag)
      variants[tag.type.literal.text] = { fields: fieldsOf(fields, reach) }
    }
    return { tag: 'type', variants }
  }
  throw new Error(`index.d.ts: ${declaration.name.text} is neither an interface, a union of commands nor one of names`)
}

function fieldsOf(members, reach) {
  return Object.fromEntries(members.map((member) => [member.name.text, typed(member, reach)]))
}

/** `{ type, optional }` of a parameter or property: `?`, `undefined` and `null` make it optional. */
function typed(node, reach) {
  let optional = Boolean(node.questionToken)
  let members = ts.isUnionTypeNode(node.type) ? node.type.types : [node.type]
  const absent = (member) =>
    member.kind === ts.SyntaxKind.UndefinedKeyword ||
    (ts.isLiteralTypeNode(member) && member.literal.kind === ts.SyntaxKind.NullKeyword)
  if (members.some(absent)) optional = true
  members = members.filter((member) => !absent(member))
  const type = members.length === 1 ? typeOf(members[0], reach) : { either: members.map((member) => typeOf(member, reach)) }
  if (type.either && !type.either.every((option) => typeof option === 'string')) {
    throw new Error(`index.d.ts: ${node.getText()}: lib.js tells apart a union of primitives only`)
  }
  return optional ? { type, optional } : { type }
}

const KEYWORDS = {
  [ts.SyntaxKind.StringKeyword]: 'string',
  [ts.SyntaxKind.NumberKeyword]: 'number',
  [ts.SyntaxKind.BigIntKeyword]: 'bigint',
  [ts.SyntaxKind.BooleanKeyword]: 'boolean',
}

function typeOf(node, reach) {
  if (KEYWORDS[node.kind]) return KEYWORDS[node.kind]
  // A callback (`transaction`'s): lib.js passes its own, and checks the caller's itself.
  if (ts.isFunctionTypeNode(node)) return 'function'
  if (ts.isTypeReferenceNode(node)) {
    const name = node.typeName.text
    const [argument, value] = node.typeArguments || []
    if (name === 'Buffer') return 'buffer'
    if (name === 'Array') return { array: typeOf(argument, reach) }
    if (name === 'Record') return { record: typeOf(value, reach) }
    reach(name)
    return { ref: name }
  }
  throw new Error(`index.d.ts: no schema for the type ${node.getText()}`)
}

// The native module's lists: the names of reasons, statuses and kinds, and the error codes.
const { createRequire } = await import('node:module')
const { names, errorCodes } = createRequire(import.meta.url)('../index.js').constants()

// index.d.ts's unions of names: napi-rs types each field that carries one with its union's
// name (`ts_type`), and declares no union; they are declared here, after what napi-rs wrote,
// from the lists the Rust enums give (src/names.rs).
const NAMES_START = '// The names a reason, status or kind takes (scripts/schema.mjs, from constants.names).\n'
const nativeDeclarations = path.join(root, 'index.d.ts')
const generated = fs.readFileSync(nativeDeclarations, 'utf8').split(NAMES_START)[0].trimEnd()
const unions = Object.keys(names)
  .sort()
  .map((name) => `export type ${name} =\n${names[name].map((value) => `  | '${value}'\n`).join('')}`)
fs.writeFileSync(nativeDeclarations, `${generated}\n\n${NAMES_START}\n${unions.join('\n')}`)

const text = JSON.stringify(schemaOf(fs.readFileSync(nativeDeclarations, 'utf8')), null, 1)
fs.writeFileSync(path.join(root, 'schema.json'), `${text}\n`)

// lib.d.ts's `ErrorCode`: the codes the native module lists (the library's kinds of error,
// which the command line's kinds also come from, then the package's own), never by hand.
const codes = errorCodes
const declarations = path.join(root, 'lib.d.ts')
const handWritten = fs.readFileSync(declarations, 'utf8')
const union = /export type ErrorCode =\n(?:  \| '[A-Z_]+'\n)+/
if (!union.test(handWritten)) throw new Error('lib.d.ts: no ErrorCode union to generate')
fs.writeFileSync(declarations, handWritten.replace(union, `export type ErrorCode =\n${codes.map((code) => `  | '${code}'\n`).join('')}`))
