/**
 * Info (spec GET /v1/info, GET /v1/venues): the deployment's own values (limits, settlement timings, chains, access
 * mode) and its venues. Not a trust root for signing. src/Info/Http.ts serves the encoded bodies.
 */
import { Clock, Effect, Schema } from "effect"
import { AppConfig } from "./Config.ts"
import { toRfc3339 } from "./Domain/Primitives.ts"
import { InfoBody, infoFixed, VenuesBody } from "./Info/Body.ts"

/** A server_time no real clock gives (the epoch): marks where each request's time goes in the encoded body. */
const PLACEHOLDER = toRfc3339(0)

export class Info extends Effect.Service<Info>()("Info", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const fixed = infoFixed(config)
    const venues: typeof VenuesBody.Type = {
      data: config.deployment.venues.map((v, i) => {
        const { venue: _venue, ...chain } = fixed.chains[i]!
        return { id: v.id, name: v.name, kind: v.kind, ...chain }
      }),
    }
    // Both bodies are fixed for the process lifetime (server_time aside), so they are encoded through their
    // schemas once, here (a config the schema refuses stops the start), and answered as ready JSON text: the same
    // bytes the framework's per-request encoding wrote, for about a tenth of the route's CPU time (measured).
    const infoText = JSON.stringify(Schema.encodeSync(InfoBody)({ ...fixed, server_time: PLACEHOLDER }))
    // The first match is the key itself: it comes second in the schema's order, and a string value would carry
    // its quotes escaped.
    const at = infoText.indexOf(`"server_time":"${PLACEHOLDER}"`)
    const head = infoText.slice(0, at + `"server_time":"`.length)
    const tail = infoText.slice(at + `"server_time":"${PLACEHOLDER}`.length)
    const venuesText = JSON.stringify(Schema.encodeSync(VenuesBody)(venues))

    // No span per call (unlike other concepts' methods): GET /v1/info is the benchmarked route, and these are a
    // clock read and a string concatenation.
    return {
      /** GET /v1/info's body now. */
      info: Effect.map(Clock.currentTimeMillis, (now): typeof InfoBody.Type => ({
        ...fixed,
        server_time: toRfc3339(now),
      })),
      /** GET /v1/info's body now, as the JSON text the route answers (the schema's key order). */
      infoJson: Effect.map(Clock.currentTimeMillis, (now) => `${head}${toRfc3339(now)}${tail}`),
      /** GET /v1/venues' body. */
      venues: Effect.succeed(venues),
      /** GET /v1/venues' body as the JSON text the route answers. */
      venuesJson: Effect.succeed(venuesText),
    } as const
  }),
}) {
  /** The service for tests: it reads no database (no SqlTest to start); the test gives the AppConfig. */
  static readonly Test = Info.Default
}
