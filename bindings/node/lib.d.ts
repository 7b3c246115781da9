// The types of lib.js: the native module's (generated from the Rust into index.d.ts), with
// its errors as AnnalsError.
export * from './index'
import type {
  ConsumerCommand,
  ConsumerOutcome,
  FuelCommand,
  FuelOutcome,
  SettingCommand,
  SettingOutcome,
  IngestCommand,
  IngestOutcome,
  InstanceCommand,
  InstanceOutcome,
  LaneCommand,
  LaneOutcome,
  LeaseCommand,
  LeaseOutcome,
  RunCommand,
  RunOutcome,
  OutboxCommand,
  OutboxOutcome,
  SpanCommand,
  SpanOutcome,
  Store as NativeStore,
  Writer as NativeWriter,
  LogRecord,
  OpenOptions,
  ReadOptions,
  CallOptions,
  LeaseGuard,
  TransactionOptions,
  Constants,
  EventBytes,
  SubscribeOptions,
  WriterOptions,
} from './index'

/**
 * The stable codes of AnnalsError: every code the package throws, as README's table lists them
 * (test/codes.test.js holds this list, the table and the codes the Rust and lib.js throw equal).
 */
export type ErrorCode =
  | 'WRONG_EXPECTED_VERSION'
  | 'IDEMPOTENCY_CONFLICT'
  | 'LIMIT'
  | 'APPEND_REFUSED'
  | 'FENCED'
  | 'RESERVED_KIND'
  | 'REFUSED'
  | 'HELD'
  | 'NOT_FOUND'
  | 'NOT_A_LOG'
  | 'NEEDS_UPGRADE'
  | 'OPEN_FAILED'
  | 'CORRUPT'
  | 'INVALID_COMMAND'
  | 'INVALID_ARGUMENT'
  | 'READ_ONLY'
  | 'CLOSED'
  | 'SUBSCRIPTION_LOST'
  | 'ARCHIVED'
  | 'NOT_IN_CUT'
  | 'ARCHIVE_REFUSED'
  | 'OUTPUT_PATH'
  | 'IN_TRANSACTION'
  | 'UNSAFE_INTEGER'
  | 'IO'
  | 'INTERNAL'

/** An error of annals, with a stable `code` and the fields its Rust error carries. */
export declare class AnnalsError extends Error {
  readonly code: ErrorCode
  /**
   * The field that was wrong, as JavaScript spells it (`'ttlMs'`, `'events[0].idempotencyKey'`):
   * `LIMIT`, `INVALID_COMMAND`, `INVALID_ARGUMENT`.
   */
  readonly field?: string
  /** The limit exceeded (`LIMIT`, and `INVALID_ARGUMENT` for a writer option). */
  readonly limit?: number
  /** The position concerned (`CORRUPT`, `IDEMPOTENCY_CONFLICT`, `ARCHIVED`), as a decimal string. */
  readonly position?: string
  /** The idempotency key that conflicts (`IDEMPOTENCY_CONFLICT`). */
  readonly key?: string
  /** The file concerned (`NOT_FOUND`, `NOT_A_LOG`, and `IO` and the other errors of `Store.open` and `archiveBefore`). */
  readonly path?: string
  /** The cut's first kept position (`ARCHIVED`, `NOT_IN_CUT`), as a decimal string. */
  readonly before?: string
  /** The archive file that holds the record (`ARCHIVED`). */
  readonly archive?: string
  /** The projection the cut kept no snapshot of (`NOT_IN_CUT`). */
  readonly projection?: string
}

/** A command of any domain, told apart by its `type`. */
export type Command =
  | LeaseCommand
  | LaneCommand
  | OutboxCommand
  | SpanCommand
  | RunCommand
  | InstanceCommand
  | (IngestCommand & { type: 'ingest' })
  | (ConsumerCommand & { type: 'checkpoint' })
  | (SettingCommand & { type: 'setting' })
  | (FuelCommand & { type: 'fuel' })

/** The outcome of `execute(command)`, by the command's type. */
export type OutcomeOf<C extends Command> = C extends LeaseCommand
  ? LeaseOutcome
  : C extends LaneCommand
  ? LaneOutcome
  : C extends RunCommand
  ? RunOutcome
  : C extends OutboxCommand
    ? OutboxOutcome
    : C extends SpanCommand
      ? SpanOutcome
      : C extends InstanceCommand
        ? InstanceOutcome
        : C extends { type: 'ingest' }
          ? IngestOutcome
          : C extends { type: 'setting' }
            ? SettingOutcome
            : C extends { type: 'fuel' }
              ? FuelOutcome
              : ConsumerOutcome

/** An annals log file; every method throws AnnalsError. */
export interface Store extends Omit<NativeStore, 'subscribe' | 'writer' | 'transaction' | 'snapshot' | 'stateAt'> {
  /**
   * A view of the log and every projection as of the last commit: its reads and queries agree
   * however many commits come after; its commands throw `READ_ONLY`; `close()` lets go of it.
   */
  snapshot(): Store
  /** A view of every projection as of the log's first `position` records, replayed. */
  stateAt(position: bigint): Store
  /** Runs any domain's command, chosen by its `type`; `options` may fence it (`guard`) and choose its `durability`. */
  execute<C extends Command>(command: C, options?: CallOptions | null): OutcomeOf<C>
  /**
   * `execute(command, options)` committed on a thread of libuv's pool: a Promise of its
   * outcome, the event loop free while the commit syncs; not inside `transaction(fn)`.
   */
  executeAsync<C extends Command>(command: C, options?: CallOptions | null): Promise<OutcomeOf<C>>
  /** `execute(command)` fenced by `guard`: refused with `FENCED` unless its token is live, checked in the same commit. */
  executeGuarded<C extends Command>(command: C, guard: LeaseGuard): OutcomeOf<C>
  /**
   * `fn` made a function whose every command on this store is one commit, as better-sqlite3's
   * `db.transaction(fn)`: a throw in `fn` writes nothing and is thrown as it is; inside,
   * queries and `head()` see the transaction's own commands. `fn` must be synchronous.
   */
  transaction<A extends unknown[], R>(fn: (...args: A) => R, options?: TransactionOptions | null): (...args: A) => R
  /** Every record from `options.from`, lazily, read in chunks. */
  iterateAll(options?: ReadOptions): Generator<LogRecord>
  /** The records of one stream from version `options.from`, lazily, read in chunks. */
  iterateStream(stream: string, options?: ReadOptions): Generator<LogRecord>
  /** Every record from `options.from` on, history then live; break out of the loop to stop. */
  subscribe(options?: SubscribeOptions | null): AsyncIterableIterator<LogRecord>
  /** Starts the group-commit writer; its methods return Promises rejected with AnnalsError. */
  writer(options?: WriterOptions | null): Writer
}

/** The group-commit writer: a Promise per command, resolved after its batch's commit. */
export interface Writer extends NativeWriter {
  /** Runs any domain's command, batched, chosen by its `type`. */
  execute<C extends Command>(command: C): Promise<OutcomeOf<C>>
}

export declare const Store: {
  /** Opens (creating it unless `readOnly`) the log at `path`. */
  open(path: string, options?: OpenOptions | null): Store
}

/**
 * The event a record of a built-in domain holds, its fields camelCase (integers as numbers),
 * or `null` for a kind of the program's own; throws `CORRUPT` for a built-in kind whose
 * payload does not decode.
 */
export declare function decodeEvent(record: EventBytes | LogRecord): Record<string, unknown> | null

/** The reference stores' constants, by domain, frozen. */
export declare const constants: Readonly<Constants>
