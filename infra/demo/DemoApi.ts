// The demo's HTTP client: JSON calls to the service as a browser app or a bot makes them, the SIWE sign-in, and
// linking a venue account (the generic link message, or the venue's agent approval where it asks for one).
import type { Hex } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"

export interface Reply {
  readonly status: number
  // biome-ignore lint/suspicious/noExplicitAny: JSON as the API answers it
  readonly json: any
}

export class DemoStepFailed extends Error {}

export const api = (base: string) => {
  const call = async (method: string, path: string, body?: unknown, token?: string): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    })
    const text = await res.text()
    let json: unknown = {}
    try {
      json = text === "" ? {} : JSON.parse(text)
    } catch {
      json = { text }
    }
    return { status: res.status, json }
  }
  /** A call that must answer one of `ok`; otherwise the step fails with the API's error code and message. */
  const expect = async (what: string, ok: ReadonlyArray<number>, reply: Promise<Reply>) => {
    const r = await reply
    if (!ok.includes(r.status)) {
      const e = (r.json?.error ?? {}) as { code?: string; message?: string }
      throw new DemoStepFailed(`${what}: HTTP ${r.status} ${e.code ?? ""} ${e.message ?? ""}`.trim())
    }
    return r.json
  }
  return { call, expect }
}
export type Api = ReturnType<typeof api>

/** Sign-in with Ethereum: the challenge's message personal_signed exactly as given. Returns the session token. */
export const signIn = async (a: Api, account: PrivateKeyAccount): Promise<string> => {
  const challenge = await a.expect(
    "sign-in challenge",
    [200],
    a.call("POST", "/v1/auth/challenge", { address: account.address }),
  )
  const signature = await account.signMessage({ message: challenge.message as string })
  const verified = await a.expect(
    "sign-in verify",
    [200],
    a.call("POST", "/v1/auth/verify", { nonce: challenge.nonce, signature }),
  )
  return verified.token as string
}

/**
 * Links `account` on `venue` through its challenge: a personal_sign message, or, on a venue that approves an
 * agent, the approval's typed data. An account already linked (409) is fine: the demo may run again.
 */
export const linkAccount = async (a: Api, token: string, account: PrivateKeyAccount, venue: string) => {
  const linked = await a.call("GET", "/v1/accounts", undefined, token)
  const accounts = (linked.json?.linked ?? linked.json?.accounts ?? linked.json?.data ?? []) as Array<{
    venue: string
    address: string
  }>
  if (accounts.some((x) => x.venue === venue && x.address.toLowerCase() === account.address.toLowerCase())) {
    return "already linked"
  }
  const challenge = await a.expect(
    `link challenge on ${venue}`,
    [200],
    a.call("POST", "/v1/accounts/challenge", { venue, address: account.address }, token),
  )
  const signature: Hex =
    challenge.typed_data === undefined
      ? await account.signMessage({ message: challenge.message as string })
      : await account.signTypedData(challenge.typed_data)
  const r = await a.call(
    "POST",
    "/v1/accounts",
    { venue, address: account.address, nonce: challenge.nonce, signature },
    token,
  )
  if (r.status === 201) return challenge.typed_data === undefined ? "linked" : "linked (agent approved)"
  if (r.status === 409) return "already linked"
  const e = (r.json?.error ?? {}) as { code?: string; message?: string }
  throw new DemoStepFailed(`link on ${venue}: HTTP ${r.status} ${e.code ?? ""} ${e.message ?? ""}`)
}
