import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"
import * as Catalogue from "../Domain/Errors.ts"
import { CurrentRequestId } from "../Domain/RequestId.ts"

/**
 * The one encoder: the wire schema of each error of the catalogue (`src/Domain/Errors.ts`), the
 * spec's envelope `{error:{code,message,request_id,retryable}}`. HttpApi groups declare these
 * (`.addError(NotFound)`); handlers fail with the catalogue's classes (`yield* new NotFound({ message })`).
 *
 * Each wire schema is a transformation from the envelope to the class: HttpApi encodes failures
 * with `Schema.encodeUnknown` of the union of every declared error inside the request's fiber, so
 * the encode step reads the request id from the `CurrentRequestId` FiberRef there. The class on
 * the type side tells the members apart (an `instanceof` check); the `code` literal gives OpenAPI
 * an enum per status, and the identifier (`NotFoundError`, …) names the component.
 */
const wire = <C extends Catalogue.CatalogueClass>(Class: C) => {
  const code: C["code"] = Class.code
  const Envelope = Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      request_id: Schema.String,
      retryable: Class.retryable
        ? Schema.Boolean.annotations({ description: "true for this code: retry the same request" })
        : Schema.Boolean,
    }),
  })
  const Type = Schema.typeSchema(Class as unknown as Schema.Schema<InstanceType<C>, unknown>)
  return Schema.transformOrFail(Envelope, Type, {
    strict: false,
    decode: (envelope) =>
      ParseResult.succeed(
        new (Class as unknown as new (props: { message: string; retryable?: boolean }) => InstanceType<C>)({
          message: envelope.error.message,
          retryable: envelope.error.retryable,
        }),
      ),
    encode: (error) =>
      Effect.map(FiberRef.get(CurrentRequestId), (request_id) => ({
        error: { code, message: error.message, request_id, retryable: Catalogue.retryableOf(error) },
      })),
  }).annotations(
    HttpApiSchema.annotations({
      status: Class.status,
      description: Class.description,
      identifier: `${Class._tag}Error`,
    }),
  )
}

export type WireSchema = ReturnType<typeof wire<Catalogue.CatalogueClass>>

const wires = new Map<Catalogue.CatalogueClass, Schema.Schema.AnyNoContext>()
const define = <C extends Catalogue.CatalogueClass>(Class: C) => {
  const schema = wire(Class)
  wires.set(Class, schema)
  return schema
}

export const InvalidRequest = define(Catalogue.InvalidRequest)
export const Unauthorized = define(Catalogue.Unauthorized)
export const Forbidden = define(Catalogue.Forbidden)
export const AccessRequired = define(Catalogue.AccessRequired)
export const NotFound = define(Catalogue.NotFound)
export const MethodNotAllowed = define(Catalogue.MethodNotAllowed)
export const StateConflict = define(Catalogue.StateConflict)
export const AccountInUse = define(Catalogue.AccountInUse)
export const LeaseExpired = define(Catalogue.LeaseExpired)
export const QuoteStale = define(Catalogue.QuoteStale)
export const ChallengeUsed = define(Catalogue.ChallengeUsed)
export const WithdrawalPending = define(Catalogue.WithdrawalPending)
export const ClosePending = define(Catalogue.ClosePending)
export const CloseLimit = define(Catalogue.CloseLimit)
export const OrderManaged = define(Catalogue.OrderManaged)
export const PayloadTooLarge = define(Catalogue.PayloadTooLarge)
export const UpgradeRequired = define(Catalogue.UpgradeRequired)
export const ChallengeUnknown = define(Catalogue.ChallengeUnknown)
export const ChallengeExpired = define(Catalogue.ChallengeExpired)
export const ChallengeNotYetValid = define(Catalogue.ChallengeNotYetValid)
export const SiweMalformed = define(Catalogue.SiweMalformed)
export const SiweDomainMismatch = define(Catalogue.SiweDomainMismatch)
export const SiweUriMismatch = define(Catalogue.SiweUriMismatch)
export const SiweChainMismatch = define(Catalogue.SiweChainMismatch)
export const SiweAddressMismatch = define(Catalogue.SiweAddressMismatch)
export const SiweNonceMismatch = define(Catalogue.SiweNonceMismatch)
export const SignatureMalformed = define(Catalogue.SignatureMalformed)
export const SignatureMalleable = define(Catalogue.SignatureMalleable)
export const SignatureInvalid = define(Catalogue.SignatureInvalid)
export const BelowMinimum = define(Catalogue.BelowMinimum)
export const InsufficientBalance = define(Catalogue.InsufficientBalance)
export const NoLiquidity = define(Catalogue.NoLiquidity)
export const PayerNotLinked = define(Catalogue.PayerNotLinked)
export const VenueRefused = define(Catalogue.VenueRefused)
export const RateLimited = define(Catalogue.RateLimited)
export const Internal = define(Catalogue.Internal)
export const ChainUnavailable = define(Catalogue.ChainUnavailable)
export const VenueUnavailable = define(Catalogue.VenueUnavailable)
export const ServiceUnavailable = define(Catalogue.ServiceUnavailable)

/** Every code's wire schema, in the catalogue's order (the README's error table and the OpenAPI document mirror it). */
export const ALL_ERRORS: ReadonlyArray<Schema.Schema.AnyNoContext> = Catalogue.CATALOGUE.map(
  (Class) => wires.get(Class) as Schema.Schema.AnyNoContext,
)

/** The wire schema of a catalogue error. */
export const wireSchemaOf = (error: Catalogue.CatalogueError): Schema.Schema.AnyNoContext =>
  wires.get(Catalogue.classOf(error)) as Schema.Schema.AnyNoContext

/** The envelope of a catalogue error for the current request (the encoder above, for routes outside HttpApi). */
export const encodeEnvelope = (error: Catalogue.CatalogueError): Effect.Effect<unknown> =>
  Effect.orDie(Schema.encode(wireSchemaOf(error))(error))
