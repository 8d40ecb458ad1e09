import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { type Address, encodeFunctionData, getAddress, type Hex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { OrderFundingLive } from "../../actors/OrderFunding.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import type { VenueSimulator } from "../../infra/devnet/venues/VenueSimulator.ts"
import { VenueAdaptersLive } from "../../src/Accounts/VenueAdaptersLive.ts"
import { mockCoreDepositWalletAbi, mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { account, key, sendCalls, venueEntry } from "../support/ChainDevnet.ts"
import { TestChainTag } from "../support/ChainStack.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { startVenueNode } from "../support/VenueNode.ts"

/**
 * Orders on the v2 escrow (settlement.escrow_version 2; issue 23): one anvil chain (finality two blocks behind,
 * a block every 200 ms) with the Hyperliquid venue and its SettlementEscrowV2 configured, a second venue id on the
 * same chain as the receive venue, and the real relayer, watcher (v1 and v2 index), funding sweep, withdrawal desk
 * and close queue. The venue's simulator pays margin withdrawals from its hot wallet (anvil #9).
 */
class Simulator extends Context.Tag("test/OrdersV2Simulator")<Simulator, VenueSimulator>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const { chain, sim } = yield* startVenueNode("hyperliquid", {}, { slotsInAnEpoch: 1 })
    const fast = { relayer: { poll_ms: 100 }, watcher: { poll_ms: 100 }, escrowV2: true }
    const { legacy_escrow: _l, ...hl } = venueEntry(chain, "hyperliquid", fast)
    const { legacy_escrow: _a, ...aster } = venueEntry(chain, "aster")
    const config = testAppConfig({
      venues: [
        { ...hl, api_url: sim.url, venue_api: { request_timeout_ms: 1_500 } },
        { ...aster, kind: "aster" },
      ],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
      withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000 },
      settlement: { escrow_version: 2 },
      // Neither anvil #0 (the deployer switches the venue mock's refusal) nor #9 (the simulator's hot wallet):
      // the relayer owns the operator's nonces.
      operator_key: key(7),
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
type SignItem = { kind: string; signer: string; typed_data: any }
type Prepared = { order: { id: string; state: string }; to_sign: Array<SignItem> }
interface OrderView {
  readonly state: string
  readonly escrow_available: string
  readonly quotable: string
  readonly transactions: Array<{ kind: string; status: string }>
}
interface EscrowRow {
  readonly venue: string
  readonly order_id: string
  readonly owner: string
  readonly available: string
  readonly operator: string
  readonly managed: boolean
  readonly closing: boolean
}

const AMOUNT = 7_000_000n

/** Mines a block every 200 ms and runs the venue's relayer and watcher, the funding sweep and the close queue. */
const background = Effect.gen(function* () {
  const chain = yield* TestChainTag
  const { deployment } = yield* AppConfig
  const venue = deployment.venues[0]!
  const miner = yield* Effect.fork(
    Effect.promise(() => chain.test.mine({ blocks: 1 })).pipe(
      Effect.zipRight(Effect.sleep("200 millis")),
      Effect.forever,
    ),
  )
  const actors = yield* Effect.fork(
    Effect.all([runTxRelayer(venue), runVenueWatcher(venue)], {
      concurrency: "unbounded",
    }),
  )
  return Effect.zipRight(Fiber.interrupt(actors), Fiber.interrupt(miner))
})

const code = (res: RawResponse) => (res.json as { error?: { code: string } } | undefined)?.error?.code
const expectEnvelope = (res: RawResponse, status: number, errorCode: string) => {
  expect([res.status, code(res)], res.text).toEqual([status, errorCode])
  const error = (res.json as { error: { message: string; request_id: string } }).error
  expect(error.request_id).toBe(res.headers["x-request-id"])
}

const wallet = (owner: Address) =>
  Effect.flatMap(TestChainTag, (chain) =>
    Effect.promise(() =>
      chain.pub.readContract({ address: chain.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [owner] }),
    ),
  )

const v2Order = (owner: Address, orderId: string) =>
  Effect.flatMap(TestChainTag, (chain) =>
    Effect.promise(() =>
      Promise.all([
        chain.pub.readContract({
          address: chain.escrowV2!,
          abi: settlementEscrowV2Abi,
          functionName: "getOrder",
          args: [owner, orderId as Hex],
        }),
        chain.pub.readContract({
          address: chain.escrowV2!,
          abi: settlementEscrowV2Abi,
          functionName: "closeRequested",
          args: [owner, orderId as Hex],
        }),
      ]),
    ),
  ).pipe(Effect.map(([order, closeRequested]) => ({ available: order.available, closeRequested })))

/** A fresh owner with `wallet` base units in the wallet, signed in, linked on hyperliquid, with a quote identity. */
const newOwner = (base: string, wallet = 20_000_000n) =>
  Effect.gen(function* () {
    const chain = yield* TestChainTag
    const owner = privateKeyToAccount(generatePrivateKey())
    yield* Effect.promise(() =>
      sendCalls(chain, privateKeyToAccount(ANVIL_PRIVATE_KEYS[3] as Hex), [
        {
          to: chain.token,
          data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [owner.address, wallet] }),
        },
      ]),
    )
    const token = yield* signIn(base, owner)
    const linked = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))
    expect(linked.status, linked.text).toBe(201)
    const identity = yield* registerIdentity(base, token, privateKeyToAccount(generatePrivateKey()))
    return { owner, auth: bearer(token), identityId: identity.id as string }
  })

type Owner = Effect.Effect.Success<ReturnType<typeof newOwner>>

const createOrder = (base: string, o: Owner, clientId: string) =>
  Effect.map(
    post(
      `${base}/v1/orders`,
      {
        client_order_id: clientId,
        venue: "hyperliquid",
        receive_venue: "aster",
        owner_address: o.owner.address,
        amount: AMOUNT.toString(),
        quote_identity_id: o.identityId,
      },
      o.auth,
    ),
    (r) => {
      expect(r.status, r.text).toBe(200)
      return r.json as Prepared
    },
  )

const sign = (account: PrivateKeyAccount, item: SignItem | undefined) =>
  Effect.promise(() => account.signTypedData(item!.typed_data))

const orderOf = (base: string, o: Owner, id: string) =>
  Effect.map(rawRequest(`${base}/v1/orders/${id}`, { headers: o.auth }), (r) => r.json as OrderView)

const untilState = (base: string, o: Owner, id: string, states: ReadonlyArray<string>) =>
  pollUntil(orderOf(base, o, id), (v) => states.includes(v.state), { every: "200 millis", within: "60 seconds" })

const escrowOf = (base: string, o: Owner) =>
  Effect.map(rawRequest(`${base}/v1/escrow`, { headers: o.auth }), (r) => {
    expect(r.status, r.text).toBe(200)
    return (r.json as { data: Array<EscrowRow> }).data
  })

const closesOf = (orderId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{
      kind: string
      state: string
      escrow_version: number
      escrow: string
      released: string | null
      refused: boolean | null
    }>`
      select kind, state, escrow_version::int as escrow_version, escrow, released::text, refused from closes
      where order_id = ${orderId} order by created_at`,
  )

const untilCloseEnds = (orderId: string, n: number) =>
  pollUntil(closesOf(orderId), (rows) => rows.length === n && rows[n - 1]!.state !== "pending", {
    every: "200 millis",
    within: "60 seconds",
  })

/** Switches the venue mock's refusal (owned by the deployer, anvil #0, which this test's service never uses). */
const setRefusing = (refusing: boolean) =>
  Effect.flatMap(TestChainTag, (chain) =>
    Effect.promise(() =>
      sendCalls(chain, account(0), [
        {
          to: chain.deployment.contracts.venue.address,
          data: encodeFunctionData({ abi: mockCoreDepositWalletAbi, functionName: "setRefusing", args: [refusing] }),
        },
      ]),
    ),
  )

const v2Balance = (owner: Address) =>
  Effect.flatMap(TestChainTag, (chain) =>
    Effect.promise(() =>
      chain.pub.readContract({
        address: chain.escrowV2!,
        abi: settlementEscrowV2Abi,
        functionName: "balanceOf",
        args: [owner],
      }),
    ),
  )

/** prepare → the owner signs the CloseOffer exactly as returned → POST /v1/escrow/close. */
const signedClose = (base: string, o: Owner, orderId: string, toMargin = false) =>
  Effect.gen(function* () {
    const prepared = yield* post(
      `${base}/v1/escrow/close/prepare`,
      { venue: "hyperliquid", order_id: orderId, to_margin: toMargin },
      o.auth,
    )
    expect(prepared.status, prepared.text).toBe(200)
    const p = prepared.json as { dex: number; nonce: string; deadline: number; to_sign: Array<SignItem> }
    const body = {
      venue: "hyperliquid",
      order_id: orderId,
      dex: p.dex,
      nonce: p.nonce,
      deadline: p.deadline,
      to_margin: toMargin,
      signature: yield* sign(o.owner, p.to_sign[0]),
    }
    return { typedData: p.to_sign[0]!.typed_data, body }
  })

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("orders on the v2 escrow", (it) => {
  it.effect(
    "created and funded on the v2 escrow, shown, closed by signature and by the operator; a sticky close at 0",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const chain = yield* TestChainTag
        const escrowV2 = getAddress(chain.escrowV2!)
        const stop = yield* background
        const o = yield* newOwner(base)
        const owner = o.owner.address
        const a = yield* createOrder(base, o, "v2-a")
        const fundItem = a.to_sign.find((i) => i.kind === "fund_order")!
        expect(fundItem.typed_data.domain).toMatchObject({ version: "2", verifyingContract: escrowV2 })
        const permitItem = a.to_sign.find((i) => i.kind === "permit")!
        expect(getAddress(permitItem.typed_data.message.spender)).toBe(escrowV2)
        const version = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ v: number }>`select escrow_version::int as v from orders where id = ${a.order.id}`,
        )
        expect(version).toEqual([{ v: 2 }])

        // Someone else's signatures: the envelope, and the order is still preparing with nothing relayed.
        const stranger = privateKeyToAccount(generatePrivateKey())
        const bad = yield* post(
          `${base}/v1/orders/${a.order.id}/signatures`,
          {
            fund_order: yield* sign(
              stranger,
              a.to_sign.find((i) => i.kind === "fund_order"),
            ),
            permit: yield* sign(
              stranger,
              a.to_sign.find((i) => i.kind === "permit"),
            ),
          },
          o.auth,
        )
        expectEnvelope(bad, 422, "SIGNATURE_INVALID")
        expect((yield* orderOf(base, o, a.order.id)).state).toBe("preparing")
        // A v1-domain FundOrder signature (the same message, the v1 escrow) is not the v2 order's either.
        const v1Fund = yield* sign(o.owner, {
          kind: "fund_order",
          signer: owner,
          typed_data: (() => {
            const t = a.to_sign.find((i) => i.kind === "fund_order")!.typed_data
            return { ...t, domain: { ...t.domain, version: "1", verifyingContract: chain.escrow } }
          })(),
        })
        const wrongDomain = yield* post(
          `${base}/v1/orders/${a.order.id}/signatures`,
          {
            fund_order: v1Fund,
            permit: yield* sign(
              o.owner,
              a.to_sign.find((i) => i.kind === "permit"),
            ),
          },
          o.auth,
        )
        expectEnvelope(wrongDomain, 422, "SIGNATURE_INVALID")

        // One order at a time: the permit of an order prepared while another is unfunded would reuse its nonce.
        const fundOne = (p: Prepared) =>
          Effect.gen(function* () {
            const signed = yield* post(
              `${base}/v1/orders/${p.order.id}/signatures`,
              {
                fund_order: yield* sign(
                  o.owner,
                  p.to_sign.find((i) => i.kind === "fund_order"),
                ),
                permit: yield* sign(
                  o.owner,
                  p.to_sign.find((i) => i.kind === "permit"),
                ),
              },
              o.auth,
            )
            expect(signed.status, signed.text).toBe(200)
            const funded = yield* untilState(base, o, p.order.id, ["funded", "failed"])
            expect(funded).toMatchObject({ state: "funded", escrow_available: "7000000", quotable: "7000000" })
            expect(funded.transactions).toEqual([expect.objectContaining({ kind: "fund", status: "final" })])
            expect((yield* v2Order(owner, p.order.id)).available).toBe(AMOUNT)
          })
        yield* fundOne(a)
        const b = yield* createOrder(base, o, "v2-b")
        yield* fundOne(b)
        expect(yield* wallet(owner)).toBe(20_000_000n - 2n * AMOUNT)
        const shown = yield* escrowOf(base, o)
        for (const p of [a, b]) {
          expect(shown.find((r) => r.order_id === p.order.id)).toEqual({
            venue: "hyperliquid",
            order_id: p.order.id,
            owner: owner.toLowerCase(),
            available: "7000000",
            operator: expect.any(String),
            managed: true,
            closing: false,
          })
        }

        // By signature (a managed v2 order too: the owner's signature decides on v2), to the wallet.
        const closeA = yield* signedClose(base, o, a.order.id)
        expect(closeA.typedData.domain).toMatchObject({ version: "2", verifyingContract: escrowV2 })
        const tampered = yield* post(
          `${base}/v1/escrow/close`,
          { ...closeA.body, nonce: (BigInt(closeA.body.nonce) + 1n).toString() },
          o.auth,
        )
        expectEnvelope(tampered, 422, "SIGNATURE_INVALID")
        const accepted = yield* post(`${base}/v1/escrow/close`, closeA.body, o.auth)
        expect(accepted.status, accepted.text).toBe(200)
        expect(accepted.json).toMatchObject({ order_id: a.order.id, closing: true })
        const [closedA] = yield* untilCloseEnds(a.order.id, 1)
        expect(closedA).toMatchObject({ kind: "signed", state: "final", escrow_version: 2, released: "7000000" })
        expect(closedA!.escrow).toBe(escrowV2.toLowerCase())
        expect((yield* untilState(base, o, a.order.id, ["closed"])).escrow_available).toBe("0")
        expect(yield* v2Order(owner, a.order.id)).toEqual({ available: 0n, closeRequested: true })
        expect(yield* wallet(owner)).toBe(20_000_000n - AMOUNT)
        // The identical retry: the same close, nothing new.
        const retry = yield* post(`${base}/v1/escrow/close`, closeA.body, o.auth)
        expect(retry.status, retry.text).toBe(200)
        expect(yield* closesOf(a.order.id)).toHaveLength(1)

        // By the operator (v2 operatorClose names the owner): not sticky.
        const managed = yield* post(
          `${base}/v1/closes`,
          { venue: "hyperliquid", order_id: b.order.id, to_margin: false },
          o.auth,
        )
        expect(managed.status, managed.text).toBe(200)
        const [closedB] = yield* untilCloseEnds(b.order.id, 1)
        expect(closedB).toMatchObject({ kind: "managed", state: "final", escrow_version: 2, released: "7000000" })
        yield* untilState(base, o, b.order.id, ["closed"])
        expect(yield* v2Order(owner, b.order.id)).toEqual({ available: 0n, closeRequested: false })
        expect(yield* wallet(owner)).toBe(20_000_000n)
        // The operator's close at 0 reverts on chain: refused, nothing queued.
        expectEnvelope(
          yield* post(`${base}/v1/closes`, { venue: "hyperliquid", order_id: b.order.id, to_margin: false }, o.auth),
          422,
          "BELOW_MINIMUM",
        )
        expect(yield* closesOf(b.order.id)).toHaveLength(1)

        // Sticky: the owner's signed close of B, which holds nothing, is accepted and requests the close on chain.
        const closeB = yield* signedClose(base, o, b.order.id)
        const sticky = yield* post(`${base}/v1/escrow/close`, closeB.body, o.auth)
        expect(sticky.status, sticky.text).toBe(200)
        const [, stickyRow] = yield* untilCloseEnds(b.order.id, 2)
        expect(stickyRow).toMatchObject({ kind: "signed", state: "final", escrow_version: 2, released: "0" })
        expect(yield* v2Order(owner, b.order.id)).toEqual({ available: 0n, closeRequested: true })
        expect(yield* wallet(owner)).toBe(20_000_000n)

        // Nothing of either order is shown any more.
        const after = yield* escrowOf(base, o)
        expect(after.filter((r) => r.order_id === a.order.id || r.order_id === b.order.id)).toEqual([])
        yield* stop
      }),
  )

  it.effect(
    "a refused close to margin lands in the v2 zero-id balance, shown beside the orders, and closes by signature",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const stop = yield* background
        const o = yield* newOwner(base)
        const owner = o.owner.address
        const c = yield* createOrder(base, o, "v2-c")
        const signed = yield* post(
          `${base}/v1/orders/${c.order.id}/signatures`,
          {
            fund_order: yield* sign(
              o.owner,
              c.to_sign.find((i) => i.kind === "fund_order"),
            ),
            permit: yield* sign(
              o.owner,
              c.to_sign.find((i) => i.kind === "permit"),
            ),
          },
          o.auth,
        )
        expect(signed.status, signed.text).toBe(200)
        expect((yield* untilState(base, o, c.order.id, ["funded", "failed"])).state).toBe("funded")
        yield* setRefusing(true)
        const toMargin = yield* signedClose(base, o, c.order.id, true)
        const accepted = yield* post(`${base}/v1/escrow/close`, toMargin.body, o.auth)
        expect(accepted.status, accepted.text).toBe(200)
        const [refused] = yield* untilCloseEnds(c.order.id, 1)
        yield* setRefusing(false)
        expect(refused).toMatchObject({ state: "final", escrow_version: 2, released: "7000000", refused: true })
        expect(yield* v2Balance(owner)).toBe(AMOUNT)
        const zero = `0x${"00".repeat(32)}`
        const shown = yield* escrowOf(base, o)
        expect(shown.find((r) => r.order_id === zero)).toMatchObject({
          venue: "hyperliquid",
          owner: owner.toLowerCase(),
          available: "7000000",
          managed: false,
          closing: false,
        })
        const closeZero = yield* signedClose(base, o, zero)
        const released = yield* post(`${base}/v1/escrow/close`, closeZero.body, o.auth)
        expect(released.status, released.text).toBe(200)
        const [zeroClose] = yield* untilCloseEnds(zero, 1)
        expect(zeroClose).toMatchObject({ state: "final", escrow_version: 2, released: "7000000", refused: false })
        expect(yield* v2Balance(owner)).toBe(0n)
        expect(yield* wallet(owner)).toBe(20_000_000n)
        expect((yield* escrowOf(base, o)).find((r) => r.order_id === zero)).toBeUndefined()
        yield* stop
      }),
  )

  it.effect("funded from venue margin on the v2 escrow; the owner's own sticky close on chain closes the order", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sim = yield* Simulator
      const stop = yield* background
      // 2 USDC in the wallet, 100 at the venue: the order of 7 needs 5 moved from margin.
      const o = yield* newOwner(base, 2_000_000n)
      sim.control.credit(o.owner.address, 100_000_000n)
      const p = yield* createOrder(base, o, "v2-margin")
      expect(p.to_sign.map((i) => i.kind)).toEqual(["venue_transfer", "fund_order", "permit"])
      const signed = yield* post(
        `${base}/v1/orders/${p.order.id}/signatures`,
        {
          venue_transfer: yield* sign(
            o.owner,
            p.to_sign.find((i) => i.kind === "venue_transfer"),
          ),
          fund_order: yield* sign(
            o.owner,
            p.to_sign.find((i) => i.kind === "fund_order"),
          ),
          permit: yield* sign(
            o.owner,
            p.to_sign.find((i) => i.kind === "permit"),
          ),
        },
        o.auth,
      )
      expect(signed.status, signed.text).toBe(200)
      expect((signed.json as OrderView).state).toBe("awaiting_margin")
      const funded = yield* untilState(base, o, p.order.id, ["funded", "failed"])
      expect(funded).toMatchObject({ state: "funded", escrow_available: "7000000" })
      expect((yield* v2Order(o.owner.address, p.order.id)).available).toBe(AMOUNT)
      expect(yield* wallet(o.owner.address)).toBe(0n)
      // The owner closes on chain without the service (v2 `close`, sticky): the funding sweep sees the order
      // drained with its close requested and records it closed.
      const chain = yield* TestChainTag
      yield* Effect.promise(() => chain.test.setBalance({ address: o.owner.address, value: 10n ** 18n }))
      yield* Effect.promise(() =>
        sendCalls(chain, o.owner, [
          {
            to: chain.escrowV2!,
            data: encodeFunctionData({
              abi: settlementEscrowV2Abi,
              functionName: "close",
              args: [p.order.id as Hex, 0, false],
            }),
          },
        ]),
      )
      expect((yield* untilState(base, o, p.order.id, ["closed"])).escrow_available).toBe("0")
      expect(yield* wallet(o.owner.address)).toBe(AMOUNT)
      yield* stop
    }),
  )

  it.effect("bad inputs on the close routes for a v2 owner: the envelope, nothing changes, never 5xx", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const o = yield* newOwner(base)
      const unknownId = `0x${"ab".repeat(32)}`
      const before = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ n: string }>`select count(*)::text as n from closes`,
      )
      expectEnvelope(
        yield* post(`${base}/v1/escrow/close/prepare`, { venue: "hyperliquid", order_id: unknownId }, o.auth),
        404,
        "NOT_FOUND",
      )
      expectEnvelope(
        yield* post(`${base}/v1/closes`, { venue: "hyperliquid", order_id: unknownId }, o.auth),
        404,
        "NOT_FOUND",
      )
      const now = Math.floor(Date.now() / 1000)
      const closeBody = {
        venue: "hyperliquid",
        order_id: unknownId,
        dex: 0,
        nonce: "1",
        deadline: now + 600,
        to_margin: false,
        signature: `0x${"11".repeat(65)}`,
      }
      const res = yield* post(`${base}/v1/escrow/close`, closeBody, o.auth)
      expect(res.status).toBeLessThan(500)
      expect(code(res)).toMatch(/SIGNATURE_/)
      expectEnvelope(yield* post(`${base}/v1/escrow/close`, { ...closeBody, dex: "x" }, o.auth), 400, "INVALID_REQUEST")
      const after = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ n: string }>`select count(*)::text as n from closes`,
      )
      expect(after).toEqual(before)
    }),
  )
})
