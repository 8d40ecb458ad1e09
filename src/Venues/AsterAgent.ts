/**
 * The agents ("API wallets") this service holds for Aster accounts. An agent signs every V3 request made on the
 * user's behalf (balance, withdrawal relay, history); the user's own wallet signs only the agent approval and
 * each withdrawal `Action`. The agent is approved with every permission false, so its key alone can move nothing.
 *
 * Keys live behind a resolver so that storage (per-account keys, a KMS) stays outside the venue layer.
 */
import { Effect, type Redacted } from "effect"
import * as R from "effect/Redacted"
import type { Address, Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import type { TypedDataObject } from "../Domain/TypedData.ts"
import { AgentUnavailable } from "./VenueErrors.ts"

export interface AsterAgentSigner {
  readonly address: Address
  readonly signTypedData: (td: TypedDataObject) => Effect.Effect<Hex, AgentUnavailable>
}

/** The agent that acts for `user`, or AgentUnavailable (none registered, expired, key store down). */
export type AsterAgentResolver = (user: Address) => Effect.Effect<AsterAgentSigner, AgentUnavailable>

/** An agent whose private key is in memory. */
export const privateKeyAgent = (key: Redacted.Redacted<Hex>): AsterAgentSigner => {
  const account = privateKeyToAccount(R.value(key))
  return {
    address: account.address.toLowerCase() as Address,
    signTypedData: (td) =>
      Effect.tryPromise({
        try: () => account.signTypedData(td as unknown as Parameters<typeof account.signTypedData>[0]),
        catch: (e) => new AgentUnavailable({ user: account.address, reason: `signing failed: ${String(e)}` }),
      }),
  }
}

/** A fixed table user → agent key (devnet, tests). */
export const agentsFromKeys = (keys: ReadonlyMap<string, Redacted.Redacted<Hex>>): AsterAgentResolver => {
  const agents = new Map([...keys].map(([user, key]) => [user.toLowerCase(), privateKeyAgent(key)]))
  return (user) => {
    const agent = agents.get(user.toLowerCase())
    return agent === undefined
      ? Effect.fail(new AgentUnavailable({ user, reason: "no agent registered for this account" }))
      : Effect.succeed(agent)
  }
}
