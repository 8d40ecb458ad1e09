import { Clock, Duration, Effect, Option } from "effect"
import type { Address, Hex } from "viem"
import { InvalidRequest, NotFound, SignatureInvalid, StateConflict } from "../Domain/Errors.ts"
import { cancelFillTypedData, payTakeTypedData } from "../Domain/EscrowTypedDataV2.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { authorizePay, storeCancels } from "./PayV2.ts"
import { canonical, signedBy } from "./Signatures.ts"
import type { TakeWithSignItems } from "./View.ts"

/**
 * POST /v1/takes/{id}/signatures with the pay key's signatures (settlement v2). The typed data is rebuilt from the
 * take's own stored Fills (digests in fill order, escrows they name), never from the request: a signature over any
 * other list of digests or another domain does not recover to the pay key and is refused (422, nothing stored).
 */

const v2Take = (view: TakeWithSignItems) =>
  view.take.escrow_version === 2 && view.take.pay_key !== undefined
    ? Effect.succeed(view.take.pay_key)
    : Effect.fail(new InvalidRequest({ message: "pay_authorization and cancels belong to settlement v2 takes" }))

/** The stored Fill of each margin_move, in to_sign order (= fill order). */
const storedFills = (view: TakeWithSignItems) =>
  view.toSign
    .filter((i) => i.kind === "margin_move")
    .map((i) => ({
      fillId: i.fill_id!,
      digest: i.digest as Hex,
      message: i.typed_data.message as {
        takerChainId: string
        takerEscrow: Address
        makerChainId: string
        makerEscrow: Address
      },
    }))

/**
 * How long a PayTake posted before every lock is final in the service's index waits for it. The client posts when its
 * own endpoint shows the locks final, usually a watcher poll ahead of the index; held, it is answered as soon as the
 * index commits the page (no 409, no client retry). Past this, 409 retryable as before: the index is not just a poll
 * behind, and a request is not held open for long.
 */
export const PAY_AUTHORIZATION_HOLD = Duration.seconds(2)

/**
 * authorizePay, re-read at each committed index page of the maker venue while its answer is LocksNotFinal, for at
 * most PAY_AUTHORIZATION_HOLD. `nextIndexed` (Settlement.nextIndexed) is taken before each read, so a page committed
 * during the read wakes the wait at once. Nothing is held meanwhile: no transaction, no row lock.
 */
const authorizeWhenIndexed = (
  p: { readonly takeId: string; readonly master: string; readonly signature: string },
  nextIndexed: Effect.Effect<Effect.Effect<void>>,
) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const deadline = start + Duration.toMillis(PAY_AUTHORIZATION_HOLD)
    for (let reads = 1; ; reads++) {
      const page = yield* nextIndexed
      const outcome = yield* authorizePay(p).pipe(Effect.orDie)
      const now = yield* Clock.currentTimeMillis
      const done =
        outcome._tag !== "LocksNotFinal" ||
        now >= deadline ||
        Option.isNone(yield* Effect.timeoutOption(page, Duration.millis(deadline - now)))
      if (done) {
        // On the request's span: how long it was held and how many reads that took (units: ms, reads).
        const held = (yield* Clock.currentTimeMillis) - start
        yield* Effect.annotateCurrentSpan({ "take.pay_hold_ms": held, "take.pay_hold_reads": reads })
        return outcome
      }
    }
  })

/**
 * The pay key's PayTake: must recover to the take's pay key over exactly its Fill digests (422 otherwise). Stored
 * once: a take already authorised answers unchanged. Before every lock is final in the v2 index it is held for up to
 * PAY_AUTHORIZATION_HOLD (authorizeWhenIndexed), then 409 with `retryable: true`; after payBy, or once the pay key
 * cancelled any fill of the take (one payTake pays every fill, and a cancelled lock is being released): 409, not
 * retryable; nothing stored either way. `nextIndexed`: the maker venue's next index page (Settlement.nextIndexed).
 */
export const acceptPayAuthorization = (
  view: TakeWithSignItems,
  master: string,
  given: string,
  nextIndexed: Effect.Effect<Effect.Effect<void>>,
) =>
  Effect.gen(function* () {
    const payKey = yield* v2Take(view)
    const fills = storedFills(view)
    const signature = yield* canonical(given)
    const first = fills[0]!.message
    const typed = toWireTypedData(
      payTakeTypedData(
        BigInt(first.takerChainId),
        first.takerEscrow,
        fills.map((f) => f.digest),
      ),
    )
    if (!(yield* signedBy({ typed_data: typed }, payKey, signature))) {
      return yield* new SignatureInvalid({
        message: "the payment authorisation is not the pay key's over this take's Fills",
      })
    }
    if (view.take.pay_authorized_at != null) return
    const outcome = yield* authorizeWhenIndexed({ takeId: view.take.id, master, signature }, nextIndexed)
    switch (outcome._tag) {
      case "Missing":
        return yield* new NotFound({ message: "no such take" })
      case "LocksNotFinal":
        // Retryable: the client read the locks final on its own endpoint and this service's index is still behind
        // it after the hold (a restart, a failing node); the same request succeeds once it catches up (until payBy).
        return yield* new StateConflict({
          message: "not every lock of the take is final yet here; retry the same request shortly",
          retryable: true,
        })
      case "PayByPassed":
        return yield* new StateConflict({ message: "payBy has passed: the take can no longer be paid" })
      case "Cancelled":
        return yield* new StateConflict({
          message: "the pay key cancelled a fill of this take: the take can no longer be paid",
        })
      default:
        return
    }
  })

/** The pay key's CancelFill per fill (maker v2 escrow's domain, the Fill's digest); each fill keeps its first. */
export const acceptCancels = (
  view: TakeWithSignItems,
  master: string,
  given: ReadonlyArray<{ readonly fill_id: string; readonly signature: string }>,
) =>
  Effect.gen(function* () {
    const payKey = yield* v2Take(view)
    const fills = new Map(storedFills(view).map((f) => [f.fillId, f]))
    const cancels = new Map<string, string>()
    for (const c of given) {
      const id = c.fill_id.toLowerCase()
      const fill = fills.get(id)
      if (fill === undefined) return yield* new InvalidRequest({ message: `fill ${id} is not a fill of this take` })
      if (cancels.has(id)) return yield* new InvalidRequest({ message: `fill ${id} is given twice` })
      const signature = yield* canonical(c.signature)
      const typed = toWireTypedData(
        cancelFillTypedData(BigInt(fill.message.makerChainId), fill.message.makerEscrow, fill.digest),
      )
      if (!(yield* signedBy({ typed_data: typed }, payKey, signature))) {
        return yield* new SignatureInvalid({
          message: `the cancel of ${id} is not the pay key's CancelFill of its Fill`,
        })
      }
      cancels.set(id, signature)
    }
    yield* storeCancels({ takeId: view.take.id, master, cancels }).pipe(Effect.orDie)
  })
