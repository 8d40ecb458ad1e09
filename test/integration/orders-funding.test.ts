import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runOrderFunding } from "../../actors/OrderFunding.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { AppConfig } from "../../src/Config.ts"
import { venueEntry } from "../support/ChainDevnet.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/Makers.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

// Finality lags latest by two blocks (slots 1); blocks come every 200 ms.
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1 },
  config: (c) => {
    const hl = venueEntry(c, "hyperliquid", { relayer: { poll_ms: 100 }, watcher: { poll_ms: 100 } })
    // A second venue (the order's receive venue) on the same chain: only its id is used here.
    const { legacy_escrow: _l, ...aster } = { ...venueEntry(c, "aster"), chain_id: c.deployment.chainId }
    return { venues: [hl, { ...aster, kind: "aster" }], auth: { rpc_urls: [c.anvil.rpcUrl] } }
  },
})

// biome-ignore lint/suspicious/noExplicitAny: wire typed data
type Prepared = { order: Record<string, any>; to_sign: Array<{ kind: string; typed_data: any }> }

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("order funding on devnet", (it) => {
  it.effect("an order funded from the owner's wallet reaches funded once the escrow event is final", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const chain = yield* TestChainTag
      const { deployment } = yield* AppConfig
      const venue = deployment.venues[0]
      const miner = yield* Effect.fork(
        Effect.promise(() => chain.test.mine({ blocks: 1 })).pipe(
          Effect.zipRight(Effect.sleep("200 millis")),
          Effect.forever,
        ),
      )
      const actors = yield* Effect.fork(
        Effect.all([runTxRelayer(venue), runVenueWatcher(venue), runOrderFunding], { concurrency: "unbounded" }),
      )
      const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as Hex)
      const token = yield* signIn(base, owner)
      const auth = bearer(token)
      yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, auth)
      const identity = yield* registerIdentity(base, token, privateKeyToAccount(generatePrivateKey()))
      yield* issueCredential(base, token, identity.id, ["quote"])
      const prepared = (yield* post(
        `${base}/v1/orders`,
        {
          client_order_id: "fund-1",
          venue: "hyperliquid",
          receive_venue: "aster",
          owner_address: owner.address,
          amount: "7000000",
          quote_identity_id: identity.id,
        },
        auth,
      )).json as Prepared
      const [fund, permit] = prepared.to_sign
      const signed = yield* post(
        `${base}/v1/orders/${prepared.order.id}/signatures`,
        {
          fund_order: yield* Effect.promise(() => owner.signTypedData(fund!.typed_data)),
          permit: yield* Effect.promise(() => owner.signTypedData(permit!.typed_data)),
        },
        auth,
      )
      expect(signed.status).toBe(200)
      const order = () =>
        Effect.map(
          rawRequest(`${base}/v1/orders/${prepared.order.id}`, { headers: auth }),
          (r) =>
            r.json as {
              state: string
              escrow_available: string
              transactions: Array<{ kind: string; status: string }>
            },
        )
      const funded = yield* order().pipe(
        Effect.repeat({ until: (o) => o.state === "funded" || o.state === "failed" }),
        Effect.timeout("60 seconds"),
      )
      expect(funded.state).toBe("funded")
      expect(funded.escrow_available).toBe("7000000")
      expect(funded.transactions).toEqual([expect.objectContaining({ kind: "fund", status: "final" })])
      const onChain = yield* Effect.promise(() =>
        chain.pub.readContract({
          address: chain.escrow,
          abi: settlementEscrowAbi,
          functionName: "getOrder",
          args: [prepared.order.id as Hex],
        }),
      )
      expect(JSON.stringify(onChain, (_k, v) => (typeof v === "bigint" ? v.toString() : v))).toContain("7000000")
      yield* Fiber.interrupt(actors)
      yield* Fiber.interrupt(miner)
    }),
  )
})
