import { Effect } from "effect"
import type { PrivateKeyAccount } from "viem/accounts"
import { signIn as typedSignIn } from "../../src/Client/ApiClient.ts"
import { rawRequest } from "./Http.ts"

export const json = { "content-type": "application/json" }

export const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  rawRequest(url, { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(body) })

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/**
 * The browser's sign-in through the typed client (src/Client/ApiClient.ts signIn): ask for a challenge,
 * personal_sign it exactly as given, verify. A refusal dies with its code and message.
 */
export const signIn = (base: string, account: PrivateKeyAccount) =>
  Effect.map(
    typedSignIn(base, account).pipe(
      Effect.catchAll((e) =>
        Effect.dieMessage(e._tag === "ApiError" ? `sign-in failed: ${e.code} ${e.message}` : `sign-in: ${e.reason}`),
      ),
    ),
    (session) => session.token,
  )
