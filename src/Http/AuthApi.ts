import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Address, Timestamp } from "../Domain/Primitives.ts"
import {
  ChainUnavailable,
  ChallengeExpired,
  ChallengeNotYetValid,
  ChallengeUnknown,
  ChallengeUsed,
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
} from "./Errors.ts"
import { RequestBody } from "./RequestBody.ts"

export const Nonce = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9]{8,64}$/))
/** 65-byte r||s||v for EOAs; longer for ERC-1271 / ERC-6492 smart wallets (bounded). */
export const SignatureHex = Schema.String.pipe(Schema.pattern(/^0x([0-9a-fA-F]{2}){1,8192}$/))

/** Public sign-in routes (SIWE, EIP-4361). */
export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("challenge", "/v1/auth/challenge")
      .setPayload(RequestBody("AuthChallengeRequest", { address: Address }))
      .addSuccess(Schema.Struct({ message: Schema.String, nonce: Schema.String, expires_at: Timestamp }))
      .addError(RateLimited)
      .annotate(
        OpenApi.Description,
        "A one-use SIWE message for the master address, valid ten minutes, naming the app's origin. " +
          "Sign it with personal_sign exactly as given.",
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
      .annotate(
        OpenApi.Description,
        "Consumes the challenge (one use) and answers a session token, shown once, valid seven days by default.",
      ),
  )
  .annotate(OpenApi.Title, "Sign-in") {}
