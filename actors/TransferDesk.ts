/**
 * TransferDesk: completes transfer intents that were created short of funds. Once the intent's funding
 * withdrawal is `relayed` AND the payer's wallet on the `from` chain holds `amount_in`, it creates the take
 * (src/Store/TransferTake.ts), which the client then signs from GET /v1/takes/{id}.
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
import { SecureRandom } from "../src/SecureRandom.ts"
import { deferTransfer, dueTransfers, type TransferRow } from "../src/Store/Transfers.ts"
import { payerBalance, takeForTransfer } from "../src/Store/TransferTake.ts"
import { supervisedSingleton } from "../src/Supervision.ts"

const BATCH = 32
/** Pass interval; a relayed withdrawal's payout lands on chain within seconds, so a second is enough. */
export const TRANSFER_SWEEP = Duration.seconds(1)
/** Retry delay after the wallet was still short (the venue's payout is on its way). */
const WALLET_RETRY_MS = 2_000
/** Retry delay after a refusal of the take (no liquidity, chain down). */
const TAKE_RETRY_MS = 5_000

const advance = (t: TransferRow) =>
  Effect.gen(function* () {
    const balance = yield* payerBalance(t.from_venue, t.payer)
    if (Option.isNone(balance)) {
      return yield* deferTransfer(t.id, `could not read the payer's balance on ${t.from_venue}`, TAKE_RETRY_MS)
    }
    if (balance.value < BigInt(t.amount_in)) {
      return yield* deferTransfer(
        t.id,
        `waiting for the payer's wallet to hold ${t.amount_in} (holds ${balance.value})`,
        WALLET_RETRY_MS,
      )
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
      return yield* deferTransfer(t.id, outcome, TAKE_RETRY_MS)
    }
    if (outcome._tag === "Created") yield* Effect.logInfo(`transfer ${t.id}: take ${outcome.takeId} created`)
  })

/** One pass over the due intents (tests call it directly). A failure of one intent does not stop the others. */
export const sweepTransfers = Effect.gen(function* () {
  for (const t of yield* dueTransfers(BATCH)) {
    yield* advance(t).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`transfer ${t.id}: desk pass failed; retrying`, cause)),
    )
  }
})

/** The desk's loop; runs until interrupted. */
export const runTransferDesk = sweepTransfers.pipe(
  Effect.catchAllCause((cause) => Effect.logWarning("transfer desk pass failed; retrying", cause)),
  Effect.zipRight(Effect.sleep(TRANSFER_SWEEP)),
  Effect.forever,
  Effect.annotateLogs({ actor: "TransferDesk" }),
)

export const TransferDeskLive = supervisedSingleton("transfer-desk", runTransferDesk).pipe(
  Layer.provide(SecureRandom.Live),
)
