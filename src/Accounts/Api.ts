import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AccessValue } from "../Access/Api.ts"
import { Nonce, SignatureHex } from "../Auth/Api.ts"
import { Address, Timestamp, VenueId } from "../Domain/Primitives.ts"
import {
  AccountInUse,
  ChainUnavailable,
  ChallengeExpired,
  ChallengeUnknown,
  ChallengeUsed,
  Forbidden,
  InvalidRequest,
  NotFound,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
  VenueRefused,
  VenueUnavailable,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/Security.ts"

export const LinkedAccount = Schema.Struct({
  venue: Schema.String,
  address: Schema.String,
  venue_wallet: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Timestamp),
  linked_at: Timestamp,
}).annotations({ identifier: "LinkedAccount" })

export const Account = Schema.Struct({
  master_address: Schema.String,
  created_at: Timestamp,
  accounts: Schema.Array(LinkedAccount),
  quote_identity_id: Schema.String,
  access: AccessValue,
  admin: Schema.Boolean,
}).annotations({ identifier: "Account" })

/** The session's own account: who am I, linked venue accounts, logout. Session only. */
export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/v1/me")
      .addSuccess(Account)
      .addError(Forbidden)
      .annotate(OpenApi.Description, "The signed-in account."),
  )
  .add(
    HttpApiEndpoint.post("logout", "/v1/auth/logout")
      .addSuccess(Schema.Void, { status: 204 })
      .addError(Forbidden)
      .annotate(OpenApi.Description, "Revokes the current session."),
  )
  .add(
    HttpApiEndpoint.post("linkChallenge", "/v1/accounts/challenge")
      .setPayload(RequestBody("LinkChallengeRequest", { venue: VenueId, address: Address }))
      .addSuccess(
        Schema.Struct({
          nonce: Schema.String,
          message: Schema.String,
          expires_at: Timestamp,
          typed_data: Schema.optional(Schema.Unknown),
        }),
      )
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "A one-use link message, valid ten minutes, to be signed by `address` with personal_sign. On a venue that " +
          "needs its own proof (the agent-approval venue) it is that venue's agent approval instead: `typed_data` " +
          "to sign with eth_signTypedData_v4 within seconds, `message` its body.",
      ),
  )
  .add(
    HttpApiEndpoint.post("link", "/v1/accounts")
      .setPayload(
        RequestBody("LinkRequest", {
          venue: VenueId,
          address: Address,
          nonce: Schema.optional(Nonce),
          signature: Schema.optional(SignatureHex),
        }),
      )
      .addSuccess(LinkedAccount, { status: 201 })
      .addError(Forbidden)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(ChallengeUnknown)
      .addError(ChallengeUsed)
      .addError(ChallengeExpired)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .addError(ChainUnavailable)
      .addError(VenueRefused)
      .addError(VenueUnavailable)
      .annotate(
        OpenApi.Description,
        "Links a venue account (one per venue). nonce and signature are omitted only for the master address. On " +
          "the agent-approval venue the signed approval is registered with the venue first and the link expires " +
          "with it (expires_at, 365 days); the master address links there without a signature only while the " +
          "service holds its live approval (from the venue's sign-in).",
      ),
  )
  .add(
    HttpApiEndpoint.del("unlink", "/v1/accounts/:venue")
      .setPath(Schema.Struct({ venue: VenueId }))
      .addSuccess(LinkedAccount)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(AccountInUse)
      .annotate(OpenApi.Description, "Unlinks a venue account unless an order, fill or withdrawal still uses it."),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Account") {}
