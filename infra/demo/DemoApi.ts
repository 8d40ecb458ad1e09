// The demo's calls to the service, through the typed client derived from the HttpApi contract
// (src/Client/ApiClient.ts), as a browser app or a bot makes them: `a.run(what, token, (c) => c.orders.get(…))`
// resolves with the decoded answer or fails the step with the envelope's code and message; the SIWE sign-in and
// linking a venue account (the generic link message, or the venue's agent approval) are the client's own helpers.
import { Cause, Effect, Exit, Option } from "effect"
import type { PrivateKeyAccount } from "viem/accounts"
import {
  type ApiFailure,
  linkAccount as linkWith,
  makeApiClient,
  type RawClient,
  request,
  signIn as signInWith,
} from "../../src/Client/ApiClient.ts"

export class DemoStepFailed extends Error {}

const describe = (what: string, e: ApiFailure) =>
  e._tag === "ApiUnreachable"
    ? `${what}: the service did not answer (${e.reason})`
    : `${what}: HTTP ${e.status} ${e.code} ${e.message}`.trim()

/** The effect's value, or its ApiFailure (a defect is rethrown). */
const settle = async <A>(effect: Effect.Effect<A, ApiFailure>) => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return { ok: true as const, value: exit.value }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) throw Cause.squash(exit.cause)
  return { ok: false as const, error: failure.value }
}

export const api = (base: string) => {
  const clients = new Map<string, Promise<RawClient>>()
  const clientFor = (token: string | undefined) => {
    const key = token ?? ""
    let c = clients.get(key)
    if (c === undefined) {
      c = Effect.runPromise(makeApiClient(base, { bearer: token }))
      clients.set(key, c)
    }
    return c
  }
  /** One call: its answer, or its failure (code, message, retryable) to decide on. */
  const attempt = async <A, E>(token: string | undefined, f: (c: RawClient) => Effect.Effect<A, E>) =>
    settle(request(f(await clientFor(token))))
  /** A call that must succeed; otherwise the step fails with the API's error code and message. */
  const run = async <A, E>(what: string, token: string | undefined, f: (c: RawClient) => Effect.Effect<A, E>) => {
    const r = await attempt(token, f)
    if (!r.ok) throw new DemoStepFailed(describe(what, r.error))
    return r.value
  }
  return { base, run, attempt }
}
export type Api = ReturnType<typeof api>

/** Sign-in with Ethereum (the client's helper): the challenge's message personal_signed as given. The token. */
export const signIn = async (a: Api, account: PrivateKeyAccount): Promise<string> => {
  const r = await settle(signInWith(a.base, account))
  if (!r.ok) throw new DemoStepFailed(describe("sign-in", r.error))
  return r.value.token
}

/**
 * Links `account` on `venue` through its challenge: a personal_sign message, or, on a venue that approves an
 * agent, the approval's typed data. An account already linked is fine: the demo may run again.
 */
export const linkAccount = async (a: Api, token: string, account: PrivateKeyAccount, venue: string) => {
  const r = await settle(linkWith(a.base, token, account, venue))
  if (!r.ok) throw new DemoStepFailed(describe(`link on ${venue}`, r.error))
  return r.value
}
