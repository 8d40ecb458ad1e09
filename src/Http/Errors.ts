import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, Schema } from "effect"
import { CurrentRequestId } from "./RequestId.ts"

/**
 * The error envelope `{error:{code,message,request_id,retryable}}` and one class per code.
 *
 * Each class carries its own `code` literal: HttpApi encodes failures through a union of every
 * declared error schema, and classes of the same shape would all encode as the first member
 * (wrong statuses). The literal also gives OpenAPI an enum per status.
 */
const envelope = <const C extends string>(code: C) =>
  Schema.Struct({
    code: Schema.Literal(code),
    message: Schema.String,
    request_id: Schema.String,
    retryable: Schema.Boolean,
  })

export class InvalidRequest extends Schema.Class<InvalidRequest>("InvalidRequest")(
  { error: envelope("INVALID_REQUEST") },
  HttpApiSchema.annotations({ status: 400, description: "The request is malformed or fails validation." }),
) {}
export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(
  { error: envelope("UNAUTHORIZED") },
  HttpApiSchema.annotations({ status: 401, description: "Missing, malformed, unknown, expired or revoked bearer." }),
) {}
export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(
  { error: envelope("FORBIDDEN") },
  HttpApiSchema.annotations({ status: 403, description: "The principal may not use this route." }),
) {}
export class NotFound extends Schema.Class<NotFound>("NotFound")(
  { error: envelope("NOT_FOUND") },
  HttpApiSchema.annotations({ status: 404, description: "No such route or resource." }),
) {}
export class MethodNotAllowed extends Schema.Class<MethodNotAllowed>("MethodNotAllowed")(
  { error: envelope("METHOD_NOT_ALLOWED") },
  HttpApiSchema.annotations({ status: 405, description: "The route exists but not for this method." }),
) {}
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(
  { error: envelope("PAYLOAD_TOO_LARGE") },
  HttpApiSchema.annotations({ status: 413, description: "The request body exceeds 64 KiB." }),
) {}
export class RateLimited extends Schema.Class<RateLimited>("RateLimited")(
  { error: envelope("RATE_LIMITED") },
  HttpApiSchema.annotations({ status: 429, description: "Budget exhausted; wait Retry-After seconds." }),
) {}
export class Internal extends Schema.Class<Internal>("Internal")(
  { error: envelope("INTERNAL") },
  HttpApiSchema.annotations({ status: 500, description: "Unexpected failure; safe to retry the same request." }),
) {}

/** Every code the service answers so far with its status; the README's table mirrors it. */
export const ERROR_CODES = {
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL: 500,
} as const
export type ErrorCode = keyof typeof ERROR_CODES

export const envelopeBody = (code: string, message: string, requestId: string, retryable: boolean) => ({
  error: { code, message, request_id: requestId, retryable },
})

type ErrorClass<A> = {
  new (props: { readonly error: { code: never; message: string; request_id: string; retryable: boolean } }): A
  readonly fields: { readonly error: { readonly fields: { readonly code: { readonly literals: readonly [string] } } } }
}

/** Builds the error for the current request: `yield* apiError(NotFound, "no such order")`. */
export const apiError = <A>(Ctor: ErrorClass<A>, message: string, retryable = false): Effect.Effect<never, A> =>
  Effect.flatMap(FiberRef.get(CurrentRequestId), (request_id) =>
    Effect.fail(
      new Ctor({
        error: { code: Ctor.fields.error.fields.code.literals[0] as never, message, request_id, retryable },
      }),
    ),
  )
