import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Schema } from "effect"
import type { PublicClient } from "viem"
import { LEGACY_PAGE_BLOCKS, legacyDeployments, scanLegacyPage } from "../../src/Chain/LegacyScan.ts"
import { DeploymentConfig } from "../../src/Config.ts"
import { decodeLegacyCursor, encodeLegacyCursor, legacyCursorKey } from "../../src/Domain/LegacyCursor.ts"
import { testDeployment } from "../support/TestConfig.ts"

/** The legacy scan's pure parts: the cursor, the merge of configured deployments, and the page walk at spec size. */

const key = legacyCursorKey(Buffer.alloc(32, 7))
const master = "0x00000000000000000000000000000000000000aa"
const A = "0x000000000000000000000000000000000000000a"
const B = "0x000000000000000000000000000000000000000b"

/** A node with OfferCreated events at the given blocks; getLogs refuses ranges above `maxRange` like real nodes. */
const fakeNode = (
  offers: ReadonlyArray<{ block: bigint; id: bigint; owner: string }>,
  head: bigint,
  maxRange?: bigint,
) => {
  const ranges: Array<[bigint, bigint]> = []
  const client = {
    getBlockNumber: async () => head,
    getLogs: async ({
      fromBlock,
      toBlock,
      args,
    }: {
      fromBlock: bigint
      toBlock: bigint
      args: { owner: string[] }
    }) => {
      if (maxRange !== undefined && toBlock - fromBlock + 1n > maxRange) throw new Error("block range is too large")
      ranges.push([fromBlock, toBlock])
      const owners = new Set(args.owner.map((o) => o.toLowerCase()))
      return offers
        .filter((o) => o.block >= fromBlock && o.block <= toBlock && owners.has(o.owner))
        .map((o) => ({ args: { id: o.id }, removed: false }))
    },
    readContract: async ({ functionName, args }: { functionName: string; args: [bigint] }) => {
      const o = offers.find((x) => x.id === args[0])!
      return functionName === "getOffer"
        ? { owner: o.owner, refundAt: 100n, reclaimed: false, amount: 5n * o.id }
        : o.id % 2n === 0n
    },
  }
  return { client: client as unknown as PublicClient, ranges }
}

describe("legacy scan: cursor, deployments, pages", () => {
  it("a cursor round-trips for its master only; any edit is refused", () => {
    const cursor = encodeLegacyCursor(key, master, { chainId: 999, escrow: A, nextBlock: 123_456n })
    expect(cursor.length).toBeLessThanOrEqual(256)
    expect(decodeLegacyCursor(key, master.toUpperCase().replace("0X", "0x"), cursor)).toEqual(
      Either.right({ chainId: 999, escrow: A, nextBlock: 123_456n }),
    )
    expect(Either.isLeft(decodeLegacyCursor(key, B, cursor))).toBe(true)
    expect(Either.isLeft(decodeLegacyCursor(legacyCursorKey(Buffer.alloc(32, 8)), master, cursor))).toBe(true)
    for (let i = 0; i < cursor.length; i++) {
      const c = cursor[i] === "A" ? "B" : "A"
      const edited = `${cursor.slice(0, i)}${c}${cursor.slice(i + 1)}`
      expect(Either.isLeft(decodeLegacyCursor(key, master, edited)), `edit at ${i}`).toBe(true)
    }
    const widest = encodeLegacyCursor(key, master, {
      chainId: 2 ** 52,
      escrow: A,
      nextBlock: 10n ** 19n,
    })
    expect(widest.length).toBeLessThanOrEqual(256)
  })

  it("a contract configured twice (legacy_escrow, legacy_escrows, another venue on its chain) is scanned once", () => {
    const base = testDeployment()
    const [hl, aster] = base.venues
    const deployment = Schema.decodeUnknownSync(DeploymentConfig)({
      ...Schema.encodeSync(DeploymentConfig)(base),
      venues: [
        {
          ...Schema.encodeSync(DeploymentConfig)(base).venues[0],
          deployment_block: 50,
          legacy_escrow: A,
          legacy_escrows: [
            { address: A.toUpperCase().replace("0X", "0x"), deployment_block: 10, end_block: 500 },
            { address: B, deployment_block: 70, end_block: 90 },
          ],
        },
        {
          ...Schema.encodeSync(DeploymentConfig)(base).venues[1],
          chain_id: hl!.chain_id,
          legacy_escrows: [{ address: B, deployment_block: 60, end_block: 200 }],
        },
      ],
    })
    expect(aster).toBeDefined()
    expect(legacyDeployments(deployment)).toEqual([
      { venue: "hyperliquid", chainId: hl!.chain_id, address: A, fromBlock: 10n, endBlock: undefined },
      { venue: "hyperliquid", chainId: hl!.chain_id, address: B, fromBlock: 60n, endBlock: 200n },
    ])
  })

  it.effect("pages of at most 8,000 blocks of one contract, empty ones included, until has_more is false", () =>
    Effect.gen(function* () {
      const offers = [
        { block: 1_005n, id: 1n, owner: master },
        { block: 1_006n, id: 2n, owner: B },
        { block: 25_000n, id: 3n, owner: master },
      ]
      // Ranges above 3,000 blocks are refused: a page still covers its 8,000 blocks, through split requests.
      const node = fakeNode(offers, 40_000n, 3_000n)
      const deployments = [
        { venue: "v", chainId: 1, address: A, fromBlock: 1_000n, endBlock: 30_000n },
        { venue: "v", chainId: 1, address: B, fromBlock: 35_000n, endBlock: undefined },
      ] as const
      const pages = []
      let position: Parameters<typeof scanLegacyPage>[3]
      for (let i = 0; i < 20; i++) {
        const page = yield* scanLegacyPage(deployments, () => node.client, [master], position)
        pages.push(page)
        if (!page.hasMore) break
        position = page.next
      }
      expect(LEGACY_PAGE_BLOCKS).toBe(8000n)
      // A: 1,000..30,000 (4 pages), B: 35,000..40,000 (1 page).
      expect(pages.map((p) => [p.data.map((d) => d.id), p.hasMore])).toEqual([
        [["1"], true],
        [[], true],
        [[], true],
        [["3"], true],
        [[], false],
      ])
      expect(pages.map((p) => p.next.nextBlock)).toEqual([9_000n, 17_000n, 25_000n, 35_000n, 40_001n])
      for (const [from, to] of node.ranges) expect(to - from + 1n).toBeLessThanOrEqual(3_000n)
      expect(pages[0]!.data[0]).toEqual({
        chain_id: 1,
        escrow: A,
        owner: master,
        kind: "offer",
        id: "1",
        amount: "5",
        offer_id: "1",
        refund_at: 100,
        reclaimable: false,
      })
      // A position naming no configured deployment is refused.
      const unknown = yield* Effect.exit(
        scanLegacyPage(deployments, () => node.client, [master], { chainId: 2, escrow: A, nextBlock: 0n }),
      )
      expect(Exit.isFailure(unknown)).toBe(true)
    }),
  )
})
