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

/** The documentation's sign-in example (anvil's public test account #1; a signature that verifies). */
const MASTER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
const SIWE_NONCE = "4f9d2c7e1a6b3085d2e7c41f9a0b6e53"
const SIWE_MESSAGE =
  "app.example.com wants you to sign in with your Ethereum account:\n0x70997970C51812dc3A010C7d01b50e0d17dc79C8\n\n" +
  "Sign in to the settlement service.\n\nURI: https://app.example.com\nVersion: 1\nChain ID: 999\n" +
  "Nonce: 4f9d2c7e1a6b3085d2e7c41f9a0b6e53\nIssued At: 2025-06-02T09:30:00.000Z\n" +
  "Expiration Time: 2025-06-02T09:40:00.000Z"
const SIWE_SIGNATURE =
  "0x4951e5dd19eb13ac8d9a35e0abb6693e2debc0fdcfe439c31ef6e7cb0e125f2b7e507c4d60e88e08fae67a1f5537c6e4a9efd5f995452178dbcbed16c9b471e21b"

/** Public sign-in routes (SIWE, EIP-4361). */
export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("challenge", "/v1/auth/challenge")
      .setPayload(
        RequestBody("AuthChallengeRequest", { address: Address, venue: Schema.optional(VenueId) }).annotations({
          examples: [{ address: MASTER }],
        }),
      )
      .addSuccess(
        Schema.Struct({
          message: Schema.String,
          nonce: Schema.String,
          expires_at: Timestamp,
          typed_data: Schema.optional(Schema.Unknown),
        }).annotations({
          examples: [{ message: SIWE_MESSAGE, nonce: SIWE_NONCE, expires_at: "2025-06-02T09:40:00.000Z" }],
        }),
      )
      .addError(RateLimited)
      .addError(NotFound)
      .addError(VenueUnavailable)
      .annotate(OpenApi.Summary, "Ask for a sign-in challenge")
      .annotate(
        OpenApi.Description,
        "Public (no bearer). A one-use SIWE (EIP-4361) message for the master address, valid ten minutes, naming " +
          "the app's origin as domain and URI and the auth chain's id. Check it, then sign it with personal_sign " +
          "exactly as given and send it to POST /v1/auth/verify with its `nonce`. Each call issues a new nonce; " +
          "nothing is reserved by asking.\n\n" +
          "With `venue` naming the agent-approval venue (Aster, when the service has its API access): `typed_data` " +
          "is that venue's agent approval naming this service's agent for the account (every permission false, " +
          "365 days) and `message` its body; sign `typed_data` with eth_signTypedData_v4 within seconds (the " +
          "venue's nonce is fresh only briefly; `expires_at` says until when). Any other configured venue signs in " +
          "with SIWE as without `venue`.\n\n" +
          "Refusals: 404 NOT_FOUND (unknown venue); 503 VENUE_UNAVAILABLE (an Aster venue the service has no API " +
          "access to); 429 RATE_LIMITED with Retry-After: budgets per client (checked first), per address (burst " +
          "6, refill 6 a minute) and global (burst 120, refill 60 a second).",
      ),
  )
  .add(
    HttpApiEndpoint.post("verify", "/v1/auth/verify")
      .setPayload(
        RequestBody("AuthVerifyRequest", { nonce: Nonce, signature: SignatureHex }).annotations({
          examples: [{ nonce: SIWE_NONCE, signature: SIWE_SIGNATURE }],
        }),
      )
      .addSuccess(
        Schema.Struct({ token: Schema.String, expires_at: Timestamp, master_address: Schema.String }).annotations({
          examples: [
            {
              token: "st_of_UBmmta0vx9yt1W2_T0DPLMJ1cWPRRs5vTfblZk4c",
              expires_at: "2025-06-09T09:30:20.000Z",
              master_address: MASTER,
            },
          ],
        }),
      )
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
      .annotate(OpenApi.Summary, "Sign in with a signed challenge")
      .annotate(
        OpenApi.Description,
        "Public (no bearer). Consumes the challenge and answers a master session token (`st_…`), shown once " +
          "(only its SHA-256 is stored), valid seven days by default (`auth.session_days`); send it as " +
          "`Authorization: Bearer`. The first sign-in creates the account (access `granted` on an open " +
          "deployment, else `required`, unless an admin set it beforehand) and its browser quote identity. EOAs, " +
          "ERC-1271 and ERC-6492 wallets (the latter two checked through the auth chain).\n\n" +
          "The challenge is one use: spent by this call whether or not the signature then verifies (a malformed or " +
          "high-s signature is refused before it is spent); a repeat answers 409 CHALLENGE_USED, so ask for a new " +
          "challenge rather than retrying.\n\n" +
          "Refusals: 422 CHALLENGE_UNKNOWN, CHALLENGE_EXPIRED, CHALLENGE_NOT_YET_VALID, the SIWE_* mismatches, " +
          "SIGNATURE_MALFORMED, SIGNATURE_MALLEABLE, SIGNATURE_INVALID; 409 CHALLENGE_USED; 503 CHAIN_UNAVAILABLE " +
          "(the auth chain failed a smart-wallet check; retryable).\n\n" +
          "For an agent-approval challenge (POST /v1/auth/challenge with `venue`) the signature is the venue " +
          "approval's (an EOA's 65 bytes): it is first registered with the venue, then the session opens and the " +
          "venue account is linked to the master (`expires_at` 365 days ahead), in one transaction. Its own " +
          "refusals: 422 VENUE_REFUSED (the venue's message quoted), SIGNATURE_INVALID, CHALLENGE_EXPIRED (older " +
          "than the venue's nonce window); 409 STATE_CONFLICT (the master has " +
          "another account linked on the venue, or the address is linked to another master there); 503 " +
          "VENUE_UNAVAILABLE (the venue did not confirm: ask again and sign a new approval).",
      ),
  )
  .annotate(OpenApi.Title, "Sign-in") {}
