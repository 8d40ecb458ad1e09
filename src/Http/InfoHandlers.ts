import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { AppConfig } from "../Config.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { Api } from "./Api.ts"
import { infoFixed } from "./InfoBody.ts"

export const InfoHandlers = HttpApiBuilder.group(Api, "info", (handlers) =>
  Effect.gen(function* () {
    const fixed = infoFixed(yield* AppConfig)
    const venues = {
      data: (yield* AppConfig).deployment.venues.map((v, i) => {
        const { venue: _venue, ...chain } = fixed.chains[i]!
        return { id: v.id, name: v.name, kind: v.kind, ...chain }
      }),
    }
    return handlers
      .handle("info", () => Effect.map(Clock.currentTimeMillis, (now) => ({ ...fixed, server_time: toRfc3339(now) })))
      .handle("venues", () => Effect.succeed(venues))
  }),
)
