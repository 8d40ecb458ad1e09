import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { Chains, devnetStack } from "../support/DevnetStack.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = devnetStack()

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

  it.effect("quote sets: signed by the quote signer, sequence increasing, generation current, within quotable", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl, aster } = yield* Chains
      const sql = yield* SqlClient.SqlClient
      const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[2] as Hex)
      const token = yield* signIn(base, owner)
      const auth = bearer(token)
      yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, auth)
      const signer = privateKeyToAccount(generatePrivateKey())
      const identity = yield* registerIdentity(base, token, signer)
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      const prepared = (yield* post(
        `${base}/v1/orders`,
        {
          client_order_id: "quotes-1",
          venue: "hyperliquid",
          receive_venue: "aster",
          owner_address: owner.address,
          amount: "3000000",
          quote_identity_id: identity.id,
        },
        auth,
      )).json as Prepared
      const orderId = prepared.order.id as Hex
      // The escrow index (tested with the chain layer) shows the order funded with 3 USDC.
      yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('hyperliquid', ${orderId}, ${owner.address.toLowerCase()}, ${hl.deployment.operator.toLowerCase()},
          ${signer.address.toLowerCase()}, 3000000, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
      const lease = (yield* renew(base, credential.token, identity.id, 60)).json as { generation: string }
      const quote = {
        venue: "aster",
        chain_id: 42161,
        token: aster.token,
        recipient: owner.address,
        supply: "1000000",
        receive: "1000100",
        min_fill: "100000",
      }
      const body = (sequence: number, generation: string, over: Record<string, unknown> = {}, by = signer) =>
        Effect.gen(function* () {
          const validUntil = Math.floor(Date.now() / 1000) + 120
          const fields = {
            sequence,
            valid_until: validUntil,
            quote_size: "2000000",
            identity_generation: generation,
            quotes: [quote],
            ...over,
          }
          const f = fields as typeof fields & { quotes: Array<typeof quote> }
          const signature = yield* Effect.promise(() =>
            by.signTypedData(
              quoteSetTypedData(999, hl.escrow, {
                orderId,
                sequence: BigInt(f.sequence),
                generation: BigInt(f.identity_generation),
                quoteSize: BigInt(f.quote_size),
                validUntil: BigInt(f.valid_until),
                quotes: f.quotes.map((q) => ({
                  chainId: BigInt(q.chain_id),
                  token: q.token as Hex,
                  recipient: q.recipient as Hex,
                  supply: BigInt(q.supply),
                  receive: BigInt(q.receive),
                  minFill: BigInt(q.min_fill),
                })),
              }),
            ),
          )
          return { ...fields, signature }
        })
      const put = (b: unknown, who = credential.token) =>
        rawRequest(`${base}/v1/orders/${orderId}/quotes`, {
          method: "PUT",
          headers: { ...bearer(who), "content-type": "application/json" },
          body: JSON.stringify(b),
        })
      const ok = yield* put(yield* body(1, lease.generation))
      expect(ok.status).toBe(200)
      expect(ok.json).toMatchObject({
        last_sequence: 1,
        quote_set: { sequence: 1, active: true, quote_size: "2000000" },
      })
      // A credential never sees balances or withdrawals (spec, Authentication 6): its answer leaves them out.
      const sessionOnly = ["escrow_available", "quotable", "filled", "received", "margin_move"]
      for (const field of sessionOnly) expect(ok.json).not.toHaveProperty(field)
      const stale = yield* put(yield* body(1, lease.generation))
      expect([stale.status, code(stale)]).toEqual([409, "QUOTE_STALE"])
      const forged = yield* put(yield* body(2, lease.generation, {}, privateKeyToAccount(generatePrivateKey())))
      expect([forged.status, code(forged)]).toEqual([422, "SIGNATURE_INVALID"])
      const tooBig = yield* put(yield* body(2, lease.generation, { quote_size: "3000001" }))
      expect([tooBig.status, code(tooBig)]).toEqual([422, "INSUFFICIENT_BALANCE"])
      // Nor through a refusal: the message names no amount, and an unsigned probe is refused for its signature.
      expect(JSON.stringify(tooBig.json)).not.toContain("3000000")
      const probe = yield* put(
        yield* body(2, lease.generation, { quote_size: "3000001" }, privateKeyToAccount(generatePrivateKey())),
      )
      expect([probe.status, code(probe)]).toEqual([422, "SIGNATURE_INVALID"])
      const tooLong = yield* put(
        yield* body(2, lease.generation, { valid_until: Math.floor(Date.now() / 1000) + 3600 }),
      )
      expect([tooLong.status, code(tooLong)]).toEqual([400, "INVALID_REQUEST"])
      const badQuote = yield* put(yield* body(2, lease.generation, { quotes: [{ ...quote, chain_id: 1 }] }))
      expect([badQuote.status, code(badQuote)]).toEqual([400, "INVALID_REQUEST"])
      // The lease lapses: a set for the old generation is refused, now and after renewal.
      yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${identity.id}`
      const expired = yield* put(yield* body(2, lease.generation))
      expect([expired.status, code(expired)]).toEqual([409, "LEASE_EXPIRED"])
      const renewed = (yield* renew(base, credential.token, identity.id, 60)).json as { generation: string }
      expect(renewed.generation).not.toBe(lease.generation)
      const oldGen = yield* put(yield* body(2, lease.generation))
      expect([oldGen.status, code(oldGen)]).toEqual([409, "LEASE_EXPIRED"])
      const sets = () => sql<{ sequence: string; active: boolean }>`
        select sequence::text, active from quote_sets where order_id = ${orderId} order by sequence`
      expect(yield* sets()).toEqual([{ sequence: "1", active: false }])
      const fresh2 = yield* put(yield* body(2, renewed.generation))
      expect(fresh2.status).toBe(200)
      for (const field of sessionOnly) expect(fresh2.json).not.toHaveProperty(field)
      expect(yield* sets()).toEqual([
        { sequence: "1", active: false },
        { sequence: "2", active: true },
      ])
      // Another identity's credential cannot touch this order.
      const other = yield* registerIdentity(base, token, privateKeyToAccount(generatePrivateKey()))
      const otherCred = yield* issueCredential(base, token, other.id, ["quote"])
      const foreign = yield* put(yield* body(3, renewed.generation), otherCred.token)
      expect([foreign.status, code(foreign)]).toEqual([404, "NOT_FOUND"])
      const cancelled = yield* rawRequest(`${base}/v1/orders/${orderId}/quotes`, {
        method: "DELETE",
        headers: bearer(credential.token),
      })
      expect(cancelled.status).toBe(200)
      expect((cancelled.json as { quote_set: { active: boolean } }).quote_set.active).toBe(false)
      for (const field of sessionOnly) expect(cancelled.json).not.toHaveProperty(field)
      // The master's session gets the whole order from the same route.
      const bySession = yield* rawRequest(`${base}/v1/orders/${orderId}/quotes`, {
        method: "DELETE",
        headers: bearer(token),
      })
      expect(bySession.status).toBe(200)
      for (const field of sessionOnly) expect(bySession.json).toHaveProperty(field)
    }),
  )
})
