import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { Api } from "../Http/Api.ts"
import { Info, Venue } from "./Api.ts"
import { infoFixed } from "./Body.ts"

/** A server_time no real clock gives (the epoch): marks where each request's time goes in the encoded body. */
const PLACEHOLDER = toRfc3339(0)

/**
 * Both bodies are fixed for the process lifetime (server_time aside), so they are encoded through their
 * schemas once at start (a config the schema refuses stops the start) and served as ready JSON text: the
 * same bytes the framework's per-request encoding wrote (about a tenth of the route's CPU time, measured).
 */
export const InfoHandlers = HttpApiBuilder.group(Api, "info", (handlers) =>
  Effect.gen(function* () {
    const fixed = infoFixed(yield* AppConfig)
    const venues = {
      data: (yield* AppConfig).deployment.venues.map((v, i) => {
        const { venue: _venue, ...chain } = fixed.chains[i]!
        return { id: v.id, name: v.name, kind: v.kind, ...chain }
      }),
    }
    const infoText = JSON.stringify(Schema.encodeSync(Info)({ ...fixed, server_time: PLACEHOLDER }))
    // The first match is the key itself: it comes second in the schema's order, and a string value would
    // carry its quotes escaped.
    const at = infoText.indexOf(`"server_time":"${PLACEHOLDER}"`)
    const head = infoText.slice(0, at + `"server_time":"`.length)
    const tail = infoText.slice(at + `"server_time":"${PLACEHOLDER}`.length)
    const venuesText = JSON.stringify(Schema.encodeSync(Schema.Struct({ data: Schema.Array(Venue) }))(venues))
    const json = (text: string) => HttpServerResponse.text(text, { contentType: "application/json" })
    return handlers
      .handle("info", () => Effect.map(Clock.currentTimeMillis, (now) => json(`${head}${toRfc3339(now)}${tail}`)))
      .handle("venues", () => Effect.succeed(json(venuesText)))
  }),
)
