/**
 * Settlement (DESIGN §10): one cluster singleton that sweeps every nonfinal, signed fill and advances it by one
 * step per pass: lock (maker chain) → pay (taker chain) → claim, the reveal (maker chain) → claimPayment (taker
 * chain); aborts: a failed lock → failed; a failed payment → cancelLock → cancelled; expiries → refund /
 * refundPayment → refunded.
 *
 * Crash safety: the decision (src/Domain/SettlementStep.ts) is recomputed on every pass from rows only — the
 * fill, the relayer's outcomes of its keys, the finalized escrow index of both chains — and the chains' latest
 * block time. A call's idempotency key `settle:<fill id>:<call>` is committed in the fill's key column (with the
 * state change and its journal rows) BEFORE the call goes to the Relayer; a crash in between leaves a key the
 * relayer lacks, which the next pass submits again (same key, same calldata: harmless if it already exists).
 * Secrets stay sealed at rest and are opened only to build a `claim` (or a `claimPayment` before the secret is
 * public); a secret already public in the index (someone claimed, or we crashed after revealing) is used as is.
 *
 * Settlement v2 fills (takes.escrow_version = 2) are driven on their own pass of the same loop
 * (actors/SettlementV2.ts, src/Domain/SettlementStepV2.ts): no secret held, one payTake per take. This pass reads
 * v1 takes only, and v1 decisions are unchanged.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Option, Queue, Schedule, Stream } from "effect"
import { getAddress, type Hex } from "viem"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
import { Relayer } from "../src/Chain/Relayer.ts"
import {
  cancelLockCall,
  claimCall,
  claimPaymentCall,
  fillFromWire,
  lockCall,
  payCall,
  permitArg,
  quoteSetFromRow,
  refundCall,
  refundPaymentCall,
} from "../src/Chain/SettlementCalls.ts"
import { AppConfig } from "../src/Config.ts"
import { CALL_SIDE, decide, type FillFacts, type SettlementCall } from "../src/Domain/SettlementStep.ts"
import { openStoredFillSecret } from "../src/Store/FillSecrets.ts"
import { RELAYER_OUTCOME_CHANNEL } from "../src/Store/Relayer.ts"
import {
  advanceFill,
  ESCROW_INDEXED_CHANNEL,
  finishFill,
  keysOf,
  outcomesOf,
  recordCall,
  type SettlingFill,
  settlingFills,
} from "../src/Store/Settlement.ts"
import { expireUnsignedTakes } from "../src/Store/Takes.ts"
import { supervisedSingleton } from "../src/Supervision.ts"
import { sweepSettlementV2 } from "./SettlementV2.ts"

/** Pass interval without a wake-up: newly signed fills are found by it (relayer outcomes and index pages wake the sweep). */
export const SETTLEMENT_SWEEP = Duration.millis(250)
/** Fills acted on at once within a page (each action is one or two short transactions and a relayer insert). */
const FILL_CONCURRENCY = 4
/** Fills per page of a pass (a pass reads every page). */
const BATCH = 200

/**
 * Opens a fill's secret from its `secret_ciphertext` (src/Store/FillSecrets.ts in the service; tests may pass
 * their own). Called only to build a claim, or a claimPayment while the secret is not yet public.
 */
export type OpenSecret = (fill: SettlingFill) => Effect.Effect<Hex, unknown, AppConfig>

/** The escrow call's calldata from the fill's records (the secret only for claim / claimPayment). */
const calldataOf = (f: SettlingFill, call: SettlementCall, openFillSecret: OpenSecret) =>
  Effect.gen(function* () {
    const fillId = f.fill_key as Hex
    switch (call) {
      case "lock":
        return lockCall(
          fillFromWire(f.fill),
          f.signature as Hex,
          quoteSetFromRow({
            order_id: f.order_id,
            sequence: f.sequence,
            identity_generation: f.qs_identity_generation,
            quote_size: f.qs_quote_size,
            valid_until: f.qs_valid_until,
            quotes: f.qs_quotes,
          }),
          f.quote_index,
          f.qs_signature as Hex,
        )
      case "pay": {
        // biome-ignore lint/suspicious/noExplicitAny: sign items (jsonb)
        const permit = (f.take_to_sign as Array<any>).find((i) => i.kind === "permit")?.typed_data?.message
        if (permit === undefined || f.permit_signature === null)
          return yield* Effect.dieMessage("the take has no permit")
        return payCall(
          fillFromWire(f.fill),
          f.signature as Hex,
          permitArg(BigInt(permit.value), BigInt(permit.deadline), f.permit_signature as Hex),
        )
      }
      case "claim":
        return claimCall(fillId, yield* openFillSecret(f))
      case "claimPayment": {
        const known = f.lock_secret ?? f.payment_secret
        return claimPaymentCall(fillId, known !== null ? (known.toLowerCase() as Hex) : yield* openFillSecret(f))
      }
      case "cancelLock":
        return cancelLockCall(fillId)
      case "refund":
        return refundCall(fillId)
      case "refundPayment":
        return refundPaymentCall(fillId)
    }
  })

const submitCall = (f: SettlingFill, call: SettlementCall, key: string, open: OpenSecret) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const relayer = yield* Relayer
    const venueId = CALL_SIDE[call] === "maker" ? f.maker_venue : f.taker_venue
    const venue = deployment.venues.find((v) => v.id === venueId)
    if (venue === undefined) return yield* Effect.logError("settlement call's venue is not configured")
    const data = yield* calldataOf(f, call, open)
    yield* relayer.submit({ idempotencyKey: key, venue: venue.id, to: getAddress(venue.escrow), data }).pipe(
      Effect.catchTags({
        IdempotencyConflict: () => Effect.logError("settlement call's key names another relayer request"),
        RelayerRejected: (e) => Effect.logError("settlement call not relayable", { reason: e.reason }),
      }),
    )
  }).pipe(
    Effect.annotateLogs({
      fill_id: f.id,
      take_id: f.take_id,
      call,
      tx_key: key,
      venue: CALL_SIDE[call] === "maker" ? f.maker_venue : f.taker_venue,
    }),
  )

/** Latest block timestamp per venue (Unix seconds); a venue whose node does not answer is left out. */
export const chainTimes = (venues: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const clients = yield* ChainClients
    const times = new Map<string, bigint>()
    yield* Effect.forEach(
      venues,
      (id) => {
        const client = clients.chain(id)
        if (client === undefined) return Effect.void
        return Effect.tryPromise(() => client.getBlock({ blockTag: "latest" })).pipe(
          Effect.tap((b) => Effect.sync(() => times.set(id, b.timestamp))),
          Effect.catchAll(() =>
            Effect.logWarning("settlement: no block time from the chain; its fills wait").pipe(
              Effect.annotateLogs("venue", id),
            ),
          ),
        )
      },
      { concurrency: "unbounded", discard: true },
    )
    return times
  })

/** One pass over the nonfinal fills: one action per fill. Returns how many fills it acted on. */
export const sweepSettlement = (open: OpenSecret, pageSize = BATCH) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    let acted = 0
    let times: Map<string, bigint> | null = null
    let after: { createdKey: string; id: string } | null = null
    // Every nonfinal fill each pass, page by page: fills waiting for an expiry must not starve newer ones.
    for (;;) {
      const fills: ReadonlyArray<SettlingFill> = yield* settlingFills(pageSize, after)
      if (fills.length === 0) break
      times ??= yield* chainTimes(deployment.venues.map((v) => v.id))
      const outcomes = yield* outcomesOf(fills.flatMap((f) => Object.values(keysOf(f)).filter((k) => k !== null)))
      const chainNow = times
      const advance = (f: SettlingFill) => {
        const makerNow = chainNow.get(f.maker_venue)
        const takerNow = chainNow.get(f.taker_venue)
        if (makerNow === undefined || takerNow === undefined) return Effect.succeed(false)
        const facts: FillFacts = {
          fillId: f.id,
          state: f.state,
          keys: keysOf(f),
          outcomes,
          lock: f.lock_state === null ? null : { state: f.lock_state, secret: f.lock_secret },
          payment: f.payment_state === null ? null : { state: f.payment_state, secret: f.payment_secret },
          makerExpiry: BigInt(f.maker_expiry),
          takerExpiry: BigInt(f.taker_expiry),
          makerNow,
          takerNow,
          revealCutoff: BigInt(deployment.settlement.reveal_cutoff_seconds),
        }
        const action = decide(facts)
        const step = Effect.gen(function* () {
          switch (action._tag) {
            case "Wait":
              return false
            case "Submit": {
              const written = yield* recordCall(f, action.call, action.key, action.state, action.error)
              if (!written) return false
              // Crash harness: a stop here leaves a stored key the relayer lacks (the next pass resubmits it).
              const faults = yield* Effect.serviceOption(FaultPoint)
              if (Option.isSome(faults)) yield* faults.value.hit("settlement.after-commit-before-submit")
              yield* submitCall(f, action.call, action.key, open)
              return written
            }
            case "Resubmit":
              // Not counted as progress: a call the relayer keeps refusing must not spin the loop.
              yield* submitCall(f, action.call, action.key, open)
              return false
            case "Advance":
              return yield* advanceFill(f, action.state)
            case "Finish":
              return yield* finishFill(f, action.state, action.error ?? f.error)
          }
        })
        // One fill's failure (a node, a defect) must not stall the others.
        return step.pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("settlement step failed", cause), false)),
          Effect.annotateLogs({ fill_id: f.id, take_id: f.take_id, order_id: f.order_id }),
        )
      }
      // Fills are independent (each write is guarded by the state read), so a few go at once: a pass over many
      // fills that all just became final must not delay the last one by the others' round trips.
      const done = yield* Effect.forEach(fills, advance, { concurrency: FILL_CONCURRENCY })
      acted += done.filter((d) => d).length
      if (fills.length < pageSize) break
      const last: SettlingFill = fills[fills.length - 1]!
      after = { createdKey: last.created_key, id: last.id }
    }
    return acted
  })

export const runSettlement = (open: OpenSecret) =>
  Effect.gen(function* () {
    const pg = yield* PgClient.PgClient
    const { deployment } = yield* AppConfig
    const wake = yield* Queue.sliding<void>(1)
    // A settlement call's relayer outcome (included, final, failed) and a watcher page with escrow events (a step
    // final in the index) wake the sweep at once; SETTLEMENT_SWEEP is only the fallback.
    yield* pg.listen(RELAYER_OUTCOME_CHANNEL).pipe(
      Stream.filter((key) => key.startsWith("settle:")),
      Stream.runForEach(() => Queue.offer(wake, undefined)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped,
    )
    yield* pg.listen(ESCROW_INDEXED_CHANNEL).pipe(
      Stream.runForEach(() => Queue.offer(wake, undefined)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped,
    )
    // Unsigned takes past their pay window release their reservations (state expired) on the same beat.
    const v1Pass = Effect.zipRight(
      expireUnsignedTakes().pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("expiring unsigned takes failed; retrying", cause)),
      ),
      sweepSettlement(open),
    ).pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("settlement pass failed; retrying", cause), 0)))
    // v2 fills (takes.escrow_version = 2) on their own pass, same beat; v1 fills never reach it, nor it them.
    const v2Pass = sweepSettlementV2(chainTimes(deployment.venues.map((v) => v.id))).pipe(
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("settlement v2 pass failed; retrying", cause), 0)),
    )
    yield* Effect.zipWith(v1Pass, v2Pass, (v1, v2) => v1 + v2).pipe(
      // After a pass that acted, go again at once: the next step of those fills may already be decidable.
      Effect.flatMap((acted) =>
        acted > 0 ? Effect.void : Queue.take(wake).pipe(Effect.timeout(SETTLEMENT_SWEEP), Effect.ignore),
      ),
      Effect.forever,
    )
  }).pipe(Effect.scoped, Effect.annotateLogs({ actor: "Settlement" }))

/** The singleton, given how secrets are opened. */
export const settlementLive = (open: OpenSecret) => supervisedSingleton("settlement", runSettlement(open))

/** The service's singleton: secrets opened from their sealed rows (src/Store/FillSecrets.ts). */
export const SettlementLive = settlementLive(openStoredFillSecret)
