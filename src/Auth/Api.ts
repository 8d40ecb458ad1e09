import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Address, Timestamp, VenueId } from "../Domain/Primitives.ts"
import {
  ChainUnavailable,
  ChallengeExpired,
  ChallengeNotYetValid,
  ChallengeUnknown,
  ChallengeUsed,
  NotFound,
  RateLimited,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  SiweAddressMismatch,
  SiweChainMismatch,
  SiweDomainMismatch,
  SiweMalformed,
  SiweNonceMismatch,
  SiweUriMismatch,
  StateConflict,
  VenueRefused,
  VenueUnavailable,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"

export const Nonce = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9]{8,64}$/))
/** 65-byte r||s||v for EOAs; longer for ERC-1271 / ERC-6492 smart wallets (bounded). */
export const SignatureHex = Schema.String.pipe(Schema.pattern(/^0x([0-9a-fA-F]{2}){1,8192}$/))

/** Public sign-in routes (SIWE, EIP-4361). */
export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("challenge", "/v1/auth/challenge")
      .setPayload(RequestBody("AuthChallengeRequest", { address: Address, venue: Schema.optional(VenueId) }))
      .addSuccess(
        Schema.Struct({
          message: Schema.String,
          nonce: Schema.String,
          expires_at: Timestamp,
          typed_data: Schema.optional(Schema.Unknown),
        }),
      )
      .addError(RateLimited)
      .addError(NotFound)
      .addError(VenueUnavailable)
      .annotate(
        OpenApi.Description,
        "A one-use SIWE message for the master address, valid ten minutes, naming the app's origin. " +
          "Sign it with personal_sign exactly as given. With `venue` naming the agent-approval venue (Aster): " +
          "`typed_data` is that venue's agent approval naming this service's agent for the account (every " +
          "permission false, 365 days) and `message` its body; sign `typed_data` with eth_signTypedData_v4 " +
          "within seconds (the venue's nonce is fresh only briefly; `expires_at` says until when).",
      ),
  )
  .add(
    HttpApiEndpoint.post("verify", "/v1/auth/verify")
      .setPayload(RequestBody("AuthVerifyRequest", { nonce: Nonce, signature: SignatureHex }))
      .addSuccess(Schema.Struct({ token: Schema.String, expires_at: Timestamp, master_address: Schema.String }))
      .addError(ChallengeUnknown)
      .addError(ChallengeUsed)
      .addError(ChallengeExpired)
      .addError(ChallengeNotYetValid)
      .addError(SiweMalformed)
      .addError(SiweDomainMismatch)
      .addError(SiweUriMismatch)
      .addError(SiweChainMismatch)
      .addError(SiweAddressMismatch)
      .addError(SiweNonceMismatch)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .addError(ChainUnavailable)
      .addError(StateConflict)
      .addError(VenueRefused)
      .addError(VenueUnavailable)
      .annotate(
        OpenApi.Description,
        "Consumes the challenge (one use) and answers a session token, shown once, valid seven days by default. " +
          "For an agent-approval challenge it first registers the signed approval with the venue, then links the " +
          "venue account (expires_at 365 days ahead) to the new session's master.",
      ),
  )
  .annotate(OpenApi.Title, "Sign-in") {}
