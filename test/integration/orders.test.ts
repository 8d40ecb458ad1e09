import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/Makers.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

class Chains extends Effect.Tag("test/Chains")<Chains, { readonly hl: TestChain; readonly aster: TestChain }>() {}

/** Two real devnet chains with the contracts deployed, and the service configured on them. */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all(
      [
        Effect.acquireRelease(
          Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
          (c) => Effect.promise(() => c.anvil.stop()),
        ),
        Effect.acquireRelease(
          Effect.promise(() => startTestChain({ chainId: 42161, kind: "aster" })),
          (c) => Effect.promise(() => c.anvil.stop()),
        ),
      ],
      { concurrency: 2 },
    )
    const config = testAppConfig({
      venues: [venueEntry(hl, "hyperliquid"), venueEntry(aster, "aster")].map(({ legacy_escrow: _legacy, ...v }) => v),
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
    })
    return TestHttpLive.pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Chains, { hl, aster })),
    )
  }),
)

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } }).error?.code
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

// biome-ignore lint/suspicious/noExplicitAny: wire typed data
type Prepared = { order: Record<string, any>; to_sign: Array<{ kind: string; signer: string; typed_data: any }> }

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("orders", (it) => {
  it.effect("create, idempotent retry, conflict, recovery, signatures, and a valid fund call", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* Chains
      // Owner: anvil account #1, funded with mock USDC by the deployment.
      const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as Hex)
      const token = yield* signIn(base, owner)
      const auth = bearer(token)
      expect((yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, auth)).status).toBe(
        201,
      )
      const signer = privateKeyToAccount(generatePrivateKey())
      const identity = yield* registerIdentity(base, token, signer)
      yield* issueCredential(base, token, identity.id, ["quote"])
      const request = {
        client_order_id: "maker-1:order-1",
        venue: "hyperliquid",
        receive_venue: "aster",
        owner_address: owner.address,
        amount: "5000000",
        quote_identity_id: identity.id,
      }
      const created = yield* post(`${base}/v1/orders`, request, auth)
      expect(created.status).toBe(200)
      const prepared = created.json as Prepared
      expect(prepared.order).toMatchObject({
        venue: "hyperliquid",
        receive_venue: "aster",
        owner_address: owner.address.toLowerCase(),
        state: "preparing",
        amount: "5000000",
        escrow_available: "0",
        client_order_id: "maker-1:order-1",
        quote_identity_id: identity.id,
        quote_signer: signer.address.toLowerCase(),
      })
      expect(prepared.order.id).toMatch(/^0x[0-9a-f]{64}$/)
      expect(prepared.to_sign.map((i) => i.kind)).toEqual(["fund_order", "permit"])
      const fund = prepared.to_sign[0]!.typed_data
      expect(fund.domain).toEqual({
        name: "SettlementEscrow",
        version: "1",
        chainId: 999,
        verifyingContract: expect.any(String),
      })
      expect(fund.domain.verifyingContract.toLowerCase()).toBe(hl.escrow.toLowerCase())
      expect(fund.message.operator.toLowerCase()).toBe(
        privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as Hex).address.toLowerCase(),
      )
      expect(fund.message.quoteSigner.toLowerCase()).toBe(signer.address.toLowerCase())
      expect(fund.message.amount).toBe("5000000")

      // A lost response: the same request answers the same order; other parameters conflict.
      const retry = (yield* post(`${base}/v1/orders`, request, auth)).json as Prepared
      expect(retry.order.id).toBe(prepared.order.id)
      expect(retry.to_sign).toEqual(prepared.to_sign)
      const conflict = yield* post(`${base}/v1/orders`, { ...request, amount: "6000000" }, auth)
      expect([conflict.status, code(conflict)]).toEqual([409, "STATE_CONFLICT"])
      const byClientId = (yield* rawRequest(`${base}/v1/orders?client_order_id=maker-1:order-1`, { headers: auth }))
        .json as { data: Array<{ id: string }> }
      expect(byClientId.data.map((o) => o.id)).toEqual([prepared.order.id])
      const recovered = (yield* rawRequest(`${base}/v1/orders/${prepared.order.id}/preparation`, { headers: auth }))
        .json as Prepared
      expect(recovered.to_sign).toEqual(prepared.to_sign)

      // Refusals: an unlinked owner, another master's order, an unknown identity.
      const stranger = privateKeyToAccount(generatePrivateKey())
      const notLinked = yield* post(
        `${base}/v1/orders`,
        { ...request, client_order_id: "x2", owner_address: stranger.address },
        auth,
      )
      expect([notLinked.status, code(notLinked)]).toEqual([404, "NOT_FOUND"])
      const otherToken = yield* signIn(base, stranger)
      const foreign = yield* rawRequest(`${base}/v1/orders/${prepared.order.id}`, { headers: bearer(otherToken) })
      expect([foreign.status, code(foreign)]).toEqual([404, "NOT_FOUND"])

      // Signatures: someone else's, a high-s twin, then the owner's.
      const fundSig = yield* Effect.promise(() => owner.signTypedData(fund))
      const permitSig = yield* Effect.promise(() => owner.signTypedData(prepared.to_sign[1]!.typed_data))
      const bySomeoneElse = yield* Effect.promise(() => stranger.signTypedData(fund))
      const sign = (body: unknown) => post(`${base}/v1/orders/${prepared.order.id}/signatures`, body, auth)
      const wrong = yield* sign({ fund_order: bySomeoneElse, permit: permitSig })
      expect([wrong.status, code(wrong)]).toEqual([422, "SIGNATURE_INVALID"])
      const malleable = yield* sign({ fund_order: highS(fundSig), permit: permitSig })
      expect([malleable.status, code(malleable)]).toEqual([422, "SIGNATURE_MALLEABLE"])
      const signed = yield* sign({ fund_order: fundSig, permit: permitSig })
      expect(signed.status).toBe(200)
      expect((signed.json as { state: string }).state).toBe("funding")
      // Idempotent: signing again returns the order, relays nothing more.
      expect((yield* sign({ fund_order: fundSig, permit: permitSig })).status).toBe(200)
      const sql = yield* SqlClient.SqlClient
      const requests = yield* sql<{ calldata: string; target: string; function_name: string }>`
        select calldata, target, function_name from relayer_requests where idempotency_key = ${`fund:${prepared.order.id}`}`
      expect(requests.length).toBe(1)
      expect(requests[0]!.function_name).toBe("fund")
      // The relayed calldata is a fund call the escrow accepts (simulated from the operator).
      const operator = privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as Hex).address
      yield* Effect.promise(() => hl.pub.call({ account: operator, to: hl.escrow, data: requests[0]!.calldata as Hex }))
      const journal = yield* sql<{ kind: string }>`
        select kind from journal where payload->>'order_id' = ${prepared.order.id} order by id`
      expect(journal.map((j) => j.kind)).toEqual(["order.created", "order.funding"])
    }),
  )
})
