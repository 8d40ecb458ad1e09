/**
 * PUT /v1/orders/{id}/quotes for an order on the v2 escrow (orders.escrow_version = 2): the v2 QuoteSet signed by the
 * order's quote signer in the maker venue's v2 escrow domain, with the maker's hashlocks, whose Merkle root and count
 * the set signs, and per quote the taker venue's v2 escrow. A good set is stored with its v2 columns; each bad input
 * is refused with its envelope and changes nothing; a v1 order keeps the v1 body. Real chains (the devnet contracts,
 * v2 escrows configured), real PostgreSQL; the order and its funding are fixtures (the escrow index's tests cover
 * indexing, the orders tests the create path).
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { getAddress, type Hex, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { orderKey, type QuoteSetV2, quoteSetV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, hashlockTree, MAX_HASHLOCK_COUNT, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { startTestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { Chains } from "../support/DevnetStack.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** As devnetStack, with each venue's SettlementEscrowV2 configured (`escrow_v2`). */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [venueEntry(hl, "hyperliquid", { escrowV2: true }), venueEntry(aster, "aster", { escrowV2: true })].map(
        ({ legacy_escrow: _l, ...v }) => v,
      ),
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
const ZERO_HASH = `0x${"00".repeat(32)}`

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("v2 quote sets", (it) => {
  it.effect("a v2 set is verified and stored; every bad input is refused and stores nothing", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl, aster } = yield* Chains
      const sql = yield* SqlClient.SqlClient
      const owner = privateKeyToAccount(generatePrivateKey())
      const token = yield* signIn(base, owner)
      const m = owner.address.toLowerCase()
      const signerKey = generatePrivateKey()
      const signer = privateKeyToAccount(signerKey)
      const identity = yield* registerIdentity(base, token, signer)
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      const makerEscrow = getAddress(hl.escrowV2!)
      const takerEscrow = getAddress(aster.escrowV2!)
      // Two orders of this master: one on the v2 escrow, one on v1, each funded with 4 USDC in its escrow index.
      const orderId = keccak256(toHex(`v2 order ${m}`))
      const v1OrderId = keccak256(toHex(`v1 order ${m}`))
      for (const [id, version] of [
        [orderId, 2],
        [v1OrderId, 1],
      ] as const) {
        yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
            updated_at, client_order_id, quote_identity_id, quote_signer, to_sign, escrow_version)
          values (${id}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 4000000, now(), now(), ${`q-${version}`},
            ${identity.id}, ${signer.address.toLowerCase()}, '[]', ${version})`
      }
      yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
          locked, created_block, block_number, block_hash)
        values ('hyperliquid', ${m}, ${orderId}, ${orderKey(owner.address, orderId)}, ${hl.deployment.operator.toLowerCase()},
          ${signer.address.toLowerCase()}, 4000000, 0, 1, 1, ${ZERO_HASH})`
      yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('hyperliquid', ${v1OrderId}, ${m}, ${hl.deployment.operator.toLowerCase()},
          ${signer.address.toLowerCase()}, 4000000, 0, 1, 1, ${ZERO_HASH})`
      const lease = (yield* renew(base, credential.token, identity.id, 60)).json as { generation: string }
      const key = secretKeyOf(signerKey)

      const quote = {
        venue: "aster",
        chain_id: 42161,
        token: aster.token,
        escrow: takerEscrow,
        recipient: owner.address,
        supply: "1000000",
        receive: "1000100",
        min_fill: "100000",
      }
      /** A v2 body: hashlocks of (sequence) derived as the maker client does, signed unless `over` changes it. */
      const v2Body = (
        sequence: number,
        over: Record<string, unknown> = {},
        sign: Partial<QuoteSetV2> = {},
        count = 8,
      ) =>
        Effect.gen(function* () {
          const now = Math.floor(Date.now() / 1000)
          const set = deriveHashlockSet(
            key,
            { chainId: 999n, makerEscrow, owner: owner.address, orderId, sequence: BigInt(sequence) },
            count,
          )
          const fields = {
            sequence,
            valid_until: now + 120,
            quote_size: "2000000",
            identity_generation: lease.generation,
            quotes: [quote],
            issued_at: now - 5,
            hashlock_root: set.root,
            hashlock_count: set.count,
            hashlocks: [...set.hashlocks],
            ...over,
          }
          const f = fields as typeof fields & { quotes: Array<typeof quote> }
          const message: QuoteSetV2 = {
            owner: owner.address,
            orderId,
            sequence: BigInt(f.sequence),
            generation: BigInt(f.identity_generation),
            quoteSize: BigInt(f.quote_size),
            issuedAt: BigInt(f.issued_at),
            validUntil: BigInt(f.valid_until),
            hashlockRoot: f.hashlock_root as Hex,
            hashlockCount: f.hashlock_count,
            quotes: f.quotes.map((q) => ({
              chainId: BigInt(q.chain_id),
              token: getAddress(q.token),
              escrow: getAddress(q.escrow ?? takerEscrow),
              recipient: getAddress(q.recipient),
              supply: BigInt(q.supply),
              receive: BigInt(q.receive),
              minFill: BigInt(q.min_fill),
            })),
            ...sign,
          }
          const signature = yield* Effect.promise(() =>
            signer.signTypedData(quoteSetV2TypedData(999, makerEscrow, message)),
          )
          return { body: { ...fields, signature }, set, message }
        })
      const put = (id: string, b: unknown) =>
        rawRequest(`${base}/v1/orders/${id}/quotes`, {
          method: "PUT",
          headers: { ...bearer(credential.token), "content-type": "application/json" },
          body: JSON.stringify(b),
        })
      const rows = () =>
        sql<{
          sequence: string
          active: boolean
          issued_at: string | null
          hashlock_root: string | null
          hashlock_count: number | null
          hashlocks: Array<string> | null
          quotes: Array<Record<string, unknown>>
        }>`select sequence::text, active, issued_at::text, hashlock_root, hashlock_count, hashlocks, quotes
          from quote_sets where order_id = ${orderId} order by sequence`

      // The good set: stored with its v2 columns; the view shows issued_at, root and count (not the hashlocks).
      const good = yield* v2Body(1)
      const ok = yield* put(orderId, good.body)
      expect([ok.status, code(ok)]).toEqual([200, undefined])
      const view = (ok.json as { quote_set: Record<string, unknown> }).quote_set
      expect(view).toMatchObject({
        sequence: 1,
        active: true,
        issued_at: good.body.issued_at,
        hashlock_root: good.set.root,
        hashlock_count: 8,
        quotes: [{ escrow: takerEscrow.toLowerCase(), recipient: m }],
      })
      expect(view).not.toHaveProperty("hashlocks")
      const stored = yield* rows()
      const journaled = () =>
        sql<{ n: string }>`select count(*)::text as n from journal
          where kind = 'quote_set.published' and payload->>'order_id' = ${orderId}`.pipe(Effect.map((r) => r[0]!.n))
      expect(yield* journaled()).toBe("1")
      expect(stored).toEqual([
        {
          sequence: "1",
          active: true,
          issued_at: String(good.body.issued_at),
          hashlock_root: good.set.root,
          hashlock_count: 8,
          hashlocks: good.set.hashlocks.map((h) => h.toLowerCase()),
          quotes: [expect.objectContaining({ escrow: takerEscrow.toLowerCase() })],
        },
      ])

      // Each bad input: its envelope, and the stored sets are exactly as before.
      const now = Math.floor(Date.now() / 1000)
      const other = deriveHashlockSet(
        key,
        { chainId: 999n, makerEscrow, owner: owner.address, orderId, sequence: 99n },
        8,
      )
      const v1Quote = (({ escrow: _e, ...q }) => q)(quote)
      const v1Fields = (b: Record<string, unknown>) =>
        (({ issued_at: _i, hashlock_root: _r, hashlock_count: _c, hashlocks: _h, ...rest }) => rest)(
          b as { issued_at: unknown; hashlock_root: unknown; hashlock_count: unknown; hashlocks: unknown },
        )
      const stranger = privateKeyToAccount(generatePrivateKey())
      const cases: Array<[string, Effect.Effect<unknown>, number, string]> = [
        [
          "a v1 body on a v2 order",
          Effect.map(v2Body(2), (b) => ({ ...v1Fields(b.body), quotes: [v1Quote] })),
          400,
          "INVALID_REQUEST",
        ],
        ["a quote without escrow", Effect.map(v2Body(2, { quotes: [v1Quote] }), (b) => b.body), 400, "INVALID_REQUEST"],
        [
          "a quote naming the taker venue's v1 escrow",
          Effect.map(v2Body(2, { quotes: [{ ...quote, escrow: aster.escrow }] }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a quote naming an escrow nobody configured",
          Effect.map(v2Body(2, { quotes: [{ ...quote, escrow: stranger.address }] }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a quote with the escrow of another chain id",
          Effect.map(v2Body(2, { quotes: [{ ...quote, chain_id: 999 }] }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a root that is not the hashlocks' root",
          Effect.map(v2Body(2, { hashlock_root: other.root }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "hashlocks of another set under this root",
          Effect.map(v2Body(2), (b) => ({ ...b.body, hashlocks: [...other.hashlocks] })),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a count other than the number of hashlocks",
          Effect.map(v2Body(2, { hashlock_count: 7 }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a hashlock twice",
          Effect.map(v2Body(2), (b) => {
            const twice = [...b.set.hashlocks.slice(0, 7), b.set.hashlocks[0]!]
            return { ...b.body, hashlocks: twice, hashlock_root: hashlockTree(twice).root }
          }),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a count above MAX_HASHLOCK_COUNT",
          Effect.map(v2Body(2, { hashlock_count: MAX_HASHLOCK_COUNT + 1 }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a hashlock that is not 32 bytes",
          Effect.map(v2Body(2), (b) => ({ ...b.body, hashlocks: [...b.set.hashlocks.slice(0, 7), "0x1234"] })),
          400,
          "INVALID_REQUEST",
        ],
        [
          "a life above max_quote_life_seconds (300 s)",
          Effect.map(v2Body(2, { issued_at: now - 200, valid_until: now + 120 }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "issued_at in the future beyond the skew",
          Effect.map(v2Body(2, { issued_at: now + 90, valid_until: now + 200 }), (b) => b.body),
          400,
          "INVALID_REQUEST",
        ],
        [
          "signed by someone else",
          Effect.gen(function* () {
            const b = yield* v2Body(2)
            const signature = yield* Effect.promise(() =>
              stranger.signTypedData(quoteSetV2TypedData(999, makerEscrow, b.message)),
            )
            return { ...b.body, signature }
          }),
          422,
          "SIGNATURE_INVALID",
        ],
        [
          "signed in the taker escrow's domain",
          Effect.gen(function* () {
            const b = yield* v2Body(2)
            const signature = yield* Effect.promise(() =>
              signer.signTypedData(quoteSetV2TypedData(42161, takerEscrow, b.message)),
            )
            return { ...b.body, signature }
          }),
          422,
          "SIGNATURE_INVALID",
        ],
        [
          "signed for another owner (the same order id)",
          Effect.map(v2Body(2, {}, { owner: stranger.address }), (b) => b.body),
          422,
          "SIGNATURE_INVALID",
        ],
        [
          "signed over another root than the one sent",
          Effect.map(v2Body(2, {}, { hashlockRoot: other.root }), (b) => b.body),
          422,
          "SIGNATURE_INVALID",
        ],
        [
          "signed as a v1 QuoteSet",
          Effect.gen(function* () {
            const b = yield* v2Body(2)
            const signature = yield* Effect.promise(() =>
              signer.signTypedData(
                quoteSetTypedData(999, makerEscrow, {
                  orderId,
                  sequence: 2n,
                  generation: BigInt(lease.generation),
                  quoteSize: 2_000_000n,
                  validUntil: BigInt(b.body.valid_until),
                  quotes: b.message.quotes.map(({ escrow: _e, ...q }) => q),
                }),
              ),
            )
            return { ...b.body, signature }
          }),
          422,
          "SIGNATURE_INVALID",
        ],
        [
          "a quote size above quotable",
          Effect.map(v2Body(2, { quote_size: "4000001" }), (b) => b.body),
          422,
          "INSUFFICIENT_BALANCE",
        ],
        ["a sequence not above the last", Effect.map(v2Body(1), (b) => b.body), 409, "QUOTE_STALE"],
      ]
      for (const [what, body, status, expected] of cases) {
        const res = yield* put(orderId, yield* body)
        expect([what, res.status, code(res)]).toEqual([what, status, expected])
        expect(yield* rows()).toEqual(stored)
        expect(yield* journaled()).toBe("1")
      }

      // A v1 order: the v1 body still publishes; v2 fields on it are refused.
      const v1Now = Math.floor(Date.now() / 1000)
      const v1Body = {
        sequence: 1,
        valid_until: v1Now + 120,
        quote_size: "2000000",
        identity_generation: lease.generation,
        quotes: [v1Quote],
      }
      const v1Sig = yield* Effect.promise(() =>
        signer.signTypedData(
          quoteSetTypedData(999, getAddress(hl.escrow), {
            orderId: v1OrderId,
            sequence: 1n,
            generation: BigInt(lease.generation),
            quoteSize: 2_000_000n,
            validUntil: BigInt(v1Body.valid_until),
            quotes: [
              {
                chainId: 42161n,
                token: getAddress(aster.token),
                recipient: owner.address,
                supply: 1_000_000n,
                receive: 1_000_100n,
                minFill: 100_000n,
              },
            ],
          }),
        ),
      )
      const v1Count = () =>
        sql<{ n: string }>`select count(*)::text as n from quote_sets where order_id = ${v1OrderId}`.pipe(
          Effect.map((r) => r[0]!.n),
        )
      for (const extra of [{ issued_at: v1Now }, { hashlock_count: 1 }, { quotes: [quote] }]) {
        const refused = yield* put(v1OrderId, { ...v1Body, ...extra, signature: v1Sig })
        expect([refused.status, code(refused)]).toEqual([400, "INVALID_REQUEST"])
        expect(yield* v1Count()).toBe("0")
      }
      const v1Ok = yield* put(v1OrderId, { ...v1Body, signature: v1Sig })
      expect(v1Ok.status).toBe(200)
      const v1View = (v1Ok.json as { quote_set: Record<string, unknown> }).quote_set
      expect(v1View).toMatchObject({ sequence: 1, active: true })
      expect(v1View).not.toHaveProperty("hashlock_root")
      expect(yield* v1Count()).toBe("1")

      // The next good v2 set supersedes the first; DELETE deactivates it.
      const next = yield* put(orderId, (yield* v2Body(2)).body)
      expect(next.status).toBe(200)
      expect((yield* rows()).map((r) => [r.sequence, r.active])).toEqual([
        ["1", false],
        ["2", true],
      ])
      // The maker bot's largest set (--hashlocks 800) fits the 64 KiB body and is admitted.
      const large = yield* put(orderId, (yield* v2Body(3, {}, {}, 800)).body)
      expect([large.status, code(large)]).toEqual([200, undefined])
      expect((large.json as { quote_set: { hashlock_count: number } }).quote_set.hashlock_count).toBe(800)
      const cancelled = yield* rawRequest(`${base}/v1/orders/${orderId}/quotes`, {
        method: "DELETE",
        headers: bearer(credential.token),
      })
      expect(cancelled.status).toBe(200)
      expect((cancelled.json as { quote_set: { active: boolean; hashlock_count: number } }).quote_set).toMatchObject({
        active: false,
        hashlock_count: 800,
      })
    }),
  )
})
