import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { authenticateHeader, CredentialResolver } from "../Auth/Bearer.ts"
import { AppConfig } from "../Config.ts"
import { TRADE_HISTORY_LIMIT_DEFAULT } from "../Domain/CursorLimits.ts"
import { Forbidden } from "../Domain/Errors.ts"
import { Api } from "../Http/Api.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { Trades } from "../Trades.ts"

export const TradesHandlers = HttpApiBuilder.group(Api, "trades", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const resolver = yield* CredentialResolver
    const trades = yield* Trades
    const admins = new Set(deployment.admins.map((a) => a.toLowerCase()))

    /** scope=mine: the Authorization header must hold a live master session (credentials are refused). */
    const sessionMaster = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const principal = yield* authenticateHeader(request.headers.authorization, admins, resolver)
      if (principal._tag !== "Session") {
        return yield* new Forbidden({ message: "scope=mine needs a master session; a maker credential may not use it" })
      }
      return principal.master
    })

    return handlers
      .handle("recent", ({ urlParams }) =>
        Effect.gen(function* () {
          // The cursor before the snapshot (as every snapshot route): a trade committed between the two reads is
          // then in the replay after the cursor, never lost between them.
          yield* snapshotCursor
          const recent = yield* trades.recent(urlParams.a, urlParams.b)
          return {
            a: recent.a,
            b: recent.b,
            trades: recent.rows.map((r) => ({
              id: r.id,
              from: r.from_venue,
              amount_in: r.amount_in,
              amount_out: r.amount_out,
              at: r.settled_at.toISOString(),
            })),
          }
        }),
      )
      .handle("history", ({ urlParams }) =>
        Effect.gen(function* () {
          const scope = urlParams.scope ?? "all"
          const master = scope === "mine" ? yield* sessionMaster : null
          yield* snapshotCursor
          return yield* trades.history({
            scope,
            master,
            a: urlParams.a,
            b: urlParams.b,
            after: urlParams.after,
            limit: urlParams.limit ?? TRADE_HISTORY_LIMIT_DEFAULT,
          })
        }),
      )
  }),
).pipe(Layer.provide(Trades.Default))
