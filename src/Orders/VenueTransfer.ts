/**
 * An order's venue transfer (the shortfall moved from the owner's venue margin to the owner's wallet on the escrow
 * chain, prepared at creation as a venue withdrawal "to signer"), once the owner signed it.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Option } from "effect"
import { ChallengeExpired, NotFound, SignatureInvalid, WithdrawalPending } from "../Domain/Errors.ts"
import { eoaSignature } from "../Domain/SignatureFailure.ts"
import { digestOfUntrusted, recoverDigestSigner } from "../Domain/WithdrawalTypedData.ts"
import { randomUuid } from "../SecureRandom.ts"
import { withdrawalDeskId } from "../Withdrawals/Desk.ts"
import { createWithdrawal, findPreparationByDigest } from "../Withdrawals/Repo.ts"
import { markAwaitingMargin, type OrderRow } from "./Repo.ts"
import type { SignItem } from "./View.ts"

/**
 * Verifies the owner's signature of the order's venue_transfer (the preparation is found again by its digest),
 * queues that withdrawal with the repository step the withdrawal desk's Submit runs for POST /v1/withdrawals
 * (createWithdrawal: one per preparation, refused while another of the account is open or once it expired), and
 * moves the order to `awaiting_margin` with all its signatures, in one transaction. A retry after a lost response
 * finds the same withdrawal. Answers the withdrawal desk that now holds it (to wake once this committed); the fund call is relayed
 * later by the order's OrderFunding entity, once the withdrawal landed in the wallet.
 */
export const queueVenueTransfer = (
  order: OrderRow,
  item: SignItem,
  signatureInput: string,
  signatures: Record<string, string>,
) =>
  Effect.gen(function* () {
    const digest = digestOfUntrusted(item.typed_data)
    if (Either.isLeft(digest)) return yield* Effect.dieMessage(`stored venue_transfer does not hash: ${digest.left}`)
    const signature = yield* eoaSignature(
      signatureInput,
      "the venue_transfer must be the owner's own 65-byte signature: the venue accepts no contract signature",
    )
    const signer = yield* recoverDigestSigner(digest.right, signature)
    if (signer !== order.owner_address) {
      return yield* new SignatureInvalid({ message: "the venue_transfer is not signed by the owner" })
    }
    const prep = yield* findPreparationByDigest(digest.right).pipe(Effect.orDie)
    if (Option.isNone(prep)) return yield* Effect.dieMessage("the order's venue_transfer preparation is missing")
    const now = yield* Clock.currentTimeMillis
    const id = yield* randomUuid
    const sql = yield* SqlClient.SqlClient
    // The queued withdrawal and the order's move commit together (DESIGN §4): no stop leaves the owner's margin
    // moving for an order still `preparing`, which nothing sweeps.
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const outcome = yield* createWithdrawal({
            id,
            preparation: prep.value,
            signature,
            nowMs: now,
            expired: prep.value.expires_at.getTime() <= now,
          })
          switch (outcome._tag) {
            case "Expired":
              return yield* new ChallengeExpired({
                message: "the venue_transfer expired before it was signed; create a new order (new client_order_id)",
              })
            case "NotLinked":
              return yield* new NotFound({
                message: `owner_address is no longer your linked account on ${order.venue}`,
              })
            case "Pending":
              return yield* new WithdrawalPending({
                message: `withdrawal ${outcome.id} on ${order.venue} is still open; it must resolve first`,
              })
            case "Created":
            case "Existing":
              yield* markAwaitingMargin(order.id, signatures, outcome.row.id, now)
              return { desk: withdrawalDeskId(prep.value.venue, prep.value.address) }
          }
        }),
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
  })
