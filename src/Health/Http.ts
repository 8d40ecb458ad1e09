import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Health } from "../Health.ts"
import { Api } from "../Http/Api.ts"

/** GET /health: 200 when ready, else 503 with the same body (src/Health.ts); GET /health/live: liveness. */
export const HealthHandlers = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function* () {
    const health = yield* Health
    return handlers.handle("health", () => health.check).handle("live", () => health.live)
  }),
).pipe(Layer.provide(Health.Default))
