import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../Http/Api.ts"
import { Info } from "../Info.ts"

const json = (text: string) => HttpServerResponse.text(text, { contentType: "application/json" })

/** GET /v1/info and GET /v1/venues: the Info service's bodies, encoded once at start (src/Info.ts says why). */
export const InfoHandlers = HttpApiBuilder.group(Api, "info", (handlers) =>
  Effect.gen(function* () {
    const info = yield* Info
    // Each answer is one effect built once (the route is benchmarked): a clock read and a concatenation.
    const answerInfo = Effect.map(info.infoJson, json)
    const answerVenues = Effect.map(info.venuesJson, json)
    return handlers.handle("info", () => answerInfo).handle("venues", () => answerVenues)
  }),
).pipe(Layer.provide(Info.Default))
