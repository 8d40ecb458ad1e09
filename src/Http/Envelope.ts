import { HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef } from "effect"
import { envelopeBody, retryableFor } from "./Errors.ts"
import { CurrentRequestId } from "./RequestId.ts"

/** An error envelope response for the current request, for failures rendered outside HttpApi; `retryable` defaults to the code's. */
export const envelopeResponse = (
  status: number,
  code: string,
  message: string,
  options: { readonly retryable?: boolean; readonly headers?: Record<string, string> } = {},
) =>
  Effect.map(FiberRef.get(CurrentRequestId), (id) =>
    HttpServerResponse.unsafeJson(envelopeBody(code, message, id, options.retryable ?? retryableFor(code)), {
      status,
      ...(options.headers ? { headers: options.headers } : {}),
    }),
  )
