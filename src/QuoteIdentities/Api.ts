import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SignatureHex } from "../Auth/Api.ts"
import { Address, Timestamp } from "../Domain/Primitives.ts"
import { acceptsCredential } from "../Http/ApiDocs.ts"
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
import { Authentication, DeferredAuthentication } from "../Http/SecurityContract.ts"

const Uuid = Schema.UUID

/**
 * The documentation's example maker (anvil's public test accounts #1, the master, and #3, the quote signer; the
 * registration signature verifies for the auth chain 999 and its escrow below).
 */
const SIGNER = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"
const IDENTITY_ID = "a70de95b-cb86-485e-9dba-7baad9ebf9c5"
const NO_FADES = { chances: 0, fades: 0, flagged_at: null, window_started_at: null }

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
}).annotations({
  identifier: "QuoteIdentity",
  description:
    "A key that signs a master's quote sets: the account's `browser` identity (the master key; its lease never " +
    "ends, 9999-12-31) or a maker's `credential` identity (a separate signer, renewed by its credential). " +
    "`generation` and `cancel_epoch` are decimal strings.",
  examples: [
    {
      id: IDENTITY_ID,
      signer: SIGNER,
      kind: "credential",
      generation: "0",
      lease_expires_at: "2025-06-02T09:40:30Z",
      cancel_epoch: "0",
      revoked: false,
      fade: NO_FADES,
    },
    {
      id: IDENTITY_ID,
      signer: SIGNER,
      kind: "credential",
      generation: "1",
      lease_expires_at: "2025-06-02T09:42:30Z",
      cancel_epoch: "0",
      revoked: false,
      fade: NO_FADES,
    },
  ],
})

/** An EIP-712 object, documented as a JSON object (the contract does not check its shape). */
const TypedDataPart = (description: string) =>
  Schema.Unknown.annotations({ jsonSchema: { type: "object", description } })

const TypedData = Schema.Struct({
  domain: TypedDataPart("the EIP-712 domain"),
  types: TypedDataPart("the EIP-712 types"),
  primaryType: Schema.String,
  message: TypedDataPart("the values to sign"),
})

/** The renewal's body. */
export const LeaseRequest = RequestBody("LeaseRequest", {
  ttl_seconds: Schema.Int.pipe(Schema.between(5, 120)),
}).annotations({ examples: [{ ttl_seconds: 30 }] })

/** The registration POST /v1/quote-identities/prepare answers for SIGNER and the example master (0x7099…). */
const REGISTRATION = {
  domain: {
    name: "SettlementService",
    version: "1",
    chainId: 999,
    verifyingContract: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
  },
  types: {
    QuoteIdentityRegistration: [
      { name: "master", type: "address" },
      { name: "signer", type: "address" },
      { name: "purpose", type: "string" },
    ],
  },
  primaryType: "QuoteIdentityRegistration",
  message: {
    master: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    signer: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    purpose: "Register this key as a quote signer. It signs quote sets, never moves funds.",
  },
}
/** SIGNER's eth_signTypedData_v4 of REGISTRATION. */
const REGISTRATION_SIGNATURE =
  "0x6c1b51641e3e413d36b02d766e56992bec924d09140c462965e8a9d54b938bcf6db5be67771337e48a008bd6bdd85737be788c56be51995d6915c6c672d63b561b"

/** Quote identities (a maker's signing key, registered once) and the lease dead-man switch. */
export class QuoteIdentitiesApi extends HttpApiGroup.make("quoteIdentities")
  .add(
    HttpApiEndpoint.post("prepareIdentity", "/v1/quote-identities/prepare")
      .setPayload(
        RequestBody("PrepareIdentityRequest", { signer: Address }).annotations({ examples: [{ signer: SIGNER }] }),
      )
      .addSuccess(Schema.Struct({ typed_data: TypedData }).annotations({ examples: [{ typed_data: REGISTRATION }] }))
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Prepare a quote signer's registration")
      .annotate(
        OpenApi.Description,
        "The registration typed data the maker's signer key signs (eth_signTypedData_v4) to become a quote " +
          "identity of this master: domain `SettlementService` v1 on the auth chain with its escrow as verifying " +
          "contract, naming the master, the signer and what the key may do (sign quote sets, never move funds). " +
          "Creates and reserves nothing; send the signature to POST /v1/quote-identities. Master session only (a " +
          "maker credential gets 403 FORBIDDEN).",
      ),
  )
  .add(
    HttpApiEndpoint.post("createIdentity", "/v1/quote-identities")
      .setPayload(
        RequestBody("CreateIdentityRequest", { signer: Address, signature: SignatureHex }).annotations({
          examples: [{ signer: SIGNER, signature: REGISTRATION_SIGNATURE }],
        }),
      )
      .addSuccess(QuoteIdentity, { status: 201 })
      .addError(Forbidden)
      .addError(StateConflict)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .annotate(OpenApi.Summary, "Register a quote identity")
      .annotate(
        OpenApi.Description,
        "Registers `signer` as a credential quote identity of this master (201), proved by the signer's 65-byte " +
          "signature of the registration from POST /v1/quote-identities/prepare. The signer is immutable and " +
          "belongs to this identity forever. The lease starts expired at generation 0: nothing the identity " +
          "signs is admissible before its first renewal (PUT /v1/quote-identities/{id}/lease, which advances it " +
          "to generation 1). Next: issue its credential (POST /v1/credentials).\n\n" +
          "Not idempotent: a repeat answers 409 STATE_CONFLICT (the signer is taken); a lost answer is recovered " +
          "from the stream's `quote_identity.created` event. Master session only (a maker credential gets 403 " +
          "FORBIDDEN). Refusals: 422 SIGNATURE_MALFORMED, SIGNATURE_MALLEABLE, SIGNATURE_INVALID (not the " +
          "signer's signature of this master's registration); 409 STATE_CONFLICT (the signer is the master key, " +
          "which quotes through its browser identity, or already belongs to an identity, revoked ones included: " +
          "use a new key).",
      ),
  )
  .add(
    HttpApiEndpoint.get("getIdentity", "/v1/quote-identities/:id")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(QuoteIdentity)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Show a quote identity")
      .annotate(
        OpenApi.Description,
        "The identity with its lease (`generation`, `lease_expires_at`), `cancel_epoch`, whether it is revoked " +
          "and settlement v2's fade record. A master session sees its own identities (browser and credential); a " +
          "maker credential of any scope sees only the identity it is bound to. Any other id is 404 NOT_FOUND. " +
          "Answers `x-event-cursor`.",
      )
      .annotate(OpenApi.Override, acceptsCredential()),
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
          "identity that is not flagged is answered unchanged; a revoked one is 409 STATE_CONFLICT; another " +
          "master's or an unknown id is 404 NOT_FOUND.",
      )
      .annotate(OpenApi.Summary, "Resume a quote identity flagged for fading"),
  )
  .middlewareEndpoints(Authentication)
  .add(
    HttpApiEndpoint.put("renewLease", "/v1/quote-identities/:id/lease")
      .setPath(Schema.Struct({ id: Uuid }))
      .setPayload(LeaseRequest)
      .addSuccess(
        Schema.Struct({ identity_id: Schema.String, generation: Schema.String, expires_at: Timestamp }).annotations({
          examples: [{ identity_id: IDENTITY_ID, generation: "1", expires_at: "2025-06-02T09:42:30Z" }],
        }),
      )
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict)
      .addError(ServiceUnavailable)
      // Authenticated, charged and renewed in one statement by the identity's lease entity (an mk_ bearer).
      .middleware(DeferredAuthentication)
      .annotate(OpenApi.Summary, "Renew a quote identity's lease")
      .annotate(
        OpenApi.Description,
        "The dead-man switch: renews identity `id`'s lease for `ttl_seconds` (5 to 120) from now in database " +
          "time and answers the generation and the new expiry. Renewing before expiry keeps the generation; " +
          "after it (and at the first renewal: a new identity's lease starts expired at generation 0) the " +
          "generation advances, and the quote sets of older generations are deactivated in the same statement " +
          "and never become active again: sign new sets for the answered generation. A browser identity's " +
          "lease never ends (answered unchanged, 9999-12-31T00:00:00Z). Renew every few seconds: when " +
          "renewals stop the lease lapses at `expires_at`, the identity's quote sets are deactivated and " +
          "`quote_identity.lease_expired` is journaled (accepted fills are not recalled). A repeat simply " +
          "renews again from now.\n\n" +
          "Who: a `quote` credential bound to this identity (its mk_ bearer is resolved, charged one token of " +
          "its request budget and the lease renewed in one statement), or a master session for its own " +
          "identities. A body or path that fails to decode is a 400 only after the bearer is checked and " +
          "charged.\n\n" +
          "Refusals: 401 UNAUTHORIZED (unknown, rotated or revoked credential); 403 FORBIDDEN (a credential " +
          "without the `quote` scope); 404 NOT_FOUND (not the credential's identity, or not the session's " +
          "master's); 409 STATE_CONFLICT (the identity is revoked); 429 RATE_LIMITED with Retry-After (the " +
          "bearer's budget is spent: nothing renewed); 503 SERVICE_UNAVAILABLE (no answer within 2 s; " +
          "retryable: renew again).",
      )
      .annotate(OpenApi.Override, acceptsCredential("quote")),
  )
  .annotate(OpenApi.Title, "Quote identities") {}
