import { Effect } from "effect"
import type { PrivateKeyAccount } from "viem/accounts"
import { rawRequest } from "./Http.ts"
import { bearer, post } from "./SignIn.ts"

/** Registers `signer` as a credential quote identity of the session's master, as a maker bot would. */
export const registerIdentity = (base: string, token: string, signer: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const prepared = yield* post(`${base}/v1/quote-identities/prepare`, { signer: signer.address }, bearer(token))
    // biome-ignore lint/suspicious/noExplicitAny: typed data travels as JSON
    const typed = (prepared.json as { typed_data: any }).typed_data
    const signature = yield* Effect.promise(() => signer.signTypedData(typed))
    const created = yield* post(`${base}/v1/quote-identities`, { signer: signer.address, signature }, bearer(token))
    if (created.status !== 201) return yield* Effect.dieMessage(`identity: ${created.text}`)
    return created.json as { id: string; generation: string; lease_expires_at: string }
  })

export const issueCredential = (base: string, token: string, identityId: string, scopes: Array<string>) =>
  Effect.gen(function* () {
    const res = yield* post(`${base}/v1/credentials`, { quote_identity_id: identityId, scopes }, bearer(token))
    if (res.status !== 201) return yield* Effect.dieMessage(`credential: ${res.text}`)
    return res.json as { id: string; token: string }
  })

export const renew = (base: string, bearerToken: string, identityId: string, ttl: number) =>
  rawRequest(`${base}/v1/quote-identities/${identityId}/lease`, {
    method: "PUT",
    headers: { ...bearer(bearerToken), "content-type": "application/json" },
    body: JSON.stringify({ ttl_seconds: ttl }),
  })
