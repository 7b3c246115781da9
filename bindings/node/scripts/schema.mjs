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

// The native module's lists: the names of reasons, statuses and kinds, and the error codes;
// and the JSON schemas of the library's commands and outcomes.
const { createRequire } = await import('node:module')
const native = createRequire(import.meta.url)('../index.js')
const { names, errorCodes, errorFamilies } = native.constants()

// index.d.ts's unions of names: napi-rs types each field that carries one with its union's
// name (`ts_type`), and declares no union; they are declared here, after what napi-rs wrote,
// from the lists the Rust enums give (src/names.rs).
/** Variants the binding spells as another with more fields: the library's name, then JavaScript's. */
const MERGED = { acquire_labelled: 'acquire' }
/** Types that cross in a shape of the crossing's own, not their serde form (src/crossing.rs, `ROSTERS`). */
const SHAPES = { Knows: 'Array<string>' }
const COMMANDS_START = "// The library's commands and outcomes as they cross (scripts/schema.mjs, from schemas()).\n"
const NAMES_START = '// The names a reason, status or kind takes (scripts/schema.mjs, from constants.names).\n'
const nativeDeclarations = path.join(root, 'index.d.ts')
const generated = fs.readFileSync(nativeDeclarations, 'utf8').split(COMMANDS_START)[0].split(NAMES_START)[0].trimEnd()
const unions = Object.keys(names)
  .sort()
  .map((name) => `export type ${name} =\n${names[name].map((value) => `  | '${value}'\n`).join('')}`)
const commands = declarationsOf(native.schemas(), names)
fs.writeFileSync(nativeDeclarations, `${generated}\n\n${COMMANDS_START}\n${commands.join('\n')}\n${NAMES_START}\n${unions.join('\n')}`)

const nativeText = fs.readFileSync(nativeDeclarations, 'utf8')
const domains = domainsOf(nativeText, native.schemas())
const text = JSON.stringify({ ...schemaOf(nativeText), singles: Object.fromEntries(domains.filter((domain) => domain.single).map((domain) => [domain.single, domain.method])) }, null, 1)
fs.writeFileSync(path.join(root, 'schema.json'), `${text}\n`)

// lib.d.ts's `ErrorCode`: the codes the native module lists (the library's kinds of error,
// which the command line's kinds also come from, then the package's own), never by hand.
const codes = errorCodes
const declarations = path.join(root, 'lib.d.ts')
const handWritten = fs.readFileSync(declarations, 'utf8')
const union = /export type ErrorCode =\n(?:  \| '[A-Z_]+'\n)+/
if (!union.test(handWritten)) throw new Error('lib.d.ts: no ErrorCode union to generate')
// And its subclasses, one a family of codes (constants.errorFamilies, the binding's list).
const FAMILIES_START = "// AnnalsError's subclasses, one for each family of codes (scripts/schema.mjs, from constants.errorFamilies).\n"
const FAMILIES_END = "// End of AnnalsError's subclasses.\n"
// Sorted by code unit: the file must come out the same on every build.
const familyClasses = Object.entries(errorFamilies).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(
  ([family, members]) => `export declare class ${family} extends AnnalsError {\n  readonly code: ${members.map((code) => `'${code}'`).join(' | ')}\n}\n`,
)
let libDeclarations = handWritten.replace(union, `export type ErrorCode =\n${codes.map((code) => `  | '${code}'\n`).join('')}`)
const [before, rest] = libDeclarations.split(FAMILIES_START)
if (rest === undefined || !rest.includes(FAMILIES_END)) throw new Error("lib.d.ts: no AnnalsError subclasses to generate")
libDeclarations = `${before}${FAMILIES_START}${familyClasses.join('')}${FAMILIES_END}${rest.split(FAMILIES_END)[1]}`
// And the union of every domain's commands with the outcome each gets, from the store's
// command methods (`domainsOf`): a domain is added in the Rust alone.
const COMMANDS_BEGIN = "// Every domain's commands and the outcome each gets (scripts/schema.mjs, from the Store's command methods).\n"
const COMMANDS_END = "// End of every domain's commands.\n"
const [head, tail] = libDeclarations.split(COMMANDS_BEGIN)
if (tail === undefined || !tail.includes(COMMANDS_END)) throw new Error("lib.d.ts: no commands' union to generate")
libDeclarations = `${head}${COMMANDS_BEGIN}${commandTypes(domains)}${COMMANDS_END}${tail.split(COMMANDS_END)[1]}`
fs.writeFileSync(declarations, libDeclarations)

/**
 * The domains the store runs commands of, in index.d.ts's order: each method whose first
 * parameter is a `command` (its `…Async` twin aside), its command's and its outcome's types,
 * and, for a command with no `type` of its own in the Rust (a struct, or an enum of one
 * variant), the `type` that `execute` knows it by: the variant's name, or else the method's.
 */
function domainsOf(text, schemas) {
  const file = ts.createSourceFile('index.d.ts', text, ts.ScriptTarget.Latest, true)
  const store = file.statements.find((statement) => statement.name && statement.name.text === 'Store')
  const domains = []
  for (const member of store.members) {
    if (!ts.isMethodDeclaration(member) || member.name.text.endsWith('Async')) continue
    const [parameter] = member.parameters
    if (!parameter || parameter.name.text !== 'command') continue
    const command = parameter.type.getText()
    const [root] = schemas[command] || []
    if (!root) throw new Error(`index.d.ts: ${member.name.text} takes ${command}, which schemas() does not declare`)
    const variants = root.oneOf || (root.enum ? root.enum : null)
    let single = null
    if (!variants) single = member.name.text
    else if (variants.length === 1) {
      const [variant] = variants
      single = jsName(typeof variant === 'string' ? variant : variant.const !== undefined ? variant.const : Object.keys(variant.properties)[0])
    }
    domains.push({ method: member.name.text, command, outcome: member.type.getText(), single })
  }
  return domains
}

/** lib.d.ts's `Command` and `OutcomeOf`, from `domains`. */
function commandTypes(domains) {
  const names = [...new Set(domains.flatMap((domain) => [domain.command, domain.outcome]))].sort()
  const member = (domain) => (domain.single ? `(${domain.command} & { type: '${domain.single}' })` : domain.command)
  const test = (domain) => (domain.single ? `{ type: '${domain.single}' }` : domain.command)
  return [
    `import type {\n${names.map((name) => `  ${name},\n`).join('')}} from './index'\n`,
    '/** A command of any domain, told apart by its `type`. */\n',
    `export type Command =\n${domains.map((domain) => `  | ${member(domain)}\n`).join('')}`,
    '\n/** The outcome of `execute(command)`, by the command\'s type. */\n',
    `export type OutcomeOf<C extends Command> =\n${domains.map((domain) => `  C extends ${test(domain)} ? ${domain.outcome} :\n`).join('')}  never\n`,
  ].join('')
}

/**
 * The TypeScript declarations of the library's commands and outcomes, from their JSON schemas
 * (`schemas()`, schemars reading their serde forms), by the conventions the binding crosses them
 * with (src/crossing.rs): fields in camelCase; an enum named `…Command` or `…Outcome` a union
 * of objects tagged by `type` (variants in camelCase; one holding a struct, its fields); a 64-bit integer a `bigint` unless it is
 * milliseconds (`…_ms`, a `number`), a narrower one a `number`; bytes a `Buffer`; an `Option`
 * or a field with a default optional. The unions of names are declared from `constants.names`.
 */
function declarationsOf(schemas, names) {
  const definitions = {}
  for (const roots of Object.values(schemas)) {
    for (const root of roots) Object.assign(definitions, root.$defs || {})
  }
  // The declarations asked for by name are declared once, as asked, wherever else they are met.
  const declared = new Map(Object.keys(schemas).map((name) => [name, null]))
  const pending = []
  const reach = (name) => {
    if (declared.has(name) || name in names) return
    declared.set(name, null)
    pending.push(name)
  }
  const resolve = (schema) => {
    if (!schema.$ref) return [schema, null]
    const name = schema.$ref.replace('#/$defs/', '')
    if (!(name in definitions)) throw new Error(`schemas(): no definition of ${name}`)
    return [definitions[name], name]
  }
  const doc = (schema, indent) =>
    schema.description ? `${indent}/** ${schema.description.replace(/\*\//g, '*\\/').split('\n').join(`\n${indent} * `)} */\n` : ''
  const isNull = (schema) => schema.type === 'null'
  /** `[type, optional]` of a field's schema, named `field` as the library spells it. */
  const typed = (schema, field) => {
    // A field that crosses as `null` rather than absent (a personal field once erased).
    if (schema['x-nullable']) {
      const { 'x-nullable': _, ...rest } = schema
      return [`${typed(rest, field)[0]} | null`, false]
    }
    const options = schema.anyOf || schema.oneOf
    if (options && options.some(isNull)) {
      const rest = options.filter((option) => !isNull(option))
      if (rest.length === 1) return [typed(rest[0], field)[0], true]
    }
    if (Array.isArray(schema.type) && schema.type.includes('null')) {
      const [type] = typed({ ...schema, type: schema.type.filter((kind) => kind !== 'null')[0] }, field)
      return [type, true]
    }
    const [resolved, name] = resolve(schema)
    if (name && name in SHAPES) return [SHAPES[name], false]
    if (name && (resolved.type === 'object' || resolved.oneOf || resolved.anyOf || resolved.enum)) {
      if (name in names) return [name, false]
      reach(name)
      return [name, false]
    }
    switch (resolved.type) {
      case 'string':
        return ['string', false]
      case 'boolean':
        return ['boolean', false]
      case 'integer':
        return [/^u?int64$/.test(resolved.format) && !field.endsWith('_ms') ? 'bigint' : 'number', false]
      case 'number':
        return ['number', false]
      case 'array': {
        const items = resolve(resolved.items)[0]
        if (items.type === 'integer' && items.format === 'uint8') return ['Buffer', false]
        return [`Array<${typed(resolved.items, field)[0]}>`, false]
      }
      case 'object':
        if (resolved.additionalProperties && !resolved.properties) {
          return [`Record<string, ${typed(resolved.additionalProperties, field)[0]}>`, false]
        }
    }
    throw new Error(`schemas(): no TypeScript for ${JSON.stringify(schema)} (${field})`)
  }
  /** The fields of an object schema, as TypeScript property lines. */
  const fields = (schema, indent, optional = new Set()) => {
    const required = new Set(schema.required || [])
    // The schema's properties come sorted by name, its required fields in the order the type
    // declares them: those first, as declared, then the optional ones.
    const properties = schema.properties || {}
    const order = [...(schema.required || []), ...Object.keys(properties).filter((field) => !required.has(field))]
    return order.map((field) => [field, properties[field]]).map(([field, property]) => {
      const [type, nullable] = typed(property, field)
      const absent = nullable || !required.has(field) || optional.has(field)
      return `${doc(property, indent)}${indent}${jsName(field)}${absent ? '?' : ''}: ${type}`
    })
  }
  /** The variants of a Rust enum's schema: `[serde name, object schema or null, description]`. */
  const variantsOf = (root) =>
    (root.oneOf || [root]).flatMap((variant) => {
      if (variant.const !== undefined) return [[variant.const, null, variant.description]]
      if (variant.enum) return variant.enum.map((name) => [name, null, variant.description])
      const [[name, inner]] = Object.entries(variant.properties)
      return [[name, inner, variant.description || inner.description]]
    })
  /**
   * A union tagged by `type`, of every variant of `roots`. Two enums may each have a variant of
   * one name (the outbox's two `refused`, one naming the row, one its key): both are members.
   */
  const union = (name, roots) => {
    let variants = roots.flatMap((root) => variantsOf(root).map(([variant, schema, description]) => [variant, [schema, description]]))
    const find = (wanted) => variants.find(([variant]) => variant === wanted)
    // `acquire_labelled` is spelled `acquire` with `labels` (src/crossing.rs, `MERGED`).
    for (const [spelled, merged] of Object.entries(MERGED)) {
      const [labelled, plain] = [find(spelled), find(merged)]
      if (!labelled || !plain) continue
      const fieldsOfPlain = new Set(Object.keys(plain[1][0].properties || {}))
      const [schema] = labelled[1]
      variants = variants.filter((entry) => entry !== labelled)
      plain[1] = [schema, plain[1][1], new Set(Object.keys(schema.properties).filter((field) => !fieldsOfPlain.has(field)))]
    }
    const members = variants.map(([variant, [held, description, optional]]) => {
      // A variant holding a struct (`AppendOutcome::Appended`) crosses as the struct's fields.
      const schema = held && held.$ref ? resolve(held)[0] : held
      const lines = [`    type: '${jsName(variant)}'`, ...(schema ? fields(schema, '    ', optional) : [])]
      return `${description ? `  /** ${description.split('\n').join(' ')} */\n` : ''}  | {\n${lines.join('\n')}\n  }`
    })
    return `${doc(roots[0], '')}export type ${name} =\n${members.join('\n')}\n`
  }
  /** A struct, or an enum of one variant (a command that needs no `type`), as an interface. */
  const single = (name, roots) => {
    const [root] = roots
    const variants = root.type === 'object' ? null : variantsOf(root)
    const schema = variants ? variants[0][1] : root
    return `${doc(root, '')}export interface ${name} {\n${fields(schema, '  ').join('\n')}\n}\n`
  }
  const declare = (name, roots) =>
    roots.length === 1 && (roots[0].type === 'object' || (name.endsWith('Command') && variantsOf(roots[0]).length === 1))
      ? single(name, roots)
      : union(name, roots)
  const output = Object.keys(schemas).sort().map((name) => declare(name, schemas[name]))
  while (pending.length > 0) {
    const name = pending.shift()
    const schema = definitions[name]
    if (schema.type !== 'object') throw new Error(`schemas(): ${name} is neither a struct nor a union of names in constants.names`)
    output.push(`${doc(schema, '')}export interface ${name} {\n${fields(schema, '  ').join('\n')}\n}\n`)
  }
  return output
}


/** `ttl_ms` as JavaScript spells it: `ttlMs`. */
function jsName(name) {
  return name.replace(/_(.)/g, (_, letter) => letter.toUpperCase())
}
