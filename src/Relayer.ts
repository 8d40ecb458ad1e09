import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, PubSub, Queue, Schedule, Schema, Stream } from "effect"
import type { DurationInput } from "effect/Duration"
import type { Address, Hex } from "viem"
import { type Allowlist, allowedFunction, compileAllowlist } from "./Chain/RelayerPolicy.ts"
import { AppConfig } from "./Config.ts"
import { currentTraceParent, Tracing } from "./Observability/Tracing.ts"
import { attemptsOf, insertRequest, requestByKey } from "./Relayer/Repo.ts"
import { type RequestRow, TERMINAL_STATUSES, type TxStatus } from "./Relayer/Rows.ts"
import { parseRelayerOutcome, RELAYER_OUTCOME_CHANNEL } from "./Relayer/Transitions.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

/**
 * How the rest of the service sends an operator transaction. Callers never see nonces or fees:
 * they `submit` a request under an idempotency key (a row; submitting again returns the same
 * request) and `awaitOutcome` it. The TxRelayer singleton of the venue's chain (actors/TxRelayer.ts) does
 * the rest; both work on the outbox's rows in src/Relayer/Repo.ts (their shape: Rows.ts).
 *
 * Outcome lifecycle: queued → pending (signed, nonce allocated, broadcast) → included (in a block)
 * → final (at the finalized head) | reverted (in simulation: `simulated`, no gas; or on chain, at
 * finality) | replaced (our nonce was consumed by a transaction that is none of our attempts:
 * dropped and replaced; the call did not happen).
 */

export type { TxStatus } from "./Relayer/Rows.ts"

export interface RelayRequest {
  /** 1 to 200 printable characters; the same key always names the same request. */
  readonly idempotencyKey: string
  readonly venue: string
  /** An allowlisted contract (the venue's escrow, or `relayer.allow` of the config). */
  readonly to: Address
  /** Calldata of an allowlisted function of `to`. */
  readonly data: Hex
  /** Native value sent along (default 0). */
  readonly value?: bigint
  /** The account the journal rows of this request belong to (null: public rows). */
  readonly master?: string | null
}

export interface TxOutcome {
  readonly idempotencyKey: string
  readonly venue: string
  readonly status: TxStatus
  /** The function called, e.g. "lock". */
  readonly functionName: string
  readonly nonce: bigint | null
  /** The included attempt's hash once included, else the latest attempt's. */
  readonly txHash: Hex | null
  /** Every attempt ever signed for this request (replacements included), oldest first. */
  readonly attempts: ReadonlyArray<Hex>
  readonly blockNumber: bigint | null
  readonly blockHash: Hex | null
  /** Decoded revert reason, e.g. "NotLocked(0x…)", when reverted. */
  readonly revertReason: string | null
  /** True when the revert was found by simulation (nothing was sent, no gas spent). */
  readonly simulated: boolean
}

/** Not relayable: unknown venue, target or function not allowlisted, malformed key or calldata. */
export class RelayerRejected extends Schema.TaggedError<RelayerRejected>()("RelayerRejected", {
  reason: Schema.String,
}) {}

/** The idempotency key already names a different request. */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  idempotencyKey: Schema.String,
}) {}

export class UnknownRequest extends Schema.TaggedError<UnknownRequest>()("UnknownRequest", {
  idempotencyKey: Schema.String,
}) {}

/** `awaitOutcome` gave up waiting; the request goes on (await again). */
export class OutcomeTimeout extends Schema.TaggedError<OutcomeTimeout>()("OutcomeTimeout", {
  idempotencyKey: Schema.String,
  status: Schema.String,
}) {}

export type AwaitUntil = "included" | "final"

const reached = (status: TxStatus, until: AwaitUntil) =>
  TERMINAL_STATUSES.includes(status) || (until === "included" && status === "included")

const KEY = /^[\x21-\x7e]{1,200}$/
/** Fallback re-read while waiting (a notification can be missed while LISTEN reconnects). */
const AWAIT_POLL = Duration.seconds(1)

export const outcomeOf = (row: RequestRow, attempts: ReadonlyArray<Hex>): TxOutcome => ({
  idempotencyKey: row.idempotencyKey,
  venue: row.venue,
  status: row.status,
  functionName: row.functionName,
  nonce: row.nonce,
  txHash: row.txHash,
  attempts,
  blockNumber: row.blockNumber,
  blockHash: row.blockHash,
  revertReason: row.revertReason,
  simulated: row.simulated,
})

export class Relayer extends Effect.Service<Relayer>()("Relayer", {
  scoped: Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const allowlists = new Map<string, Allowlist>(deployment.venues.map((v) => [v.id, compileAllowlist(v)]))
    const hub = yield* PubSub.unbounded<string>()
    yield* pg.listen(RELAYER_OUTCOME_CHANNEL).pipe(
      Stream.runForEach((payload) => PubSub.publish(hub, parseRelayerOutcome(payload).key)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped,
    )
    const withSql = Effect.provideService(SqlClient.SqlClient, sql)
    // Exported traces continue in the TxRelayer from the submitter's span (stored on the row).
    const tracing = (yield* Effect.serviceOption(Tracing)).pipe(Option.exists((t) => t.enabled))
    const traceParent = tracing ? currentTraceParent : Effect.succeed(null)

    /** The request's current outcome, if the key is known. */
    const load = (key: string) =>
      Effect.gen(function* () {
        const row = yield* requestByKey(key)
        if (row === undefined) return Option.none<TxOutcome>()
        const attempts = yield* attemptsOf([row.id])
        return Option.some(
          outcomeOf(
            row,
            attempts.map((a) => a.txHash),
          ),
        )
      }).pipe(withSql, Effect.orDie)

    /** Records the request (idempotent per key) and returns its current outcome. */
    const submit = (request: RelayRequest): Effect.Effect<TxOutcome, RelayerRejected | IdempotencyConflict> =>
      Effect.gen(function* () {
        if (tracing) yield* Effect.annotateCurrentSpan({ venue: request.venue, tx_key: request.idempotencyKey })
        const venue = deployment.venues.find((v) => v.id === request.venue)
        if (venue === undefined) return yield* new RelayerRejected({ reason: `unknown venue ${request.venue}` })
        if (!KEY.test(request.idempotencyKey)) {
          return yield* new RelayerRejected({ reason: "the idempotency key must be 1 to 200 printable characters" })
        }
        if (!/^0x([0-9a-fA-F]{2})*$/.test(request.data)) {
          return yield* new RelayerRejected({ reason: "calldata must be even-length hex" })
        }
        const signature = allowedFunction(allowlists.get(venue.id)!, request.to, request.data)
        if (signature === undefined) {
          return yield* new RelayerRejected({
            reason: `${request.to} ${request.data.slice(0, 10)} is not an allowlisted contract function on ${venue.id}`,
          })
        }
        const value = request.value ?? 0n
        const { row, created } = yield* insertRequest({
          idempotencyKey: request.idempotencyKey,
          venue: venue.id,
          chainId: venue.chain_id,
          signer: operator,
          target: request.to,
          functionName: signature.slice(0, signature.indexOf("(")),
          calldata: request.data,
          value,
          master: request.master?.toLowerCase() ?? null,
          traceParent: yield* traceParent,
        }).pipe(withSql, Effect.orDie)
        if (
          !created &&
          (row.venue !== venue.id ||
            row.target !== request.to.toLowerCase() ||
            row.calldata !== request.data.toLowerCase() ||
            row.value !== value)
        ) {
          return yield* new IdempotencyConflict({ idempotencyKey: request.idempotencyKey })
        }
        const attempts = created ? [] : yield* attemptsOf([row.id]).pipe(withSql, Effect.orDie)
        return outcomeOf(
          row,
          attempts.map((a) => a.txHash),
        )
      }).pipe(Effect.withSpan("relayer.submit", { kind: "producer", captureStackTrace: false }))

    /**
     * Waits until the request is final, reverted or replaced (`until: "final"`, the default), or at least
     * included (`until: "included"`). Default timeout: 10 minutes.
     */
    const awaitOutcome = (
      key: string,
      options?: { readonly until?: AwaitUntil; readonly timeout?: DurationInput },
    ): Effect.Effect<TxOutcome, UnknownRequest | OutcomeTimeout> => {
      const until = options?.until ?? "final"
      let last: TxStatus = "queued"
      return Effect.scoped(
        Effect.gen(function* () {
          const wake = yield* PubSub.subscribe(hub)
          for (;;) {
            const current = yield* load(key)
            if (Option.isNone(current)) return yield* new UnknownRequest({ idempotencyKey: key })
            last = current.value.status
            if (reached(current.value.status, until)) return current.value
            yield* Queue.take(wake).pipe(
              Effect.repeat({ until: (k) => k === key }),
              Effect.timeout(AWAIT_POLL),
              Effect.ignore,
            )
          }
        }),
      ).pipe(
        Effect.timeoutFail({
          duration: options?.timeout ?? Duration.minutes(10),
          onTimeout: () => new OutcomeTimeout({ idempotencyKey: key, status: last }),
        }),
      )
    }

    return { submit, status: load, awaitOutcome } as const
  }),
}) {
  /** The production layer (the root and tests provide it under this name): needs AppConfig, SqlClient, PgClient. */
  static readonly Live = Relayer.Default
  /** The service on a throw-away database (SqlTest); the test gives the AppConfig. */
  static readonly Test = Relayer.Default.pipe(Layer.provideMerge(SqlTest))
}
