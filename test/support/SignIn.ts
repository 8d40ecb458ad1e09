import { Effect } from "effect"
import type { PrivateKeyAccount } from "viem/accounts"
import { rawRequest } from "./Http.ts"

export const json = { "content-type": "application/json" }

export const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  rawRequest(url, { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(body) })

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The browser's sign-in: ask for a challenge, personal_sign it exactly as given, verify. */
export const signIn = (base: string, account: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const challenge = yield* post(`${base}/v1/auth/challenge`, { address: account.address })
    if (challenge.status !== 200) return yield* Effect.dieMessage(`challenge failed: ${challenge.text}`)
    const { message, nonce } = challenge.json as { message: string; nonce: string }
    const signature = yield* Effect.promise(() => account.signMessage({ message }))
    const verified = yield* post(`${base}/v1/auth/verify`, { nonce, signature })
    if (verified.status !== 200) return yield* Effect.dieMessage(`verify failed: ${verified.text}`)
    return (verified.json as { token: string }).token
  })
