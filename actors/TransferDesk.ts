/**
 * TransferDesk: an entity per transfer intent (on actors/Keyed.ts) that completes it when it was created short of
 * funds (or, on v2, before its pay key). Once the intent's funding
 * withdrawal is `relayed` AND the payer's wallet on the `from` chain holds `amount_in`, it creates the take
 * (src/Transfers.ts takeForTransfer), which the client then signs from GET /v1/takes/{id}.
 *
 * Safety rests on the database, not on this loop: the take is created and recorded under the transfer's row lock
 * (one take per transfer; a cancel either lands first and the desk skips, or finds the take and is refused), and
 * the take's client id is the transfer's, so a second desk during a hand-over gets the same take back. Nothing is
 * ever signed or created for a withdrawal that is queued, submitting, unknown or failed: only `relayed` is due
 * (spec Recovery). A refusal (no liquidity now, a chain node down) is recorded on the intent and retried later;
 * the client may cancel meanwhile. A settlement-v2 transfer is due only once its pay key is given (the take's
 * Fills name it; dueTransfers), with or without a funding withdrawal.
 */
import { Duration, Effect, Layer, Option } from "effect"
import { wakeIfClustered } from "../src/Cluster/KeyedWakes.ts"
import { SecureRandom } from "../src/SecureRandom.ts"
import { Settlement } from "../src/Settlement/Entity.ts"
import { TransferDesk } from "../src/Transfers/Desk.ts"
import {
  deferTransfer,
  deskPendingTransfers,
  deskState,
  dueTransfers,
  type TransferRow,
} from "../src/Transfers/Repo.ts"
import { payerBalance, takeForTransfer } from "../src/Transfers.ts"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "./Keyed.ts"

/** A pending transfer's cadence; a relayed withdrawal's payout lands on chain within seconds, so a second is enough. */
export const TRANSFER_SWEEP = Duration.seconds(1)
/** Retry delay after the wallet was still short (the venue's payout is on its way). */
const WALLET_RETRY_MS = 2_000
/** Retry delay after a refusal of the take (no liquidity, chain down). */
const TAKE_RETRY_MS = 5_000

const advance = (t: TransferRow) =>
  Effect.gen(function* () {
    const balance = yield* payerBalance(t.from_venue, t.payer)
    if (Option.isNone(balance)) {
      yield* deferTransfer(t.id, `could not read the payer's balance on ${t.from_venue}`, TAKE_RETRY_MS)
      return undefined
    }
    if (balance.value < BigInt(t.amount_in)) {
      yield* deferTransfer(
        t.id,
        `waiting for the payer's wallet to hold ${t.amount_in} (holds ${balance.value})`,
        WALLET_RETRY_MS,
      )
      return undefined
    }
    const outcome = yield* takeForTransfer(t).pipe(
      Effect.catchTags({
        TakeInvalid: (e) => Effect.succeed(e.message),
        TakeVenueUnknown: (e) => Effect.succeed(`unknown venue ${e.venue}`),
        TakeConflict: () => Effect.succeed("the transfer's client take id is used by another take"),
        TakePayerNotLinked: (e) => Effect.succeed(`the payer is no longer linked on ${e.venue}`),
        TakeNoLiquidity: (e) => Effect.succeed(e.message),
        TakeChainUnavailable: (e) => Effect.succeed(e.message),
        TakeUnpaidLocks: (e) => Effect.succeed(`${e.unpaid} unpaid locks (limit ${e.limit})`),
      }),
    )
    if (typeof outcome === "string") {
      yield* Effect.logInfo(`transfer ${t.id}: no take yet: ${outcome}`)
      yield* deferTransfer(t.id, outcome, TAKE_RETRY_MS)
      return undefined
    }
    if (outcome._tag !== "Created") return undefined
    yield* Effect.logInfo(`transfer ${t.id}: take ${outcome.takeId} created`)
    return outcome.takeId
  })

/**
 * One pass of a transfer's TransferDesk entity (its step): when the intent is due (dueTransfers: funding relayed or
 * none needed, v2 pay key given, no deferral running), try its take. Pending while the transfer can still get a take
 * (deskState): looked at again when its deferral ends, else within TRANSFER_SWEEP (the funding withdrawal turning
 * relayed is noticed on that beat, as the singleton's sweep did). The take it creates is woken for settlement (its
 * pay window runs from now).
 */
export const stepTransferDesk = (id: string) =>
  Effect.gen(function* () {
    for (const t of yield* dueTransfers(1, id)) {
      const created = yield* advance(t)
      if (created !== undefined) yield* wakeIfClustered(Settlement, created)
    }
    const state = yield* deskState(id)
    if (state === undefined || !state.pending) return idle
    return again(Duration.millis(Math.max(state.wait_ms, Duration.toMillis(TRANSFER_SWEEP))))
  })

/** Transfers the desk still has to give a take (the start-up adoption wakes them). */
export const pendingKeys = deskPendingTransfers

export const TransferDeskLive = Layer.mergeAll(
  TransferDesk.toLayer(
    Effect.gen(function* () {
      const drive = yield* keyedDriver(TransferDesk, stepTransferDesk)
      return { Wake: drive.onWake, Tick: drive.onTick }
    }),
    keyedEntityOptions,
  ),
  keyedAdoption(TransferDesk, pendingKeys),
).pipe(Layer.provide(SecureRandom.Live))
