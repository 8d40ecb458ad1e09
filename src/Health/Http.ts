import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import type { AppConfig } from "../Config.ts"
import { HealthDegraded, HealthOk } from "../Domain/Health.ts"
import { Api } from "../Http/Api.ts"
import type { ChainStatusBoard } from "./ChainStatusBoard.ts"
import { healthReport } from "./Report.ts"

/** GET /health: 200 when ready, else 503 with the same body (src/Health/Report.ts). */
export const HealthHandlers = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<ChainStatusBoard | AppConfig>()
    return handlers
      .handle("health", () =>
        Effect.gen(function* () {
          const body = yield* Effect.provide(healthReport, context)
          return body.ready
            ? new HealthOk({ status: "ok", ...body })
            : yield* Effect.fail(new HealthDegraded({ status: "degraded", ...body }))
        }),
      )
      .handle("live", () => Effect.succeed({ status: "live" as const }))
  }),
)
