import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { type CatalogueError, classOf } from "../Domain/Errors.ts"
import { encodeEnvelope } from "./Errors.ts"

/**
 * The response for a catalogue error, for failures rendered outside HttpApi (unknown routes,
 * oversized bodies, defects, the stream's upgrade check): the status is the code's, the body the
 * one encoder's envelope with the current request id.
 */
export const envelopeResponse = (error: CatalogueError, options: { readonly headers?: Record<string, string> } = {}) =>
  Effect.map(encodeEnvelope(error), (body) =>
    HttpServerResponse.unsafeJson(body, {
      status: classOf(error).status,
      ...(options.headers ? { headers: options.headers } : {}),
    }),
  )
