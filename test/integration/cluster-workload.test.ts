/**
 * Issue 22 item 3, the three-runner workload: three runner processes of src/main.ts on one (embedded) PostgreSQL,
 * two anvil chains with settlement v2 (test/support/SettleV2Stack.ts: hyperliquid 999 is the maker chain, aster
 * 42161 the taker chain; a block every 250 ms), the Hyperliquid venue simulator paying withdrawals, the maker client
 * as a child process (it renews its lease and reveals on its own) and takers through src/Client/TakerFlow.ts.
 *
 * The workload, its HTTP requests spread over the three runners' APIs: direct v2 takes and v2 transfers (the
 * transfer's take through the same typed flow), orders funded and closed by signature, withdrawals, and credential
 * quote identities whose leases expire. One runner is SIGKILLed while a take is between lock and claim (its
 * payTake relayed, its claim not yet), with other takes locked and waiting for their authorisation, a close and a
 * withdrawal pending, and leases about to expire; identical and conflicting transfer repeats are sent to every
 * runner all along the kill. Then:
 * - every request ends exactly once: each fill `settled`, each close `final`, each withdrawal `relayed`, each
 *   transfer's take final, each lease generation's expiry journaled once; no transition journaled twice; one
 *   relayer request per outbox key and call, every one final, and the operator's on-chain nonce equal to the
 *   requests' distinct nonces (no transaction outside the outbox);
 * - money is conserved: per chain, the token's total supply and the sum over every holder (wallets, escrows, venue
 *   contracts, the simulator's hot wallet) before = after;
 * - nothing waits more than 15 s for a new owner: for every item still pending at the kill, its next progress
 *   (journal time) comes at most 15 s after the later of the kill and what it waited for from outside (the taker's
 *   authorisation, the lease's expiry);
 * - an identical transfer repeat answers 200 and a conflicting one 409, on every runner, also while one is killed
 *   (the killed runner's own requests may go unanswered; every answer given is one of those).
 * Which runner handled what is printed: the runner whose API took each request, the holder of the kind's
 * singleton at each journal row (runner_status, sampled), and the runner named by entity log lines (`actor`, `key`,
 * `runner`) once the kinds are entities.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { type Address, encodeFunctionData, getAddress } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import type { VenueSimulator } from "../../infra/devnet/venues/VenueSimulator.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import {
  httpTakerApi,
  startTake,
  type TakeAnswer,
  type TakeHandle,
  type TakerApi,
  TakerApiError,
} from "../../src/Client/TakerFlow.ts"
import { PERPS_DEX } from "../../src/Domain/EscrowTypedDataV2.ts"
import { DEVNET_TIMING_V2 } from "../../src/Domain/SettlementTimingV2.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account, key, sendCalls, type TestChain } from "../support/ChainDevnet.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import {
  authorizeWhenFinal,
  fillRows,
  killNow,
  M,
  mineForever,
  runMakerClient,
  T,
  timedFetch,
  type V2Stack,
  type V2Taker,
  v2Maker,
  v2Stack,
  v2Taker,
} from "../support/SettleV2Stack.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { simulatorOn } from "../support/VenueNode.ts"

const USDC = 1_000_000n
/** The simulator's hot wallet: not the operator (#9), the minter (#7) or the maker's funder (#8). */
const HOT_WALLET = 6
const SEED = Number(process.env.WORKLOAD_SEED ?? Math.floor(Math.random() * 2 ** 31))
const STALL_BOUND_MS = 15_000
/**
 * Hyperliquid's nonce window, shortened (simulator and adapter alike): a withdrawal the kill caught `submitting` is
 * `unknown` on its new desk until the venue's ledger shows it (`relayed`) or its signed transfer can no longer land
 * (`failed`); with the venue's own window that would be days.
 */
const NONCE_WINDOW_MS = 15_000

// ------------------------------------------------------------------ runners

interface Runner {
  readonly name: string
  readonly api: string
  readonly address: string
  readonly child: ChildProcess
  readonly exited: Promise<unknown>
  /** Every line the process printed (JSON log lines and anything else). */
  readonly lines: Array<string>
}

const alive = (r: Runner) => r.child.exitCode === null && r.child.signalCode === null

/**
 * src/main.ts with the shared environment, its own API and runner ports and JSON logs kept whole (the entity log
 * lines name the runner of each key). Waits until its API answers; a start that lost a port is tried again.
 */
const startRunner = (name: string, env: Record<string, string>) =>
  Effect.gen(function* () {
    for (let attempt = 1; ; attempt++) {
      const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        env: { ...process.env, ...env, PORT: String(port), RUNNER_PORT: String(runnerPort), LOG_FORMAT: "json" },
        stdio: ["ignore", "pipe", "pipe"],
      })
      const lines: Array<string> = []
      let partial = ""
      const keep = (d: Buffer) => {
        const parts = (partial + d.toString()).split("\n")
        partial = parts.pop() ?? ""
        lines.push(...parts)
      }
      child.stdout.on("data", keep)
      child.stderr.on("data", keep)
      const exited = new Promise((resolve) => child.once("exit", resolve))
      const runner: Runner = {
        name,
        api: `http://127.0.0.1:${port}`,
        address: `127.0.0.1:${runnerPort}`,
        child,
        exited,
        lines,
      }
      const portTaken = () => lines.some((l) => l.includes("EADDRINUSE") || l.includes("already in use"))
      const up = yield* pollUntil(
        Effect.promise(() =>
          timedFetch(`${runner.api}/v1/info`).then(
            (r) => (r.ok ? "up" : "no"),
            () => (!alive(runner) || portTaken() ? "gone" : "no"),
          ),
        ),
        (s) => s !== "no",
        { every: "250 millis", within: "120 seconds" },
      ).pipe(Effect.orElseSucceed(() => "timeout"))
      if (up === "up") return runner
      yield* killNow(runner)
      if (portTaken() && attempt < 5) continue
      return yield* Effect.dieMessage(`runner ${name} did not start (${up}):\n${lines.slice(-60).join("\n")}`)
    }
  })

interface StatusRow {
  readonly address: string
  readonly shards: number
  readonly singletons: ReadonlyArray<string>
}

const statusRows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<StatusRow>`select address, shards, singletons from runner_status order by address`,
)

const dbNow = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ t: number }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as t`,
).pipe(Effect.map((rows) => rows[0]!.t))

// ------------------------------------------------------------------ the harness

class Harness extends Context.Tag("test/ClusterWorkload")<
  Harness,
  {
    readonly stack: V2Stack
    readonly sim: VenueSimulator
    readonly runners: ReadonlyArray<Runner>
  }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const { stack, config } = yield* v2Stack(url)
    const sim = yield* simulatorOn(stack.hl, "hyperliquid", {
      hotWalletKey: key(HOT_WALLET),
      nonceWindow: { pastMs: NONCE_WINDOW_MS, futureMs: 86_400_000 },
    })
    // The withdrawal desk pays through the simulator; the request budget is not under test here (one client
    // address, 127.0.0.1, sends everything of this test).
    const withVenueApi = {
      ...config,
      venues: config.venues.map((v) =>
        v.id === M
          ? { ...v, api_url: sim.url, venue_api: { request_timeout_ms: 1_500, nonce_window_past_ms: NONCE_WINDOW_MS } }
          : v,
      ),
      withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000 },
      limits: { requests_per_second: 2_000, request_burst: 4_000 },
    }
    const file = `${stack.env.SETTLEMENT_CONFIG}.workload.json`
    writeFileSync(file, JSON.stringify(withVenueApi))
    const env = { DATABASE_URL: stack.env.DATABASE_URL!, SETTLEMENT_CONFIG: file }
    yield* Effect.forkScoped(mineForever(stack))
    const runners: Array<Runner> = []
    yield* Effect.addFinalizer(() => Effect.forEach(runners, killNow, { discard: true }))
    // One at a time: the first runs the migrations.
    for (const name of ["A", "B", "C"]) runners.push(yield* startRunner(name, env))
    const db = databaseLayer(url)
    return Layer.merge(db, Layer.succeed(Harness, { stack, sim, runners }))
  }),
)

const t0 = Date.now()
const progress = (what: string) =>
  Effect.sync(() => process.stderr.write(`[cluster-workload +${Date.now() - t0} ms] ${what}\n`))

/** On a failure, each runner's last lines. */
const withOutputs = <A, E, R>(e: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(e, () =>
    Effect.flatMap(Harness, ({ runners }) =>
      Effect.sync(() => {
        for (const r of runners) {
          const notAccess = r.lines.filter((l) => !l.includes('"message":"request"'))
          process.stderr.write(`--- runner ${r.name}:\n${notAccess.slice(-40).join("\n")}\n`)
        }
      }),
    ),
  )

const on = (s: V2Stack, r: Runner): V2Stack => ({ ...s, api: r.api })

const ok = (what: string, res: RawResponse, status = 200) => {
  expect(res.status, `${what}: ${res.text}`).toBe(status)
  return res.json
}

const mint = (c: TestChain, to: Address, amount: bigint) =>
  Effect.promise(() =>
    sendCalls(c, account(7), [
      { to: c.token, data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to, amount] }) },
    ]),
  )

// ------------------------------------------------------------------ money

/** Per chain: the token's total supply and the balances of every holder this test knows. */
const holdings = (s: V2Stack, people: ReadonlyArray<Address>) =>
  Effect.promise(async () => {
    const one = async (c: TestChain) => {
      const contracts = Object.values(c.deployment.contracts).map((x) => x!.address)
      const holders = [...new Set([...contracts, ...people].map((a) => getAddress(a)))]
      const read = (args: readonly [Address] | readonly []) =>
        args.length === 0
          ? c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "totalSupply" })
          : c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args })
      const balances = await Promise.all(holders.map((h) => read([h])))
      return {
        supply: await read([]),
        held: balances.reduce((a, b) => a + b, 0n),
        byHolder: Object.fromEntries(holders.map((h, i) => [h, balances[i]!])),
      }
    }
    const [hl, aster] = await Promise.all([one(s.hl), one(s.aster)])
    return { hl, aster }
  })

// ------------------------------------------------------------------ orders and closes

interface SignItem {
  readonly kind: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly typed_data: any
}

interface CloseOwner {
  readonly owner: PrivateKeyAccount
  readonly auth: Record<string, string>
  readonly identityId: string
  orderId?: string
}

const closeOwner = (s: V2Stack, via: Runner) =>
  Effect.gen(function* () {
    const owner = privateKeyToAccount(generatePrivateKey())
    yield* mint(s.hl, owner.address, 10n * USDC)
    const token = yield* signIn(via.api, owner)
    ok("link", yield* post(`${via.api}/v1/accounts`, { venue: M, address: owner.address }, bearer(token)), 201)
    const identity = yield* registerIdentity(via.api, token, privateKeyToAccount(generatePrivateKey()))
    return { owner, auth: bearer(token), identityId: identity.id } satisfies CloseOwner
  })

const orderState = (base: string, o: CloseOwner) =>
  Effect.map(
    rawRequest(`${base}/v1/orders/${o.orderId}`, { headers: o.auth }),
    (r) => (r.json as { state?: string } | undefined)?.state ?? `http ${r.status}`,
  )

/** POST /v1/orders on `create`, the owner's fund and permit signatures on `sign`, until funded. */
const fundedOrder = (o: CloseOwner, create: Runner, sign: Runner, label: string) =>
  Effect.gen(function* () {
    const prepared = ok(
      "order",
      yield* post(
        `${create.api}/v1/orders`,
        {
          client_order_id: label,
          venue: M,
          receive_venue: T,
          owner_address: o.owner.address,
          amount: (5n * USDC).toString(),
          quote_identity_id: o.identityId,
        },
        o.auth,
      ),
    ) as { order: { id: string }; to_sign: ReadonlyArray<SignItem> }
    o.orderId = prepared.order.id
    const signOf = (kind: string) =>
      Effect.promise(() => o.owner.signTypedData(prepared.to_sign.find((i) => i.kind === kind)!.typed_data))
    ok(
      "order signatures",
      yield* post(
        `${sign.api}/v1/orders/${o.orderId}/signatures`,
        { fund_order: yield* signOf("fund_order"), permit: yield* signOf("permit") },
        o.auth,
      ),
    )
    const state = yield* pollUntil(orderState(sign.api, o), (st) => st === "funded" || st === "failed", {
      every: "300 millis",
      within: "120 seconds",
    })
    expect(state, `order ${label}`).toBe("funded")
  })

/** prepare → the owner signs the CloseOffer as returned → POST /v1/escrow/close (to the wallet). */
const closeBySignature = (o: CloseOwner, prepareOn: Runner, submitOn: Runner) =>
  Effect.gen(function* () {
    const p = ok(
      "close prepare",
      yield* post(
        `${prepareOn.api}/v1/escrow/close/prepare`,
        { venue: M, order_id: o.orderId, to_margin: false },
        o.auth,
      ),
    ) as { dex: number; nonce: string; deadline: number; to_sign: ReadonlyArray<SignItem> }
    const signature = yield* Effect.promise(() => o.owner.signTypedData(p.to_sign[0]!.typed_data))
    const body = { venue: M, order_id: o.orderId, dex: p.dex, nonce: p.nonce, deadline: p.deadline, to_margin: false }
    ok("close", yield* post(`${submitOn.api}/v1/escrow/close`, { ...body, signature }, o.auth))
  })

const closesOf = (orderId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ id: string; state: string; released: string | null }>`
      select id::text, state, released::text from closes where order_id = ${orderId} order by created_at`,
  )

// ------------------------------------------------------------------ withdrawals

interface Withdrawer {
  readonly who: PrivateKeyAccount
  readonly token: string
  id?: string
}

const withdrawer = (via: Runner, sim: VenueSimulator) =>
  Effect.gen(function* () {
    const who = privateKeyToAccount(generatePrivateKey())
    const token = yield* signIn(via.api, who)
    ok("link", yield* post(`${via.api}/v1/accounts`, { venue: M, address: who.address }, bearer(token)), 201)
    sim.control.credit(who.address, 10n * USDC)
    return { who, token } satisfies Withdrawer
  })

/** Prepare on one runner, submit on another: the queued withdrawal (to the wallet: the hot wallet pays on chain). */
const withdraw = (w: Withdrawer, prepareOn: Runner, submitOn: Runner, amount: bigint) =>
  Effect.gen(function* () {
    const prepared = ok(
      "withdrawal prepare",
      yield* post(
        `${prepareOn.api}/v1/withdrawals/prepare`,
        { venue: M, amount: amount.toString(), to: "wallet" },
        bearer(w.token),
      ),
    ) as { venue: string; amount: string; to: string; typed_data: SignItem["typed_data"] }
    const signature = yield* Effect.promise(() => w.who.signTypedData(prepared.typed_data))
    const submitted = ok(
      "withdrawal",
      yield* post(
        `${submitOn.api}/v1/withdrawals`,
        { venue: prepared.venue, amount: prepared.amount, to: prepared.to, typed_data: prepared.typed_data, signature },
        bearer(w.token),
      ),
    ) as { id: string }
    w.id = submitted.id
  })

const withdrawalState = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ state: string }>`select state from withdrawals where id = ${id}::uuid`, (r) => r[0]?.state),
  )

// ------------------------------------------------------------------ transfers

interface Transfer {
  readonly taker: V2Taker
  readonly body: Record<string, unknown>
  readonly id: string
  readonly clientTakeId: string
  handle?: TakeHandle
}

const transferBody = (t: V2Taker, clientId: string, amountIn: bigint) => ({
  client_transfer_id: clientId,
  from: T,
  to: M,
  amount_in: amountIn.toString(),
  min_out: "1",
  payer: t.account.address,
  recipient: t.account.address,
  max_parts: 1,
})

/** The taker's transport for a transfer's take: the pay key on PUT …/take/pay-key (the take is routed then). */
const transferApi = (base: string, t: V2Taker, transferId: string): TakerApi => {
  const headers = { "content-type": "application/json", authorization: `Bearer ${t.token}` }
  return {
    createTake: async (body) => {
      const res = await timedFetch(`${base}/v1/transfers/${transferId}/take/pay-key`, {
        method: "PUT",
        headers,
        body: JSON.stringify({ pay_key: body.pay_key }),
      })
      const json = (await res.json()) as { take_id?: string | null; error?: { code: string; message: string } }
      if (!res.ok) throw new TakerApiError(res.status, json.error?.code ?? "", json.error?.message ?? "")
      if (!json.take_id) throw new Error(`transfer ${transferId}: no take routed on the pay key`)
      const take = await timedFetch(`${base}/v1/takes/${json.take_id}`, { headers })
      return (await take.json()) as TakeAnswer
    },
    postSignatures: httpTakerApi(base, t.token, timedFetch).postSignatures,
  }
}

const takeFlowOptions = (s: V2Stack) => ({
  chains: {
    42161: { escrow: s.aster.escrowV2!, token: s.aster.token },
    999: { escrow: s.hl.escrowV2!, token: s.hl.token },
  },
  minClaimWindowSeconds: BigInt(DEVNET_TIMING_V2.claimWindow),
})

/**
 * The taker's typed flow (create, check, sign the checked Fills, submit) on `api`. A NO_LIQUIDITY refusal stores
 * nothing (the maker's set can be between publications: its lease and set renewals run late on a loaded machine):
 * asked again until a take is made.
 */
const typedTake = (s: V2Stack, api: TakerApi, taker: V2Taker, clientTakeId: string, amountIn: bigint) =>
  Effect.gen(function* () {
    let refused = 0
    const attempt = Effect.tryPromise(() =>
      startTake(
        api,
        takeFlowOptions(s),
        taker.account,
        {
          clientTakeId,
          from: T,
          to: M,
          intent: {
            takerChainId: 42161,
            makerChainId: 999,
            payer: taker.account.address,
            recipient: taker.account.address,
            amountIn,
            minOut: 1n,
            maxParts: 1,
            dex: PERPS_DEX,
            toMargin: true,
          },
        },
        { now: () => BigInt(Math.floor(Date.now() / 1000)), payByMaxSeconds: BigInt(DEVNET_TIMING_V2.payByMax) },
      ),
    ).pipe(
      Effect.map((r) => ({ done: true as const, r })),
      Effect.catchAll((e) =>
        e.error instanceof TakerApiError && e.error.code === "NO_LIQUIDITY"
          ? Effect.sync(() => {
              refused += 1
              return { done: false as const }
            })
          : Effect.die(e.error),
      ),
    )
    const out = yield* pollUntil(attempt, (a) => a.done, { every: "1 second", within: "120 seconds" }).pipe(
      Effect.orDie,
    )
    if (!out.done) return yield* Effect.dieMessage("unreachable")
    if (!out.r.ok) return yield* Effect.dieMessage(`take refused by the client: ${JSON.stringify(out.r.problems)}`)
    if (refused > 0) yield* progress(`take ${clientTakeId}: ${refused} NO_LIQUIDITY answer(s) before it was made`)
    return out.r.handle
  })

const transferTake = (s: V2Stack, via: Runner, tr: Transfer, amountIn: bigint) =>
  Effect.tap(typedTake(s, transferApi(via.api, tr.taker, tr.id), tr.taker, tr.clientTakeId, amountIn), (h) => {
    tr.handle = h
  })

const directTake = (s: V2Stack, via: Runner, t: V2Taker, amountIn: bigint) =>
  typedTake(s, httpTakerApi(via.api, t.token, timedFetch), t, `workload-${crypto.randomUUID()}`, amountIn)

interface RepeatAnswer {
  readonly runner: string
  readonly kind: "identical" | "conflicting"
  readonly status: number | "no answer"
  readonly code: string | undefined
  readonly at: number
}

// ------------------------------------------------------------------ the journal

interface JournalRow {
  readonly id: string
  readonly kind: string
  readonly master: string | null
  readonly payload: Record<string, unknown>
  readonly at: number
}

const journal = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<JournalRow>`select id::text, kind, master, payload,
      (extract(epoch from created_at) * 1000)::float8 as at from journal order by id`,
)

/** The kind's singleton today, the entity type after issue 22. */
const KIND_OF: ReadonlyArray<[RegExp, string, string]> = [
  [/^(fill\.|trade\.settled|take\.pay_authorization_requested)/, "settlement", "settlement"],
  [/^order\./, "order-funding", "order-funding"],
  [/^close\./, "close-queue", "close-queue"],
  [/^withdrawal\./, "withdrawal-desk", "withdrawal-desk"],
  [/^transfer\./, "transfer-desk", "transfer-desk"],
  [/^quote_identity\.lease_expired/, "quote-identity-lease", "lease-keeper"],
]

// ------------------------------------------------------------------ the test

layer(Live, { timeout: "900 seconds", excludeTestServices: true })("three runners under a workload", (it) => {
  it.effect(
    "takes, transfers, closes, withdrawals and lease expiries over three runners; one SIGKILLed mid-settlement",
    () =>
      withOutputs(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { stack, sim, runners } = yield* Harness
          const [A, B] = runners as [Runner, Runner, Runner]
          console.log(`cluster-workload seed ${SEED} (WORKLOAD_SEED replays the choices)`)
          const pick = <X>(xs: ReadonlyArray<X>, i: number) => xs[(i + (SEED % xs.length)) % xs.length]!
          const nameOf = (address: string) => runners.find((r) => r.address === address)?.name ?? address

          // All three hold shards before anything starts.
          yield* pollUntil(
            statusRows,
            (rows) =>
              rows.length === 3 && rows.every((r) => r.shards > 0) && rows.reduce((n, r) => n + r.shards, 0) === 300,
            { every: "250 millis", within: "90 seconds" },
          )

          // The holders of each singleton over time (today's background work; after issue 22 only the watchers,
          // relayers and the journal publisher).
          const timeline: Array<{ at: number; rows: ReadonlyArray<StatusRow> }> = []
          let sampling = true
          const sampler = yield* Effect.fork(
            pollUntil(
              Effect.zip(dbNow, statusRows).pipe(
                Effect.tap(([at, rows]) => Effect.sync(() => timeline.push({ at, rows }))),
                Effect.orElseSucceed(() => undefined),
              ),
              () => !sampling,
              { every: "500 millis", within: "900 seconds" },
            ),
          )
          const holderAt = (singleton: string, at: number) => {
            let best: string | undefined
            for (const s of timeline) {
              if (s.at > at) break
              best = s.rows.find((r) => r.singletons.includes(singleton))?.address ?? best
            }
            return best === undefined ? undefined : nameOf(best)
          }

          // ---------------------------------------------------------------- fixtures (before the balances)
          const { maker, credential } = yield* v2Maker(on(stack, A), account(1), 20n * USDC)
          const makerProcess = runMakerClient(on(stack, pick(runners, 0)), maker, credential)
          yield* Effect.addFinalizer(() => killNow(makerProcess))
          yield* pollUntil(
            sql`select 1 from quote_sets where order_id = ${maker.orderId} and active and hashlock_root is not null`,
            (rows) => rows.length === 1,
            { every: "250 millis", within: "90 seconds" },
          )
          yield* pollUntil(
            sql`select 1 from escrow_v2_orders where order_id = ${maker.orderId} and available > 0`,
            (rows) => rows.length === 1,
            { every: "250 millis", within: "90 seconds" },
          )
          const takers = yield* Effect.forEach([2, 3, 4, 5], (i, n) => v2Taker(on(stack, pick(runners, n)), account(i)))
          const [direct1, direct2, payer1, payer2] = takers as [V2Taker, V2Taker, V2Taker, V2Taker]
          const owners: Array<CloseOwner> = yield* Effect.forEach([0, 1], (n) =>
            closeOwner(stack, pick(runners, n + 1)),
          )
          const withdrawers: Array<Withdrawer> = yield* Effect.forEach([0, 1], (n) =>
            withdrawer(pick(runners, n + 2), sim),
          )
          const leaseMaster = privateKeyToAccount(generatePrivateKey())
          const leaseToken = yield* signIn(B.api, leaseMaster)
          const identities = yield* Effect.forEach([0, 1, 2, 3, 4, 5], (n) =>
            Effect.gen(function* () {
              const via = pick(runners, n)
              const identity = yield* registerIdentity(via.api, leaseToken, privateKeyToAccount(generatePrivateKey()))
              const cred = yield* issueCredential(via.api, leaseToken, identity.id, ["quote"])
              return { id: identity.id, token: cred.token }
            }),
          )
          const people = [
            ...Array.from({ length: 10 }, (_, i) => account(i).address),
            maker.payee.address,
            ...owners.map((o) => o.owner.address),
            ...withdrawers.map((w) => w.who.address),
          ]
          const before = yield* holdings(stack, people)
          yield* progress(
            `fixtures ready; balances: hl ${before.hl.held}/${before.hl.supply}, aster ${before.aster.held}`,
          )

          // ---------------------------------------------------------------- before the kill
          const handled: Array<{ item: string; api: ReadonlyArray<string> }> = []
          // A close done before the kill, and an order funded whose close will be pending at the kill.
          const [o1, o2] = owners as [CloseOwner, CloseOwner]
          yield* fundedOrder(o1, pick(runners, 0), pick(runners, 1), "workload-1")
          yield* closeBySignature(o1, pick(runners, 1), pick(runners, 2))
          handled.push({
            item: `close of ${o1.orderId}`,
            api: [pick(runners, 0), pick(runners, 1), pick(runners, 2)].map((r) => r.name),
          })
          yield* fundedOrder(o2, pick(runners, 2), pick(runners, 0), "workload-2")
          handled.push({ item: `order ${o2.orderId}`, api: [pick(runners, 2), pick(runners, 0)].map((r) => r.name) })
          // A withdrawal before the kill.
          const [w1, w2] = withdrawers as [Withdrawer, Withdrawer]
          yield* withdraw(w1, pick(runners, 1), pick(runners, 2), 2n * USDC)
          handled.push({ item: `withdrawal ${w1.id}`, api: [pick(runners, 1), pick(runners, 2)].map((r) => r.name) })
          yield* progress("close 1 and withdrawal 1 requested")

          // Transfers: created on one runner; the identical repeat (200) and a conflicting one (409) on each.
          const transfers: Array<Transfer> = []
          for (const [n, payer] of [payer1, payer2].entries()) {
            const body = transferBody(payer, `workload-${SEED}-${n}`, USDC)
            const via = pick(runners, n + 1)
            const created = ok("transfer", yield* post(`${via.api}/v1/transfers`, body, bearer(payer.token)), 201) as {
              id: string
              client_take_id: string
            }
            transfers.push({ taker: payer, body, id: created.id, clientTakeId: created.client_take_id })
            for (const r of runners) {
              const same = yield* post(`${r.api}/v1/transfers`, body, bearer(payer.token))
              expect(same.status, `identical repeat on ${r.name}: ${same.text}`).toBe(200)
              expect((same.json as { id: string }).id).toBe(created.id)
              const other = yield* post(
                `${r.api}/v1/transfers`,
                { ...body, amount_in: (2n * USDC).toString() },
                bearer(payer.token),
              )
              expect(other.status, `conflicting repeat on ${r.name}: ${other.text}`).toBe(409)
            }
            handled.push({ item: `transfer ${created.id}`, api: [via.name] })
          }

          // The takes: two direct, two through the transfers; each created on its own runner, all locked.
          const d1 = yield* directTake(stack, pick(runners, 0), direct1, USDC)
          const d2 = yield* directTake(stack, pick(runners, 1), direct2, USDC)
          const t1 = yield* transferTake(stack, pick(runners, 2), transfers[0]!, USDC)
          const t2 = yield* transferTake(stack, pick(runners, 0), transfers[1]!, USDC)
          const takes = [
            { name: "direct-1", handle: d1, taker: direct1, api: pick(runners, 0) },
            { name: "direct-2", handle: d2, taker: direct2, api: pick(runners, 1) },
            { name: "transfer-1", handle: t1, taker: payer1, api: pick(runners, 2) },
            { name: "transfer-2", handle: t2, taker: payer2, api: pick(runners, 0) },
          ]
          for (const t of takes) handled.push({ item: `take ${t.name} ${t.handle.takeId}`, api: [t.api.name] })
          const offered = (t: (typeof takes)[number]) =>
            pollUntil(
              sql`select 1 from journal where kind = 'take.pay_authorization_requested'
                and payload->>'take_id' = ${t.handle.takeId}`,
              (rows) => rows.length > 0,
              { every: "300 millis", within: "180 seconds" },
            )
          yield* Effect.forEach(takes, offered, { discard: true })
          yield* progress("every take's locks final; authorisations offered")

          // Leases: renewed for 5 … 25 s, so some expire before the kill and some after.
          // (A credential identity starts at generation 0, already expired: its first renewal opens generation 1.)
          const renewedAt = yield* dbNow
          const leased: Array<string> = []
          for (const [n, identity] of identities.entries()) {
            const res = yield* renew(pick(runners, n).api, identity.token, identity.id, 5 + 4 * n)
            expect(res.status, `lease ${n}: ${res.text}`).toBe(200)
            leased.push(`${identity.id}:${(res.json as { generation: string }).generation}`)
          }
          handled.push({ item: "lease renewals", api: identities.map((_, n) => pick(runners, n).name) })

          // The repeats, on every runner every 300 ms, until after the kill.
          const answers: Array<RepeatAnswer> = []
          let repeating = true
          const oneRound = Effect.forEach(
            runners,
            (r) =>
              Effect.forEach(
                [
                  ["identical", transfers[0]!.body],
                  ["conflicting", { ...transfers[0]!.body, min_out: "2" }],
                ] as const,
                ([kind, body]) =>
                  post(`${r.api}/v1/transfers`, body, bearer(payer1.token)).pipe(
                    Effect.timeout("5 seconds"),
                    Effect.map((res) => ({
                      status: res.status as RepeatAnswer["status"],
                      code: (res.json as { error?: { code: string } } | undefined)?.error?.code,
                    })),
                    Effect.orElseSucceed(() => ({ status: "no answer" as const, code: undefined })),
                    Effect.flatMap((a) => Effect.map(dbNow, (at) => answers.push({ runner: r.name, kind, ...a, at }))),
                  ),
                { concurrency: 2, discard: true },
              ),
            { concurrency: 3, discard: true },
          )
          const repeater = yield* Effect.fork(
            pollUntil(oneRound, () => !repeating, { every: "300 millis", within: "600 seconds" }),
          )

          // While the lease clock runs, until some leases ended; then mid-settlement: direct-1 authorised, a close
          // and a withdrawal submitted, the kill once direct-1's fill is between lock and claim.
          yield* pollUntil(dbNow, (t) => t > renewedAt + 8_000, { every: "250 millis", within: "60 seconds" })
          yield* authorizeWhenFinal(on(stack, pick(runners, 0)), direct1, d1)
          yield* closeBySignature(o2, pick(runners, 1), pick(runners, 2))
          handled.push({ item: `close of ${o2.orderId}`, api: [pick(runners, 1), pick(runners, 2)].map((r) => r.name) })
          yield* withdraw(w2, pick(runners, 2), pick(runners, 0), 3n * USDC)
          handled.push({ item: `withdrawal ${w2.id}`, api: [pick(runners, 2), pick(runners, 0)].map((r) => r.name) })
          const [d1Fill] = yield* pollUntil(
            fillRows(d1.takeId),
            (rows) => rows.some((r) => ["paying", "paid", "claiming"].includes(r.state)),
            { every: "100 millis", within: "120 seconds" },
          )

          // The victim: the settlement singleton's holder (today), else the runner whose entity lines name
          // direct-1's take or fills (issue 22), else a seeded choice.
          const rowsNow = yield* statusRows
          const settlementHolder = rowsNow.find((r) => r.singletons.includes("settlement"))?.address
          const entityRunnerOf = (needles: ReadonlyArray<string>) => {
            const counts = new Map<string, number>()
            for (const r of runners)
              for (const line of r.lines) {
                if (!line.startsWith("{") || !needles.some((n) => line.includes(n))) continue
                const parsed = JSON.parse(line) as { runner?: string; key?: string; actor?: string }
                if (parsed.runner && parsed.key && needles.some((n) => parsed.key!.includes(n)))
                  counts.set(parsed.runner, (counts.get(parsed.runner) ?? 0) + 1)
              }
            return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0]
          }
          const victimAddress = settlementHolder ?? entityRunnerOf([d1.takeId, d1Fill!.id]) ?? pick(runners, 2).address
          const victim = runners.find((r) => r.address === victimAddress) ?? pick(runners, 2)
          const survivors = runners.filter((r) => r !== victim)
          victim.child.kill("SIGKILL")
          const killedAt = yield* dbNow
          yield* Effect.promise(() => victim.exited)
          // What is pending once the victim is gone, and the journal rows then visible: an item's next progress is
          // its first row not visible yet (a row committed just before the kill is not progress after it).
          const seenAtKill = new Set((yield* sql<{ id: string }>`select id::text from journal`).map((r) => r.id))
          const [fillsAtKill, closesAtKill, withdrawalsAtKill] = yield* Effect.all([
            Effect.forEach(takes, (t) => fillRows(t.handle.takeId)),
            closesOf(o2.orderId!),
            withdrawalState(w2.id!),
          ])
          yield* progress(
            `SIGKILL ${victim.name} (${victim.address}); fills ${fillsAtKill.map((f) => f.map((r) => r.state).join("+")).join(", ")}; close ${closesAtKill.map((c) => c.state).join(",")}; withdrawal ${withdrawalsAtKill}`,
          )

          // ---------------------------------------------------------------- after the kill
          // The other takes authorised through the survivors.
          for (const [n, t] of takes.slice(1).entries()) {
            yield* authorizeWhenFinal(on(stack, survivors[n % survivors.length]!), t.taker, t.handle)
          }
          yield* progress("every take authorised")
          /** A wait for an item's end; on a timeout the item and its rows say what never came. */
          const awaitEnd = <A, E, R>(
            item: string,
            read: Effect.Effect<A, E, R>,
            done: (a: A) => boolean,
            within: "120 seconds" | "240 seconds",
          ) =>
            pollUntil(read, done, { every: "300 millis", within }).pipe(
              Effect.catchAll(() =>
                Effect.flatMap(Effect.either(read), (last) =>
                  Effect.dieMessage(`${item} did not end within ${within}: ${JSON.stringify(last)}`),
                ),
              ),
            )
          yield* Effect.forEach(
            takes,
            (t) =>
              awaitEnd(
                `take ${t.name} ${t.handle.takeId}`,
                fillRows(t.handle.takeId),
                (rows) => rows.length > 0 && rows.every((r) => r.final),
                "240 seconds",
              ),
            { discard: true },
          )
          yield* awaitEnd(
            `close of ${o2.orderId}`,
            closesOf(o2.orderId!),
            (rows) => rows.length > 0 && rows.every((r) => r.state !== "pending"),
            "120 seconds",
          )
          yield* Effect.forEach(
            [w1, w2],
            (w) =>
              awaitEnd(
                `withdrawal ${w.id}`,
                withdrawalState(w.id!),
                (st) => st === "relayed" || st === "failed",
                "120 seconds",
              ),
            { discard: true },
          )
          const expiredRows = () =>
            sql<{ id: string }>`select payload->>'identity_id' || ':' || (payload->>'generation') as id from journal
              where kind = 'quote_identity.lease_expired'
                and payload->>'identity_id' || ':' || (payload->>'generation') in ${sql.in(leased)}`
          yield* awaitEnd(
            `lease expiries of ${leased.join(", ")}`,
            expiredRows(),
            (rows) => rows.length >= leased.length,
            "120 seconds",
          )
          yield* awaitEnd(
            "relayer requests",
            sql<{ idempotency_key: string; status: string }>`select idempotency_key, status from relayer_requests
              where status in ('queued', 'pending', 'included')`,
            (rows) => rows.length === 0,
            "120 seconds",
          )
          yield* Effect.promise(() => sim.control.payoutsSettled())
          repeating = false
          yield* Fiber.join(repeater).pipe(Effect.ignore)
          yield* progress("every item at its end")

          // ---------------------------------------------------------------- every request ends exactly once
          for (const t of takes) {
            const rows = yield* fillRows(t.handle.takeId)
            expect(
              rows.map((r) => r.state),
              `${t.name}'s fills`,
            ).toEqual(rows.map(() => "settled"))
          }
          const [close1] = yield* closesOf(o1.orderId!)
          const closes2 = yield* closesOf(o2.orderId!)
          expect([close1?.state, closes2.map((c) => c.state)]).toEqual(["final", ["final"]])
          // w1 was relayed before the kill; w2 may have been caught between `submitting` and the venue's answer: its
          // one end is `relayed` (the venue has it) or `failed` (it never arrived), and the money below follows it.
          expect(yield* withdrawalState(w1.id!), `withdrawal ${w1.id}`).toBe("relayed")
          const w2End = yield* withdrawalState(w2.id!)
          expect(["relayed", "failed"], `withdrawal ${w2.id}`).toContain(w2End)
          const w2Paid = w2End === "relayed" ? 3n * USDC : 0n
          const transferRows = yield* sql<{ id: string; take_id: string | null; cancelled_at: unknown }>`
            select id::text, take_id::text, cancelled_at from transfers order by created_at`
          expect(transferRows.map((r) => [r.id, r.take_id, r.cancelled_at])).toEqual(
            transfers.map((tr) => [tr.id, tr.handle!.takeId, null]),
          )

          const rows = yield* journal
          // No transition journaled twice: one row per (kind, its subject, side) for the families of the workload.
          const subjectOf = (r: JournalRow): string | undefined => {
            const p = r.payload
            if (r.kind.startsWith("fill.")) return `${p.fill_id}:${p.side}`
            if (r.kind === "trade.settled") return String(p.id)
            if (r.kind.startsWith("take.")) return `${p.take_id}:${r.master}`
            if (r.kind.startsWith("transfer.")) return String(p.transfer_id ?? p.id)
            if (r.kind.startsWith("close.")) return String(p.close_id ?? p.id)
            if (r.kind.startsWith("withdrawal.")) return `${p.withdrawal_id}:${p.revision}`
            if (r.kind.startsWith("order.")) return String(p.order_id ?? p.id)
            if (r.kind === "quote_identity.lease_expired") return `${p.identity_id}:${p.generation}`
            return undefined
          }
          const seen = new Map<string, number>()
          for (const r of rows) {
            const subject = subjectOf(r)
            if (subject === undefined) continue
            const k = `${r.kind} ${subject}`
            seen.set(k, (seen.get(k) ?? 0) + 1)
          }
          expect([...seen.entries()].filter(([, n]) => n > 1)).toEqual([])
          const allFills = fillsAtKill.flat().map((f) => f.id)
          const settledRows = rows.filter((r) => r.kind === "trade.settled" && allFills.includes(String(r.payload.id)))
          expect(settledRows.map((r) => String(r.payload.id)).sort(), "one trade.settled per fill").toEqual(
            [...allFills].sort(),
          )
          const expiries = rows.filter(
            (r) =>
              r.kind === "quote_identity.lease_expired" &&
              leased.includes(`${r.payload.identity_id}:${r.payload.generation}`),
          )
          expect(expiries.map((r) => `${r.payload.identity_id}:${r.payload.generation}`).sort()).toEqual(
            [...leased].sort(),
          )

          // The outbox: every request final, no call relayed under two keys, no operator transaction outside it.
          const requests = yield* sql<{
            idempotency_key: string
            chain_id: string
            target: string
            calldata: string
            status: string
            nonce: string | null
          }>`select idempotency_key, chain_id::text, target, calldata, status, nonce::text from relayer_requests`
          expect(requests.filter((r) => r.status !== "final").map((r) => [r.idempotency_key, r.status])).toEqual([])
          const calls = new Map<string, Array<string>>()
          for (const r of requests) {
            const k = `${r.chain_id}:${r.target}:${r.calldata}`
            calls.set(k, [...(calls.get(k) ?? []), r.idempotency_key])
          }
          expect([...calls.values()].filter((keys) => keys.length > 1)).toEqual([])
          for (const c of [stack.hl, stack.aster]) {
            const nonces = new Set(
              requests.filter((r) => r.chain_id === String(c.chain.id) && r.nonce !== null).map((r) => r.nonce),
            )
            const sent = yield* Effect.promise(() => c.pub.getTransactionCount({ address: account(9).address }))
            expect(sent, `operator transactions on ${c.chain.id}`).toBe(nonces.size)
          }
          console.log(
            `outbox: ${requests.length} requests (${[...new Set(requests.map((r) => r.idempotency_key.split(":")[0]))].join(", ")}), all final, one per call`,
          )

          // ---------------------------------------------------------------- money is conserved
          const after = yield* holdings(stack, people)
          for (const chain of ["hl", "aster"] as const) {
            const moved = Object.entries(after[chain].byHolder)
              .map(([h, b]) => [h, b - before[chain].byHolder[h]!] as const)
              .filter(([, d]) => d !== 0n)
            console.log(
              `${chain}: supply ${after[chain].supply}, moved ${moved.map(([h, d]) => `${h.slice(0, 8)} ${d}`).join(", ")}`,
            )
            expect(after[chain].supply, `${chain} supply`).toBe(before[chain].supply)
            expect(after[chain].held, `${chain} held by the known holders`).toBe(before[chain].held)
          }
          // And each holder moved by exactly what its requests asked, once: takers paid amount_in on aster to the
          // maker's payee, the maker chain's v2 escrow paid amount_out into the venue (to margin); the hot wallet
          // paid each withdrawal to its owner once; the close owners got back what they funded.
          const settledFills = (yield* Effect.forEach(takes, (t) => fillRows(t.handle.takeId))).flat()
          const sum = (xs: ReadonlyArray<bigint>) => xs.reduce((a, b) => a + b, 0n)
          const totalOut = sum(settledFills.map((f) => BigInt(f.amount_out)))
          const deltas = (chain: "hl" | "aster") =>
            Object.fromEntries(
              Object.entries(after[chain].byHolder)
                .map(([h, b]) => [h, b - before[chain].byHolder[h]!] as const)
                .filter(([, d]) => d !== 0n),
            )
          expect(deltas("aster"), "aster: what moved").toEqual(
            Object.fromEntries([
              ...takes.map((t) => [getAddress(t.taker.account.address), -USDC] as const),
              [getAddress(maker.payee.address), sum(settledFills.map((f) => BigInt(f.amount_in)))],
            ]),
          )
          expect(deltas("hl"), "hl: what moved").toEqual(
            Object.fromEntries([
              [getAddress(stack.hl.escrowV2!), -totalOut],
              [getAddress(stack.hl.deployment.contracts.venue.address), totalOut],
              [getAddress(account(HOT_WALLET).address), -(2n * USDC + w2Paid)],
              [getAddress(w1.who.address), 2n * USDC],
              ...(w2Paid > 0n ? [[getAddress(w2.who.address), w2Paid] as const] : []),
            ]),
          )

          // ---------------------------------------------------------------- nothing waits more than 15 s
          // Items pending at the kill, with what they waited for from outside: the taker's authorisation (takes
          // other than direct-1) and the lease's expiry. (A next row whose transaction began before it was ready
          // counts as no wait.)
          const authorisedAt = (takeId: string) =>
            rows.find((r) => r.kind === "take.pay_authorized" && r.payload.take_id === takeId)?.at ?? 0
          const stalls: Array<{ item: string; readyAt: number; next: number | undefined }> = []
          for (const [n, t] of takes.entries()) {
            for (const f of fillsAtKill[n]!) {
              if (f.final) continue
              const readyAt = Math.max(killedAt, n === 0 ? 0 : authorisedAt(t.handle.takeId))
              const next = rows.find(
                (r) => r.kind.startsWith("fill.") && r.payload.fill_id === f.id && !seenAtKill.has(r.id),
              )
              stalls.push({ item: `${t.name} fill ${f.id} (${f.state})`, readyAt, next: next?.at })
            }
          }
          for (const c of closesAtKill.filter((c) => c.state === "pending")) {
            const next = rows.find(
              (r) =>
                r.kind.startsWith("close.") &&
                r.kind !== "close.pending" &&
                r.payload.close_id === c.id &&
                !seenAtKill.has(r.id),
            )
            stalls.push({ item: `close ${c.id}`, readyAt: killedAt, next: next?.at })
          }
          if (withdrawalsAtKill !== "relayed") {
            const next = rows.find(
              (r) => r.kind.startsWith("withdrawal.") && r.payload.withdrawal_id === w2.id && !seenAtKill.has(r.id),
            )
            stalls.push({ item: `withdrawal ${w2.id} (${withdrawalsAtKill})`, readyAt: killedAt, next: next?.at })
          }
          for (const r of expiries) {
            const expiresAt = Date.parse(String(r.payload.expires_at))
            if (seenAtKill.has(r.id)) continue
            stalls.push({ item: `lease ${r.payload.identity_id}`, readyAt: Math.max(killedAt, expiresAt), next: r.at })
          }
          console.log(
            `after the kill (t = 0 at the SIGKILL): ${stalls.map((s) => `${s.item} ready +${Math.round(s.readyAt - killedAt)} ms, moved +${s.next === undefined ? "never" : Math.round(s.next - killedAt)} ms`).join("; ")}`,
          )
          expect(stalls.length).toBeGreaterThan(0)
          expect(
            stalls.filter((s) => s.next === undefined || s.next - s.readyAt > STALL_BOUND_MS).map((s) => s.item),
          ).toEqual([])

          // ---------------------------------------------------------------- the repeats, also during the kill
          const byRunner = (name: string) => answers.filter((a) => a.runner === name)
          console.log(
            `transfer repeats: ${runners.map((r) => `${r.name} ${byRunner(r.name).length} (${[...new Set(byRunner(r.name).map((a) => `${a.kind} ${a.status}`))].join(", ")})`).join("; ")}`,
          )
          const wrong = answers.filter(
            (a) => a.status !== "no answer" && a.status !== (a.kind === "identical" ? 200 : 409),
          )
          expect(wrong.map((a) => `${a.runner} ${a.kind} ${a.status} ${a.code}`)).toEqual([])
          for (const r of survivors) {
            const during = byRunner(r.name).filter((a) => a.at >= killedAt - 1_000 && a.at <= killedAt + 15_000)
            expect(during.length, `${r.name} answered repeats around the kill`).toBeGreaterThan(0)
            expect(during.filter((a) => a.status === "no answer").length, `${r.name} unanswered`).toBe(0)
          }
          expect(byRunner(victim.name).some((a) => a.at < killedAt && a.status !== "no answer")).toBe(true)

          // ---------------------------------------------------------------- who handled what
          sampling = false
          yield* Fiber.join(sampler).pipe(Effect.ignore)
          const lines: Array<string> = []
          for (const h of handled) lines.push(`  ${h.item}: API ${h.api.join(" → ")}`)
          const subjects = new Map<string, Array<JournalRow>>()
          for (const r of rows) {
            const found = KIND_OF.find(([re]) => re.test(r.kind))
            if (found === undefined) continue
            const kind = found[1]
            const subject = subjectOf(r)?.split(":")[0] ?? r.id
            const k = `${kind} ${subject}`
            subjects.set(k, [...(subjects.get(k) ?? []), r])
          }
          const perRunner = new Map<string, number>()
          for (const [k, rs] of subjects) {
            const kind = k.split(" ")[0]!
            const singleton = KIND_OF.find((x) => x[1] === kind)![2]
            const holders = rs.map((r) => `${r.kind.split(".").pop()}@${holderAt(singleton, r.at) ?? "-"}`)
            for (const r of rs) {
              const h = holderAt(singleton, r.at) ?? "-"
              perRunner.set(`${kind} ${h}`, (perRunner.get(`${kind} ${h}`) ?? 0) + 1)
            }
            lines.push(`  ${k}: ${holders.join(" ")}`)
          }
          // Entity log lines: actor, key, runner (issue 22's entities).
          // The keys the killed runner held: when a survivor first logged them after the kill (printed only).
          const entityLines = new Map<string, Set<string>>()
          const lastOnVictim = new Map<string, number>()
          const firstAfterKill = new Map<string, { runner: string; at: number }>()
          for (const r of runners)
            for (const line of r.lines) {
              if (!line.startsWith("{") || !line.includes('"runner"')) continue
              try {
                const p = JSON.parse(line) as { actor?: string; key?: string; runner?: string; time?: string }
                if (p.actor && p.key && p.runner) {
                  const k = `${p.actor} ${p.key}`
                  const runner = nameOf(p.runner)
                  entityLines.set(k, (entityLines.get(k) ?? new Set()).add(runner))
                  const at = Date.parse(p.time ?? "")
                  if (runner === victim.name && at <= killedAt)
                    lastOnVictim.set(k, Math.max(lastOnVictim.get(k) ?? 0, at))
                  const first = firstAfterKill.get(k)
                  if (runner !== victim.name && at > killedAt && (first === undefined || at < first.at))
                    firstAfterKill.set(k, { runner, at })
                }
              } catch {}
            }
          for (const [k, at] of entityLines) lines.push(`  entity ${k}: ${[...at].join(", ")}`)
          for (const k of lastOnVictim.keys()) {
            const moved = firstAfterKill.get(k)
            lines.push(
              `  ${k} was on ${victim.name}: ${moved === undefined ? "not logged elsewhere after the kill" : `on ${moved.runner} at +${Math.round(moved.at - killedAt)} ms`}`,
            )
          }
          // The runner that journaled each lease's expiry, where the store records it (migration 0032).
          const expiredBy = yield* sql<{ row: { id: string; lease_expired_by?: string | null } }>`
            select to_jsonb(q) as row from quote_identities q where id in ${sql.in(identities.map((i) => i.id))}`
          for (const { row } of expiredBy)
            if (row.lease_expired_by !== undefined)
              lines.push(`  lease ${row.id} expired by ${nameOf(String(row.lease_expired_by))}`)
          console.log(
            `distribution (singleton holder at each journal row; entity lines by runner):\n${lines.join("\n")}\n` +
              `  rows per kind and runner: ${[...perRunner.entries()].map(([k, n]) => `${k} ${n}`).join(", ")}\n` +
              `  killed: ${victim.name}; seed ${SEED}`,
          )
        }).pipe(Effect.scoped),
      ),
    900_000,
  )
})
