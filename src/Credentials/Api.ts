import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Timestamp } from "../Domain/Primitives.ts"
import { Forbidden, NotFound, StateConflict } from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/SecurityContract.ts"

const Uuid = Schema.UUID
export const Scope = Schema.Literal("quote", "read")

/** The documentation's example: the credential of the maker's quote identity (see src/QuoteIdentities/Api.ts). */
const CREDENTIAL_ID = "b69ab924-e9c6-4149-885d-31522bfc4d67"
const IDENTITY_ID = "a70de95b-cb86-485e-9dba-7baad9ebf9c5"
const ISSUED = {
  id: CREDENTIAL_ID,
  quote_identity_id: IDENTITY_ID,
  scopes: ["quote"] as const,
  label: "maker-bot",
  created_at: "2025-06-02T09:41:00.000Z",
  rotated_at: null,
  revoked_at: null,
}

export const Credential = Schema.Struct({
  id: Schema.String,
  quote_identity_id: Schema.String,
  scopes: Schema.Array(Scope),
  label: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  rotated_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
}).annotations({
  identifier: "Credential",
  description: "A maker credential without its secret: bound to one credential quote identity, with its scopes.",
  examples: [ISSUED],
})

const IssuedCredential = Schema.Struct({ ...Credential.fields, token: Schema.String }).annotations({
  identifier: "IssuedCredential",
  description: "The mk_ bearer is shown once; only its SHA-256 is stored.",
  examples: [
    { ...ISSUED, token: "mk_X7Kkf0kf4pXPqj3Sqziun9v88ngfAPyG3k2mY5MF8ZU" },
    { ...ISSUED, rotated_at: "2025-06-02T10:15:00.000Z", token: "mk_AhqnzCWZPwWlyhWGC-uMtbKpFIPCaeDKVi7ek9QlZMc" },
  ],
})

/** Maker credentials: an `mk_` bearer bound to one credential quote identity, with scopes. Master sessions only. */
export class CredentialsApi extends HttpApiGroup.make("credentials")
  .add(
    HttpApiEndpoint.post("createCredential", "/v1/credentials")
      .setPayload(
        RequestBody("CreateCredentialRequest", {
          quote_identity_id: Uuid,
          scopes: Schema.NonEmptyArray(Scope).pipe(
            Schema.filter((s) => new Set(s).size === s.length, { message: () => "scopes must be distinct" }),
          ),
          label: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))),
        }).annotations({ examples: [{ quote_identity_id: IDENTITY_ID, scopes: ["quote"], label: "maker-bot" }] }),
      )
      .addSuccess(IssuedCredential, { status: 201 })
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict)
      .annotate(OpenApi.Summary, "Issue a maker credential")
      .annotate(
        OpenApi.Description,
        "Issues the `mk_…` bearer a maker bot uses (201), bound to one of this master's credential quote " +
          "identities (POST /v1/quote-identities), with its scopes: `quote` (renew the identity's lease, " +
          "publish and cancel its quote sets) and `read` (the legacy escrow scan, private stream events). The " +
          "token is shown once, in this answer only (only its SHA-256 is stored): keep it secret, send it as " +
          "`Authorization: Bearer`. A credential never moves capital, links accounts, takes or closes, and " +
          "never manages credentials.\n\n" +
          "One live credential per identity: a repeat answers 409 STATE_CONFLICT (rotate it instead: " +
          "POST /v1/credentials/{id}/rotate). Master session only (a maker credential gets 403 FORBIDDEN). " +
          "Refusals: 400 INVALID_REQUEST (no scope, a scope twice, a label outside 1 to 64 characters); 404 " +
          "NOT_FOUND (not a live credential identity of this master: unknown, another master's, a browser " +
          "identity or revoked); 409 STATE_CONFLICT (the identity already has a live credential).",
      ),
  )
  .add(
    HttpApiEndpoint.get("listCredentials", "/v1/credentials")
      .addSuccess(
        Schema.Struct({ data: Schema.Array(Credential) }).annotations({
          examples: [{ data: [{ ...ISSUED, rotated_at: "2025-06-02T10:15:00.000Z" }] }],
        }),
      )
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "List maker credentials")
      .annotate(
        OpenApi.Description,
        "Every credential this master issued, revoked ones included, oldest first; never a token or its hash. " +
          "Master session only (a maker credential gets 403 FORBIDDEN). Answers `x-event-cursor`.",
      ),
  )
  .add(
    HttpApiEndpoint.post("rotateCredential", "/v1/credentials/:id/rotate")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(IssuedCredential)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Rotate a maker credential's token")
      .annotate(
        OpenApi.Description,
        "A new `mk_…` bearer for the same credential (same id, identity, signer key and scopes), shown once in " +
          "this answer; the old token stops working at once. The identity's current quote sets are deactivated " +
          "and its `cancel_epoch` advances: publish new sets with the new token. The lease and its generation are " +
          "kept. Each call issues another token (a lost answer: rotate again). Master session only (a maker " +
          "credential gets 403 FORBIDDEN). Refusals: 404 NOT_FOUND (not a live credential of this master: " +
          "unknown, another master's or revoked).",
      ),
  )
  .add(
    HttpApiEndpoint.del("revokeCredential", "/v1/credentials/:id")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(
        Schema.Struct({ id: Schema.String, revoked: Schema.Literal(true) }).annotations({
          examples: [{ id: CREDENTIAL_ID, revoked: true }],
        }),
      )
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Revoke a maker credential and its identity")
      .annotate(
        OpenApi.Description,
        "Atomically revokes bearer and identity, expires the lease, advances the generation, clears the quotes. " +
          "Reserved settlements continue. Irreversible: the identity's signer key can never be registered again, " +
          "and a repeat answers 404 NOT_FOUND (not a live credential of this master). Master session only (a " +
          "maker credential gets 403 FORBIDDEN).",
      ),
  )
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Title, "Credentials") {}
