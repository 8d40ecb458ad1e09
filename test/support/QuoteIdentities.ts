import { Effect } from "effect"
import type { PrivateKeyAccount } from "viem/accounts"
import { type ApiFailure, makeApiClient, request } from "../../src/Client/ApiClient.ts"
import { rawRequest } from "./Http.ts"
import { bearer } from "./SignIn.ts"

/** A typed-client call for a test's set-up: a refusal dies with its code and message. */
const setUp = <A>(what: string, call: Effect.Effect<A, ApiFailure>) =>
  call.pipe(
    Effect.catchAll((e) =>
      Effect.dieMessage(e._tag === "ApiError" ? `${what}: ${e.code} ${e.message}` : `${what}: ${e.reason}`),
    ),
  )

/** Registers `signer` as a credential quote identity of the session's master, as a maker bot would. */
export const registerIdentity = (base: string, token: string, signer: PrivateKeyAccount) =>
  setUp(
    "identity",
    Effect.gen(function* () {
      const client = yield* makeApiClient(base, { bearer: token })
      const prepared = yield* request(client.quoteIdentities.prepareIdentity({ payload: { signer: signer.address } }))
      // biome-ignore lint/suspicious/noExplicitAny: typed data travels as JSON
      const signature = yield* Effect.promise(() => signer.signTypedData(prepared.typed_data as any))
      return yield* request(client.quoteIdentities.createIdentity({ payload: { signer: signer.address, signature } }))
    }),
  )

export const issueCredential = (
  base: string,
  token: string,
  identityId: string,
  scopes: readonly ["quote" | "read", ...Array<"quote" | "read">],
) =>
  setUp(
    "credential",
    Effect.flatMap(makeApiClient(base, { bearer: token }), (client) =>
      request(client.credentials.createCredential({ payload: { quote_identity_id: identityId, scopes } })),
    ),
  )

export const renew = (base: string, bearerToken: string, identityId: string, ttl: number) =>
  rawRequest(`${base}/v1/quote-identities/${identityId}/lease`, {
    method: "PUT",
    headers: { ...bearer(bearerToken), "content-type": "application/json" },
    body: JSON.stringify({ ttl_seconds: ttl }),
  })
