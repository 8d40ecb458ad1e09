import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { loadQuoteCandidates } from "../../src/Takes/QuoteCandidates.ts"
import { Chains, devnetStack } from "../support/DevnetStack.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, json, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = devnetStack()

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } }).error?.code

interface Preview {
  from: string
  to: string
  amount_in: string
  fills: Array<{
    order_id: string
    quote: Record<string, unknown>
    quote_index: number
    sequence: number
    amount_in: string
    amount_out: string
  }>
  total_in: string
  total_out: string
}

/**
 * One maker, as a maker bot and its owner would set it up through the API: a session, a linked account on
 * Hyperliquid, a credential identity with a live lease, an order; then (the chain layer is tested elsewhere) the
 * order funded in the escrow index with `available`, and a quote set signed by the quote signer that pays on Aster.
 */
const maker = (name: string, p: { available: bigint; quoteSize: bigint; supply: bigint; receive: bigint }) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const { hl, aster } = yield* Chains
    const sql = yield* SqlClient.SqlClient
    const owner = privateKeyToAccount(generatePrivateKey())
    const token = yield* signIn(base, owner)
    const linked = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))
    expect(linked.status, linked.text).toBe(201)
    const signer = privateKeyToAccount(generatePrivateKey())
    const identity = yield* registerIdentity(base, token, signer)
    const credential = yield* issueCredential(base, token, identity.id, ["quote"])
    const lease = (yield* renew(base, credential.token, identity.id, 60)).json as { generation: string }
    const created = yield* post(
      `${base}/v1/orders`,
      {
        client_order_id: name,
        venue: "hyperliquid",
        receive_venue: "aster",
        owner_address: owner.address,
        amount: p.available.toString(),
        quote_identity_id: identity.id,
      },
      bearer(token),
    )
    expect(created.status, created.text).toBe(200)
    const orderId = (created.json as { order: { id: Hex } }).order.id
    yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
        created_block, block_number, block_hash)
      values ('hyperliquid', ${orderId}, ${owner.address.toLowerCase()}, ${hl.deployment.operator.toLowerCase()},
        ${signer.address.toLowerCase()}, ${p.available.toString()}, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
    yield* sql`update orders set state = 'funded' where id = ${orderId}`
    const quote = {
      venue: "aster",
      chain_id: 42161,
      token: aster.token.toLowerCase(),
      recipient: owner.address.toLowerCase(),
      supply: p.supply.toString(),
      receive: p.receive.toString(),
      min_fill: "100000",
    }
    const validUntil = Math.floor(Date.now() / 1000) + 120
    const signature = yield* Effect.promise(() =>
      signer.signTypedData(
        quoteSetTypedData(999, hl.escrow, {
          orderId,
          sequence: 1n,
          generation: BigInt(lease.generation),
          quoteSize: p.quoteSize,
          validUntil: BigInt(validUntil),
          quotes: [
            {
              chainId: 42161n,
              token: quote.token as Hex,
              recipient: quote.recipient as Hex,
              supply: p.supply,
              receive: p.receive,
              minFill: 100_000n,
            },
          ],
        }),
      ),
    )
    const published = yield* rawRequest(`${base}/v1/orders/${orderId}/quotes`, {
      method: "PUT",
      headers: { ...bearer(credential.token), ...json },
      body: JSON.stringify({
        sequence: 1,
        valid_until: validUntil,
        quote_size: p.quoteSize.toString(),
        identity_generation: lease.generation,
        quotes: [quote],
        signature,
      }),
    })
    expect(published.status, published.text).toBe(200)
    return { orderId, identityId: identity.id, quote, token }
  })

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("take preview", (it) => {
  it.effect("routes best price first over live sets, honours max_parts, ignores a lapsed lease", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { aster } = yield* Chains
      // A pays 1.00, B 0.99, C 1.10 per unit of Aster's token (both 6 decimals).
      const A = yield* maker("take-a", {
        available: 3_000_000n,
        quoteSize: 2_000_000n,
        supply: 1_000_000n,
        receive: 1_000_000n,
      })
      const B = yield* maker("take-b", {
        available: 5_000_000n,
        quoteSize: 5_000_000n,
        supply: 990_000n,
        receive: 1_000_000n,
      })
      const C = yield* maker("take-c", {
        available: 1_000_000n,
        quoteSize: 1_000_000n,
        supply: 1_100_000n,
        receive: 1_000_000n,
      })
      const preview = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
        post(`${base}/v1/takes/preview`, body, headers)
      const ok = (res: { status: number; text: string; json: unknown }) => {
        expect(res.status, res.text).toBe(200)
        return res.json as Preview
      }
      const req = { from: "aster", to: "hyperliquid", amount_in: "3000000" }

      // C's lease live: C (best), then A; C's order (1e6 out) costs ceil(1e6 × 10/11) = 909 091. The 90 909
      // left buy 89 999 from B, below its min_fill: not routed.
      const all = ok(yield* preview(req))
      expect(all.fills.map((f) => [f.order_id, f.amount_in, f.amount_out])).toEqual([
        [C.orderId, "909091", "1000000"],
        [A.orderId, "2000000", "2000000"],
      ])
      expect([all.total_in, all.total_out]).toEqual(["2909091", "3000000"])

      // C's lease lapses: its set is no longer admissible.
      yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${C.identityId}`
      const split = ok(yield* preview(req))
      expect(split).toEqual({
        from: "aster",
        to: "hyperliquid",
        amount_in: "3000000",
        fills: [
          {
            order_id: A.orderId,
            quote: A.quote,
            quote_index: 0,
            sequence: 1,
            amount_in: "2000000",
            amount_out: "2000000",
          },
          // floor(1e6 × 0.99) = 990 000 out costs exactly 1e6.
          {
            order_id: B.orderId,
            quote: B.quote,
            quote_index: 0,
            sequence: 1,
            amount_in: "1000000",
            amount_out: "990000",
          },
        ],
        total_in: "3000000",
        total_out: "2990000",
      })
      // max_parts 1: the best price only; a session (or any bearer) changes nothing on this public route.
      const one = ok(yield* preview({ ...req, max_parts: 1 }, bearer(A.token)))
      expect(one.fills.map((f) => f.order_id)).toEqual([A.orderId])
      expect([one.total_in, one.total_out]).toEqual(["2000000", "2000000"])
      expect(ok(yield* preview({ ...req, max_parts: 1 }, bearer(`st_${"Z".repeat(43)}`)))).toEqual(one)
      // The other direction has no quotes: 200, empty.
      expect(ok(yield* preview({ from: "hyperliquid", to: "aster", amount_in: "3000000" }))).toEqual({
        from: "hyperliquid",
        to: "aster",
        amount_in: "3000000",
        fills: [],
        total_in: "0",
        total_out: "0",
      })
      // Below every min_fill: empty, still 200.
      expect(ok(yield* preview({ ...req, amount_in: "99999" })).fills).toEqual([])

      // Bad input answers the envelope, never 5xx.
      const refusals: Array<[Record<string, unknown>, number, string]> = [
        [{ ...req, from: "nowhere" }, 404, "NOT_FOUND"],
        [{ ...req, to: "nowhere" }, 404, "NOT_FOUND"],
        [{ ...req, to: "aster" }, 400, "INVALID_REQUEST"],
        [{ ...req, amount_in: "0" }, 400, "INVALID_REQUEST"],
        [{ ...req, amount_in: "-1" }, 400, "INVALID_REQUEST"],
        [{ ...req, amount_in: 3000000 }, 400, "INVALID_REQUEST"],
        [{ ...req, amount_in: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        [{ ...req, max_parts: 0 }, 400, "INVALID_REQUEST"],
        [{ ...req, max_parts: 9 }, 400, "INVALID_REQUEST"],
        [{ ...req, max_parts: 1.5 }, 400, "INVALID_REQUEST"],
        [{ ...req, min_out: "1" }, 400, "INVALID_REQUEST"],
        [{ from: "aster", to: "hyperliquid" }, 400, "INVALID_REQUEST"],
      ]
      for (const [body, status, c] of refusals) {
        const res = yield* preview(body)
        expect([res.status, code(res)], JSON.stringify(body)).toEqual([status, c])
      }

      // The store's locking variant (for the take route) is valid SQL and answers the same rows.
      const query = {
        from: { id: "aster", chainId: 42161, token: aster.token },
        to: "hyperliquid",
        lockCutoffSeconds: 60,
      }
      const plain = yield* loadQuoteCandidates(query)
      const locked = yield* sql.withTransaction(loadQuoteCandidates({ ...query, forUpdate: true }))
      expect(locked).toEqual(plain)
      expect(plain.map((r) => [r.order_id, r.quotable, r.set_remaining])).toEqual(
        [
          [A.orderId, "3000000", "2000000"],
          [B.orderId, "5000000", "5000000"],
        ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
      )
      // A set whose validity ends within the lock cutoff is not admissible.
      const short = yield* loadQuoteCandidates({ ...query, lockCutoffSeconds: 3600 })
      expect(short).toEqual([])
    }),
  )
})
