/**
 * `npm run demo`: a cross-venue transfer on a running devnet (`npm start` in another terminal), step by step.
 *
 *   1. A maker (anvil account #4) signs in, links its account on the maker venue, registers a quote identity,
 *      issues a `quote` credential, and funds an escrow order from its wallet (fund_order + permit signed here).
 *   2. The maker client (`npm run maker`, infra/maker/Maker.ts, as a child process) keeps the identity's lease and
 *      publishes a signed quote set for the order; on settlement v2 (the devnet's default) with its hashlocks,
 *      and its reveal loop reveals each payment itself (its own claimPayment) from its own chain endpoints.
 *   3. A taker (anvil account #3) signs in (SIWE), links its accounts on both venues, creates a transfer intent
 *      from one venue to the other. v1: signs exactly what the API returns (GET /v1/takes/{id} `to_sign`) and
 *      POSTs the signatures; the service settles each fill: lock → pay → claim → claimPayment. v2
 *      (infra/demo/DemoTakerV2.ts, src/Client/TakerFlow.ts): gives a fresh pay key for the transfer's take,
 *      checks every item before the wallet signs, and once the locks are final on its own endpoint the pay key
 *      authorises payment; the service relays lock → payTake → (the maker's claimPayment) → claim.
 *   4. Both parties' balances before and after, on both venues (wallet, escrow, simulated venue margin).
 *
 * The keys are anvil's public test keys (TEST ONLY). Exit 0 once the transfer settled; 1 on a failed step; 2 when no
 * devnet runs. Options by environment: DEVNET_DATA_DIR (default .data), DEMO_API_URL, DEMO_FROM (default
 * hyperliquid), DEMO_TO (aster), DEMO_AMOUNT (base units, default 25 USDC), DEMO_TIMEOUT_SECONDS (300).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { getAddress, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../devnet/Anvil.ts"
import { api, DemoStepFailed, linkAccount, signIn } from "./DemoApi.ts"
import { type Party, renderBalances, snapshot, units } from "./DemoBalances.ts"
import { DevnetNotRunning, findDevnet } from "./DemoDevnet.ts"
import { Progress, step } from "./DemoLog.ts"
import { authorizeWhenFinal, startTransferTakeV2 } from "./DemoTakerV2.ts"

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url))
const MAKER = privateKeyToAccount(ANVIL_PRIVATE_KEYS[4] as Hex)
const TAKER = privateKeyToAccount(ANVIL_PRIVATE_KEYS[3] as Hex)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const runId = () => crypto.randomUUID().slice(0, 8)
/** A relayed transaction's statuses that end it (src/Relayer/Rows.ts TERMINAL_STATUSES). */
const ENDED = new Set(["final", "reverted", "replaced"])

/** Polls `read` every second until `done`, rewriting one progress line; fails after `seconds`. */
const until = async <A>(
  what: string,
  seconds: number,
  read: () => Promise<A>,
  done: (a: A) => boolean,
  show: (a: A) => string,
): Promise<A> => {
  const progress = new Progress(what)
  const started = Date.now()
  for (;;) {
    const a = await read()
    progress.update(`${show(a)}  (${Math.round((Date.now() - started) / 1000)} s)`)
    if (done(a)) {
      progress.end()
      return a
    }
    if (Date.now() - started > seconds * 1000) {
      progress.end()
      throw new DemoStepFailed(`${what}: not done after ${seconds} s (last: ${show(a)})`)
    }
    await sleep(1_000)
  }
}

/** The maker client as `npm run maker -- …` runs it, its output prefixed; resolves once a quote set is published. */
const startMakerClient = (args: Array<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/maker/Maker.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let published: () => void = () => undefined
  let failed: (e: Error) => void = () => undefined
  const ready = new Promise<void>((resolve, reject) => {
    published = resolve
    failed = reject
  })
  const onLine = (chunk: Buffer) => {
    for (const line of chunk
      .toString("utf8")
      .split("\n")
      .filter((l) => l.trim() !== "")) {
      step(`  [maker client] ${line}`)
      if (line.includes("published quote set")) published()
    }
  }
  child.stdout.on("data", onLine)
  child.stderr.on("data", onLine)
  child.once("exit", (code) => failed(new DemoStepFailed(`the maker client exited (${code}) before quoting`)))
  return { child, ready }
}

const stopChild = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once("exit", r))
  child.kill("SIGTERM")
  await Promise.race([exited, sleep(3_000)])
}

const main = async () => {
  const devnet = await findDevnet()
  const a = api(devnet.apiUrl)
  const from = process.env.DEMO_FROM || "hyperliquid"
  const to = process.env.DEMO_TO || "aster"
  const fromVenue = devnet.venues.find((v) => v.id === from)
  const toVenue = devnet.venues.find((v) => v.id === to)
  if (fromVenue === undefined || toVenue === undefined || from === to) {
    throw new DemoStepFailed(`DEMO_FROM/DEMO_TO must be two of ${devnet.venues.map((v) => v.id).join(", ")}`)
  }
  const timeout = Number(process.env.DEMO_TIMEOUT_SECONDS || 300)
  // New orders and takes go to the v2 escrows when the devnet says so (and both venues have one).
  const v2 =
    devnet.settlement.escrow_version === 2 && fromVenue.escrow_v2 !== undefined && toVenue.escrow_v2 !== undefined
  const amountIn = BigInt(process.env.DEMO_AMOUNT || 25_000_000)
  const id = runId()
  const fmtIn = (x: bigint | string) => `${units(BigInt(x), fromVenue.decimals)} ${fromVenue.symbol}@${from}`
  const fmtOut = (x: bigint | string) => `${units(BigInt(x), toVenue.decimals)} ${toVenue.symbol}@${to}`
  step(`Devnet API ${devnet.apiUrl}; demo run ${id}: ${fmtIn(amountIn)} → ${to} on settlement v${v2 ? 2 : 1}`)

  const taker: Party = { name: "taker", address: TAKER.address, orders: new Map() }
  const parties: Array<Party> = [taker]
  let before = new Map() as Awaited<ReturnType<typeof snapshot>>
  // DEMO_MAKER=external: no maker of the demo's own; the taker takes the quotes already published (e.g. by
  // `npm run maker -- run` after `setup`, as README "Run a maker" says).
  const external = process.env.DEMO_MAKER === "external"
  const startMaker = async () => {
    // ---------------------------------------------------------------- the maker: an escrow order on `to`
    step(`Maker ${MAKER.address} (anvil #4) signs in`)
    const makerToken = await signIn(a, MAKER)
    step(`  linked on ${to}: ${await linkAccount(a, makerToken, MAKER, to)}`)
    const signerKey = generatePrivateKey()
    const signer = privateKeyToAccount(signerKey)
    const prepared = await a.run("prepare quote identity", makerToken, (c) =>
      c.quoteIdentities.prepareIdentity({ payload: { signer: signer.address } }),
    )
    const signature = await signer.signTypedData(prepared.typed_data as never)
    const identity = await a.run("register quote identity", makerToken, (c) =>
      c.quoteIdentities.createIdentity({ payload: { signer: signer.address, signature } }),
    )
    step(`  quote identity ${identity.id} (signer ${signer.address}, a fresh key held by the maker client)`)
    const credential = await a.run("issue credential", makerToken, (c) =>
      c.credentials.createCredential({ payload: { quote_identity_id: identity.id, scopes: ["quote"] } as never }),
    )
    step(`  credential ${credential.id} (scope quote; its mk_ token goes to the maker client only)`)
    const orderAmount = amountIn * 4n
    const created = await a.run("create order", makerToken, (c) =>
      c.orders.create({
        payload: {
          client_order_id: `demo-${id}`,
          venue: to,
          receive_venue: from,
          owner_address: MAKER.address,
          amount: orderAmount.toString(),
          quote_identity_id: identity.id,
        } as never,
      }),
    )
    const orderId = created.order.id as Hex
    const maker: Party = { name: "maker", address: MAKER.address, orders: new Map([[to, [orderId]]]), v2 }
    parties.unshift(maker)
    before = await snapshot(devnet.venues, parties)
    step(
      `  order ${orderId}: ${fmtOut(orderAmount)}; signing ${created.to_sign.map((i: { kind: string }) => i.kind).join(", ")}`,
    )
    const signatures: Record<string, Hex> = {}
    for (const item of created.to_sign as unknown as Array<{ kind: string; typed_data: never }>) {
      signatures[item.kind] = await MAKER.signTypedData(item.typed_data)
    }
    await a.run("sign order", makerToken, (c) => c.orders.sign({ path: { id: orderId }, payload: signatures as never }))
    await until(
      "  funding the order (escrow fund, waiting for finality)",
      timeout,
      () => a.run("read order", makerToken, (c) => c.orders.get({ path: { id: orderId } })),
      (o) => o.state === "funded" || o.state === "failed",
      (o) => `state ${o.state}, escrow ${fmtOut(o.escrow_available ?? "0")}`,
    ).then((o) => {
      if (o.state !== "funded") throw new DemoStepFailed(`the order ended ${o.state}: ${o.error}`)
    })
    step("  order funded")

    // ---------------------------------------------------------------- the maker client quotes it
    // amount_out ≤ amount_in × supply / receive: 1 000 000 base units of `from` buy 999 000 of `to` (a 0.1 %
    // spread); fills of at least 0.1 unit out (min_fill ≤ supply); half the order per quote set.
    const quote = `${from}:${MAKER.address}:999000:1000000:100000`
    step(`Maker client: npm run maker -- run --order ${orderId.slice(0, 10)}… --venue ${to} --quote ${quote}`)
    // v2: the escrows and endpoints this maker reviewed (the devnet's own config, never the API); reveals are sent
    // by the quotes' recipient (the maker's account, which holds gas on both chains).
    const v2Args = v2
      ? [
          ...["--owner", MAKER.address],
          ...[fromVenue, toVenue].flatMap((v) => ["--escrow-v2", `${v.id}=${v.escrow_v2!.address}`]),
          ...[fromVenue, toVenue].flatMap((v) => ["--rpc", `${v.id}=${v.rpc_urls[0]}`]),
          ...[fromVenue, toVenue].flatMap((v) => ["--from-block", `${v.id}=${v.escrow_v2!.deployment_block}`]),
        ]
      : []
    return startMakerClient(
      [
        ...["run", "--api", devnet.apiUrl, "--identity", identity.id, "--order", orderId, "--venue", to],
        ...["--quote", quote, "--quote-size", (orderAmount / 2n).toString(), "--validity", "180"],
        ...v2Args,
      ],
      {
        MAKER_CREDENTIAL: credential.token,
        MAKER_SIGNER_KEY: signerKey,
        ...(v2 ? { MAKER_PAYEE_KEY: ANVIL_PRIVATE_KEYS[4] as string } : {}),
      },
    )
  }
  const bot = external ? undefined : await startMaker()
  if (external) {
    step("Maker: external (DEMO_MAKER=external): the taker takes the quotes already published")
    before = await snapshot(devnet.venues, parties)
  }
  try {
    await Promise.race([
      bot?.ready,
      sleep(60_000).then(() => {
        throw new DemoStepFailed("the maker client published no quote set within 60 s")
      }),
    ])

    // -------------------------------------------------------------- the taker: a transfer intent from → to
    step(`Taker ${TAKER.address} (anvil #3) signs in with Ethereum`)
    const takerToken = await signIn(a, TAKER)
    for (const venue of [from, to]) {
      step(`  linked on ${venue}: ${await linkAccount(a, takerToken, TAKER, venue)}`)
    }
    const preview = await a.run("preview", undefined, (c) =>
      c.takes.preview({ payload: { from, to, amount_in: amountIn.toString() } as never }),
    )
    step(`  preview: ${fmtIn(amountIn)} buys ${fmtOut(preview.total_out)} over ${preview.fills.length} fill(s)`)
    const minOut = (BigInt(preview.total_out) * 99n) / 100n
    const transfer = await a.run("create transfer", takerToken, (c) =>
      c.transfers.create({
        payload: {
          client_transfer_id: `demo-${id}`,
          from,
          to,
          amount_in: amountIn.toString(),
          min_out: minOut.toString(),
          payer: TAKER.address,
          recipient: TAKER.address,
          max_parts: 2,
        } as never,
      }),
    )
    step(`  transfer intent ${transfer.id}: ${fmtIn(amountIn)} → at least ${fmtOut(minOut)} into margin on ${to}`)
    /** v1: signs exactly what the API returns and submits it. */
    const signTakeV1 = async (takeId: string) => {
      const { take, to_sign } = await a.run("read take", takerToken, (c) => c.takes.get({ path: { id: takeId } }))
      step(`  take ${takeId}: ${take.fills.length} fill(s), ${fmtIn(take.total_in)} → ${fmtOut(take.total_out)}`)
      let permit: Hex | undefined
      const fills: Array<{ fill_id: string; signature: Hex }> = []
      for (const item of to_sign as unknown as Array<{
        kind: string
        signer: string
        fill_id?: string
        typed_data: never
      }>) {
        if (getAddress(item.signer) !== TAKER.address) throw new DemoStepFailed(`a sign item for ${item.signer}`)
        const signature = await TAKER.signTypedData(item.typed_data)
        if (item.kind === "permit") permit = signature
        else fills.push({ fill_id: item.fill_id!, signature })
        step(`  signed ${item.kind}${item.fill_id === undefined ? "" : ` of fill ${item.fill_id}`}`)
      }
      await a.run("submit signatures", takerToken, (c) =>
        c.takes.sign({ path: { id: takeId }, payload: { permit, fills } as never }),
      )
    }
    const waitForTake = () =>
      until(
        "  waiting for the take (a withdrawal first when the wallet lacks amount_in)",
        timeout,
        async () => {
          const page = await a.run("list transfers", takerToken, (c) => c.transfers.list({ urlParams: {} }))
          return (
            page.items as unknown as Array<{ id: string; take_id: string | null; withdrawal: { state: string } | null }>
          ).find((t) => t.id === transfer.id)!
        },
        (t) => t.take_id !== null,
        (t) => (t.take_id === null ? `withdrawal ${t.withdrawal?.state ?? "preparing"}` : `take ${t.take_id}`),
      ).then((t) => t.take_id as string)
    let authorize: (() => Promise<boolean>) | undefined
    let takeId: string
    if (v2) {
      const authorizeOnce = authorizeWhenFinal(toVenue)
      const { api: takerApi, handle } = await startTransferTakeV2({
        a,
        token: takerToken,
        taker: TAKER,
        transfer,
        from: fromVenue,
        to: toVenue,
        amountIn,
        minOut,
        maxParts: 2,
        claimWindowSeconds: devnet.settlement.claim_window_seconds,
        payByMaxSeconds: devnet.settlement.pay_by_max_seconds,
        waitForTake,
      })
      takeId = handle.takeId
      step(`  take ${takeId}: ${handle.take.fills.length} fill(s), every item checked before signing`)
      authorize = () => authorizeOnce(takerApi, handle)
    } else {
      takeId = await waitForTake()
      await signTakeV1(takeId)
    }
    step(
      v2
        ? "  signatures accepted: the service locks each fill; the pay key authorises payment once the locks are final"
        : "  signatures accepted: the service settles each fill (lock → pay → claim → claimPayment)",
    )
    const seen = new Set<string>()
    const settled = await until(
      "  settling (each step waits for finality)",
      timeout,
      async () => {
        const t = (await a.run("read take", takerToken, (c) => c.takes.get({ path: { id: takeId } })))
          .take as unknown as {
          final: boolean
          fills: Array<{ fill_id: string; state: string; final: boolean; transactions: Array<Record<string, string>> }>
        }
        if (authorize !== undefined && (await authorize())) {
          authorize = undefined
          step("  locks final on the taker's own endpoint: the pay key signed PayTake (payTake follows)")
        }
        for (const f of t.fills) {
          for (const tx of f.transactions) {
            const k = `${f.fill_id}:${tx.kind}:${tx.status}`
            if (!seen.has(k) && tx.hash !== null) {
              seen.add(k)
              step(`    fill ${f.fill_id.slice(0, 8)} ${tx.kind} on chain ${tx.chain_id}: ${tx.status} ${tx.hash}`)
            }
          }
        }
        return t
      },
      // Every fill final, and every transaction it sent at its end: a fill is final once the escrow index holds
      // its claim at a finalized block, which can be a poll before the relayer marks its own claim final.
      (t) =>
        t.fills.every((f) => f.final && f.transactions.every((tx) => tx.hash === null || ENDED.has(String(tx.status)))),
      (t) => t.fills.map((f) => `${f.fill_id.slice(0, 8)} ${f.state}`).join(", "),
    )
    const bad = settled.fills.filter((f) => f.state !== "settled")
    if (bad.length > 0) throw new DemoStepFailed(`fills ended ${bad.map((f) => f.state).join(", ")}`)
    const final = await a.run("list transfers", takerToken, (c) => c.transfers.list({ urlParams: {} }))
    const mine = (final.items as unknown as Array<{ id: string; take_final: boolean | null }>).find(
      (t) => t.id === transfer.id,
    )
    step(`  transfer ${transfer.id}: take_final ${mine?.take_final}`)
  } finally {
    if (bot !== undefined) await stopChild(bot.child)
  }

  // The simulator credits margin once it sees the router's deposit: give it a few seconds.
  const marginAfter = async () =>
    (await snapshot([toVenue], [taker])).get(`taker@${to}`)!.margin - before.get(`taker@${to}`)!.margin
  await until(
    "  the venue crediting the taker's margin",
    30,
    marginAfter,
    (d) => d > 0n,
    (d) => `+${fmtOut(d)}`,
  )
  const after = await snapshot(devnet.venues, parties)
  step("Balances before → after (wallet, escrow orders, venue margin):")
  for (const line of renderBalances(devnet.venues, parties, before, after)) step(line)
  step("Done.")
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    const message = e instanceof Error ? e.message : String(e)
    console.error(`demo: ${message}`)
    process.exit(e instanceof DevnetNotRunning ? 2 : 1)
  },
)
