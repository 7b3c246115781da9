// The types of lib.js: the native module's (generated from the Rust into index.d.ts), with
// its errors as AnnalsError.
export * from './index'
import type {
  Store as NativeStore,
  Writer as NativeWriter,
  LogRecord,
  OpenOptions,
  ReadOptions,
  SubscribeOptions,
  WriterOptions,
} from './index'

/** The stable codes of AnnalsError. */
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
  | 'IO'
  | 'ANNALS'

/** An error of annals, with a stable `code` and the fields its Rust error carries. */
export declare class AnnalsError extends Error {
  readonly code: ErrorCode
  /** The field that was wrong (`LIMIT`, `INVALID_COMMAND`, `INVALID_ARGUMENT`). */
  readonly field?: string
  /** The limit exceeded (`LIMIT`). */
  readonly limit?: number
  /** The position concerned (`CORRUPT`, `IDEMPOTENCY_CONFLICT`), as a decimal string. */
  readonly position?: string
  /** The file concerned (`NOT_FOUND`, `NOT_A_LOG`). */
  readonly path?: string
}

/** An annals log file; every method throws AnnalsError. */
export interface Store extends Omit<NativeStore, 'subscribe' | 'writer'> {
  /** Every record from `options.from`, lazily, read in chunks. */
  iterateAll(options?: ReadOptions): Generator<LogRecord>
  /** Every record from `options.from` on, history then live; break out of the loop to stop. */
  subscribe(options?: SubscribeOptions | null): AsyncIterableIterator<LogRecord>
  /** Starts the group-commit writer; its methods return Promises rejected with AnnalsError. */
  writer(options?: WriterOptions | null): Writer
}

/** The group-commit writer: a Promise per command, resolved after its batch's commit. */
export type Writer = NativeWriter

export declare const Store: {
  /** Opens (creating it unless `readOnly`) the log at `path`. */
  open(path: string, options?: OpenOptions | null): Store
}
