import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { CurrentPrincipal } from "../Domain/Principal.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { Orders } from "../Orders.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"

/**
 * The orders group: a master session for every route but the quote routes, which a `quote` credential of the
 * order's identity may also use (the service tells which order that principal may see). Access is checked only for
 * a new order: a retry of an existing one is answered whatever the account's access since.
 */
export const OrdersHandlers = HttpApiBuilder.group(Api, "orders", (handlers) =>
  Effect.gen(function* () {
    const orders = yield* Orders
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const before = yield* orders.findCreated(session.master, payload)
          if (Option.isSome(before)) return before.value
          yield* requireAccess(session.master)
          return yield* orders.create(session.master, payload)
        }),
      )
      .handle("sign", ({ path, payload }) =>
        Effect.flatMap(requireSession, (session) => orders.sign(session.master, path.id, payload)),
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return { data: yield* orders.byClientId(session.master, urlParams.client_order_id) }
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return yield* orders.get(session.master, path.id)
        }),
      )
      .handle("preparation", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return yield* orders.preparation(session.master, path.id)
        }),
      )
      .handle("publishQuotes", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (principal) => orders.publishQuotes(principal, path.id, payload)),
      )
      .handle("cancelQuotes", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) => orders.cancelQuotes(principal, path.id)),
      )
  }),
).pipe(Layer.provide(Orders.Default))
