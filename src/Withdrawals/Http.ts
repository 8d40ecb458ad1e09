import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { HISTORY_LIMIT_DEFAULT } from "../Domain/Withdrawal.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { Withdrawals } from "../Withdrawals.ts"

/**
 * The withdrawal routes: a master session (access granted to prepare, and to submit anything but a repeat), then the
 * Withdrawals service.
 */
export const WithdrawalsHandlers = HttpApiBuilder.group(Api, "withdrawals", (handlers) =>
  Effect.gen(function* () {
    const withdrawals = yield* Withdrawals

    return handlers
      .handle("prepare", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          return yield* withdrawals.prepare(session.master, {
            venue: payload.venue,
            amount: BigInt(payload.amount),
            to: payload.to,
          })
        }),
      )
      .handle("submit", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          // Access after a repeat is answered: the same signed preparation again is no new commitment.
          return yield* withdrawals.submit(
            session.master,
            {
              venue: payload.venue,
              amount: BigInt(payload.amount),
              to: payload.to,
              typedData: payload.typed_data,
              signature: payload.signature,
            },
            requireAccess(session.master),
          )
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return yield* withdrawals.get(session.master, path.id)
        }),
      )
      .handle("history", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return yield* withdrawals.history(
            session.master,
            { after: urlParams.after, limit: urlParams.limit ?? HISTORY_LIMIT_DEFAULT },
            snapshotCursor,
          )
        }),
      )
  }),
).pipe(Layer.provide(Withdrawals.Default))
