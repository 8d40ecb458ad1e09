/**
 * Settlement v2, every party real (issue 23 bench, issue 21 item 1): the stack of the e2e tests
 * (test/support/SettleV2Stack.ts): the service as a child process, two anvil chains with both escrows (finalized =
 * 2 blocks behind), the maker client process in v2 mode (it reveals with its own claimPayment as soon as its checks
 * pass) and a scripted taker through src/Client/TakerFlow.ts whose pay key authorises as soon as its own finalized
 * read of the lock passes. Mining, BENCH_MINING: `interval` (default) one block per second, as the devnet; `auto` a
 * block per transaction plus one every 250 ms on both chains (the e2e tests' chains).
 *
 *   service: BENCH_TAKES (default 4) takes of one fill each, BENCH_CONCURRENCY (default 1) at a time, against one
 *            maker order. Each party's reaction is printed apart, from the chains' blocks as this process first saw
 *            them (a watcher on both chains, 20 ms): service lock = Locked mined − signatures posted; taker
 *            authorisation = PayTake accepted − lock final; payTake = Paid mined − PayTake accepted; maker reveal =
 *            PaymentClaimed mined − payment final; claim = Claimed mined − reveal final (the service claims from
 *            its index, which holds final events only). First signature → recipient credit = Claimed mined −
 *            signatures posted.
 *   raw:     the same protocol, same safe order, by funded keys (order operator, pay key, payee) with viem, one
 *            order per take written as the routes store it (test/support/TakesV2.ts): lock → final → PayTake
 *            signed, payTake → final → claimPayment (reveal) → final → claim; from lock sent to Claimed mined.
 *
 * Prints percentiles (p50/p99) and the ratio service/raw of the end-to-end p50. Only prints; no assertion on time.
 */
import { loadavg } from "node:os"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { encodeFunctionData, type Hex, parseEventLogs } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import {
  claimPaymentV2Call,
  claimV2Call,
  lockV2Call,
  payTakeCall,
  permitArg,
} from "../../src/Chain/SettlementCallsV2.ts"
import { authorizePayment, httpTakerApi, type TakerApi, TakerApiError } from "../../src/Client/TakerFlow.ts"
import { payTakeTypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account, sendCalls, type TestChain } from "../support/ChainDevnet.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { pollUntil } from "../support/Poll.ts"
import {
  fillRows,
  killNow,
  M,
  mineForever,
  runMakerClient,
  startV2Service,
  T,
  takeV2,
  timedFetch,
  type V2Stack,
  v2Maker,
  v2Stack,
  v2Taker,
} from "../support/SettleV2Stack.ts"
import { makerOrderV2, signedTakeV2 } from "../support/TakesV2.ts"
import { summarize } from "./Summary.ts"

const TAKES = Number(process.env.BENCH_TAKES ?? 4)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1)
const INTERVAL = (process.env.BENCH_MINING ?? "interval") !== "auto"
const CONFIRMATIONS = 2n
const PER_FILL = 1_000_000n
const RAW = account(5)
const FUNDER = account(8)
const MINTER = account(7)

// ------------------------------------------------------------------ when each block was first seen (performance.now ms)

/** Polls both chains' heads; `seen(c, n)` is when block n of c was first observed (a skipped block: the next seen). */
const blockWatcher = (s: V2Stack) => {
  const seen = new Map<number, Map<bigint, number>>()
  let stop = false
  const watch = async (c: TestChain) => {
    const mine = new Map<bigint, number>()
    seen.set(c.chain.id, mine)
    let last = (await c.pub.getBlockNumber({ cacheTime: 0 })) - 1n
    while (!stop) {
      const head = await c.pub.getBlockNumber({ cacheTime: 0 })
      const now = performance.now()
      for (let b = last + 1n; b <= head; b++) mine.set(b, now)
      last = head > last ? head : last
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  const running = Promise.all([watch(s.hl), watch(s.aster)])
  return {
    at: (c: TestChain, block: bigint) => seen.get(c.chain.id)?.get(block) ?? Number.NaN,
    final: (c: TestChain, block: bigint) => seen.get(c.chain.id)?.get(block + CONFIRMATIONS) ?? Number.NaN,
    stop: () => {
      stop = true
      return running
    },
  }
}
type Watcher = ReturnType<typeof blockWatcher>

/** Block of each v2 event per fill digest, from the escrows' logs. */
const eventBlocks = async (s: V2Stack) => {
  const logsOf = async (c: TestChain) =>
    parseEventLogs({
      abi: settlementEscrowV2Abi,
      logs: await c.pub.getLogs({ address: c.escrowV2!, fromBlock: 0n, toBlock: "latest" }),
    })
  const out = new Map<string, bigint>()
  for (const log of [...(await logsOf(s.hl)), ...(await logsOf(s.aster))]) {
    const args = log.args as { fillDigest?: Hex }
    if (args.fillDigest) out.set(`${log.eventName}:${args.fillDigest.toLowerCase()}`, log.blockNumber)
  }
  return (event: "Locked" | "Paid" | "PaymentClaimed" | "Claimed", digest: Hex) => {
    const b = out.get(`${event}:${digest.toLowerCase()}`)
    if (b === undefined) throw new Error(`no ${event} for ${digest}`)
    return b
  }
}

// ------------------------------------------------------------------ the service path

/** The taker API, noting when the service accepted the PayTake (performance.now ms). */
const timedApi = (api: TakerApi, marks: { authorized?: number }): TakerApi => ({
  ...api,
  postSignatures: async (takeId, body) => {
    const answer = await api.postSignatures(takeId, body)
    if ("pay_authorization" in body) marks.authorized = performance.now()
    return answer
  },
})

interface Timed {
  readonly digest: Hex
  readonly signed: number
  readonly authorized: number
}

const serviceTake = (s: V2Stack, index: number) =>
  Effect.gen(function* () {
    const who = privateKeyToAccount(generatePrivateKey())
    yield* Effect.promise(() =>
      sendCalls(s.aster, MINTER, [
        {
          to: s.aster.token,
          data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [who.address, PER_FILL] }),
        },
      ]),
    )
    const taker = yield* v2Taker(s, who)
    const marks: { authorized?: number } = {}
    const api = timedApi(httpTakerApi(s.api, taker.token, timedFetch), marks)
    // "Signatures posted" = takeV2's return: the service has accepted the Fills and permit (a lock may be under way).
    const handle = yield* takeV2(s, taker, PER_FILL)
    const signed = performance.now()
    const attempt = Effect.tryPromise(() => authorizePayment(api, s.hl.pub, handle)).pipe(
      Effect.catchAll((e) =>
        e.error instanceof TakerApiError && e.error.status !== 409
          ? Effect.die(e.error)
          : Effect.succeed({ ok: false as const, retry: true, problems: [] }),
      ),
    )
    const r = yield* pollUntil(attempt, (r) => r.ok || !r.retry, { every: "20 millis", within: "120 seconds" }).pipe(
      Effect.orDie,
    )
    if (!r.ok) return yield* Effect.dieMessage(`take ${index}: authorisation refused ${JSON.stringify(r.problems)}`)
    const rows = yield* pollUntil(fillRows(handle.takeId), (rows) => rows.every((f) => f.state === "settled"), {
      every: "100 millis",
      within: "180 seconds",
    }).pipe(Effect.orDie)
    return { digest: rows[0]!.fill_digest, signed, authorized: marks.authorized! } satisfies Timed
  })

// ------------------------------------------------------------------ the raw path

/** Sends one transaction from `from` and answers its block (nonces in order: callers go one at a time per key). */
const send = async (c: TestChain, from: PrivateKeyAccount, to: Hex, data: Hex) => {
  const raw = await from.signTransaction({
    chainId: c.chain.id,
    type: "eip1559",
    to,
    data,
    gas: 2_000_000n,
    nonce: await c.pub.getTransactionCount({ address: from.address, blockTag: "pending" }),
    maxFeePerGas: 100_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  })
  const hash = await c.pub.request({ method: "eth_sendRawTransaction", params: [raw] })
  const receipt = await c.pub.waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 120_000 })
  if (receipt.status !== "success") throw new Error(`raw ${hash} reverted`)
  return receipt.blockNumber
}
const finalOn = async (c: TestChain, block: bigint) => {
  while ((await c.pub.getBlockNumber({ cacheTime: 0 })) < block + CONFIRMATIONS) {
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** One raw take: its order (operator RAW), payer, pay key and signed rows, extracted and removed from the database. */
const rawTake = (s: V2Stack) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const signerKey = generatePrivateKey()
    const payee = privateKeyToAccount(generatePrivateKey())
    yield* Effect.promise(() => s.aster.test.setBalance({ address: payee.address, value: 10n ** 18n }))
    const order = yield* makerOrderV2(s.hl, s.aster, {
      owner: account(2),
      signerKey,
      signer: privateKeyToAccount(signerKey),
      relayer: FUNDER,
      operator: RAW.address,
      payee: payee.address,
      amount: PER_FILL,
      makerVenue: M,
      takerVenue: T,
    })
    const payer = privateKeyToAccount(generatePrivateKey())
    yield* Effect.promise(() =>
      sendCalls(s.aster, MINTER, [
        {
          to: s.aster.token,
          data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [payer.address, PER_FILL] }),
        },
      ]),
    )
    const payKey = privateKeyToAccount(generatePrivateKey())
    const take = yield* signedTakeV2(s.hl, s.aster, {
      payer,
      payKey: payKey.address,
      recipient: privateKeyToAccount(generatePrivateKey()).address,
      parts: [{ order, amountIn: PER_FILL, amountOut: PER_FILL, index: 0 }],
      makerVenue: M,
      takerVenue: T,
    })
    const [t] = yield* sql<{ permit_signature: Hex }>`select permit_signature from takes where id = ${take.takeId}`
    const [f] = yield* sql<{ signature: Hex }>`select signature from fills where take_id = ${take.takeId}`
    const [q] = yield* sql<{ signature: Hex }>`select signature from quote_sets where order_id = ${order.orderId}`
    // The service must not see them (it could not lock them anyway: RAW operates the order).
    yield* sql`delete from fills where take_id = ${take.takeId}`
    yield* sql`delete from takes where id = ${take.takeId}`
    const fill = take.fills[0]!
    return {
      fill: fill.fill,
      digest: fill.digest,
      fillSig: f!.signature,
      permit: permitArg(take.totalIn, take.takerExpiry, t!.permit_signature),
      quoteSet: order.set,
      quoteSig: q!.signature,
      proof: order.hashlocks.proof(0),
      secret: order.hashlocks.secrets[0]!,
      payKey,
      payee,
    }
  })
type RawTake = Effect.Effect.Success<ReturnType<typeof rawTake>>

/** The v2 protocol in the service's safe order; answers when the lock was sent (the raw "first signature"). */
const runRaw = async (s: V2Stack, r: RawTake) => {
  const start = performance.now()
  await finalOn(
    s.hl,
    await send(s.hl, RAW, s.hl.escrowV2!, lockV2Call(r.fill, r.fillSig, r.quoteSet, 0, r.quoteSig, r.proof)),
  )
  const auth = await r.payKey.signTypedData(payTakeTypedData(s.aster.chain.id, s.aster.escrowV2!, [r.digest]))
  await finalOn(
    s.aster,
    await send(s.aster, RAW, s.aster.escrowV2!, payTakeCall([r.fill], [r.fillSig], auth, r.permit)),
  )
  await finalOn(s.aster, await send(s.aster, r.payee, s.aster.escrowV2!, claimPaymentV2Call(r.digest, r.secret)))
  await send(s.hl, RAW, s.hl.escrowV2!, claimV2Call(r.digest, r.secret))
  return { digest: r.digest, start }
}

// ------------------------------------------------------------------ statistics

const pct = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN
}
const sec = (ms: number) => (ms / 1000).toFixed(2)
const line = (label: string, xs: ReadonlyArray<number>) =>
  `${label.padEnd(48)} p50 ${sec(pct(xs, 50))} s  p99 ${sec(pct(xs, 99))} s  (n ${xs.length})`
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")

const program = Effect.gen(function* () {
  const url = yield* testDatabaseUrl
  const { stack: s } = yield* v2Stack(url, INTERVAL ? { blockTime: 1 } : {})
  const procs: { service?: { child: import("node:child_process").ChildProcess; exited: Promise<unknown> } } & {
    maker?: ReturnType<typeof runMakerClient>
  } = {}
  yield* Effect.addFinalizer(() =>
    Effect.all([
      procs.maker ? killNow(procs.maker) : Effect.void,
      procs.service ? killNow(procs.service) : Effect.void,
    ]),
  )
  if (!INTERVAL) yield* Effect.forkScoped(mineForever(s))
  const mining = INTERVAL ? "a block every 1 s (devnet)" : "automine + a block every 250 ms"
  console.log(
    `settle bench (v2): ${TAKES} takes × 1 fill, ${CONCURRENCY} at a time; ${mining}; finality 2 blocks; load ${load()}`,
  )
  procs.service = yield* startV2Service(s)
  const db = databaseLayer(url)
  const watcher: Watcher = blockWatcher(s)

  // Raw first: the service is up (it migrated the database) but has nothing of its own to do.
  const raws = yield* Effect.forEach(Array.from({ length: TAKES }), () => rawTake(s)).pipe(Effect.provide(db))
  const rawRuns: Array<{ digest: Hex; start: number }> = []
  for (let i = 0; i < raws.length; i += CONCURRENCY) {
    rawRuns.push(...(yield* Effect.promise(() => Promise.all(raws.slice(i, i + CONCURRENCY).map((r) => runRaw(s, r))))))
  }

  // The service with the maker client and the scripted taker.
  const timed = yield* Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { maker, credential } = yield* v2Maker(s, account(1), PER_FILL * BigInt(TAKES + 1))
    procs.maker = runMakerClient(s, maker, credential)
    yield* pollUntil(
      sql`select 1 from quote_sets where order_id = ${maker.orderId} and active and hashlock_root is not null`,
      (rows) => rows.length === 1,
      { every: "250 millis", within: "60 seconds" },
    )
    yield* pollUntil(
      sql`select 1 from escrow_v2_orders where order_id = ${maker.orderId} and available > 0`,
      (rows) => rows.length === 1,
      { every: "250 millis", within: "60 seconds" },
    )
    return yield* Effect.forEach(
      Array.from({ length: TAKES }, (_, i) => i),
      (i) => serviceTake(s, i),
      {
        concurrency: CONCURRENCY,
      },
    )
  }).pipe(Effect.provide(db), Effect.orDie)

  // Two blocks more on both chains so every event's finality was seen.
  yield* Effect.promise(async () => {
    const [h, a] = await Promise.all([s.hl.pub.getBlockNumber(), s.aster.pub.getBlockNumber()])
    await Promise.all([finalOn(s.hl, h), finalOn(s.aster, a)])
  })
  yield* Effect.promise(() => watcher.stop())
  const block = yield* Effect.promise(() => eventBlocks(s))
  const { hl, aster } = s
  const lock = timed.map((t) => watcher.at(hl, block("Locked", t.digest)) - t.signed)
  const authorise = timed.map((t) => t.authorized - watcher.final(hl, block("Locked", t.digest)))
  const pay = timed.map((t) => watcher.at(aster, block("Paid", t.digest)) - t.authorized)
  const reveal = timed.map(
    (t) => watcher.at(aster, block("PaymentClaimed", t.digest)) - watcher.final(aster, block("Paid", t.digest)),
  )
  const claim = timed.map(
    (t) => watcher.at(hl, block("Claimed", t.digest)) - watcher.final(aster, block("PaymentClaimed", t.digest)),
  )
  const service = timed.map((t) => watcher.at(hl, block("Claimed", t.digest)) - t.signed)
  const raw = rawRuns.map((r) => watcher.at(hl, block("Claimed", r.digest)) - r.start)
  console.log(line("service lock after signatures (Locked mined)", lock))
  console.log(line("taker authorisation after lock final", authorise))
  console.log(line("payTake after authorisation (Paid mined)", pay))
  console.log(line("maker reveal after payment final (mined)", reveal))
  console.log(line("claim after reveal final (Claimed mined)", claim))
  console.log(line("service: first signature → recipient credit", service))
  console.log(line("raw (funded keys, same order): lock → credit", raw))
  console.log(`ratio service/raw (p50) ${(pct(service, 50) / pct(raw, 50)).toFixed(2)}  load ${load()}`)
  summarize({
    bench: `settle v2: first signature → credit p50, ${INTERVAL ? "1 s blocks" : "automine"}, ${CONCURRENCY} concurrent`,
    figure: `${(pct(service, 50) / 1000).toFixed(2)} s`,
    baseline: `raw same order ${(pct(raw, 50) / 1000).toFixed(2)} s`,
    // higher is better: raw / service; the target service <= 1.2 × raw is a ratio >= 0.83
    ratio: pct(raw, 50) / pct(service, 50),
    target: "<= 1.2 × raw (>= 0.83)",
    atLeast: 1 / 1.2,
  })
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  },
)
