import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Timestamp } from "../Domain/Primitives.ts"
import { Forbidden, NotFound, StateConflict } from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/Security.ts"

const Uuid = Schema.UUID
export const Scope = Schema.Literal("quote", "read")

export const Credential = Schema.Struct({
  id: Schema.String,
  quote_identity_id: Schema.String,
  scopes: Schema.Array(Scope),
  label: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  rotated_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
}).annotations({ identifier: "Credential" })

const IssuedCredential = Schema.Struct({ ...Credential.fields, token: Schema.String }).annotations({
  identifier: "IssuedCredential",
  description: "The mk_ bearer is shown once; only its SHA-256 is stored.",
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
        }),
      )
      .addSuccess(IssuedCredential, { status: 201 })
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict),
  )
  .add(
    HttpApiEndpoint.get("listCredentials", "/v1/credentials")
      .addSuccess(Schema.Struct({ data: Schema.Array(Credential) }))
      .addError(Forbidden),
  )
  .add(
    HttpApiEndpoint.post("rotateCredential", "/v1/credentials/:id/rotate")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(IssuedCredential)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Description, "A new bearer for the same identity and key; current quotes are deactivated."),
  )
  .add(
    HttpApiEndpoint.del("revokeCredential", "/v1/credentials/:id")
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(Schema.Struct({ id: Schema.String, revoked: Schema.Literal(true) }))
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "Atomically revokes bearer and identity, expires the lease, advances the generation, clears the quotes. " +
          "Reserved settlements continue. Irreversible.",
      ),
  )
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Title, "Credentials") {}
