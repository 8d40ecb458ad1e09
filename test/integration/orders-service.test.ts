/**
 * The Orders service (src/Orders.ts) on its Test layer: a throw-away database, one real anvil chain with the devnet
 * contracts (the owner's wallet, permit domain and the escrow the relayed fund call must satisfy), the Hyperliquid
 * venue simulator behind the real venue adapters (margin for a venue transfer), the real Relayer; no HTTP and no
 * cluster. The routes' own tests (orders*.test.ts, quotes-v2.test.ts) cover the wire; this proves the concept stands
 * alone: each bad input is refused with its catalogue error and writes nothing, and the main paths write what they
 * should.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { encodeFunctionData, type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import type { VenueSimulator } from "../../infra/devnet/venues/VenueSimulator.ts"
import { VenueAdaptersLive } from "../../src/Accounts/VenueAdaptersLive.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { type CreateOrderInput, Orders, type QuoteSetInput } from "../../src/Orders.ts"
import { Relayer } from "../../src/Relayer.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { SqlTest } from "../../src/Sql/TestDatabase.ts"
import { sendCalls, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { insertRow } from "../support/Rows.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { startVenueNode } from "../support/VenueNode.ts"

class Fixture extends Context.Tag("test/OrdersServiceFixture")<
  Fixture,
  { readonly chain: TestChain; readonly sim: VenueSimulator }
>() {}

/** Hyperliquid (with its simulator as api_url) and an Aster venue id on the same chain: the receive venue. */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const { chain, sim } = yield* startVenueNode("hyperliquid", {}, { slotsInAnEpoch: 1 })
    const hl = { ...venueEntry(chain, "hyperliquid"), api_url: sim.url, venue_api: { request_timeout_ms: 1_500 } }
    const { legacy_escrow: _l, ...aster } = { ...venueEntry(chain, "aster"), chain_id: chain.deployment.chainId }
    const config = testAppConfig({
      venues: [hl, { ...aster, kind: "aster" }],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
    })
    return Orders.Test.pipe(
      Layer.provideMerge(Layer.mergeAll(ChainClients.Live, Relayer.Live, SecureRandom.Live, VenueAdaptersLive)),
      Layer.provideMerge(SqlTest),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Fixture, { chain, sim })),
    )
  }),
)

/** The catalogue error a failed call ended with (its tag and message). */
const failure = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") return { tag: "none", message: String(exit) }
    const error = exit.cause.error as { _tag: string; message: string }
    return { tag: error._tag, message: error.message }
  })

/** Row counts of what the service writes. */
const written = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{
    orders: number
    journal: number
    relayer_requests: number
    quote_sets: number
    withdrawals: number
    preparations: number
  }>`
    select (select count(*)::int from orders) as orders, (select count(*)::int from journal) as journal,
      (select count(*)::int from relayer_requests) as relayer_requests,
      (select count(*)::int from quote_sets) as quote_sets, (select count(*)::int from withdrawals) as withdrawals,
      (select count(*)::int from withdrawal_preparations) as preparations`
  return row!
})

const fresh = () => privateKeyToAccount(generatePrivateKey())
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
/** The high-s twin of a signature (same signer, refused as malleable). */
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

/**
 * A master (access granted) with `owner` linked on Hyperliquid holding `wallet` base units on the escrow chain and
 * `margin` at the venue, and a credential quote identity whose lease is live at generation 1.
 */
const maker = (wallet: bigint, margin = 0n) =>
  Effect.gen(function* () {
    const { chain, sim } = yield* Fixture
    const master = fresh().address.toLowerCase()
    const owner = fresh()
    const signer = fresh()
    const identityId = crypto.randomUUID()
    yield* insertRow("accounts", { master, access: "granted", created_at: new Date() })
    yield* insertRow("linked_accounts", {
      master,
      venue: "hyperliquid",
      address: owner.address.toLowerCase(),
      linked_at: new Date(),
    })
    yield* insertRow("quote_identities", {
      id: identityId,
      master,
      signer: signer.address.toLowerCase(),
      kind: "credential",
      generation: 1,
      lease_expires_at: new Date(Date.now() + 120_000),
      cancel_epoch: 0,
      created_at: new Date(),
    })
    if (wallet > 0n) {
      yield* Effect.promise(() =>
        sendCalls(chain, privateKeyToAccount(ANVIL_PRIVATE_KEYS[3] as Hex), [
          {
            to: chain.token,
            data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [owner.address, wallet] }),
          },
        ]),
      )
    }
    if (margin > 0n) sim.control.credit(owner.address, margin)
    const request = (clientOrderId: string, amount = "5000000"): CreateOrderInput => ({
      client_order_id: clientOrderId,
      venue: "hyperliquid",
      receive_venue: "aster",
      owner_address: owner.address,
      amount,
      quote_identity_id: identityId,
    })
    return { master, owner, signer, identityId, request }
  })

const signItem = (
  owner: PrivateKeyAccount,
  toSign: ReadonlyArray<{ kind: string; typed_data: unknown }>,
  kind: string,
) =>
  Effect.promise(() =>
    owner.signTypedData(toSign.find((i) => i.kind === kind)!.typed_data as Parameters<typeof owner.signTypedData>[0]),
  )

const journalOf = (orderId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ kind: string }>`select kind from journal where payload->>'order_id' = ${orderId} order by id`,
      (rows) => rows.map((r) => r.kind),
    ),
  )

describe("Orders service", () => {
  layer(Live, { timeout: "180 seconds", excludeTestServices: true })((it) => {
    it.effect("create: each bad request is refused and writes nothing; a good one, its retry and its conflict", () =>
      Effect.gen(function* () {
        const orders = yield* Orders
        const { chain } = yield* Fixture
        const m = yield* maker(10_000_000n)
        const other = yield* maker(10_000_000n)
        const before = yield* written
        const refusals = [
          [{ ...m.request("c1"), venue: "nowhere" }, "NotFound", "unknown venue"],
          [
            { ...m.request("c1"), receive_venue: "hyperliquid" },
            "InvalidRequest",
            "receive_venue must differ from venue",
          ],
          [m.request("c1", "0"), "InvalidRequest", "amount must be positive"],
          [
            { ...m.request("c1"), quote_identity_id: crypto.randomUUID() },
            "NotFound",
            "no live quote identity with this id",
          ],
          [
            { ...m.request("c1"), quote_identity_id: other.identityId },
            "NotFound",
            "no live quote identity with this id",
          ],
          [
            { ...m.request("c1"), owner_address: fresh().address },
            "NotFound",
            "owner_address is not your linked account on hyperliquid",
          ],
        ] as const
        for (const [input, tag, message] of refusals) {
          expect(yield* failure(orders.create(m.master, input))).toEqual({ tag, message })
        }
        expect(yield* failure(orders.findCreated(m.master, { ...m.request("c1"), venue: "nowhere" }))).toEqual({
          tag: "NotFound",
          message: "unknown venue",
        })
        expect(yield* written).toEqual(before)

        expect(yield* orders.findCreated(m.master, m.request("c1"))).toEqual(expect.objectContaining({ _tag: "None" }))
        const created = yield* orders.create(m.master, m.request("c1"))
        expect(created.order).toMatchObject({
          venue: "hyperliquid",
          receive_venue: "aster",
          owner_address: m.owner.address.toLowerCase(),
          state: "preparing",
          amount: "5000000",
          escrow_available: "0",
          client_order_id: "c1",
          quote_identity_id: m.identityId,
          quote_signer: m.signer.address.toLowerCase(),
          quote_set: null,
          margin_move: null,
          transactions: [],
        })
        expect(created.order.id).toMatch(/^0x[0-9a-f]{64}$/)
        expect(created.to_sign.map((i) => [i.kind, i.signer])).toEqual([
          ["fund_order", m.owner.address.toLowerCase()],
          ["permit", m.owner.address.toLowerCase()],
        ])
        const fund = created.to_sign[0]!.typed_data
        expect(fund.domain.verifyingContract.toLowerCase()).toBe(chain.escrow.toLowerCase())
        expect(fund.message).toMatchObject({ orderId: created.order.id, amount: "5000000" })
        expect(fund.message.quoteSigner.toLowerCase()).toBe(m.signer.address.toLowerCase())
        expect(created.to_sign[1]!.typed_data.message.spender.toLowerCase()).toBe(chain.escrow.toLowerCase())
        expect(yield* journalOf(created.order.id)).toEqual(["order.created"])

        // A retry answers the same order (findCreated and create alike); other parameters conflict, writing nothing.
        const after = yield* written
        const found = yield* orders.findCreated(m.master, m.request("c1"))
        expect(found).toEqual(expect.objectContaining({ _tag: "Some", value: created }))
        expect(yield* orders.create(m.master, m.request("c1"))).toEqual(created)
        const conflict = { tag: "StateConflict", message: "client_order_id was used with other parameters" }
        expect(yield* failure(orders.findCreated(m.master, m.request("c1", "6000000")))).toEqual(conflict)
        expect(yield* failure(orders.create(m.master, m.request("c1", "6000000")))).toEqual(conflict)
        // The client id is the master's own: another master may use it.
        expect((yield* orders.create(other.master, other.request("c1"))).order.id).not.toBe(created.order.id)
        expect((yield* written).orders).toBe(after.orders + 1)
      }),
    )

    it.effect("sign: wrong, malleable, malformed or misplaced signatures relay nothing; the owner's relay fund", () =>
      Effect.gen(function* () {
        const orders = yield* Orders
        const { chain } = yield* Fixture
        const sql = yield* SqlClient.SqlClient
        const m = yield* maker(10_000_000n)
        const { order, to_sign } = yield* orders.create(m.master, m.request("s1"))
        const fundSig = yield* signItem(m.owner, to_sign, "fund_order")
        const permitSig = yield* signItem(m.owner, to_sign, "permit")
        const stranger = fresh()
        const strangerFund = yield* signItem(stranger, to_sign, "fund_order")
        const before = yield* written
        const refusals = [
          [m.master, order.id, { fund_order: strangerFund, permit: permitSig }, "SignatureInvalid"],
          [m.master, order.id, { fund_order: fundSig, permit: strangerFund }, "SignatureInvalid"],
          [m.master, order.id, { fund_order: highS(fundSig), permit: permitSig }, "SignatureMalleable"],
          [m.master, order.id, { fund_order: "0x1234", permit: permitSig }, "SignatureMalformed"],
          [m.master, order.id, { fund_order: fundSig, permit: permitSig, venue_transfer: fundSig }, "InvalidRequest"],
          [fresh().address.toLowerCase(), order.id, { fund_order: fundSig, permit: permitSig }, "NotFound"],
          [m.master, `0x${"ab".repeat(32)}`, { fund_order: fundSig, permit: permitSig }, "NotFound"],
        ] as const
        for (const [master, id, signatures, tag] of refusals) {
          expect((yield* failure(orders.sign(master, id, signatures))).tag).toBe(tag)
        }
        expect(yield* written).toEqual(before)
        expect((yield* orders.get(m.master, order.id)).state).toBe("preparing")

        const signed = yield* orders.sign(m.master, order.id, { fund_order: fundSig, permit: permitSig })
        expect(signed.state).toBe("funding")
        expect(signed.transactions).toEqual([expect.objectContaining({ kind: "fund", status: "queued" })])
        // A retry answers the order and relays nothing more.
        expect((yield* orders.sign(m.master, order.id, { fund_order: fundSig, permit: permitSig })).state).toBe(
          "funding",
        )
        const requests = yield* sql<{ calldata: Hex; function_name: string; target: string }>`
          select calldata, function_name, target from relayer_requests where idempotency_key = ${`fund:${order.id}`}`
        expect(requests.map((r) => [r.function_name, r.target])).toEqual([["fund", chain.escrow.toLowerCase()]])
        // The relayed call is one the escrow accepts (simulated from the operator on the real chain).
        const operator = privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as Hex).address
        yield* Effect.promise(() =>
          chain.pub.call({ account: operator, to: chain.escrow, data: requests[0]!.calldata }),
        )
        expect(yield* journalOf(order.id)).toEqual(["order.created", "order.funding"])
        // A failed order is refused (409), not re-signed.
        yield* sql`update orders set state = 'failed' where id = ${order.id}`
        expect(yield* failure(orders.sign(m.master, order.id, { fund_order: fundSig, permit: permitSig }))).toEqual({
          tag: "StateConflict",
          message: "the order is failed",
        })
      }),
    )

    it.effect("sign: the order's move and its relayed fund call or queued withdrawal commit together, or neither", () =>
      Effect.gen(function* () {
        const orders = yield* Orders
        const sql = yield* SqlClient.SqlClient
        // The fault: the database refuses the order's move (a trigger on the orders listed), after the relayer's
        // row or the withdrawal was written in the same request.
        yield* sql`create table if not exists test_refused_moves (id text primary key)`
        yield* sql.unsafe(`create or replace function test_refuse_move() returns trigger language plpgsql as $$
          begin
            if new.state <> old.state and exists (select 1 from test_refused_moves where id = new.id) then
              raise exception 'injected: the order''s move failed';
            end if;
            return new;
          end $$`)
        yield* sql`drop trigger if exists test_refuse_move on orders`
        yield* sql`create trigger test_refuse_move before update on orders for each row execute function test_refuse_move()`
        const refuse = (id: string) => sql`insert into test_refused_moves values (${id})`
        const allow = (id: string) => sql`delete from test_refused_moves where id = ${id}`
        const funds = (id: string) =>
          Effect.map(
            sql<{ n: number }>`select count(*)::int as n from relayer_requests where idempotency_key = ${`fund:${id}`}`,
            ([r]) => r!.n,
          )

        // Wallet funding: nothing relayed while the order stays preparing; the retry funds it.
        const w = yield* maker(10_000_000n)
        const wallet = yield* orders.create(w.master, w.request("t1"))
        const walletSigs = {
          fund_order: yield* signItem(w.owner, wallet.to_sign, "fund_order"),
          permit: yield* signItem(w.owner, wallet.to_sign, "permit"),
        }
        yield* refuse(wallet.order.id)
        expect(Exit.isFailure(yield* Effect.exit(orders.sign(w.master, wallet.order.id, walletSigs)))).toBe(true)
        expect((yield* orders.get(w.master, wallet.order.id)).state).toBe("preparing")
        expect(yield* funds(wallet.order.id)).toBe(0)
        expect(yield* journalOf(wallet.order.id)).toEqual(["order.created"])
        yield* allow(wallet.order.id)
        expect((yield* orders.sign(w.master, wallet.order.id, walletSigs)).state).toBe("funding")
        expect(yield* funds(wallet.order.id)).toBe(1)

        // Venue margin: no withdrawal queued while the order stays preparing; the retry queues it once.
        const v = yield* maker(0n, 100_000_000n)
        const venue = yield* orders.create(v.master, v.request("t2", "3000000"))
        const venueSigs = {
          venue_transfer: yield* signItem(v.owner, venue.to_sign, "venue_transfer"),
          fund_order: yield* signItem(v.owner, venue.to_sign, "fund_order"),
          permit: yield* signItem(v.owner, venue.to_sign, "permit"),
        }
        const queued = sql<{ amount: string; state: string }>`
          select amount::text, state from withdrawals where master = ${v.master}`
        yield* refuse(venue.order.id)
        expect(Exit.isFailure(yield* Effect.exit(orders.sign(v.master, venue.order.id, venueSigs)))).toBe(true)
        expect((yield* orders.get(v.master, venue.order.id)).state).toBe("preparing")
        expect(yield* queued).toEqual([])
        yield* allow(venue.order.id)
        expect((yield* orders.sign(v.master, venue.order.id, venueSigs)).state).toBe("awaiting_margin")
        expect(yield* queued).toEqual([{ amount: "3000000", state: "queued" }])
        yield* sql`drop trigger test_refuse_move on orders`
      }),
    )

    it.effect("reads: get, preparation and byClientId answer the master's own order only", () =>
      Effect.gen(function* () {
        const orders = yield* Orders
        const m = yield* maker(10_000_000n)
        const created = yield* orders.create(m.master, m.request("r1"))
        const stranger = fresh().address.toLowerCase()
        expect(yield* orders.get(m.master, created.order.id)).toEqual(created.order)
        expect(yield* orders.preparation(m.master, created.order.id)).toEqual(created)
        expect(yield* orders.byClientId(m.master, "r1")).toEqual([created.order])
        expect(yield* orders.byClientId(m.master, "r2")).toEqual([])
        expect(yield* orders.byClientId(stranger, "r1")).toEqual([])
        const none = { tag: "NotFound", message: "no such order" }
        expect(yield* failure(orders.get(stranger, created.order.id))).toEqual(none)
        expect(yield* failure(orders.preparation(stranger, created.order.id))).toEqual(none)
      }),
    )

    it.effect(
      "quotes: refusals store nothing; a signed set is published by session or credential, then cancelled",
      () =>
        Effect.gen(function* () {
          const orders = yield* Orders
          const { chain } = yield* Fixture
          const sql = yield* SqlClient.SqlClient
          const m = yield* maker(10_000_000n)
          const { order } = yield* orders.create(m.master, m.request("q1", "3000000"))
          const orderId = order.id as Hex
          // The escrow index shows the order funded with 3 USDC (indexing has its own tests).
          yield* insertRow("escrow_orders", {
            venue: "hyperliquid",
            order_id: orderId,
            owner: m.owner.address.toLowerCase(),
            operator: privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as Hex).address.toLowerCase(),
            quote_signer: m.signer.address.toLowerCase(),
            available: "3000000",
            locked: "0",
            created_block: 1,
            block_number: 1,
            block_hash: `0x${"00".repeat(32)}`,
          })
          const quote = {
            venue: "aster",
            chain_id: chain.deployment.chainId,
            token: chain.token,
            recipient: m.owner.address,
            supply: "1000000",
            receive: "1000100",
            min_fill: "100000",
          }
          const set = (sequence: number, over: Partial<QuoteSetInput> = {}, by = m.signer) =>
            Effect.gen(function* () {
              const fields = {
                sequence,
                valid_until: Math.floor(Date.now() / 1000) + 120,
                quote_size: "2000000",
                identity_generation: "1",
                quotes: [quote],
                ...over,
              }
              const signature = yield* Effect.promise(() =>
                by.signTypedData(
                  quoteSetTypedData(chain.deployment.chainId, chain.escrow, {
                    orderId,
                    sequence: BigInt(fields.sequence),
                    generation: BigInt(fields.identity_generation),
                    quoteSize: BigInt(fields.quote_size),
                    validUntil: BigInt(fields.valid_until),
                    quotes: fields.quotes.map((q) => ({
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
              return { ...fields, signature } as QuoteSetInput
            })
          const session = { _tag: "Session", master: m.master } as const
          const credential = { _tag: "Credential", quoteIdentityId: m.identityId, scopes: ["quote"] } as const
          const before = yield* written
          const refusals = [
            [credential, yield* set(1, {}, fresh()), "SignatureInvalid"],
            [credential, yield* set(1, { quote_size: "3000001" }), "InsufficientBalance"],
            [credential, yield* set(1, { valid_until: Math.floor(Date.now() / 1000) + 3600 }), "InvalidRequest"],
            [credential, yield* set(1, { quotes: [{ ...quote, venue: "hyperliquid" }] }), "InvalidRequest"],
            [credential, yield* set(1, { hashlocks: [`0x${"11".repeat(32)}`] }), "InvalidRequest"],
            [credential, yield* set(1, { identity_generation: "2" }), "LeaseExpired"],
            [{ ...credential, scopes: ["read"] }, yield* set(1), "Forbidden"],
            [{ ...credential, quoteIdentityId: crypto.randomUUID() }, yield* set(1), "NotFound"],
            [{ _tag: "Session", master: fresh().address.toLowerCase() }, yield* set(1), "NotFound"],
          ] as const
          for (const [by, input, tag] of refusals) {
            expect((yield* failure(orders.publishQuotes(by, orderId, input))).tag).toBe(tag)
          }
          expect(yield* written).toEqual(before)

          const published = yield* orders.publishQuotes(credential, orderId, yield* set(1))
          expect(published).toMatchObject({
            last_sequence: 1,
            quote_set: { sequence: 1, active: true, quote_size: "2000000", identity_generation: "1" },
          })
          expect(published).not.toHaveProperty("escrow_available")
          expect(published).not.toHaveProperty("margin_move")
          expect(yield* failure(orders.publishQuotes(session, orderId, yield* set(1)))).toEqual({
            tag: "QuoteStale",
            message: "sequence must exceed 1",
          })
          const bySession = yield* orders.publishQuotes(session, orderId, yield* set(2))
          expect(bySession).toMatchObject({ last_sequence: 2, escrow_available: expect.any(String), margin_move: null })
          // The lease lapses: a set of its generation is refused.
          yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${m.identityId}`
          expect((yield* failure(orders.publishQuotes(credential, orderId, yield* set(3)))).tag).toBe("LeaseExpired")
          const cancelled = yield* orders.cancelQuotes(credential, orderId)
          expect(cancelled.quote_set).toMatchObject({ sequence: 2, active: false })
          expect(yield* failure(orders.cancelQuotes({ ...credential, scopes: [] }, orderId))).toEqual({
            tag: "Forbidden",
            message: "this credential lacks the quote scope",
          })
          const sets = yield* sql<{ sequence: string; active: boolean }>`
          select sequence::text, active from quote_sets where order_id = ${orderId} order by sequence`
          expect(sets).toEqual([
            { sequence: "1", active: false },
            { sequence: "2", active: false },
          ])
          expect(yield* journalOf(orderId)).toEqual([
            "order.created",
            "quote_set.published",
            "quote_set.published",
            "quote_set.cancelled",
          ])
        }),
    )

    it.effect(
      "venue margin: create offers the shortfall as a venue_transfer; signing queues it (awaiting_margin)",
      () =>
        Effect.gen(function* () {
          const orders = yield* Orders
          const sql = yield* SqlClient.SqlClient
          // 2 USDC in the wallet, 100 at the venue: an order of 7 moves 5 from margin first.
          const m = yield* maker(2_000_000n, 100_000_000n)
          const prepared = yield* orders.create(m.master, m.request("v1", "7000000"))
          expect(prepared.to_sign.map((i) => i.kind)).toEqual(["venue_transfer", "fund_order", "permit"])
          expect(prepared.to_sign[0]!.typed_data.primaryType).toBe("HyperliquidTransaction:SendAsset")
          expect(yield* orders.create(m.master, m.request("v1", "7000000"))).toEqual(prepared)
          const signatures = {
            venue_transfer: yield* signItem(m.owner, prepared.to_sign, "venue_transfer"),
            fund_order: yield* signItem(m.owner, prepared.to_sign, "fund_order"),
            permit: yield* signItem(m.owner, prepared.to_sign, "permit"),
          }
          const before = yield* written
          const { venue_transfer: _vt, ...withoutTransfer } = signatures
          expect(yield* failure(orders.sign(m.master, prepared.order.id, withoutTransfer))).toEqual({
            tag: "SignatureInvalid",
            message: "the order's venue_transfer must be signed by the owner",
          })
          const byStranger = {
            ...signatures,
            venue_transfer: yield* signItem(fresh(), prepared.to_sign, "venue_transfer"),
          }
          expect(yield* failure(orders.sign(m.master, prepared.order.id, byStranger))).toEqual({
            tag: "SignatureInvalid",
            message: "the venue_transfer is not signed by the owner",
          })
          expect(yield* written).toEqual(before)

          const signed = yield* orders.sign(m.master, prepared.order.id, signatures)
          expect(signed).toMatchObject({
            state: "awaiting_margin",
            margin_move: { venue: "hyperliquid", amount: "5000000", state: "queued" },
            transactions: [],
          })
          // A retry answers the order and queues nothing new; no fund call is relayed before the margin lands.
          expect((yield* orders.sign(m.master, prepared.order.id, signatures)).state).toBe("awaiting_margin")
          const withdrawals = yield* sql<{ amount: string; state: string }>`
          select amount::text, state from withdrawals where master = ${m.master}`
          expect(withdrawals).toEqual([{ amount: "5000000", state: "queued" }])
          expect((yield* written).relayer_requests).toBe(before.relayer_requests)
          expect(yield* journalOf(prepared.order.id)).toEqual(["order.created", "order.awaiting_margin"])
        }),
    )
  })
})
