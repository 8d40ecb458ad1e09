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
import { Authentication } from "../Http/SecurityContract.ts"

/** The documentation's example account (anvil's public test accounts #1, the master, and #2, a venue account). */
const MASTER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
const VENUE_ACCOUNT = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
const LINK_NONCE = "b83e0f5a9c2d4716e05f8a3b9c1d7e24"
const LINK_MESSAGE =
  "app.example.com asks you to link this address to a settlement account.\n\nVenue: hyperliquid\n" +
  "Address: 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC\nMaster: 0x70997970C51812dc3A010C7d01b50e0d17dc79C8\n" +
  "Nonce: b83e0f5a9c2d4716e05f8a3b9c1d7e24\nIssued At: 2025-06-02T09:32:00.000Z\n" +
  "Expiration Time: 2025-06-02T09:42:00.000Z"
/** VENUE_ACCOUNT's personal_sign of LINK_MESSAGE. */
const LINK_SIGNATURE =
  "0xd9a1d632be0e4ad1d0a4b5fa939380a61583e72f465bdba8063f24fe3cfe50db55b15eb15a4af5afef6713d492a26de38854f51b0e5408354f60d8e73767128e1c"

export const LinkedAccount = Schema.Struct({
  venue: Schema.String,
  address: Schema.String,
  venue_wallet: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Timestamp),
  linked_at: Timestamp,
}).annotations({
  identifier: "LinkedAccount",
  description:
    "A venue account linked to the master (one per venue). `expires_at` is set only on the agent-approval venue " +
    "(the approval's expiry); null: the link does not expire.",
  examples: [
    {
      venue: "hyperliquid",
      address: VENUE_ACCOUNT,
      venue_wallet: null,
      expires_at: null,
      linked_at: "2025-06-02T09:32:30.000Z",
    },
  ],
})

export const Account = Schema.Struct({
  master_address: Schema.String,
  created_at: Timestamp,
  accounts: Schema.Array(LinkedAccount),
  quote_identity_id: Schema.String,
  access: AccessValue,
  admin: Schema.Boolean,
}).annotations({
  identifier: "Account",
  examples: [
    {
      master_address: MASTER,
      created_at: "2025-06-02T09:30:20.000Z",
      accounts: [
        {
          venue: "hyperliquid",
          address: VENUE_ACCOUNT,
          venue_wallet: null,
          expires_at: null,
          linked_at: "2025-06-02T09:32:30.000Z",
        },
      ],
      quote_identity_id: "a5a7e1eb-1bd5-43d5-bdbf-21c04d702d26",
      access: "granted",
      admin: false,
    },
  ],
})

/** The session's own account: who am I, linked venue accounts, logout. Session only. */
export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/v1/me")
      .addSuccess(Account)
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Show the signed-in account")
      .annotate(
        OpenApi.Description,
        "The session's account: its master address, when it was created, its linked venue accounts, its browser " +
          "quote identity (the master key's own, for quoting from the app), its beta `access` (`granted` is " +
          "needed for new commitments, else ACCESS_REQUIRED) and whether the session is an admin's. Master " +
          "session only: a maker credential gets 403 FORBIDDEN. Answers `x-event-cursor`: subscribe to " +
          "GET /v1/stream after it to follow every later change.",
      ),
  )
  .add(
    HttpApiEndpoint.post("logout", "/v1/auth/logout")
      .addSuccess(Schema.Void, { status: 204 })
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Sign out (revoke this session)")
      .annotate(
        OpenApi.Description,
        "Revokes the session whose token authenticates this request; 204 with no body. The token then answers " +
          "401 UNAUTHORIZED everywhere (so a repeat of this call is a 401); other sessions of the same master " +
          "stay valid. Master session only: a maker credential gets 403 FORBIDDEN (revoke it with " +
          "DELETE /v1/credentials/{id}).",
      ),
  )
  .add(
    HttpApiEndpoint.post("linkChallenge", "/v1/accounts/challenge")
      .setPayload(
        RequestBody("LinkChallengeRequest", { venue: VenueId, address: Address }).annotations({
          examples: [{ venue: "hyperliquid", address: VENUE_ACCOUNT }],
        }),
      )
      .addSuccess(
        Schema.Struct({
          nonce: Schema.String,
          message: Schema.String,
          expires_at: Timestamp,
          typed_data: Schema.optional(Schema.Unknown),
        }).annotations({
          examples: [{ nonce: LINK_NONCE, message: LINK_MESSAGE, expires_at: "2025-06-02T09:42:00.000Z" }],
        }),
      )
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Ask for a venue account link challenge")
      .annotate(
        OpenApi.Description,
        "A one-use link message for `address` on `venue`, issued to this master only, valid ten minutes: it names " +
          "the app, the venue, the address and the master. Sign it with `address` (personal_sign, exactly as " +
          "given) and send it to POST /v1/accounts with its `nonce`. Each call issues a new nonce. On a venue " +
          "that needs its own proof (the agent-approval venue) it is that venue's agent approval instead: " +
          "`typed_data` to sign with eth_signTypedData_v4 within seconds (`expires_at`), `message` its body. " +
          "Your master address needs no challenge (see POST /v1/accounts).\n\n" +
          "Master session only (a maker credential gets 403 FORBIDDEN). Refusals: 404 NOT_FOUND (the venue is " +
          "not configured: see GET /v1/venues).",
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
        }).annotations({
          examples: [
            { venue: "hyperliquid", address: VENUE_ACCOUNT, nonce: LINK_NONCE, signature: LINK_SIGNATURE },
            { venue: "hyperliquid", address: MASTER },
          ],
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
      .annotate(OpenApi.Summary, "Link a venue account")
      .annotate(
        OpenApi.Description,
        "Links `address` as the master's account on `venue` (one per venue; an address is linked to one master " +
          "per venue) and answers it (201). With the `nonce` of POST /v1/accounts/challenge and `address`'s " +
          "signature of its message (EOAs locally; ERC-1271 and ERC-6492 wallets through the venue's chain). " +
          "`nonce` and `signature` are omitted together, only to link the master address itself. The nonce is " +
          "spent whether or not the signature verifies: after a refusal, ask for a new challenge.\n\n" +
          "On the agent-approval venue the signed approval is registered with the venue first and the link " +
          "expires with it (`expires_at`, 365 days); the master address links there without a signature only " +
          "while the service holds its live approval (from the venue's sign-in), and signing a new approval for " +
          "the same address renews the link's expiry.\n\n" +
          "Master session only (a maker credential gets 403 FORBIDDEN). Refusals: 400 INVALID_REQUEST (`nonce` " +
          "or `signature` missing for an address other than the master, only one of them given, the nonce " +
          "issued for another venue or address, or the agent-approval venue without a live approval for the " +
          "master); 404 NOT_FOUND (unknown venue); 409 STATE_CONFLICT (an account is already linked on this " +
          "venue, even the same address: unlink it first; or the address is linked to another master there); " +
          "422 CHALLENGE_UNKNOWN (not issued to this master), CHALLENGE_EXPIRED, SIGNATURE_MALFORMED, " +
          "SIGNATURE_MALLEABLE, SIGNATURE_INVALID, VENUE_REFUSED; 409 CHALLENGE_USED; 503 CHAIN_UNAVAILABLE " +
          "(a smart-wallet check failed; retryable), VENUE_UNAVAILABLE (the venue did not confirm an approval, " +
          "or the service lost its API access).",
      ),
  )
  .add(
    HttpApiEndpoint.del("unlink", "/v1/accounts/:venue")
      .setPath(Schema.Struct({ venue: VenueId }))
      .addSuccess(LinkedAccount)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(AccountInUse)
      .annotate(OpenApi.Summary, "Unlink a venue account")
      .annotate(
        OpenApi.Description,
        "Removes the master's linked account on `venue` and answers the link as it was (journaled as " +
          "account.unlinked). Refused with 409 ACCOUNT_IN_USE while an order of it that is not `closed`, a " +
          "nonfinal fill or a queued, submitting or unknown withdrawal uses it. A `preparing` or `failed` order stops " +
          "using it an hour after its fund deadline when its escrow holds nothing for it. 404 NOT_FOUND when nothing " +
          "is linked on `venue` (so " +
          "a repeat is a 404). Master session only (a maker credential gets 403 FORBIDDEN).",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Account") {}
