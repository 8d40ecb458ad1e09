import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { OrderFundingLive } from "../../actors/OrderFunding.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import type { VenueSimulator } from "../../infra/devnet/venues/VenueSimulator.ts"
import { VenueAdaptersLive } from "../../src/Accounts/VenueAdaptersLive.ts"
import { mockUSDCAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { sendCalls, venueEntry } from "../support/ChainDevnet.ts"
import { TestChainTag } from "../support/ChainStack.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { startVenueNode } from "../support/VenueNode.ts"

const USDC = 1_000_000n

/** The Hyperliquid simulator of the escrow chain: margin, withdrawals paid on chain from its hot wallet. */
class Simulator extends Context.Tag("test/OrdersFundingSimulator")<Simulator, VenueSimulator>() {}

/**
 * One anvil chain (finality lags latest by two blocks with slots 1; the tests mine every 200 ms), the
 * Hyperliquid venue on it with its simulator as `api_url`, a second venue (the order's receive venue) on
 * the same chain of which only the id is used, and the service's HTTP stack, chain clients and Relayer.
 */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const { chain, sim } = yield* startVenueNode("hyperliquid", {}, { slotsInAnEpoch: 1 })
    const hl = {
      ...venueEntry(chain, "hyperliquid", { relayer: { poll_ms: 100 }, watcher: { poll_ms: 100 } }),
      api_url: sim.url,
      venue_api: { request_timeout_ms: 1_500 },
    }
    const { legacy_escrow: _l, ...aster } = { ...venueEntry(chain, "aster"), chain_id: chain.deployment.chainId }
    const config = testAppConfig({
      venues: [hl, { ...aster, kind: "aster" }],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
      withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000 },
    })
    // The order-funding entities on the HTTP stack's in-memory runner (its handlers wake them after their commits),
    // for the whole file as in the service (interrupting a registered entity kind does not re-register it).
    const base = Layer.mergeAll(
      ChainClients.layerWith(),
      FaultPoint.Noop,
      Relayer.Live,
      TestHttpLive,
      VenueAdaptersLive,
    ).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.provideMerge(Layer.succeed(TestChainTag, chain)),
      Layer.merge(Layer.succeed(Simulator, sim)),
    )
    return OrderFundingLive.pipe(Layer.provideMerge(base))
  }),
)

// biome-ignore lint/suspicious/noExplicitAny: wire typed data
type Prepared = { order: Record<string, any>; to_sign: Array<{ kind: string; signer: string; typed_data: any }> }

interface OrderView {
  readonly state: string
  readonly error: string
  readonly escrow_available: string
  readonly margin_move: { venue: string; amount: string; state: string; venue_ref: string | null; error: string } | null
  readonly transactions: Array<{ kind: string; status: string }>
}

/** Mines a block every 200 ms and runs the chain's relayer and watcher and the desk (order funding: an entity per order, in Live). */
/** A block every 200 ms on the test chain, forked. */
const forkMiner = Effect.flatMap(TestChainTag, (chain) =>
  Effect.fork(
    Effect.promise(() => chain.test.mine({ blocks: 1 })).pipe(
      Effect.zipRight(Effect.sleep("200 millis")),
      Effect.forever,
    ),
  ),
)

const background = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const venue = deployment.venues[0]!
  const miner = yield* forkMiner
  const actors = yield* Effect.fork(
    Effect.all([runTxRelayer(venue), runVenueWatcher(venue)], {
      concurrency: "unbounded",
    }),
  )
  return Effect.zipRight(Fiber.interrupt(actors), Fiber.interrupt(miner))
})

const walletBalance = (owner: string) =>
  Effect.flatMap(TestChainTag, (chain) =>
    Effect.promise(() =>
      chain.pub.readContract({
        address: chain.token,
        abi: mockUSDCAbi,
        functionName: "balanceOf",
        args: [owner as Hex],
      }),
    ),
  )

/** An owner with `wallet` base units on the escrow chain and `margin` at the venue, linked, with an identity. */
const marginOwner = (base: string, wallet: bigint, margin: bigint) =>
  Effect.gen(function* () {
    const chain = yield* TestChainTag
    const sim = yield* Simulator
    const owner = privateKeyToAccount(generatePrivateKey())
    const token = yield* signIn(base, owner)
    const linked = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))
    expect(linked.status).toBe(201)
    sim.control.credit(owner.address, margin)
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
    const identity = yield* registerIdentity(base, token, privateKeyToAccount(generatePrivateKey()))
    return { owner, token, identity }
  })

const createOrder = (base: string, token: string, owner: PrivateKeyAccount, identityId: string, id: string) =>
  Effect.map(
    post(
      `${base}/v1/orders`,
      {
        client_order_id: id,
        venue: "hyperliquid",
        receive_venue: "aster",
        owner_address: owner.address,
        amount: "7000000",
        quote_identity_id: identityId,
      },
      bearer(token),
    ),
    (r) => {
      expect(r.status, r.text).toBe(200)
      return r.json as Prepared
    },
  )

const signItem = (account: PrivateKeyAccount, prepared: Prepared, kind: string) =>
  Effect.promise(() => account.signTypedData(prepared.to_sign.find((i) => i.kind === kind)!.typed_data))

/** POST the owner's signatures of every sign item of `prepared` (its venue_transfer too, when it has one). */
const signOrder = (base: string, token: string, owner: PrivateKeyAccount, prepared: Prepared) =>
  Effect.flatMap(
    Effect.forEach(prepared.to_sign, (item) =>
      Effect.map(signItem(owner, prepared, item.kind), (sig) => [item.kind, sig]),
    ),
    (pairs) => post(`${base}/v1/orders/${prepared.order.id}/signatures`, Object.fromEntries(pairs), bearer(token)),
  )

const orderOf = (base: string, token: string, id: string) =>
  Effect.map(rawRequest(`${base}/v1/orders/${id}`, { headers: bearer(token) }), (r) => r.json as OrderView)

const untilSettled = (base: string, token: string, id: string) =>
  pollUntil(orderOf(base, token, id), (o) => o.state === "funded" || o.state === "failed", {
    every: "200 millis",
    within: "60 seconds",
  })

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("order funding on devnet", (it) => {
  it.effect("an order funded from the owner's wallet reaches funded once the escrow event is final", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const chain = yield* TestChainTag
      const { deployment } = yield* AppConfig
      const venue = deployment.venues[0]
      const miner = yield* forkMiner
      const actors = yield* Effect.fork(
        Effect.all([runTxRelayer(venue), runVenueWatcher(venue)], { concurrency: "unbounded" }),
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
      const funded = yield* pollUntil(order(), (o) => o.state === "funded" || o.state === "failed", {
        every: "200 millis",
        within: "60 seconds",
      })
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
  it.effect("orders funded from venue margin: venue_transfer first, awaiting_margin, then funded", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sim = yield* Simulator
      const stop = yield* background
      // 2 USDC in the wallet, 100 at the venue: the order of 7 needs 5 moved from margin.
      const { owner, token, identity } = yield* marginOwner(base, 2n * USDC, 100n * USDC)
      const prepared = yield* createOrder(base, token, owner, identity.id, "margin-1")
      expect(prepared.order.state).toBe("preparing")
      expect(prepared.to_sign.map((i) => i.kind)).toEqual(["venue_transfer", "fund_order", "permit"])
      const transfer = prepared.to_sign[0]!
      expect(transfer.signer).toBe(owner.address.toLowerCase())
      expect(transfer.typed_data.primaryType).toBe("HyperliquidTransaction:SendAsset")
      // SendAsset to the spot dex: the venue pays it out to the signer's own address on the escrow chain.
      expect(transfer.typed_data.message).toMatchObject({ amount: "5", destinationDex: "spot" })
      // The same client id answers the same preparation (nothing new prepared).
      const again = yield* createOrder(base, token, owner, identity.id, "margin-1")
      expect(again).toEqual(prepared)

      const signatures = {
        venue_transfer: yield* signItem(owner, prepared, "venue_transfer"),
        fund_order: yield* signItem(owner, prepared, "fund_order"),
        permit: yield* signItem(owner, prepared, "permit"),
      }
      const signed = yield* post(`${base}/v1/orders/${prepared.order.id}/signatures`, signatures, bearer(token))
      expect(signed.status, signed.text).toBe(200)
      expect(signed.json).toMatchObject({
        state: "awaiting_margin",
        margin_move: { venue: "hyperliquid", amount: "5000000", state: "queued" },
      })
      // A retry after a lost response answers the same order and queues nothing new.
      const retry = yield* post(`${base}/v1/orders/${prepared.order.id}/signatures`, signatures, bearer(token))
      expect(retry.status).toBe(200)
      expect(["awaiting_margin", "funding", "funded"]).toContain((retry.json as OrderView).state)
      const funded = yield* untilSettled(base, token, prepared.order.id)
      expect(funded).toMatchObject({
        state: "funded",
        error: "",
        escrow_available: "7000000",
        margin_move: { venue: "hyperliquid", amount: "5000000", state: "relayed", error: "" },
      })
      expect(funded.margin_move!.venue_ref).toMatch(/^0x[0-9a-f]{40}:[0-9]+$/)
      expect(funded.transactions).toEqual([expect.objectContaining({ kind: "fund", status: "final" })])
      expect(sim.control.balance(owner.address)).toBe(95n * USDC)
      expect(yield* walletBalance(owner.address)).toBe(0n)
      const withdrawals = yield* rawRequest(`${base}/v1/withdrawals/history`, { headers: bearer(token) })
      expect((withdrawals.json as { data: Array<{ amount: string; state: string }> }).data).toEqual([
        expect.objectContaining({ amount: "5000000", state: "relayed", to: "signer" }),
      ])
      const journal = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ kind: string }>`
          select kind from journal where payload->>'order_id' = ${prepared.order.id} order by id`,
      )
      expect(journal.map((j) => j.kind)).toEqual([
        "order.created",
        "order.awaiting_margin",
        "order.funding",
        "order.funded",
      ])
      yield* stop
    }),
  )

  it.effect(
    "venue_transfer signature missing, not the owner's or a contract's: 422 SIGNATURE_INVALID, nothing changed",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const sim = yield* Simulator
        const { owner, token, identity } = yield* marginOwner(base, 0n, 50n * USDC)
        const prepared = yield* createOrder(base, token, owner, identity.id, "margin-bad")
        expect(prepared.to_sign.map((i) => i.kind)).toEqual(["venue_transfer", "fund_order", "permit"])
        expect(prepared.to_sign[0]!.typed_data.message).toMatchObject({ amount: "7" })
        const fund_order = yield* signItem(owner, prepared, "fund_order")
        const permit = yield* signItem(owner, prepared, "permit")
        const stranger = privateKeyToAccount(generatePrivateKey())
        const cases = [
          { fund_order, permit },
          { fund_order, permit, venue_transfer: yield* signItem(stranger, prepared, "venue_transfer") },
          // The owner's signature of another item is not a signature of the transfer.
          { fund_order, permit, venue_transfer: fund_order },
          // A contract's longer signature (ERC-1271 shape): the venue takes only its owner's own key (was a 500).
          {
            fund_order,
            permit,
            venue_transfer: `${yield* signItem(owner, prepared, "venue_transfer")}${"ab".repeat(33)}`,
          },
        ]
        for (const body of cases) {
          const res = yield* post(`${base}/v1/orders/${prepared.order.id}/signatures`, body, bearer(token))
          expect(res.status, res.text).toBe(422)
          expect((res.json as { error: { code: string } }).error.code).toBe("SIGNATURE_INVALID")
        }
        // A good transfer signature with a bad fund signature changes nothing either.
        const badFund = yield* post(
          `${base}/v1/orders/${prepared.order.id}/signatures`,
          { fund_order: permit, permit, venue_transfer: yield* signItem(owner, prepared, "venue_transfer") },
          bearer(token),
        )
        expect([badFund.status, (badFund.json as { error: { code: string } }).error.code]).toEqual([
          422,
          "SIGNATURE_INVALID",
        ])
        const order = yield* orderOf(base, token, prepared.order.id)
        expect(order).toMatchObject({ state: "preparing", margin_move: null })
        const history = yield* rawRequest(`${base}/v1/withdrawals/history`, { headers: bearer(token) })
        expect((history.json as { data: Array<unknown> }).data).toEqual([])
        expect(sim.control.balance(owner.address)).toBe(50n * USDC)
        // A margin short of the shortfall: no order, 422 INSUFFICIENT_BALANCE.
        const short = yield* post(
          `${base}/v1/orders`,
          {
            client_order_id: "margin-short",
            venue: "hyperliquid",
            receive_venue: "aster",
            owner_address: owner.address,
            amount: "60000000",
            quote_identity_id: identity.id,
          },
          bearer(token),
        )
        expect([short.status, (short.json as { error: { code: string } }).error.code]).toEqual([
          422,
          "INSUFFICIENT_BALANCE",
        ])
        const none = yield* rawRequest(`${base}/v1/orders?client_order_id=margin-short`, { headers: bearer(token) })
        expect((none.json as { data: Array<unknown> }).data).toEqual([])
      }),
  )

  it.effect("a venue transfer the venue refuses fails the order with the venue's error; fund is never sent", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sim = yield* Simulator
      const stop = yield* background
      const { owner, token, identity } = yield* marginOwner(base, 0n, 20n * USDC)
      const prepared = yield* createOrder(base, token, owner, identity.id, "margin-refused")
      sim.control.refuseNext(1, { message: "Insufficient balance for withdrawal." })
      const signed = yield* signOrder(base, token, owner, prepared)
      expect(signed.status, signed.text).toBe(200)
      const failed = yield* untilSettled(base, token, prepared.order.id)
      expect(failed.state).toBe("failed")
      expect(failed.error).toContain("Insufficient balance for withdrawal.")
      expect(failed.margin_move).toMatchObject({ state: "failed" })
      expect(failed.transactions).toEqual([])
      expect(sim.control.balance(owner.address)).toBe(20n * USDC)
      yield* stop
    }),
  )
  it.effect("a fund call relayed for an order still awaiting_margin (a stop between two commits) reaches funded", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { deployment } = yield* AppConfig
      const venue = deployment.venues[0]!
      const miner = yield* forkMiner
      // The relayer but no watcher: the fund goes out and is final, and nothing indexes it yet.
      const relayer = yield* Effect.fork(runTxRelayer(venue))
      const { owner, token, identity } = yield* marginOwner(base, 2n * USDC, 100n * USDC)
      const prepared = yield* createOrder(base, token, owner, identity.id, "margin-split")
      const signed = yield* signOrder(base, token, owner, prepared)
      expect(signed.status, signed.text).toBe(200)
      const key = `fund:${prepared.order.id}`
      yield* pollUntil(
        sql<{ status: string }>`select status from relayer_requests where idempotency_key = ${key}`,
        (rows) => rows[0]?.status === "final",
        { every: "200 millis", within: "30 seconds" },
      )
      expect(yield* walletBalance(owner.address)).toBe(0n)
      // Where a stop between the old code's two commits (the relayer's row, then the order's move) left it.
      yield* sql`update orders set state = 'awaiting_margin' where id = ${prepared.order.id}`
      const watcher = yield* Effect.fork(runVenueWatcher(venue))
      const settled = yield* untilSettled(base, token, prepared.order.id)
      expect(settled).toMatchObject({ state: "funded", error: "", escrow_available: "7000000" })
      yield* Fiber.interrupt(watcher)
      yield* Fiber.interrupt(relayer)
      yield* Fiber.interrupt(miner)
    }),
  )

  it.effect("a fund call the relayer finds replaced (its nonce consumed elsewhere) fails the order", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { owner, token, identity } = yield* marginOwner(base, 7n * USDC, 0n)
      const prepared = yield* createOrder(base, token, owner, identity.id, "fund-replaced")
      expect(prepared.to_sign.map((i) => i.kind)).toEqual(["fund_order", "permit"])
      const signed = yield* signOrder(base, token, owner, prepared)
      expect([signed.status, (signed.json as OrderView).state]).toEqual([200, "funding"])
      // The relayer's verdict on a nonce another transaction took (chain-relayer.test proves the relayer reaches it).
      yield* sql`update relayer_requests set status = 'replaced' where idempotency_key = ${`fund:${prepared.order.id}`}`
      const failed = yield* untilSettled(base, token, prepared.order.id)
      expect(failed.state).toBe("failed")
      expect(failed.error).toMatch(/replaced/)
      expect(yield* walletBalance(owner.address)).toBe(7n * USDC)
    }),
  )
})
