import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Escrow } from "../Escrow.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireScope, requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"

/**
 * The escrow routes: a master session (the legacy scan also takes a credential with scope read), then the Escrow
 * service; the close routes hand it the access guard, which it runs where the close rules place it.
 */
export const EscrowHandlers = HttpApiBuilder.group(Api, "escrow", (handlers) =>
  Effect.gen(function* () {
    const escrow = yield* Escrow

    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return { data: yield* escrow.list(session.master) }
        }),
      )
      .handle("legacy", ({ urlParams }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("read")
          return yield* escrow.legacyPage(principal.master, urlParams.cursor)
        }),
      )
      .handle("prepare", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* escrow.prepareClose(
            session.master,
            { venue: payload.venue, orderId: payload.order_id, toMargin: payload.to_margin, dex: payload.dex },
            requireAccess(session.master),
          )
        }),
      )
      .handle("close", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* escrow.closeBySignature(
            session.master,
            {
              venue: payload.venue,
              orderId: payload.order_id,
              toMargin: payload.to_margin,
              dex: payload.dex,
              nonce: BigInt(payload.nonce),
              deadline: payload.deadline,
              signature: payload.signature,
            },
            requireAccess(session.master),
          )
        }),
      )
      .handle("managedClose", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* escrow.managedClose(
            session.master,
            { venue: payload.venue, orderId: payload.order_id, toMargin: payload.to_margin, dex: payload.dex },
            requireAccess(session.master),
          )
        }),
      )
  }),
).pipe(Layer.provide(Escrow.Default))
