import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { type Duration, Effect, Redacted } from "effect"
import { type Address, encodeFunctionData, getAddress, type Hex, keccak256, toHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { finalSnapshot, readLock, readPayment } from "../../src/Client/EscrowReadsV2.ts"
import {
  authorizePayment,
  httpTakerApi,
  startTake,
  type TakeHandle,
  type TakerApi,
  TakerApiError,
} from "../../src/Client/TakerFlow.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { fundOrderV2TypedData, PERPS_DEX } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { DEVNET_TIMING_V2 } from "../../src/Domain/SettlementTimingV2.ts"
import { freePort, freePorts } from "../../src/FreePort.ts"
import { account, key, sendCalls, startTestChain, type TestChain, venueEntry } from "./ChainDevnet.ts"
import { spawnService } from "./ChainProcess.ts"
import { scopedConfigFile } from "./ConfigFile.ts"
import { pollUntil } from "./Poll.ts"
import { issueCredential, registerIdentity } from "./QuoteIdentities.ts"
import { signIn } from "./SignIn.ts"
import { TEST_ORIGIN } from "./TestConfig.ts"

/**
 * Settlement v2 with every party a real process or client: the service (src/main.ts, a child process, on its own
 * database and config file), two anvil chains deploying SettlementEscrowV2 with the devnet immutables (maker chain
 * hyperliquid 999, taker chain aster 42161; `finalized` 2 blocks behind: slotsInAnEpoch 1), the maker client
 * (`infra/maker/Maker.ts` in v2 mode, a child process: it publishes v2 sets and reveals with its own claimPayment)
 * and the taker through src/Client/TakerFlow.ts (its own endpoint, finalized reads). The maker's order and its
 * on-chain funding, and the taker's venue link, are fixtures: their routes are tested elsewhere (orders-v2).
 */

export const OPERATOR = 9
export const M = "hyperliquid"
export const T = "aster"

export interface V2Stack {
  readonly hl: TestChain
  readonly aster: TestChain
  /** The service's environment (DATABASE_URL, SETTLEMENT_CONFIG, PORT, RUNNER_PORT). */
  readonly env: Record<string, string>
  readonly api: string
}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster", blockTime?: number) =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind, slotsInAnEpoch: 1, ...(blockTime ? { blockTime } : {}) })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** Both chains and the service's config file; `settlement` is merged into the config's (devnet timing), `limits` too. */
export const v2Stack = (
  url: Redacted.Redacted<string>,
  options: {
    readonly settlement?: Record<string, unknown>
    readonly limits?: Record<string, unknown>
    readonly blockTime?: number
    /** Merged into both venues' watcher settings (the e2e tests' poll every 100 ms). */
    readonly watcher?: Record<string, unknown>
  } = {},
) =>
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, M, options.blockTime), chainOf(42161, T, options.blockTime)], {
      concurrency: 2,
    })
    const entry = (c: TestChain, id: string) => {
      const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, {
        watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600, ...options.watcher },
        relayer: { poll_ms: 100 },
        escrowV2: true,
      })
      return v
    }
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
      settlement: { escrow_version: 2, ...options.settlement },
      ...(options.limits ? { limits: options.limits } : {}),
    }
    const file = yield* scopedConfigFile("settlement-v2-e2e-", config)
    const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
    const env = {
      DATABASE_URL: Redacted.value(url),
      SETTLEMENT_CONFIG: file,
      PORT: String(port),
      RUNNER_PORT: String(runnerPort),
    }
    return { stack: { hl, aster, env, api: `http://127.0.0.1:${port}` } satisfies V2Stack, config }
  })

/** A block on both chains every `ms` (automine stays on: a transaction is mined at once). */
export const mineForever = (s: V2Stack, ms = 250) =>
  Effect.promise(() => Promise.all([s.hl.test.mine({ blocks: 1 }), s.aster.test.mine({ blocks: 1 })])).pipe(
    Effect.zipRight(Effect.sleep(`${ms} millis`)),
    Effect.forever,
  )

/**
 * fetch with a 5 s limit: a request caught by a kill can be left without an answer (seen as a poll that never moved
 * after a restart); with the limit it fails and the poll asks again.
 */
export const timedFetch: typeof fetch = (input, init) =>
  fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(5_000) })

/**
 * Starts the service and waits until its API answers. A fresh RUNNER_PORT each start: between a kill and the restart
 * another process on the machine may take the old one as an ephemeral port. A start that still finds a port taken
 * (the runner's socket logs EADDRINUSE and the process may stay up without its API; the API's port exits with "PORT …
 * is already in use", src/StartupChecks.ts) is killed and tried again, up to 5 times.
 */
export const startV2Service = (s: V2Stack, extraEnv: Record<string, string> = {}) =>
  Effect.gen(function* () {
    for (let attempt = 1; ; attempt++) {
      const runnerPort = yield* freePort.pipe(Effect.orDie)
      const service = spawnService({ ...s.env, RUNNER_PORT: String(runnerPort), ...extraEnv })
      const gone = () => service.child.exitCode !== null || service.child.signalCode !== null
      const portTaken = () => /EADDRINUSE|is already in use/.test(service.output())
      yield* pollUntil(
        Effect.promise(() =>
          timedFetch(`${s.api}/v1/info`).then(
            (r) => r.ok,
            () => gone() || portTaken(),
          ),
        ),
        (ok) => ok,
        { every: "250 millis", within: "90 seconds" },
      ).pipe(
        Effect.catchAll(() =>
          Effect.zipRight(
            killNow(service),
            Effect.dieMessage(`the service's API did not answer in 90 s:\n${service.output().slice(-6000)}`),
          ),
        ),
      )
      if (portTaken() && attempt < 5) {
        yield* killNow(service)
        continue
      }
      if (gone() || portTaken()) {
        return yield* Effect.dieMessage(`the service did not start:\n${service.output().slice(-3000)}`)
      }
      return service
    }
  })

/** SIGKILL, and waits until the process is gone. */
export const killNow = (p: { readonly child: ChildProcess; readonly exited: Promise<unknown> }) =>
  Effect.promise(async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL")
    await p.exited
  })

export const balanceOf = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [who] }),
  )

// ------------------------------------------------------------------ the maker

export interface V2Maker {
  readonly owner: PrivateKeyAccount
  readonly orderId: Hex
  readonly identityId: string
  readonly signerKey: Hex
  readonly payee: PrivateKeyAccount
  /** The payee's key: the maker client sends its reveals from it (MAKER_PAYEE_KEY). */
  readonly payeeKey: Hex
  readonly amount: bigint
}

/**
 * A maker signed in with an identity and a `quote` credential (the API), its v2 order funded on the maker chain's
 * escrow (operator = the service's) and the order's row as the order routes store it. `owner` holds tokens there.
 */
export const v2Maker = (s: V2Stack, owner: PrivateKeyAccount, amount: bigint) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const token = yield* signIn(s.api, owner)
    const signerKey = generatePrivateKey()
    const signer = privateKeyToAccount(signerKey)
    const identity = yield* registerIdentity(s.api, token, signer)
    const payeeKey = generatePrivateKey()
    const payee = privateKeyToAccount(payeeKey)
    // The payee sends the reveals (claimPayment) on the taker chain: it needs gas there.
    yield* Effect.promise(() => s.aster.test.setBalance({ address: payee.address, value: 10n ** 18n }))
    const orderId = keccak256(toHex(`v2-e2e ${crypto.randomUUID()}`))
    const escrow = s.hl.escrowV2!
    const fund = {
      orderId,
      owner: owner.address,
      operator: account(OPERATOR).address,
      quoteSigner: signer.address,
      amount,
      deadline: (yield* Effect.promise(() => s.hl.pub.getBlock())).timestamp + 86_400n,
    }
    const fundSig = yield* Effect.promise(() => owner.signTypedData(fundOrderV2TypedData(s.hl.chain.id, escrow, fund)))
    const approve = encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [escrow, amount] })
    const noPermit = { value: 0n, deadline: 0n, v: 0, r: `0x${"0".repeat(64)}`, s: `0x${"0".repeat(64)}` } as const
    const data = encodeFunctionData({
      abi: settlementEscrowV2Abi,
      functionName: "fund",
      args: [fund, fundSig, noPermit],
    })
    yield* Effect.promise(() => sendCalls(s.hl, owner, [{ to: s.hl.token, data: approve }]))
    yield* Effect.promise(() => sendCalls(s.hl, account(8), [{ to: escrow, data }]))
    // The order is `funded` once the service's index holds its funds final, as the service's own funding answers: a
    // maker bot started sooner has its first set refused (422 INSUFFICIENT_BALANCE, quote_size above the indexed
    // available) and stops quoting. With 1 s blocks on a loaded machine the index lagged the bot's first set.
    yield* pollUntil(
      sql`select 1 from escrow_v2_orders where order_id = ${orderId} and available = ${amount.toString()}`,
      (rows) => rows.length === 1,
      { every: "100 millis", within: "60 seconds" },
    )
    const m = owner.address.toLowerCase()
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
      values (${orderId}, ${m}, ${M}, ${T}, ${m}, 'funded', ${amount.toString()}, now(), now(),
        ${`e2e-${orderId.slice(2, 12)}`}, ${identity.id}, ${signer.address.toLowerCase()},
        ${fund.deadline.toString()}, '[]'::jsonb, 2)`
    const credential = yield* issueCredential(s.api, token, identity.id, ["quote"])
    return {
      maker: { owner, orderId, identityId: identity.id, signerKey, payee, payeeKey, amount } satisfies V2Maker,
      credential: credential.token,
    }
  })

export interface MakerProcess {
  readonly child: ChildProcess
  readonly exited: Promise<number>
  readonly output: () => string
}

/**
 * `npm run maker` (its script) for the order in v2 mode, quoting 1:1 into aster, as a child process. Its lease is
 * asked for 60 s, so the tests' short service stops do not lapse it (the client keeps revealing through an outage
 * either way since dcf306f; maker-client-outage-v2 tests that). `hashlocks` per set (a fill each), default 32;
 * `validity` of each set, default 120 s; `quoteSize`, default half the order (as `maker setup`'s).
 */
export const runMakerClient = (
  s: V2Stack,
  m: V2Maker,
  credential: string,
  {
    hashlocks = 32,
    validity = 120,
    // The reveal loop's --poll-ms: the stack's chains make a block every 250 ms (or each second), so receipts and new
    // heads are looked for as often by default; the settle bench asks every 50 ms (the bot's floor), as its raw run
    // watches heads every 20 ms, so the maker reveals as soon as its own checks pass rather than up to a block later.
    pollMs = 250,
    // A set must fit the order's quotable amount: once fills bring that below the size, the bot's next set is
    // refused and it stops quoting (README "Run a maker"). With the whole order, a file's takes after the first
    // set stops being offered (60 s after it at the default validity and cutoff) would find no quote; half keeps it
    // quoting through the tests' few fills. The bench, one round of takes, asks for the whole order.
    quoteSize = m.amount / 2n,
  }: { hashlocks?: number; validity?: number; pollMs?: number; quoteSize?: bigint } = {},
): MakerProcess => {
  const args = [
    ...["--api", s.api, "--identity", m.identityId, "--order", m.orderId, "--venue", M],
    ...["--quote", `${T}:${m.payee.address}:1000000:1000000:100000`, "--quote-size", quoteSize.toString()],
    ...["--ttl", "60", "--renew", "1", "--validity", String(validity), "--owner", m.owner.address],
    ...["--escrow-v2", `${M}=${s.hl.escrowV2!}`, "--escrow-v2", `${T}=${s.aster.escrowV2!}`],
    ...[
      "--rpc",
      `${M}=${s.hl.anvil.rpcUrl}`,
      "--rpc",
      `${T}=${s.aster.anvil.rpcUrl}`,
      "--hashlocks",
      String(hashlocks),
      "--poll-ms",
      String(pollMs),
    ],
  ]
  const child = spawn(process.execPath, ["--import", "tsx", "infra/maker/Maker.ts", ...args], {
    env: { ...process.env, MAKER_CREDENTIAL: credential, MAKER_SIGNER_KEY: m.signerKey, MAKER_PAYEE_KEY: m.payeeKey },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let out = ""
  // MAKER_LOG=<file>: every line the maker writes is appended there too, after the time it was read (ISO 8601): its
  // reveals and refusals by time, as SERVICE_LOG keeps the service's.
  const logFile = process.env.MAKER_LOG
  const keep = (d: Buffer) => {
    const text = d.toString()
    if (logFile) {
      const at = new Date().toISOString()
      appendFileSync(logFile, text.replace(/^(?=.)/gm, `${at} `))
    }
    out = (out + text).slice(-20_000)
  }
  child.stdout.on("data", keep)
  child.stderr.on("data", keep)
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)))
  return { child, exited, output: () => out }
}

/** The secrets the maker's key derives for its order's set `sequence` (what must never be stored before public). */
export const makerSecrets = (s: V2Stack, m: V2Maker, sequence: bigint, count = 32) =>
  deriveHashlockSet(
    secretKeyOf(m.signerKey),
    { chainId: 999n, makerEscrow: getAddress(s.hl.escrowV2!), owner: m.owner.address, orderId: m.orderId, sequence },
    count,
  ).secrets

/**
 * Every table's rows as text, searched for each secret (without 0x, any case): the ones found. A secret may be in
 * the database only once it is public on chain (escrow_v2_secrets and the rows the claim writes after it).
 */
export const secretsInDatabase = (secrets: ReadonlyArray<Hex>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tables = yield* sql<{ name: string }>`select quote_ident(table_name) as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE'`
    const found = new Set<Hex>()
    for (const t of tables) {
      const [row] = yield* sql.unsafe<{ text: string | null }>(
        `select lower(string_agg(x::text, ' ')) as text from ${t.name} x`,
      )
      const text = row?.text ?? ""
      for (const secret of secrets) if (text.includes(secret.slice(2).toLowerCase())) found.add(secret)
    }
    return [...found]
  })

// ------------------------------------------------------------------ the taker

export interface V2Taker {
  readonly account: PrivateKeyAccount
  readonly token: string
}

/** A taker signed in through the API, linked on aster (its address there: a fixture), holding tokens there. */
export const v2Taker = (s: V2Stack, who: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const token = yield* signIn(s.api, who)
    const master = who.address.toLowerCase()
    yield* sql`insert into linked_accounts (master, venue, address, linked_at)
      values (${master}, ${T}, ${master}, now()) on conflict do nothing`
    return { account: who, token } satisfies V2Taker
  })

/**
 * The taker's typed flow: create with a fresh pay key, check, sign the checked Fills and permit, submit (`api`: the
 * taker API to use, e.g. one that notes when each answer came).
 */
export const takeV2 = (s: V2Stack, t: V2Taker, amountIn: bigint, api: TakerApi = httpTakerApi(s.api, t.token)) =>
  Effect.gen(function* () {
    const started = yield* Effect.promise(() =>
      startTake(
        api,
        {
          chains: {
            42161: { escrow: s.aster.escrowV2!, token: s.aster.token },
            999: { escrow: s.hl.escrowV2!, token: s.hl.token },
          },
          minClaimWindowSeconds: BigInt(DEVNET_TIMING_V2.claimWindow),
        },
        t.account,
        {
          clientTakeId: `e2e-${crypto.randomUUID()}`,
          from: T,
          to: M,
          intent: {
            takerChainId: 42161,
            makerChainId: 999,
            payer: t.account.address,
            recipient: t.account.address,
            amountIn,
            minOut: 1n,
            maxParts: 1,
            dex: PERPS_DEX,
            toMargin: true,
          },
        },
        { now: () => BigInt(Math.floor(Date.now() / 1000)), payByMaxSeconds: BigInt(DEVNET_TIMING_V2.payByMax) },
      ),
    )
    if (!started.ok)
      return yield* Effect.dieMessage(`the take was refused by the client: ${JSON.stringify(started.problems)}`)
    return started.handle
  })

/**
 * As a taker's client does: waits for the take to offer its `pay_authorization` item (the service saw every lock
 * final), then the pay key authorises once every lock reads final on the taker's own maker-chain endpoint. A 409
 * (the service's index behind the client's endpoint, e.g. just restarted) or no answer is retried as "not yet" (the
 * same PayTake again is stored once).
 */
export const authorizeWhenFinal = (s: V2Stack, t: V2Taker, handle: TakeHandle) =>
  Effect.gen(function* () {
    const offered = Effect.promise(async () => {
      const res = await timedFetch(`${s.api}/v1/takes/${handle.takeId}`, {
        headers: { authorization: `Bearer ${t.token}` },
      }).catch(() => undefined)
      if (res === undefined || !res.ok) return false
      const body = (await res.json()) as { to_sign: ReadonlyArray<{ kind: string }> }
      return body.to_sign.some((i) => i.kind === "pay_authorization")
    })
    yield* pollUntil(offered, (ok) => ok, { every: "250 millis", within: "90 seconds" }).pipe(Effect.orDie)
    const attempt = Effect.tryPromise(() =>
      authorizePayment(httpTakerApi(s.api, t.token, timedFetch), s.hl.pub, handle),
    ).pipe(
      Effect.catchAll((e) =>
        !(e.error instanceof TakerApiError) || e.error.status === 409
          ? Effect.succeed({ ok: false as const, retry: true, problems: [] })
          : Effect.die(e.error),
      ),
    )
    const r = yield* pollUntil(attempt, (r) => r.ok || !r.retry, { every: "250 millis", within: "90 seconds" }).pipe(
      Effect.orDie,
    )
    if (!r.ok) return yield* Effect.dieMessage(`authorisation refused: ${JSON.stringify(r.problems)}`)
  })

export const fillRows = (takeId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{
      id: string
      state: string
      final: boolean
      error: string | null
      order_id: string
      sequence: string
      hashlock_index: number
      fill_digest: Hex
      amount_in: string
      amount_out: string
    }>`select id, state, final, error, order_id, sequence::text, hashlock_index, fill_digest, amount_in::text,
        amount_out::text from fills where take_id = ${takeId}::uuid order by id`,
  )

/** Waits until every fill of the take is in one of `states`. */
export const fillsIn = (
  takeId: string,
  states: ReadonlyArray<string>,
  within: Duration.DurationInput = "120 seconds",
) =>
  pollUntil(fillRows(takeId), (rows) => rows.length > 0 && rows.every((r) => states.includes(r.state)), {
    every: "250 millis",
    within,
  })

/** The lock (maker chain) and payment (taker chain) of `digest`, at each chain's finalized (or latest) block. */
export const onChain = (s: V2Stack, digest: Hex, tag: "finalized" | "latest" = "finalized") =>
  Effect.promise(async () => {
    const at = async (c: TestChain) =>
      tag === "finalized"
        ? finalSnapshot(c.pub)
        : { chainId: c.chain.id, blockNumber: await c.pub.getBlockNumber(), timestamp: 0n }
    const [atM, atT] = await Promise.all([at(s.hl), at(s.aster)])
    const [lock, payment] = await Promise.all([
      readLock(s.hl.pub, atM, s.hl.escrowV2!, digest),
      readPayment(s.aster.pub, atT, s.aster.escrowV2!, digest),
    ])
    return { lock: lock.state, payment: payment.state }
  })

/** Both chains' clocks forward by `seconds` (the next block of each carries it). */
export const warp = (s: V2Stack, seconds: number) =>
  Effect.promise(() => Promise.all([s.hl.test.increaseTime({ seconds }), s.aster.test.increaseTime({ seconds })])).pipe(
    Effect.asVoid,
  )
