import { createServer, type Server } from "node:http"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { type Address, createWalletClient, encodeFunctionData, http } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import { legacyEscrowAbi, legacyEscrowBytecode, mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { AppConfig } from "../../src/Config.ts"
import { encodeLegacyCursor, legacyCursorKey } from "../../src/Domain/LegacyCursor.ts"
import { account, sendCalls, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * GET /v1/escrow/legacy over three retired LegacyEscrow deployments spread across a few hundred blocks, with pages
 * of 40 blocks (`limits.legacy_page_blocks`; the spec's 8,000 is the default and the maximum, covered by
 * legacy-cursor.test.ts: anvil mines tens of thousands of blocks far too slowly), so that the scan takes several
 * pages with empty pages in between; one deployment is configured twice (legacy_escrow and legacy_escrows); the
 * node sits behind a proxy that can fail JSON-RPC methods mid-scan.
 */

const PAGE_BLOCKS = 40n

const USDC = 1_000_000n
const DAY = 86_400n

/** What the proxy fails: nothing, every call, or calls of the listed methods (JSON-RPC -32603). */
interface Faults {
  fail: "none" | "all" | ReadonlySet<string>
}

class Scenario extends Context.Tag("test/LegacyScenario")<
  Scenario,
  {
    readonly chain: TestChain
    readonly faults: Faults
    readonly l1: Address
    readonly l2: Address
    readonly l3: Address
    readonly master: PrivateKeyAccount
    readonly linked: PrivateKeyAccount
  }
>() {}

/** A JSON-RPC proxy in front of anvil that fails on command. */
const proxy = (target: string, faults: Faults) =>
  Effect.acquireRelease(
    Effect.async<{ server: Server; url: string }>((resume) => {
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", async () => {
          const body = Buffer.concat(chunks).toString("utf8")
          const calls = [JSON.parse(body)].flat() as Array<{ id: number; method: string }>
          const failing =
            faults.fail === "all" ||
            (faults.fail !== "none" && calls.some((c) => (faults.fail as Set<string>).has(c.method)))
          if (failing) {
            const errors = calls.map((c) => ({
              jsonrpc: "2.0",
              id: c.id,
              error: { code: -32603, message: "node down" },
            }))
            res.writeHead(200, { "content-type": "application/json" })
            res.end(JSON.stringify(Array.isArray(JSON.parse(body)) ? errors : errors[0]))
            return
          }
          const upstream = await fetch(target, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          })
          res.writeHead(upstream.status, { "content-type": "application/json" })
          res.end(await upstream.text())
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}` }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      }),
  )

const deployLegacy = async (c: TestChain, from: PrivateKeyAccount) => {
  const wallet = createWalletClient({ account: from, chain: c.chain, transport: http(c.anvil.rpcUrl) })
  const hash = await wallet.deployContract({ abi: legacyEscrowAbi, bytecode: legacyEscrowBytecode, args: [c.token] })
  const receipt = await c.pub.waitForTransactionReceipt({ hash, pollingInterval: 25 })
  return { address: receipt.contractAddress!.toLowerCase() as Address, block: receipt.blockNumber }
}

const offer = (c: TestChain, owner: PrivateKeyAccount, escrow: Address, amount: bigint, refundAt: bigint) =>
  sendCalls(c, owner, [
    { to: c.token, data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [escrow, amount] }) },
    {
      to: escrow,
      data: encodeFunctionData({ abi: legacyEscrowAbi, functionName: "createOffer", args: [amount, refundAt] }),
    },
  ])

const chainNow = (c: TestChain) => c.pub.getBlock().then((b) => b.timestamp)

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const master = account(4)
    const linked = account(1) // owns the devnet deployment's offers 1 (reclaimable) and 2 (in 30 days)
    const stranger = account(5)
    const layout = yield* Effect.promise(async () => {
      await chain.test.mine({ blocks: 100 })
      const l2 = await deployLegacy(chain, master)
      await offer(chain, master, l2.address, 3n * USDC, (await chainNow(chain)) - 10n)
      await chain.test.mine({ blocks: 90 })
      await offer(chain, master, l2.address, 4n * USDC, (await chainNow(chain)) + 30n * DAY)
      await offer(chain, master, l2.address, 5n * USDC, (await chainNow(chain)) - 10n)
      await sendCalls(chain, master, [
        { to: l2.address, data: encodeFunctionData({ abi: legacyEscrowAbi, functionName: "reclaim", args: [3n] }) },
      ])
      const l2End = (await chain.pub.getBlockNumber()) + 2n
      const l3 = await deployLegacy(chain, stranger)
      await offer(chain, stranger, l3.address, 7n * USDC, (await chainNow(chain)) + DAY)
      await offer(chain, linked, l3.address, 6n * USDC, (await chainNow(chain)) + 30n * DAY)
      await chain.test.mine({ blocks: 3 })
      return { l2, l2End, l3 }
    })
    const faults: Faults = { fail: "none" }
    const { url } = yield* proxy(chain.anvil.rpcUrl, faults)
    const { legacy_escrow, ...entry } = venueEntry(chain, "hyperliquid")
    const config = testAppConfig({
      venues: [
        {
          ...entry,
          rpc_urls: [url],
          legacy_escrow,
          legacy_escrows: [
            // The devnet deployment again (as legacy_escrow): scanned once.
            { address: legacy_escrow, deployment_block: entry.deployment_block },
            { address: layout.l2.address, deployment_block: Number(layout.l2.block), end_block: Number(layout.l2End) },
            { address: layout.l3.address, deployment_block: Number(layout.l3.block) },
          ],
        },
      ],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
      limits: { legacy_page_blocks: Number(PAGE_BLOCKS) },
    })
    return TestHttpLive.pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(
        Layer.succeed(Scenario, {
          chain,
          faults,
          l1: legacy_escrow.toLowerCase() as Address,
          l2: layout.l2.address,
          l3: layout.l3.address,
          master,
          linked,
        }),
      ),
    )
  }),
)

interface Item {
  readonly chain_id: number
  readonly escrow: string
  readonly owner: string
  readonly kind: string
  readonly id: string
  readonly amount: string
  readonly offer_id: string
  readonly refund_at: number
  readonly reclaimable: boolean
}
interface Page {
  readonly data: ReadonlyArray<Item>
  readonly next_cursor: string
  readonly has_more: boolean
}

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code
const legacyPage = (base: string, token: string, cursor?: string) =>
  rawRequest(`${base}/v1/escrow/legacy${cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`}`, {
    headers: bearer(token),
  })

/** The position a cursor carries (the test knows the format; clients must not rely on it). */
const positionOf = (cursor: string) => {
  const [chain, escrow, next] = Buffer.from(cursor.split(".")[0]!, "base64url").toString("utf8").split(".").slice(1)
  return { chain: Number(chain), escrow: escrow!, next: BigInt(next!) }
}

/** Follows next_cursor until has_more is false. */
const fullScan = (base: string, token: string) =>
  Effect.gen(function* () {
    const pages: Array<{ cursor: string | undefined; page: Page }> = []
    let cursor: string | undefined
    for (let i = 0; i < 50; i++) {
      const res = yield* legacyPage(base, token, cursor)
      expect(res.status, res.text).toBe(200)
      const page = res.json as Page
      pages.push({ cursor, page })
      if (!page.has_more) return pages
      cursor = page.next_cursor
    }
    return yield* Effect.dieMessage("the scan did not end within 50 pages")
  })

const expectEnvelope = (res: RawResponse, status: number, errorCode: string, retryable = false) => {
  expect([res.status, code(res)], res.text).toEqual([status, errorCode])
  expect((res.json as { error: { retryable: boolean } }).error.retryable).toBe(retryable)
}

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("legacy escrow scan", (it) => {
  it.effect("several pages with empty pages between, each offer once, read on chain; credentials with read", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const s = yield* Scenario
      const token = yield* signIn(base, s.master)
      // The master links another owner (personal_sign of the link message).
      const challenge = (yield* post(
        `${base}/v1/accounts/challenge`,
        { venue: "hyperliquid", address: s.linked.address },
        bearer(token),
      )).json as { nonce: string; message: string }
      const signature = yield* Effect.promise(() => s.linked.signMessage({ message: challenge.message }))
      const link = yield* post(
        `${base}/v1/accounts`,
        { venue: "hyperliquid", address: s.linked.address, nonce: challenge.nonce, signature },
        bearer(token),
      )
      expect(link.status, link.text).toBe(201)

      const pages = yield* fullScan(base, token)
      expect(pages.length).toBeGreaterThanOrEqual(7)
      const empties = pages.filter((p, i) => p.page.data.length === 0 && i < pages.length - 1)
      expect(empties.length).toBeGreaterThanOrEqual(3)
      for (const p of pages) {
        expect(p.page.next_cursor.length).toBeLessThanOrEqual(256)
        expect(p.page.next_cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
      }
      // Each page covers at most PAGE_BLOCKS blocks of one contract, and the contracts follow each other.
      const positions = pages.map((p) => positionOf(p.page.next_cursor))
      for (let i = 1; i < positions.length; i++) {
        const [a, b] = [positions[i - 1]!, positions[i]!]
        if (a.escrow === b.escrow) expect(b.next - a.next).toBeLessThanOrEqual(PAGE_BLOCKS)
      }
      expect([...new Set(positions.map((p) => p.escrow))]).toEqual([s.l1, s.l2, s.l3])
      const items = pages.flatMap((p) => p.page.data)
      const keys = items.map((i) => `${i.chain_id}:${i.escrow}:${i.owner}:${i.kind}:${i.id}`)
      expect(new Set(keys).size).toBe(keys.length)
      const summary = items.map((i) => [i.escrow, i.owner, i.id, i.amount, i.reclaimable])
      const m = s.master.address.toLowerCase()
      const l = s.linked.address.toLowerCase()
      expect(summary).toEqual([
        [s.l1, l, "1", "25000000", true],
        [s.l1, l, "2", "10000000", false],
        [s.l2, m, "1", "3000000", true],
        [s.l2, m, "2", "4000000", false],
        [s.l3, l, "2", "6000000", false],
      ])
      for (const i of items) {
        expect(i).toMatchObject({ chain_id: 999, kind: "offer", offer_id: i.id })
        expect(Number.isInteger(i.refund_at)).toBe(true)
      }
      // L2's offers sit in its first and last pages, with an empty page between.
      const l2Pages = pages.filter((p) => p.cursor !== undefined && positionOf(p.cursor).escrow === s.l2)
      expect(l2Pages.map((p) => p.page.data.map((i) => i.id))).toEqual([["1"], [], ["2"]])

      // A read credential of the master scans the same; a later scan from the start gives the same pages.
      const identity = yield* registerIdentity(base, token, account(6))
      const reader = yield* issueCredential(base, token, identity.id, ["read"])
      const viaCredential = yield* legacyPage(base, reader.token)
      expect(viaCredential.status).toBe(200)
      expect((viaCredential.json as Page).data).toEqual(pages[0]!.page.data)
      const again = yield* fullScan(base, token)
      expect(again.map((p) => p.page)).toEqual(pages.map((p) => p.page))
    }),
  )

  it.effect("a node failure mid-scan answers CHAIN_UNAVAILABLE, never an empty page; the same cursor resumes", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const s = yield* Scenario
      const token = yield* signIn(base, s.master)
      const clean = yield* fullScan(base, token)
      // A page with offers (L2's first) and an empty one; each failing in a different call.
      const withOffers = clean.find((p) => p.cursor !== undefined && p.page.data.length > 0)!
      const empty = clean.find((p) => p.cursor !== undefined && p.page.data.length === 0)!
      for (const [fail, at] of [
        ["all", withOffers],
        [new Set(["eth_getLogs"]), empty],
        [new Set(["eth_getLogs"]), withOffers],
        [new Set(["eth_call"]), withOffers],
        [new Set(["eth_blockNumber"]), empty],
      ] as const) {
        s.faults.fail = fail
        const failed = yield* legacyPage(base, token, at.cursor)
        s.faults.fail = "none"
        expectEnvelope(failed, 503, "CHAIN_UNAVAILABLE", true)
        const retried = yield* legacyPage(base, token, at.cursor)
        expect(retried.status).toBe(200)
        expect(retried.json).toEqual(at.page)
      }
    }),
  )

  it.effect("a malformed, tampered, foreign or unknown cursor is 400 INVALID_REQUEST", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const s = yield* Scenario
      const { deployment } = yield* AppConfig
      const token = yield* signIn(base, s.master)
      const first = (yield* legacyPage(base, token)).json as Page
      const [body, mac] = first.next_cursor.split(".") as [string, string]
      const flip = (x: string) => `${x.slice(0, -2)}${x.at(-2) === "A" ? "B" : "A"}${x.at(-1)}`
      const otherToken = yield* signIn(base, account(7))
      const foreign = ((yield* legacyPage(base, otherToken)).json as Page).next_cursor
      const key = legacyCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))
      const unknown = encodeLegacyCursor(key, s.master.address, {
        chainId: 999,
        escrow: `0x${"12".repeat(20)}`,
        nextBlock: 0n,
      })
      const forgedBody = Buffer.from(`v1.999.${s.l2}.0`).toString("base64url")
      for (const cursor of [
        "abc",
        "",
        `${body}.${flip(mac)}`,
        `${flip(body)}.${mac}`,
        `${forgedBody}.${mac}`,
        `${body}`,
        `${body}.${mac}.x`,
        foreign,
        unknown,
        "A".repeat(257),
      ]) {
        expectEnvelope(yield* legacyPage(base, token, cursor), 400, "INVALID_REQUEST")
      }
      // The genuine cursor still works.
      expect((yield* legacyPage(base, token, first.next_cursor)).status).toBe(200)
    }),
  )
})
