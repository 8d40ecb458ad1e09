import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { Takes } from "../Takes.ts"
import type { TakeWithSignItems } from "./View.ts"

const wire = (v: TakeWithSignItems) => ({ take: v.take, to_sign: v.toSign })

/** The takes routes: authenticate (a master session; beta access to create), call the Takes service, shape the wire. */
export const TakesHandlers = HttpApiBuilder.group(Api, "takes", (handlers) =>
  Effect.gen(function* () {
    const takes = yield* Takes
    return handlers
      .handle("preview", ({ payload }) =>
        takes.preview({
          from: payload.from,
          to: payload.to,
          amountIn: BigInt(payload.amount_in),
          maxParts: payload.max_parts,
        }),
      )
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          // Access gates a new take only: a repeat is answered whatever the account's access since.
          const out = yield* takes.create(
            {
              master: session.master,
              clientTakeId: payload.client_take_id,
              from: payload.from,
              to: payload.to,
              amountIn: BigInt(payload.amount_in),
              minOut: BigInt(payload.min_out),
              payer: payload.payer,
              recipient: payload.recipient,
              maxParts: payload.max_parts,
              payKey: payload.pay_key,
            },
            requireAccess(session.master),
          )
          return wire(out)
        }),
      )
      .handle("sign", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          return wire(yield* takes.sign(session.master, path.id, payload))
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return wire(yield* takes.get(session.master, path.id))
        }),
      )
  }),
).pipe(Layer.provide(Takes.Default))
