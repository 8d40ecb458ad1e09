/**
 * Settlement (DESIGN §10): a keyed entity per take (`settlement`, on the shared loop of actors/Keyed.ts) whose pass
 * advances each of the take's nonfinal, signed fills by one step: lock (maker chain) → pay (taker chain) → claim,
 * the reveal (maker chain) → claimPayment (taker chain); aborts: a failed lock → failed; a failed payment →
 * cancelLock → cancelled; expiries → refund / refundPayment → refunded.
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
import { Duration, Effect, Layer, Option } from "effect"
import { getAddress, type Hex } from "viem"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
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
import { wakeOnNotify, wakeOwned } from "../src/Cluster/KeyedWakes.ts"
import { AppConfig } from "../src/Config.ts"
import { CALL_SIDE, decide, type FillFacts, type SettlementCall } from "../src/Domain/SettlementStep.ts"
import { RELAYER_OUTCOME_CHANNEL } from "../src/Relayer/Transitions.ts"
import { Relayer } from "../src/Relayer.ts"
import { Settlement } from "../src/Settlement/Entity.ts"
import { openStoredFillSecret } from "../src/Settlement/FillSecrets.ts"
import { ESCROW_INDEXED_CHANNEL, parseEscrowIndexed, takesOfOpenFills } from "../src/Settlement/IndexedWake.ts"
import { fillTakeCache, takeToWake } from "../src/Settlement/OutcomeWake.ts"
import {
  advanceFill,
  finishFill,
  keysOf,
  outcomesOfFills,
  recordCall,
  rollUpTake,
  type SettlingFill,
  settlementPendingTakes,
  settlingFills,
  takeOfFill,
} from "../src/Settlement/Repo.ts"
import { takeAndFillsToSettle } from "../src/Settlement/RepoV2.ts"
import { expireUnsignedTakes } from "../src/Takes/Repo.ts"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "./Keyed.ts"
import { settleTakeV2 } from "./SettlementV2.ts"

/** A pending take's cadence without a wake-up (relayer outcomes and index pages wake it sooner). */
export const SETTLEMENT_SWEEP = Duration.millis(1000)
/** Fills acted on at once within a page (each action is one or two short transactions and a relayer insert). */
const FILL_CONCURRENCY = 4
/** Fills per page of a pass (a pass reads every page). */
const BATCH = 200

/**
 * Opens a fill's secret from its `secret_ciphertext` (src/Settlement/FillSecrets.ts in the service; tests may pass
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

/**
 * What one pass over a take's fills did: fills it acted on, and nonfinal fills it saw (0: nothing left). `moved`:
 * the actions after which the next pass may decide something new at once (a state advanced or finished, a take-wide
 * fact changed). A call submitted and nothing else waits for its relayer outcome, which wakes the take: an immediate
 * pass would only wait. `finished`: the fills it made final (the take may roll up).
 */
export interface TakePass {
  readonly acted: number
  readonly moved: number
  readonly finished: number
  readonly open: number
}

/**
 * One pass over the nonfinal v1 fills of one take: one action per fill. `times` gives the chains' latest block
 * times (read only when there is a fill to drive).
 */
export const settleTakeV1 = <E, R>(
  open: OpenSecret,
  takeId: string,
  chainTimes: Effect.Effect<ReadonlyMap<string, bigint>, E, R>,
  pageSize = BATCH,
) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    let acted = 0
    let seen = 0
    let times: ReadonlyMap<string, bigint> | null = null
    let after: { createdKey: string; id: string } | null = null
    // Every nonfinal fill of the take each pass, page by page: fills waiting for an expiry must not starve newer ones.
    for (;;) {
      const fills: ReadonlyArray<SettlingFill> = yield* settlingFills(pageSize, after, takeId)
      if (fills.length === 0) break
      seen += fills.length
      times ??= yield* chainTimes
      const outcomes = outcomesOfFills(fills)
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
    return { acted, moved: acted, finished: acted, open: seen } satisfies TakePass
  })

/**
 * One pass of a take's Settlement entity (its step): a reserved take past its pay window expires (releasing its
 * reservations); a signed take's nonfinal fills advance one action each (v1 or v2 by the take's escrow version;
 * v1 decisions unchanged, v2's in actors/SettlementV2.ts). Pending while a fill is not final: looked at again at
 * once after a pass that moved (the next step may already be decidable), else within SETTLEMENT_SWEEP (chain
 * times move expiries; relayer outcomes and index pages wake it sooner). A reserved take waits for its window's end
 * (the signatures route wakes it when signed).
 */
export const stepSettlement =
  <E, R>(open: OpenSecret, chainTimes: Effect.Effect<ReadonlyMap<string, bigint>, E, R>, pageSize = BATCH) =>
  (takeId: string) =>
    Effect.gen(function* () {
      // One statement: the take and, when it is a signed v2 take, its first page of fills.
      const take = yield* takeAndFillsToSettle(takeId, pageSize)
      if (take === undefined) return idle
      if (take.state === "reserved") {
        if (take.window_ms > 0) return again(Duration.millis(Math.min(take.window_ms + 50, 60_000)))
        yield* expireUnsignedTakes(1, takeId)
        return idle
      }
      if (take.state !== "signed") return idle
      const pass: TakePass =
        take.escrow_version === 2
          ? yield* settleTakeV2(takeId, chainTimes, pageSize, take.fills)
          : yield* settleTakeV1(open, takeId, chainTimes, pageSize)
      // The fills of a pass finish in concurrent transactions, each rolling the take up only if it sees no other fill
      // open: two that finish together each see the other open (not yet committed), and neither rolls it up. Once
      // they have committed, one more roll-up (a guarded no-op otherwise) moves the take on. A pass that finished no
      // fill and saw one open leaves nothing to roll up.
      if (pass.finished > 0 || pass.open === 0) yield* rollUpTake(takeId)
      if (pass.open === 0) return idle
      return pass.moved > 0 ? again(Duration.zero) : again(SETTLEMENT_SWEEP)
    }).pipe(Effect.annotateLogs({ take_id: takeId }))

/** Takes with settlement work pending (the start-up adoption wakes them; src/Settlement/Repo.ts). */
export const pendingKeys = settlementPendingTakes()

/** Chain times are read once per SETTLEMENT_SWEEP per runner at most, whichever take asks first. */
const CHAIN_TIMES_TTL = Duration.millis(200)

/**
 * Wakes on this runner (src/Cluster/KeyedWakes.ts): a settlement call's relayer outcome wakes its take
 * (src/Settlement/OutcomeWake.ts: a v2 take on the call's end only; a fill's take read once per runner); a committed
 * escrow index page of a venue wakes the takes of the fills it names (a v2 page of lock and payment events), else
 * every take with a fill open on the venue (a step may be final now). Expiries move with chain time, not pages: the
 * pass cadence and the backstop tick see them.
 */
const SettlementWakesLive = Layer.unwrapEffect(
  Effect.map(fillTakeCache(takeOfFill), (takes) =>
    Layer.mergeAll(
      wakeOnNotify("settlement", RELAYER_OUTCOME_CHANNEL, (payload) =>
        Effect.flatMap(
          takeToWake(payload, (fillId) => takes.get(fillId)),
          (take) => (take === undefined ? Effect.void : wakeOwned(Settlement, [take])),
        ),
      ),
      wakeOnNotify("settlement", ESCROW_INDEXED_CHANNEL, (payload) => {
        const { venue, fillDigests } = parseEscrowIndexed(payload)
        return Effect.flatMap(
          fillDigests === undefined ? settlementPendingTakes(venue) : takesOfOpenFills(venue, fillDigests),
          (ids) => wakeOwned(Settlement, ids),
        )
      }),
    ),
  ),
)

/** The entity alone, given how secrets are opened (a runner with it and nothing else resumes takes from their ticks). */
export const settlementEntityLive = (open: OpenSecret) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      const times = yield* Effect.cachedWithTTL(chainTimes(deployment.venues.map((v) => v.id)), CHAIN_TIMES_TTL)
      return Settlement.toLayer(
        Effect.gen(function* () {
          const drive = yield* keyedDriver(Settlement, stepSettlement(open, times))
          return { Wake: drive.onWake, Tick: drive.onTick }
        }),
        keyedEntityOptions,
      )
    }),
  )

/** The entity, its wakes and the adoption of pending takes, given how secrets are opened. */
export const settlementLive = (open: OpenSecret) =>
  Layer.mergeAll(settlementEntityLive(open), SettlementWakesLive, keyedAdoption(Settlement, pendingKeys))

/** The service's settlement: secrets opened from their sealed rows (src/Settlement/FillSecrets.ts). */
export const SettlementLive = settlementLive(openStoredFillSecret)
