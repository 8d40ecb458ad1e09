import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SignatureHex } from "../Auth/Api.ts"
import { Address, Timestamp } from "../Domain/Primitives.ts"
import {
  Forbidden,
  NotFound,
  ServiceUnavailable,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication, DeferredAuthentication } from "../Http/Security.ts"

const Uuid = Schema.UUID

export const QuoteIdentity = Schema.Struct({
  id: Schema.String,
  signer: Schema.String,
  kind: Schema.Literal("browser", "credential"),
  generation: Schema.String,
  lease_expires_at: Timestamp,
  cancel_epoch: Schema.String,
  revoked: Schema.Boolean,
  fade: Schema.Struct({
    chances: Schema.Int,
    fades: Schema.Int,
    flagged_at: Schema.NullOr(Timestamp),
    window_started_at: Schema.NullOr(Timestamp),
  }).annotations({
    description:
      "Settlement v2's fade record of the current window (since window_started_at; null = since the identity " +
      "began): chances (payments final on its live lock with time to reveal) and fades (such payments never " +
      "claimed). flagged_at set: the identity is not routed to until its owner resumes it.",
  }),
}).annotations({ identifier: "QuoteIdentity" })

const TypedData = Schema.Struct({
  domain: Schema.Unknown,
  types: Schema.Unknown,
  primaryType: Schema.String,
  message: Schema.Unknown,
})

/** The renewal's body. */
export const LeaseRequest = RequestBody("LeaseRequest", { ttl_seconds: Schema.Int.pipe(Schema.between(5, 120)) })

/** Quote identities (a maker's signing key, registered once) and the lease dead-man switch. */
export class QuoteIdentitiesApi extends HttpApiGroup.make("quoteIdentities")
  .add(
    HttpApiEndpoint.post("prepareIdentity", "/v1/quote-identities/prepare")
      .setPayload(RequestBody("PrepareIdentityRequest", { signer: Address }))
      .addSuccess(Schema.Struct({ typed_data: TypedData }))
      .addError(Forbidden)
      .annotate(OpenApi.Description, "The registration typed data the signer key signs (eth_signTypedData_v4)."),
  )
  .add(
    HttpApiEndpoint.post("createIdentity", "/v1/quote-identities")
      .setPayload(RequestBody("CreateIdentityRequest", { signer: Address, signature: SignatureHex }))
      .addSuccess(QuoteIdentity, { status: 201 })
      .addError(Forbidden)
      .addError(StateConflict)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .annotate(
        OpenApi.Description,
        "A credential quote identity with an immutable signer (proved by its signature). Its lease starts expired.",
      ),
  )
  .add(
    HttpApiEndpoint.get("getIdentity", "/v1/quote-identities/:id")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(QuoteIdentity)
      .addError(Forbidden)
      .addError(NotFound),
  )
  .add(
    HttpApiEndpoint.post("resumeIdentity", "/v1/quote-identities/:id/resume")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(QuoteIdentity)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict)
      .annotate(
        OpenApi.Description,
        "Settlement v2: the owner's action on a fade flag (master session only; a credential gets 403). Clears " +
          "fade.flagged_at, so the router quotes the identity again, and starts a new counting window: only fills " +
          "whose chance comes after it count toward the next flag. Journals quote_identity.fade_resumed. An " +
          "identity that is not flagged is answered unchanged; a revoked one is 409 STATE_CONFLICT.",
      ),
  )
  .middlewareEndpoints(Authentication)
  .add(
    HttpApiEndpoint.put("renewLease", "/v1/quote-identities/:id/lease")
      .setPath(Schema.Struct({ id: Uuid }))
      .setPayload(LeaseRequest)
      .addSuccess(Schema.Struct({ identity_id: Schema.String, generation: Schema.String, expires_at: Timestamp }))
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict)
      .addError(ServiceUnavailable)
      // Authenticated, charged and renewed in one statement by the identity's lease entity (an mk_ bearer).
      .middleware(DeferredAuthentication)
      .annotate(
        OpenApi.Description,
        "Renews the lease (database time). Before expiry the generation is kept; after it, it advances.",
      ),
  )
  .annotate(OpenApi.Title, "Quote identities") {}
