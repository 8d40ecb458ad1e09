import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Clock, Context, Effect, Fiber, Layer, Ref } from "effect"
import { type Address, encodeFunctionData, type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { stepCloseQueue } from "../../actors/CloseQueue.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import {
  mockAsterVaultAbi,
  mockCoreDepositWalletAbi,
  mockUSDCAbi,
  settlementEscrowAbi,
} from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { closeOffer, ZERO_ORDER_ID } from "../../src/Domain/Close.ts"
import { SPOT_DEX } from "../../src/Domain/EscrowTypedData.ts"
import { closeQueueId } from "../../src/Escrow/CloseQueue.ts"
import {
  account,
  fundOrders,
  key,
  sendCalls,
  startTestChain,
  type TestChain,
  venueEntry,
} from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Closes on two devnet chains, driven over HTTP as a browser app would (viem wallets sign what the API returns),
 * with the real VenueWatcher, TxRelayer and CloseQueue actors running (the close queues are entities on the test
 * server's in-memory cluster, one per (owner, chain), which the close routes call), so every close reaches
 * finality on chain.
 * Finality: 2 confirmations, a block mined every 250 ms on both chains.
 */

const OPERATOR = 9
const operator = account(OPERATOR).address.toLowerCase()
/** Sends the test's own funding transactions (never the operator: the relayer owns its nonces). */
const FUNDER = account(8)
/** Operator named by orders that this service does not operate. */
const ELSEWHERE = "0x00000000000000000000000000000000000bee01" as Address
const USDC = 1_000_000n

interface Env {
  readonly hl: TestChain
  readonly aster: TestChain
  readonly pauseRelayers: Effect.Effect<void>
  readonly resumeRelayers: Effect.Effect<void>
}
class CloseEnv extends Context.Tag("test/CloseEnv")<CloseEnv, Env>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

/** The actors of a runner, in this process: watchers, relayers (pausable) and a miner (close queues: TestHttpLive). */
const actors = (hl: TestChain, aster: TestChain) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const scope = yield* Effect.scope
    for (const v of deployment.venues) yield* Effect.forkIn(runVenueWatcher(v), scope)
    yield* Effect.forkIn(
      Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
        Effect.zipRight(Effect.sleep("250 millis")),
        Effect.forever,
      ),
      scope,
    )
    const context = yield* Effect.context<AppConfig | ChainClients | FaultPoint | SqlClient.SqlClient>()
    const running = yield* Ref.make<ReadonlyArray<Fiber.RuntimeFiber<void>>>([])
    const resumeRelayers = Effect.forEach(deployment.venues, (v) => Effect.forkIn(runTxRelayer(v), scope)).pipe(
      Effect.flatMap((fibers) => Ref.set(running, fibers)),
      Effect.provide(context),
    ) as Effect.Effect<void>
    const pauseRelayers = Ref.getAndSet(running, []).pipe(Effect.flatMap(Fiber.interruptAll))
    yield* resumeRelayers
    return { hl, aster, pauseRelayers, resumeRelayers }
  })

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, "hyperliquid"), { ...entry(aster, "aster"), release_minimum: "5000000" }],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    return Layer.scoped(CloseEnv, actors(hl, aster)).pipe(Layer.provideMerge(base))
  }),
)

// ------------------------------------------------------------------ browser-side helpers

interface EscrowOrder {
  readonly venue: string
  readonly order_id: string
  readonly owner: string
  readonly available: string
  readonly operator: string
  readonly managed: boolean
  readonly closing: boolean
}
interface Preparation {
  readonly venue: string
  readonly order_id: string
  readonly dex: number
  readonly nonce: string
  readonly deadline: number
  readonly to_margin: boolean
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly to_sign: ReadonlyArray<{ kind: string; signer: string; typed_data: any }>
}

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}
/** The same signature with v as 0/1 (yParity), as some wallets emit it. */
const yParityForm = (sig: Hex) => `${sig.slice(0, 130)}${sig.slice(130) === "1b" ? "00" : "01"}` as Hex

const session = (i: number, venues: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const who = account(i)
    const token = yield* signIn(base, who)
    for (const venue of venues) {
      const linked = yield* post(`${base}/v1/accounts`, { venue, address: who.address }, bearer(token))
      expect(linked.status, linked.text).toBe(201)
    }
    return { base, who, token, auth: bearer(token) }
  })

type User = Effect.Effect.Success<ReturnType<typeof session>>

const escrowOf = (u: User) =>
  Effect.map(rawRequest(`${u.base}/v1/escrow`, { headers: u.auth }), (res) => {
    expect(res.status, res.text).toBe(200)
    return (res.json as { data: Array<EscrowOrder> }).data
  })

const rowOf = (rows: ReadonlyArray<EscrowOrder>, venue: string, orderId: string) =>
  rows.find((r) => r.venue === venue && r.order_id === orderId.toLowerCase())

/** Polls `effect` until `done`, at most `seconds`. */
const eventually = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, done: (a: A) => boolean, seconds = 60) =>
  Effect.gen(function* () {
    const deadline = Date.now() + seconds * 1000
    for (;;) {
      const value = yield* effect
      if (done(value)) return value
      if (Date.now() > deadline)
        return yield* Effect.dieMessage(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
      yield* Effect.sleep("200 millis")
    }
  })

const prepare = (u: User, body: Record<string, unknown>) => post(`${u.base}/v1/escrow/close/prepare`, body, u.auth)
const close = (u: User, body: Record<string, unknown>) => post(`${u.base}/v1/escrow/close`, body, u.auth)

/** prepare → the owner signs the CloseOffer exactly as returned → the close body. */
const signedClose = (u: User, body: Record<string, unknown>, signer: PrivateKeyAccount = u.who) =>
  Effect.gen(function* () {
    const prepared = yield* prepare(u, body)
    expect(prepared.status, prepared.text).toBe(200)
    const p = prepared.json as Preparation
    const signature = yield* Effect.promise(() => signer.signTypedData(p.to_sign[0]!.typed_data))
    return {
      prepared: p,
      body: {
        venue: p.venue,
        order_id: p.order_id,
        dex: p.dex,
        nonce: p.nonce,
        deadline: p.deadline,
        signature,
        to_margin: p.to_margin,
      },
    }
  })

const closeState = (orderId: string, owner?: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ state: string; kind: string; refused: boolean | null; error: string }>`
      select state, kind, refused, error from closes where order_id = ${orderId.toLowerCase()}
      ${owner === undefined ? sql`` : sql`and owner = ${owner.toLowerCase()}`}
      order by created_at`,
  )

const journalOf = (orderId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ kind: string; master: string; payload: Record<string, unknown> }>`
      select kind, master, payload from journal
      where kind like 'close.%' and payload->>'order_id' = ${orderId.toLowerCase()} order by id`,
  )

/** Waits until the order's last close is in `state` and GET /v1/escrow shows it not closing. */
const untilClosed = (u: User, venue: string, orderId: string, state = "final") =>
  Effect.gen(function* () {
    yield* eventually(`close of ${orderId} ${state}`, closeState(orderId), (rows) => rows.at(-1)?.state === state)
    const rows = yield* escrowOf(u)
    expect(rowOf(rows, venue, orderId)?.closing ?? false).toBe(false)
    return rows
  })

const fund = (c: TestChain, owner: PrivateKeyAccount, label: string, count: number, amount: bigint, op = ELSEWHERE) =>
  Effect.promise(() => fundOrders(c, { owner, relayer: FUNDER, label, count, amount, operator: op }))

const indexed = (u: User, venue: string, orderIds: ReadonlyArray<string>) =>
  eventually(`orders indexed on ${venue}`, escrowOf(u), (rows) => orderIds.every((id) => rowOf(rows, venue, id)))

const hlDeposit = (c: TestChain, who: Address, dex: number) =>
  Effect.promise(() =>
    c.pub.readContract({
      abi: mockCoreDepositWalletAbi,
      address: c.deployment.contracts.venue.address,
      functionName: "deposits",
      args: [who, dex],
    }),
  )
const asterDeposit = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({
      abi: mockAsterVaultAbi,
      address: c.deployment.contracts.venue.address,
      functionName: "deposits",
      args: [who, c.token],
    }),
  )
const tokenBalance = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ abi: mockUSDCAbi, address: c.token, functionName: "balanceOf", args: [who] }),
  )

/** Switches the venue mock's refusal (owned by the deployer, anvil #0, which the service never uses). */
const setRefusing = (c: TestChain, refusing: boolean) =>
  Effect.promise(() =>
    sendCalls(c, account(0), [
      {
        to: c.deployment.contracts.venue.address,
        data: encodeFunctionData({
          abi: c.deployment.kind === "hyperliquid" ? mockCoreDepositWalletAbi : mockAsterVaultAbi,
          functionName: "setRefusing",
          args: [refusing],
        }),
      },
    ]),
  )

const count = (table: "closes" | "relayer_requests" | "close_queues") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`select count(*)::text as n from ${sql(table)}`.pipe(Effect.map((r) => Number(r[0]!.n))),
  )

const expectEnvelope = (res: RawResponse, status: number, errorCode: string, label = "") => {
  expect([res.status, code(res)], `${label} ${res.text}`).toEqual([status, errorCode])
  const error = (res.json as { error: { message: string; request_id: string; retryable: boolean } }).error
  expect(error.request_id).toBe(res.headers["x-request-id"])
  expect(typeof error.message).toBe("string")
}

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("closes", (it) => {
  it.effect("to margin (perps, spot) and to the wallet; the identical retry returns the same close", () =>
    Effect.gen(function* () {
      const { hl } = yield* CloseEnv
      const sql = yield* SqlClient.SqlClient
      const u = yield* session(3, ["hyperliquid"])
      const owner = u.who.address
      const orders = yield* fund(hl, u.who, "margin", 3, 5n * USDC)
      const [perps, wallet, spot] = orders.map((o) => o.orderId) as [Hex, Hex, Hex]
      const listed = yield* indexed(u, "hyperliquid", [perps, wallet, spot])
      const res = yield* rawRequest(`${u.base}/v1/escrow`, { headers: u.auth })
      expect(res.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
      expect(rowOf(listed, "hyperliquid", perps)).toEqual({
        venue: "hyperliquid",
        order_id: perps.toLowerCase(),
        owner: owner.toLowerCase(),
        available: "5000000",
        operator: ELSEWHERE,
        managed: false,
        closing: false,
      })

      // Close to margin (perps): the terms and the CloseOffer the owner signs.
      const marginDeposits = yield* hlDeposit(hl, owner, 0)
      const before = Math.floor(Date.now() / 1000)
      const { prepared, body } = yield* signedClose(u, { venue: "hyperliquid", order_id: perps })
      expect(prepared).toMatchObject({ venue: "hyperliquid", order_id: perps.toLowerCase(), dex: 0, to_margin: true })
      expect(prepared.nonce).toMatch(/^[0-9]{1,78}$/)
      expect(prepared.deadline).toBeGreaterThanOrEqual(before + 3600 - 5)
      expect(prepared.deadline).toBeLessThanOrEqual(before + 3600 + 5)
      expect(prepared.to_sign).toHaveLength(1)
      const item = prepared.to_sign[0]!
      expect(item.kind).toBe("close_offer")
      expect(item.signer).toBe(owner.toLowerCase())
      expect(item.typed_data.primaryType).toBe("CloseOffer")
      expect(item.typed_data.domain).toEqual({
        name: "SettlementEscrow",
        version: "1",
        chainId: 999,
        verifyingContract: expect.any(String),
      })
      expect(item.typed_data.domain.verifyingContract.toLowerCase()).toBe(hl.escrow.toLowerCase())
      expect(item.typed_data.message).toEqual({
        orderId: perps.toLowerCase(),
        owner,
        dex: 0,
        toMargin: true,
        nonce: prepared.nonce,
        deadline: String(prepared.deadline),
      })
      const accepted = yield* close(u, body)
      expect(accepted.status, accepted.text).toBe(200)
      expect(accepted.json).toEqual({ ...rowOf(listed, "hyperliquid", perps), closing: true })
      // A lost response: the same terms again, even with the signature's v as 0/1 — the same close.
      const retry = yield* close(u, { ...body, signature: yParityForm(body.signature) })
      expect(retry.status, retry.text).toBe(200)
      expect((retry.json as EscrowOrder).closing).toBe(true)
      // The high-s twin of the accepted signature is refused (never a second close).
      expectEnvelope(yield* close(u, { ...body, signature: highS(body.signature) }), 422, "SIGNATURE_MALLEABLE")
      // While pending, a new preparation of the same order is refused.
      expectEnvelope(yield* prepare(u, { venue: "hyperliquid", order_id: perps }), 409, "CLOSE_PENDING")
      yield* untilClosed(u, "hyperliquid", perps)
      expect(yield* hlDeposit(hl, owner, 0)).toBe(marginDeposits + 5n * USDC)
      const digest = closeOffer(999, hl.escrow, {
        orderId: perps,
        owner,
        dex: 0,
        toMargin: true,
        nonce: BigInt(prepared.nonce),
        deadline: BigInt(prepared.deadline),
      }).digest
      const requests = yield* sql<{ function_name: string; status: string }>`
        select function_name, status from relayer_requests where idempotency_key = ${`close:${digest}`}`
      expect(requests).toEqual([{ function_name: "closeWithSig", status: "final" }])
      // The same terms after the end: still the same close (closing false, nothing left), nothing relayed again.
      const after = yield* close(u, body)
      expect(after.status, after.text).toBe(200)
      expect(after.json).toMatchObject({ order_id: perps.toLowerCase(), available: "0", closing: false })
      expect(yield* closeState(perps)).toEqual([{ state: "final", kind: "signed", refused: false, error: "" }])
      const journal = yield* journalOf(perps)
      expect(journal.map((j) => j.kind)).toEqual(["close.pending", "close.final"])
      expect(journal[1]!.master).toBe(owner.toLowerCase())
      expect(journal[1]!.payload).toMatchObject({
        venue: "hyperliquid",
        order_id: perps.toLowerCase(),
        owner: owner.toLowerCase(),
        amount: "5000000",
        dex: 0,
        to_margin: true,
        refused: false,
        destination: "margin",
        tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      })

      // To the wallet (dex 0), and to spot margin.
      const walletBefore = yield* tokenBalance(hl, owner)
      const toWallet = yield* signedClose(u, { venue: "hyperliquid", order_id: wallet, to_margin: false })
      expect(toWallet.prepared).toMatchObject({ dex: 0, to_margin: false })
      expect((yield* close(u, toWallet.body)).status).toBe(200)
      const spotBefore = yield* hlDeposit(hl, owner, SPOT_DEX)
      const toSpot = yield* signedClose(u, { venue: "hyperliquid", order_id: spot, dex: SPOT_DEX })
      expect(toSpot.prepared).toMatchObject({ dex: SPOT_DEX, to_margin: true })
      expect((yield* close(u, toSpot.body)).status).toBe(200)
      yield* untilClosed(u, "hyperliquid", wallet)
      yield* untilClosed(u, "hyperliquid", spot)
      expect(yield* tokenBalance(hl, owner)).toBe(walletBefore + 5n * USDC)
      expect(yield* hlDeposit(hl, owner, SPOT_DEX)).toBe(spotBefore + 5n * USDC)
      const walletFinal = (yield* journalOf(wallet)).at(-1)!
      expect(walletFinal.payload).toMatchObject({ to_margin: false, destination: "wallet" })
      // Empty orders are no longer listed.
      const rows = yield* escrowOf(u)
      for (const id of [perps, wallet, spot]) expect(rowOf(rows, "hyperliquid", id)).toBeUndefined()
    }),
  )

  it.scoped("the venue refuses: funds land in the zero-id balance, closing returns to false; the balance closes", () =>
    Effect.gen(function* () {
      const env = yield* CloseEnv
      yield* Effect.addFinalizer(() => Effect.all([setRefusing(env.hl, false), setRefusing(env.aster, false)]))
      const { hl, aster } = yield* CloseEnv
      const u = yield* session(4, ["hyperliquid", "aster"])
      const owner = u.who.address
      const [onHl] = yield* fund(hl, u.who, "refused-hl", 1, 2n * USDC)
      const [onAster] = yield* fund(aster, u.who, "refused-aster", 1, 3n * USDC)
      yield* indexed(u, "hyperliquid", [onHl!.orderId])
      yield* indexed(u, "aster", [onAster!.orderId])
      yield* setRefusing(hl, true)
      yield* setRefusing(aster, true)
      const marginBefore = yield* hlDeposit(hl, owner, 0)
      for (const [venue, order] of [
        ["hyperliquid", onHl!],
        ["aster", onAster!],
      ] as const) {
        const { body } = yield* signedClose(u, { venue, order_id: order.orderId })
        expect((yield* close(u, body)).status).toBe(200)
      }
      yield* untilClosed(u, "hyperliquid", onHl!.orderId)
      const rows = yield* untilClosed(u, "aster", onAster!.orderId)
      expect(yield* hlDeposit(hl, owner, 0)).toBe(marginBefore)
      // The zero-id balance holds the refused amounts, not closing.
      const zeroHl = rowOf(rows, "hyperliquid", ZERO_ORDER_ID)
      const zeroAster = rowOf(rows, "aster", ZERO_ORDER_ID)
      expect(zeroHl).toEqual({
        venue: "hyperliquid",
        order_id: ZERO_ORDER_ID,
        owner: owner.toLowerCase(),
        available: "2000000",
        operator: "0x0000000000000000000000000000000000000000",
        managed: false,
        closing: false,
      })
      expect(zeroAster).toMatchObject({ available: "3000000", closing: false, managed: false })
      const final = (yield* journalOf(onAster!.orderId)).at(-1)!
      expect(final.kind).toBe("close.final")
      expect(final.payload).toMatchObject({ refused: true, destination: "balance", amount: "3000000" })
      expect(yield* closeState(onHl!.orderId)).toEqual([{ state: "final", kind: "signed", refused: true, error: "" }])

      // Aster's release_minimum is 5 USDC: 3 USDC cannot go into margin, but can go to the wallet.
      expectEnvelope(yield* prepare(u, { venue: "aster", order_id: ZERO_ORDER_ID }), 422, "BELOW_MINIMUM")
      const asterWallet = yield* tokenBalance(aster, owner)
      const zeroToWallet = yield* signedClose(u, { venue: "aster", order_id: ZERO_ORDER_ID, to_margin: false })
      expect((yield* close(u, zeroToWallet.body)).json).toMatchObject({ available: "3000000", closing: true })
      // Hyperliquid (default release_minimum, 1 USDC): the zero-id balance into margin once the venue accepts.
      yield* setRefusing(hl, false)
      yield* setRefusing(aster, false)
      const zeroToMargin = yield* signedClose(u, { venue: "hyperliquid", order_id: ZERO_ORDER_ID })
      expect((yield* close(u, zeroToMargin.body)).json).toMatchObject({
        order_id: ZERO_ORDER_ID,
        available: "2000000",
        closing: true,
      })
      yield* eventually(
        "zero-id closes final",
        closeState(ZERO_ORDER_ID, owner),
        (r) => r.length === 2 && r.every((x) => x.state === "final"),
      )
      const after = yield* escrowOf(u)
      expect(rowOf(after, "hyperliquid", ZERO_ORDER_ID)).toBeUndefined()
      expect(rowOf(after, "aster", ZERO_ORDER_ID)).toBeUndefined()
      expect(yield* hlDeposit(hl, owner, 0)).toBe(marginBefore + 2n * USDC)
      expect(yield* tokenBalance(aster, owner)).toBe(asterWallet + 3n * USDC)
      expect(yield* asterDeposit(aster, owner)).toBe(0n)
    }),
  )

  it.effect("a revert turns closing false; the owner closes again with a new signature", () =>
    Effect.gen(function* () {
      const { hl } = yield* CloseEnv
      const u = yield* session(5, ["hyperliquid"])
      const [order] = yield* fund(hl, u.who, "revert", 1, 4n * USDC)
      const orderId = order!.orderId
      yield* indexed(u, "hyperliquid", [orderId])
      const first = yield* signedClose(u, { venue: "hyperliquid", order_id: orderId })
      // The owner burns the nonce on chain before the service relays: the close must revert.
      yield* Effect.promise(() =>
        sendCalls(hl, u.who, [
          {
            to: hl.escrow,
            data: encodeFunctionData({
              abi: settlementEscrowAbi,
              functionName: "invalidateNonce",
              args: [BigInt(first.prepared.nonce)],
            }),
          },
        ]),
      )
      const accepted = yield* close(u, first.body)
      expect(accepted.json).toMatchObject({ closing: true })
      yield* untilClosed(u, "hyperliquid", orderId, "reverted")
      const [reverted] = yield* closeState(orderId)
      expect(reverted!.error).toContain("NonceAlreadyUsed")
      const journal = yield* journalOf(orderId)
      expect(journal.map((j) => j.kind)).toEqual(["close.pending", "close.reverted"])
      expect(journal[1]!.payload.reason).toContain("NonceAlreadyUsed")
      // The funds are still there; the same terms return the same (reverted) close; a new signature closes.
      expect(rowOf(yield* escrowOf(u), "hyperliquid", orderId)).toMatchObject({ available: "4000000", closing: false })
      expect((yield* close(u, first.body)).json).toMatchObject({ available: "4000000", closing: false })
      const second = yield* signedClose(u, { venue: "hyperliquid", order_id: orderId })
      expect((yield* close(u, second.body)).json).toMatchObject({ closing: true })
      yield* untilClosed(u, "hyperliquid", orderId)
      expect((yield* closeState(orderId)).map((c) => c.state)).toEqual(["reverted", "final"])
    }),
  )

  it.effect("signature and terms checks: someone else, high-s, malformed v, expired, tampered; nothing changes", () =>
    Effect.gen(function* () {
      const { hl } = yield* CloseEnv
      const u = yield* session(7, ["hyperliquid"])
      const owner = u.who.address
      const [order, other] = yield* fund(hl, u.who, "checks", 2, 2n * USDC)
      yield* indexed(u, "hyperliquid", [order!.orderId, other!.orderId])
      const closesBefore = yield* count("closes")
      const requestsBefore = yield* count("relayer_requests")
      const stranger = privateKeyToAccount(generatePrivateKey())
      const bySomeoneElse = yield* signedClose(u, { venue: "hyperliquid", order_id: order!.orderId }, stranger)
      expectEnvelope(yield* close(u, bySomeoneElse.body), 422, "SIGNATURE_INVALID", "someone else")
      const good = yield* signedClose(u, { venue: "hyperliquid", order_id: order!.orderId })
      expectEnvelope(
        yield* close(u, { ...good.body, signature: highS(good.body.signature) }),
        422,
        "SIGNATURE_MALLEABLE",
      )
      expectEnvelope(
        yield* close(u, { ...good.body, signature: `${good.body.signature.slice(0, 130)}05` }),
        422,
        "SIGNATURE_MALFORMED",
      )
      // Tampered terms: each field changed after signing.
      for (const [field, value] of [
        ["to_margin", false],
        ["dex", SPOT_DEX],
        ["order_id", other!.orderId],
        ["nonce", (BigInt(good.body.nonce) + 1n).toString()],
        ["deadline", good.body.deadline - 1],
      ] as const) {
        expectEnvelope(yield* close(u, { ...good.body, [field]: value }), 422, "SIGNATURE_INVALID", `tampered ${field}`)
      }
      // Signed by the owner, but the deadline passed (or lies beyond the hour).
      const signOwn = (deadline: number) =>
        Effect.gen(function* () {
          const nonce = BigInt(`0x${Buffer.from(generatePrivateKey().slice(2), "hex").toString("hex")}`)
          const typed = closeOffer(999, hl.escrow, {
            orderId: order!.orderId,
            owner,
            dex: 0,
            toMargin: true,
            nonce,
            deadline: BigInt(deadline),
          }).typedData
          const signature = yield* Effect.promise(() => u.who.signTypedData(typed))
          return { ...good.body, nonce: nonce.toString(), deadline, signature }
        })
      const now = Math.floor(Date.now() / 1000)
      expectEnvelope(yield* close(u, yield* signOwn(now - 10)), 422, "CHALLENGE_EXPIRED", "expired")
      expectEnvelope(yield* close(u, yield* signOwn(now + 7200)), 400, "INVALID_REQUEST", "too far")
      expect(yield* count("closes")).toBe(closesBefore)
      expect(yield* count("relayer_requests")).toBe(requestsBefore)
      expect(yield* journalOf(order!.orderId)).toEqual([])
      expect(rowOf(yield* escrowOf(u), "hyperliquid", order!.orderId)).toMatchObject({ closing: false })
      // The genuine signature still works afterwards.
      expect((yield* close(u, good.body)).json).toMatchObject({ closing: true })
      yield* untilClosed(u, "hyperliquid", order!.orderId)
    }),
  )

  it.effect("a managed order: refused by prepare and by signature, closed with POST /v1/closes", () =>
    Effect.gen(function* () {
      const { hl } = yield* CloseEnv
      const sql = yield* SqlClient.SqlClient
      const u = yield* session(1, ["hyperliquid"])
      const owner = u.who.address
      const [managed, notManaged] = [
        (yield* fund(hl, u.who, "managed", 1, 3n * USDC, account(OPERATOR).address))[0]!,
        (yield* fund(hl, u.who, "unmanaged", 1, 3n * USDC))[0]!,
      ]
      const rows = yield* indexed(u, "hyperliquid", [managed.orderId, notManaged.orderId])
      expect(rowOf(rows, "hyperliquid", managed.orderId)).toMatchObject({ managed: true, operator, closing: false })
      expectEnvelope(yield* prepare(u, { venue: "hyperliquid", order_id: managed.orderId }), 409, "ORDER_MANAGED")
      const typed = closeOffer(999, hl.escrow, {
        orderId: managed.orderId,
        owner,
        dex: 0,
        toMargin: true,
        nonce: 77n,
        deadline: BigInt(Math.floor(Date.now() / 1000) + 600),
      }).typedData
      const signature = yield* Effect.promise(() => u.who.signTypedData(typed))
      expectEnvelope(
        yield* close(u, {
          venue: "hyperliquid",
          order_id: managed.orderId,
          dex: 0,
          nonce: "77",
          deadline: Number(typed.message.deadline),
          signature,
          to_margin: true,
        }),
        409,
        "ORDER_MANAGED",
      )
      const closes = (body: Record<string, unknown>) => post(`${u.base}/v1/closes`, body, u.auth)
      expectEnvelope(yield* closes({ venue: "hyperliquid", order_id: notManaged.orderId }), 409, "STATE_CONFLICT")
      expectEnvelope(yield* closes({ venue: "hyperliquid", order_id: ZERO_ORDER_ID }), 400, "INVALID_REQUEST")
      const marginBefore = yield* hlDeposit(hl, owner, 0)
      const accepted = yield* closes({ venue: "hyperliquid", order_id: managed.orderId })
      expect(accepted.status, accepted.text).toBe(200)
      expect(accepted.json).toEqual({
        venue: "hyperliquid",
        order_id: managed.orderId.toLowerCase(),
        owner: owner.toLowerCase(),
        available: "3000000",
        operator,
        managed: true,
        closing: true,
      })
      // The same terms while pending: the same close; other terms: CLOSE_PENDING.
      expect((yield* closes({ venue: "hyperliquid", order_id: managed.orderId, to_margin: true, dex: 0 })).status).toBe(
        200,
      )
      expectEnvelope(
        yield* closes({ venue: "hyperliquid", order_id: managed.orderId, to_margin: false }),
        409,
        "CLOSE_PENDING",
      )
      yield* untilClosed(u, "hyperliquid", managed.orderId)
      expect(yield* hlDeposit(hl, owner, 0)).toBe(marginBefore + 3n * USDC)
      const requests = yield* sql<{ function_name: string; status: string }>`
        select r.function_name, r.status from closes c join relayer_requests r on r.idempotency_key = c.relay_key
        where c.order_id = ${managed.orderId.toLowerCase()}`
      expect(requests).toEqual([{ function_name: "operatorClose", status: "final" }])
      const journal = yield* journalOf(managed.orderId)
      expect(journal.map((j) => j.kind)).toEqual(["close.pending", "close.final"])
      expect(journal[1]!.payload).toMatchObject({ kind: "managed", nonce: null, deadline: null, destination: "margin" })
    }),
  )

  it.effect("bad inputs on every close route: the envelope with the right code, nothing changes, never 5xx", () =>
    Effect.gen(function* () {
      const { hl } = yield* CloseEnv
      const sql = yield* SqlClient.SqlClient
      const u = yield* session(2, ["hyperliquid"])
      const [small] = yield* fund(hl, u.who, "small", 1, USDC - 1n)
      yield* indexed(u, "hyperliquid", [small!.orderId])
      const someoneElses = (yield* sql<{ order_id: string }>`
        select order_id from escrow_orders where venue = 'hyperliquid' and owner <> ${u.who.address.toLowerCase()}
        and available > 0 limit 1`)[0]?.order_id
      expect(someoneElses).toBeDefined()
      const before = [yield* count("closes"), yield* count("relayer_requests"), yield* count("close_queues")]
      const sig = `0x${"11".repeat(64)}1b`
      const good = { venue: "hyperliquid", order_id: small!.orderId }
      const closeBody = { ...good, dex: 0, nonce: "1", deadline: Math.floor(Date.now() / 1000) + 600, signature: sig }
      const cases: ReadonlyArray<[string, string, unknown, number, string]> = [
        ["prepare", "/v1/escrow/close/prepare", { ...good, extra: 1 }, 400, "INVALID_REQUEST"],
        [
          "prepare",
          "/v1/escrow/close/prepare",
          { venue: "Hyper Liquid", order_id: small!.orderId },
          400,
          "INVALID_REQUEST",
        ],
        ["prepare", "/v1/escrow/close/prepare", { ...good, order_id: "0x1234" }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, dex: 7 }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, dex: -1 }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, dex: 2 ** 32 }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, dex: SPOT_DEX, to_margin: false }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, to_margin: "yes" }, 400, "INVALID_REQUEST"],
        ["prepare", "/v1/escrow/close/prepare", { venue: "aster", order_id: small!.orderId }, 404, "NOT_FOUND"],
        ["prepare", "/v1/escrow/close/prepare", { venue: "nowhere", order_id: small!.orderId }, 404, "NOT_FOUND"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, order_id: `0x${"ab".repeat(32)}` }, 404, "NOT_FOUND"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, order_id: someoneElses }, 404, "NOT_FOUND"],
        ["prepare", "/v1/escrow/close/prepare", { ...good, order_id: ZERO_ORDER_ID }, 404, "NOT_FOUND"],
        ["prepare", "/v1/escrow/close/prepare", good, 422, "BELOW_MINIMUM"],
        ["close", "/v1/escrow/close", { ...closeBody, signature: "0x11" }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", { ...closeBody, nonce: "-1" }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", { ...closeBody, nonce: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", { ...closeBody, deadline: "soon" }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", { ...closeBody, dex: SPOT_DEX, to_margin: false }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", { ...closeBody, venue: "aster" }, 404, "NOT_FOUND"],
        ["close", "/v1/escrow/close", { venue: "hyperliquid" }, 400, "INVALID_REQUEST"],
        ["close", "/v1/escrow/close", closeBody, 422, "SIGNATURE_INVALID"],
        ["closes", "/v1/closes", { ...good, unknown: true }, 400, "INVALID_REQUEST"],
        ["closes", "/v1/closes", { ...good, dex: 5 }, 400, "INVALID_REQUEST"],
        ["closes", "/v1/closes", { ...good, venue: "aster" }, 404, "NOT_FOUND"],
        ["closes", "/v1/closes", { ...good, order_id: `0x${"cd".repeat(32)}` }, 404, "NOT_FOUND"],
        ["closes", "/v1/closes", good, 409, "STATE_CONFLICT"],
      ]
      for (const [what, path, body, status, errorCode] of cases) {
        expectEnvelope(
          yield* post(`${u.base}${path}`, body, u.auth),
          status,
          errorCode,
          `${what} ${JSON.stringify(body)}`,
        )
      }
      for (const path of ["/v1/escrow/close/prepare", "/v1/escrow/close", "/v1/closes"]) {
        for (const raw of ["{", "[]", "null", ""]) {
          const res = yield* rawRequest(`${u.base}${path}`, {
            method: "POST",
            headers: { ...u.auth, "content-type": "application/json" },
            body: raw,
          })
          expectEnvelope(res, 400, "INVALID_REQUEST", `${path} ${raw}`)
        }
      }
      // Beta access not granted: new closes are refused.
      yield* sql`update accounts set access = 'suspended' where master = ${u.who.address.toLowerCase()}`
      const [big] = yield* fund(hl, u.who, "access", 1, 2n * USDC)
      yield* indexed(u, "hyperliquid", [big!.orderId])
      expectEnvelope(yield* prepare(u, { venue: "hyperliquid", order_id: big!.orderId }), 403, "ACCESS_REQUIRED")
      yield* sql`update accounts set access = 'granted' where master = ${u.who.address.toLowerCase()}`
      const signed = yield* signedClose(u, { venue: "hyperliquid", order_id: big!.orderId })
      yield* sql`update accounts set access = 'suspended' where master = ${u.who.address.toLowerCase()}`
      expectEnvelope(yield* close(u, signed.body), 403, "ACCESS_REQUIRED")
      yield* sql`update accounts set access = 'granted' where master = ${u.who.address.toLowerCase()}`
      expect([yield* count("closes"), yield* count("relayer_requests"), yield* count("close_queues")]).toEqual(before)
      // A maker credential never closes.
      expect((yield* rawRequest(`${u.base}/v1/escrow`, { headers: bearer(`mk_${"Z".repeat(43)}`) })).status).toBe(401)
    }),
  )

  it.effect("a burst of concurrent closes of one owner: exactly 10 pending, retries return the same close", () =>
    Effect.gen(function* () {
      const { hl, pauseRelayers, resumeRelayers } = yield* CloseEnv
      const sql = yield* SqlClient.SqlClient
      const u = yield* session(6, ["hyperliquid"])
      const orders = yield* fund(hl, u.who, "burst", 13, USDC)
      const ids = orders.map((o) => o.orderId.toLowerCase())
      yield* indexed(u, "hyperliquid", ids)
      const bodies: Array<Record<string, unknown>> = []
      for (const id of ids) bodies.push((yield* signedClose(u, { venue: "hyperliquid", order_id: id })).body)
      yield* pauseRelayers
      expect((yield* close(u, bodies[0]!)).status).toBe(200)
      // 12 other closes and 3 retries of the first, all at once: the (owner, chain) row lock serialises them.
      const results = yield* Effect.forEach(
        [...bodies.slice(1), bodies[0]!, bodies[0]!, bodies[0]!],
        (b) => close(u, b),
        {
          concurrency: "unbounded",
        },
      )
      const others = results.slice(0, 12)
      expect(others.filter((r) => r.status === 200)).toHaveLength(9)
      for (const r of others.filter((x) => x.status !== 200)) expectEnvelope(r, 409, "CLOSE_LIMIT")
      for (const r of results.slice(12)) expect(r.json).toMatchObject({ order_id: ids[0], closing: true })
      const pending = yield* sql<{ n: string; keys: string }>`
        select count(*)::text as n, count(distinct relay_key)::text as keys from closes
        where owner = ${u.who.address.toLowerCase()} and chain_id = 999 and state = 'pending'`
      expect(pending).toEqual([{ n: "10", keys: "10" }])
      const requests = yield* sql<{ n: string }>`
        select count(*)::text as n from relayer_requests r join closes c on c.relay_key = r.idempotency_key
        where c.owner = ${u.who.address.toLowerCase()} and c.chain_id = 999`
      expect(requests).toEqual([{ n: "10" }])
      yield* resumeRelayers
      const accepted = ids.filter((_, i) => i === 0 || others[i - 1]!.status === 200)
      for (const id of accepted) yield* untilClosed(u, "hyperliquid", id)
      // The refused ones were never closed: still listed with their funds, not closing.
      const rows = yield* escrowOf(u)
      for (const id of ids.filter((x) => !accepted.includes(x))) {
        expect(rowOf(rows, "hyperliquid", id)).toMatchObject({ available: "1000000", closing: false })
      }
    }),
  )

  // Last: it moves the Aster chain's clock an hour ahead.
  it.effect("the 11th pending close is refused; one minute after the deadline closing turns false", () =>
    Effect.gen(function* () {
      const { aster, pauseRelayers, resumeRelayers } = yield* CloseEnv
      const u = yield* session(6, ["aster"])
      const orders = yield* fund(aster, u.who, "limit", 11, USDC)
      const ids = orders.map((o) => o.orderId)
      yield* indexed(u, "aster", ids)
      yield* pauseRelayers
      const bodies: Array<Record<string, unknown>> = []
      for (const id of ids) bodies.push((yield* signedClose(u, { venue: "aster", order_id: id })).body)
      for (const body of bodies.slice(0, 10)) expect((yield* close(u, body)).json).toMatchObject({ closing: true })
      const closesBefore = yield* count("closes")
      expectEnvelope(yield* close(u, bodies[10]!), 409, "CLOSE_LIMIT", "11th")
      expect(yield* count("closes")).toBe(closesBefore)
      // A retry of an accepted close is not a new one, so the limit does not refuse it.
      expect((yield* close(u, bodies[3]!)).json).toMatchObject({ closing: true })
      const pending = yield* escrowOf(u)
      expect(ids.map((id) => rowOf(pending, "aster", id)?.closing)).toEqual([
        ...ids.slice(0, 10).map(() => true),
        false,
      ])

      // The close queue's clock one hour and one minute later (plus a second): every pending close expires. One
      // pass of the owner's Aster queue (the entity's step) at that time.
      const now = yield* Clock.currentTimeMillis
      const later = now + (3600 + 61) * 1000
      const live = Clock.make()
      const shifted: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => later,
        unsafeCurrentTimeNanos: () => BigInt(later) * 1_000_000n,
        currentTimeMillis: Effect.succeed(later),
        currentTimeNanos: Effect.succeed(BigInt(later) * 1_000_000n),
        sleep: (d) => live.sleep(d),
      }
      yield* stepCloseQueue(closeQueueId(u.who.address, 42161)).pipe(Effect.withClock(shifted))
      const expired = yield* escrowOf(u)
      expect(ids.map((id) => rowOf(expired, "aster", id)?.closing)).toEqual(ids.map(() => false))
      for (const id of ids.slice(0, 10)) {
        expect((yield* closeState(id)).map((c) => c.state)).toEqual(["expired"])
        const journal = yield* journalOf(id)
        expect(journal.map((j) => j.kind)).toEqual(["close.pending", "close.expired"])
      }
      // The queue has room again: the 11th is accepted.
      expect((yield* close(u, bodies[10]!)).json).toMatchObject({ closing: true })
      // On chain the deadlines pass too: when the relayer resumes, every CloseOffer is refused (simulated revert,
      // no gas), and the expired closes record it; the funds never moved.
      yield* Effect.promise(() => aster.test.increaseTime({ seconds: 3600 + 61 }))
      yield* resumeRelayers
      for (const id of ids)
        yield* eventually(`close of ${id} reverted`, closeState(id), (r) => r[0]?.state === "reverted")
      const after = yield* escrowOf(u)
      expect(ids.map((id) => rowOf(after, "aster", id))).toEqual(
        ids.map((id) => expect.objectContaining({ order_id: id.toLowerCase(), available: "1000000", closing: false })),
      )
      expect((yield* closeState(ids[0]!))[0]!.error).toContain("SignatureExpired")
      expect((yield* journalOf(ids[0]!)).map((j) => j.kind)).toEqual([
        "close.pending",
        "close.expired",
        "close.reverted",
      ])
    }),
  )
})
