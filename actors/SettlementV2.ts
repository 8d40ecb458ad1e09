/**
 * Settlement's pass over a settlement-v2 take's fills (takes.escrow_version = 2), run by the take's Settlement
 * entity where a v1 take runs the v1 pass (actors/Settlement.ts). Same crash rule as v1: the decision (src/Domain/SettlementStepV2.ts) is
 * recomputed from rows every pass, and a call's key is committed (with its state change and journal rows) BEFORE
 * the call goes to the Relayer. v2 calls go to each venue's `escrow_v2`. The service holds no v2 secret: claim and
 * claimPayment are built from the secret the v2 index shows public (the maker's own claimPayment revealed it).
 */
import { Effect, Option } from "effect"
import { getAddress, type Hex } from "viem"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
import {
  cancelLockV2Call,
  claimPaymentV2Call,
  claimV2Call,
  fillV2FromWire,
  lockV2Call,
  payTakeCall,
  permitArg,
  quoteSetV2FromRow,
  refundPaymentV2Call,
  refundV2Call,
} from "../src/Chain/SettlementCallsV2.ts"
import { AppConfig } from "../src/Config.ts"
import { CALL_SIDE, type SettlementCall } from "../src/Domain/SettlementStep.ts"
import { CANCELLED_BY_PAY_KEY, decideV2, effectiveFactsV2, type FillFactsV2 } from "../src/Domain/SettlementStepV2.ts"
import { Relayer } from "../src/Relayer.ts"
import { keysOf, outcomesOfFills, recordCall } from "../src/Settlement/Repo.ts"
import {
  advanceFillV2,
  finishFillV2,
  type SettlingFillV2,
  settlingFillsV2,
  takeFillsV2,
} from "../src/Settlement/RepoV2.ts"

const FILL_CONCURRENCY = 4
const BATCH = 200

const publicSecretOf = (f: SettlingFillV2) => f.public_secret ?? f.payment_secret ?? f.lock_secret ?? f.seen_secret

/** The v2 escrow call's calldata from the fill's (and, for payTake, its take's) records. */
const calldataOf = (f: SettlingFillV2, call: SettlementCall) =>
  Effect.gen(function* () {
    const digest = f.fill_digest as Hex
    switch (call) {
      case "lock":
        return lockV2Call(
          fillV2FromWire(f.fill),
          f.signature as Hex,
          quoteSetV2FromRow({
            owner: String(f.fill.owner),
            order_id: f.order_id,
            sequence: f.sequence,
            identity_generation: f.qs_identity_generation,
            quote_size: f.qs_quote_size,
            issued_at: f.qs_issued_at,
            valid_until: f.qs_valid_until,
            hashlock_root: f.qs_hashlock_root,
            hashlock_count: f.qs_hashlock_count,
            quotes: f.qs_quotes,
          }),
          f.quote_index,
          f.qs_signature as Hex,
          f.hashlock_proof as ReadonlyArray<Hex>,
        )
      case "pay": {
        // biome-ignore lint/suspicious/noExplicitAny: sign items (jsonb)
        const permit = (f.take_to_sign as Array<any>).find((i) => i.kind === "permit")?.typed_data?.message
        if (permit === undefined || f.permit_signature === null) {
          return yield* Effect.dieMessage("the take has no permit")
        }
        if (f.pay_authorization === null) return yield* Effect.dieMessage("the take has no pay authorisation")
        const fills = yield* takeFillsV2(f.take_id)
        if (fills.some((x) => x.signature === null)) return yield* Effect.dieMessage("a fill of the take is unsigned")
        return payTakeCall(
          fills.map((x) => fillV2FromWire(x.fill)),
          fills.map((x) => x.signature as Hex),
          f.pay_authorization as Hex,
          permitArg(BigInt(permit.value), BigInt(permit.deadline), f.permit_signature as Hex),
        )
      }
      case "claim":
      case "claimPayment": {
        const secret = publicSecretOf(f)
        if (secret === null) return yield* Effect.dieMessage("the secret is not public")
        const s = secret.toLowerCase() as Hex
        return call === "claim" ? claimV2Call(digest, s) : claimPaymentV2Call(digest, s)
      }
      case "cancelLock":
        if (f.cancel_signature === null) return yield* Effect.dieMessage("no cancel signature")
        return cancelLockV2Call(digest, f.cancel_signature as Hex)
      case "refund":
        return refundV2Call(digest)
      case "refundPayment":
        return refundPaymentV2Call(digest)
    }
  })

const submitCallV2 = (f: SettlingFillV2, call: SettlementCall, key: string) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const relayer = yield* Relayer
    const venueId = CALL_SIDE[call] === "maker" ? f.maker_venue : f.taker_venue
    const escrow = deployment.venues.find((v) => v.id === venueId)?.escrow_v2?.address
    if (escrow === undefined) return yield* Effect.logError("settlement v2 call's venue has no escrow_v2")
    const data = yield* calldataOf(f, call)
    yield* relayer.submit({ idempotencyKey: key, venue: venueId, to: getAddress(escrow), data }).pipe(
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
      escrow_version: 2,
      venue: CALL_SIDE[call] === "maker" ? f.maker_venue : f.taker_venue,
    }),
  )

/**
 * What a fill's action did: nothing, a call submitted (its outcome wakes the take), a move (see TakePass), or a move
 * that made the fill final.
 */
type Acted = "none" | "submitted" | "moved" | "finished"
const NONE: Acted = "none"
const SUBMITTED: Acted = "submitted"
const MOVED: Acted = "moved"
const FINISHED: Acted = "finished"

/**
 * One pass over the nonfinal v2 fills of one take (its Settlement entity's step, actors/Settlement.ts);
 * `chainTimes` (latest block time per venue) is read once, and only when there is a fill to drive. `firstPage`: the
 * first `pageSize` fills when the caller read them with the take (takeAndFillsToSettle). Returns how many fills it
 * acted on, how many of those moved and finished (TakePass) and how many nonfinal fills it saw.
 */
export const settleTakeV2 = <E, R>(
  takeId: string,
  chainTimes: Effect.Effect<ReadonlyMap<string, bigint>, E, R>,
  pageSize = BATCH,
  firstPage?: ReadonlyArray<SettlingFillV2>,
) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const s = deployment.settlement
    const revealCutoff = BigInt(s.reveal_cutoff_seconds)
    const policy = { maxFadeRate: s.max_fade_rate, minChances: s.fade_min_chances }
    let acted = 0
    let moved = 0
    let finished = 0
    let seen = 0
    let times: ReadonlyMap<string, bigint> | null = null
    let after: { createdKey: string; id: string } | null = null
    let given = firstPage
    for (;;) {
      const fills: ReadonlyArray<SettlingFillV2> = given ?? (yield* settlingFillsV2(pageSize, after, takeId))
      given = undefined
      if (fills.length === 0) break
      seen += fills.length
      times ??= yield* chainTimes
      const chainNow = times
      const outcomes = outcomesOfFills(fills)
      const advance = (f: SettlingFillV2) => {
        const makerNow = chainNow.get(f.maker_venue)
        const takerNow = chainNow.get(f.taker_venue)
        if (makerNow === undefined || takerNow === undefined) return Effect.succeed(NONE)
        const facts: FillFactsV2 = {
          fillId: f.id,
          takeId: f.take_id,
          state: f.state,
          keys: keysOf(f),
          outcomes,
          lock: f.lock_state === null ? null : { state: f.lock_state, secret: f.lock_secret },
          payment: f.payment_state === null ? null : { state: f.payment_state, secret: f.payment_secret },
          secret: f.public_secret ?? f.seen_secret,
          revealMined: f.reveal_pending,
          payBy: BigInt(f.pay_by),
          makerExpiry: BigInt(f.maker_expiry),
          takerExpiry: BigInt(f.taker_expiry),
          makerNow,
          takerNow,
          takeLocksFinal: f.take_locks_final,
          payAuthorized: f.pay_authorization !== null,
          cancelSigned: f.cancel_signature !== null,
          takeCancelling: f.take_cancelling,
        }
        const action = decideV2(facts)
        const step = Effect.gen(function* () {
          switch (action._tag) {
            case "Wait":
              return NONE
            case "Submit": {
              const written = yield* recordCall(f, action.call, action.key, action.state, action.error)
              if (!written) return NONE
              // Crash harness: a stop here leaves a stored key the relayer lacks (the next pass resubmits it).
              const faults = yield* Effect.serviceOption(FaultPoint)
              if (Option.isSome(faults)) yield* faults.value.hit("settlement.after-commit-before-submit")
              yield* submitCallV2(f, action.call, action.key)
              // A stored cancel key makes the whole take cancelling (take_cancelling): its other fills decide anew.
              return action.call === "cancelLock" ? MOVED : SUBMITTED
            }
            case "Resubmit":
              yield* submitCallV2(f, action.call, action.key)
              return NONE
            case "Advance": {
              // A chance to reveal: the payment final on a live lock with at least reveal_cutoff left. The lock's
              // evidence is the decision's own (effectiveFactsV2: the index, or the relayer's final receipt of our
              // lock), not the index alone: its page may land after the payment is final, and a chance missed
              // then would leave a maker's later fade uncounted.
              const chance =
                effectiveFactsV2(facts).lock?.state === "locked" && facts.takerExpiry - takerNow >= revealCutoff
              return (yield* advanceFillV2(f, action.state, chance)) ? MOVED : NONE
            }
            case "Finish": {
              // Evidence from the index only (rows are final events): unpaid = a final lock and no payment at all,
              // unless the pay key cancelled it before payBy; an unclaimed payment = paid, never claimed, and the
              // lock never delivered.
              // A lock claimed without a payment was delivered (the maker's secret went public): not an unpaid lock.
              const unpaid =
                f.lock_state !== null &&
                f.lock_state !== "claimed" &&
                f.payment_state === null &&
                f.error !== CANCELLED_BY_PAY_KEY
              const unclaimedPayment =
                f.payment_state !== null && f.payment_state !== "claimed" && f.lock_state !== "claimed"
              const finished = yield* finishFillV2(
                f,
                action.state,
                action.error ?? f.error,
                { unpaid, unclaimedPayment },
                policy,
                {
                  deliveredUnpaid: action.unpaid === true,
                },
              )
              return finished ? FINISHED : NONE
            }
          }
        })
        return step.pipe(
          Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("settlement v2 step failed", cause), NONE)),
          Effect.annotateLogs({ fill_id: f.id, take_id: f.take_id, order_id: f.order_id, escrow_version: 2 }),
        )
      }
      const done = yield* Effect.forEach(fills, advance, { concurrency: FILL_CONCURRENCY })
      acted += done.filter((d) => d !== NONE).length
      moved += done.filter((d) => d === MOVED || d === FINISHED).length
      finished += done.filter((d) => d === FINISHED).length
      if (fills.length < pageSize) break
      const last: SettlingFillV2 = fills[fills.length - 1]!
      after = { createdKey: last.created_key, id: last.id }
    }
    return { acted, moved, finished, open: seen }
  })
