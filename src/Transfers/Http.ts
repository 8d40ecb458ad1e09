import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { parseTransfersCursor, type TransferRequest, Transfers } from "../Transfers.ts"
import { TRANSFERS_PAGE } from "./Api.ts"

/** Answers 200 instead of the route's 201: an identical repeat created nothing. */
const answerRepeat = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setStatus(response, 200)),
)

/** The transfer routes: authenticate (a master session; beta access for a new intent), call Transfers, shape. */
export const TransfersHandlers = HttpApiBuilder.group(Api, "transfers", (handlers) =>
  Effect.gen(function* () {
    const transfers = yield* Transfers
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const request: TransferRequest = {
            clientTransferId: payload.client_transfer_id,
            from: payload.from,
            to: payload.to,
            amountIn: BigInt(payload.amount_in),
            minOut: BigInt(payload.min_out),
            payer: payload.payer,
            recipient: payload.recipient,
            maxParts: payload.max_parts,
          }
          // An identical repeat is answered whatever the account's access since; a new intent needs access.
          const repeat = yield* transfers.findRepeat(session.master, request)
          if (Option.isSome(repeat)) {
            yield* answerRepeat
            return repeat.value
          }
          yield* requireAccess(session.master)
          const out = yield* transfers.create(session.master, request)
          if (!out.created) yield* answerRepeat
          return out.transfer
        }),
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          // A malformed cursor is refused before the snapshot's cursor is taken (no x-event-cursor on it).
          yield* parseTransfersCursor(urlParams.cursor)
          yield* snapshotCursor
          return yield* transfers.list(session.master, urlParams.cursor, TRANSFERS_PAGE)
        }),
      )
      .handle("payKey", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* transfers.givePayKey(session.master, path.id, payload.pay_key, requireAccess(session.master))
        }),
      )
      .handle("cancel", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* transfers.cancel(session.master, path.id)
        }),
      )
  }),
).pipe(Layer.provide(Transfers.Default))
