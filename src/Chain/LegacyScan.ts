import { Data, Effect } from "effect"
import { type Address, getAbiItem, type PublicClient } from "viem"
import type { DeploymentConfig } from "../Config.ts"
import type { LegacyPosition } from "../Domain/LegacyCursor.ts"
import { legacyEscrowAbi } from "./artifacts/index.ts"
import { RpcError, retryRpc, rpc } from "./RpcError.ts"

/**
 * The legacy escrow scan (GET /v1/escrow/legacy): the retired LegacyEscrow deployments of the configuration are
 * read page by page for offers created by a set of owners (the master and its linked addresses). A page is at most
 * LEGACY_PAGE_BLOCKS blocks of ONE contract, so a request costs a bounded amount of node work; the client follows
 * `next_cursor` until `has_more` is false (pages may be empty). Each offer found is read on chain (amount,
 * refund time, reclaimed, reclaimable now); reclaimed offers hold nothing and are left out. Any node failure
 * fails the page (never an empty page).
 *
 * Duplicates cannot arise across pages: every (chain, contract) is scanned once over the union of its configured
 * ranges (a contract listed twice, or by `legacy_escrow` and `legacy_escrows`, is merged), and each OfferCreated
 * event names a new id; within a page items are keyed by (chain_id, escrow, owner, kind, id).
 */

/** The most a page reads (spec); `limits.legacy_page_blocks` may choose fewer. */
export const LEGACY_PAGE_BLOCKS = 8000n
/** Smallest sub-range tried when a node refuses a range as too large (the page still covers its blocks). */
const MIN_SPLIT_BLOCKS = 64n

export interface LegacyDeployment {
  readonly venue: string
  readonly chainId: number
  /** Lowercase. */
  readonly address: Address
  readonly fromBlock: bigint
  /** Last block to scan; undefined: up to the chain's latest block. */
  readonly endBlock: bigint | undefined
}

/** The configured deployments, merged per (chain id, address), in configuration order. */
export const legacyDeployments = (deployment: DeploymentConfig): ReadonlyArray<LegacyDeployment> => {
  const out: Array<LegacyDeployment> = []
  const index = new Map<string, number>()
  for (const venue of deployment.venues) {
    const entries = [
      ...(venue.legacy_escrow === undefined
        ? []
        : [{ address: venue.legacy_escrow, deployment_block: venue.deployment_block, end_block: undefined }]),
      ...venue.legacy_escrows,
    ]
    for (const e of entries) {
      const address = e.address.toLowerCase() as Address
      const key = `${venue.chain_id}:${address}`
      const from = BigInt(e.deployment_block)
      const end = e.end_block === undefined ? undefined : BigInt(e.end_block)
      const at = index.get(key)
      if (at === undefined) {
        index.set(key, out.length)
        out.push({ venue: venue.id, chainId: venue.chain_id, address, fromBlock: from, endBlock: end })
        continue
      }
      const prev = out[at]!
      out[at] = {
        ...prev,
        fromBlock: from < prev.fromBlock ? from : prev.fromBlock,
        endBlock:
          prev.endBlock === undefined || end === undefined ? undefined : end > prev.endBlock ? end : prev.endBlock,
      }
    }
  }
  return out
}

export interface LegacyItem {
  readonly chain_id: number
  readonly escrow: string
  readonly owner: string
  readonly kind: "offer"
  readonly id: string
  readonly amount: string
  readonly offer_id: string
  readonly refund_at: number
  readonly reclaimable: boolean
}

export interface LegacyPage {
  readonly data: ReadonlyArray<LegacyItem>
  readonly next: LegacyPosition
  readonly hasMore: boolean
}

/** The cursor names no configured deployment (the configuration changed, or it was never ours). */
export class UnknownDeployment extends Data.TaggedError("UnknownDeployment")<{}> {}

const offerCreated = getAbiItem({ abi: legacyEscrowAbi, name: "OfferCreated" })

/** OfferCreated ids of `owners` in [from, to]; a range the node refuses as too large is split in halves. */
const offerIds = (
  client: PublicClient,
  address: Address,
  owners: ReadonlyArray<Address>,
  from: bigint,
  to: bigint,
): Effect.Effect<ReadonlyArray<bigint>, RpcError> =>
  rpc("eth_getLogs", () =>
    client.getLogs({ address, event: offerCreated, args: { owner: [...owners] }, fromBlock: from, toBlock: to }),
  ).pipe(
    retryRpc,
    Effect.map((logs) => logs.flatMap((l) => (l.args.id === undefined || l.removed ? [] : [l.args.id]))),
    Effect.catchIf(
      (e) => e.rangeTooLarge && to - from + 1n > MIN_SPLIT_BLOCKS,
      () => {
        const mid = from + (to - from) / 2n
        return Effect.zipWith(
          offerIds(client, address, owners, from, mid),
          offerIds(client, address, owners, mid + 1n, to),
          (a, b) => [...a, ...b],
        )
      },
    ),
  )

/**
 * Scans one page (at most `pageBlocks` blocks, never more than 8,000) from `position` (none: the first
 * deployment's first block) for offers of `owners`. `clientOf` gives the node of a venue. Fails with RpcError on any node failure, UnknownDeployment for a position that names
 * no configured deployment.
 */
export const scanLegacyPage = (
  deployments: ReadonlyArray<LegacyDeployment>,
  clientOf: (venue: string) => PublicClient | undefined,
  owners: ReadonlyArray<string>,
  position: LegacyPosition | undefined,
  pageBlocks: bigint = LEGACY_PAGE_BLOCKS,
): Effect.Effect<LegacyPage, RpcError | UnknownDeployment> =>
  Effect.gen(function* () {
    const ownerSet = new Set(owners.map((o) => o.toLowerCase()))
    const ownerList = [...ownerSet] as Array<Address>
    let index = 0
    let from: bigint | undefined
    if (position !== undefined) {
      index = deployments.findIndex((d) => d.chainId === position.chainId && d.address === position.escrow)
      if (index < 0) return yield* Effect.fail(new UnknownDeployment())
      from = position.nextBlock
    }
    if (deployments.length === 0) {
      // Nothing configured: one empty, final page (the cursor names nothing and is never accepted back).
      return { data: [], next: { chainId: 1, escrow: `0x${"00".repeat(20)}`, nextBlock: 0n }, hasMore: false }
    }
    const dep = deployments[index]!
    const client = clientOf(dep.venue)
    if (client === undefined) {
      return yield* Effect.fail(
        new RpcError({
          method: "client",
          message: `no node configured for venue ${dep.venue}`,
          retryable: true,
          rangeTooLarge: false,
        }),
      )
    }
    const latest = yield* rpc("eth_blockNumber", () => client.getBlockNumber({ cacheTime: 0 })).pipe(retryRpc)
    const start = from ?? dep.fromBlock
    const end = dep.endBlock === undefined || dep.endBlock > latest ? latest : dep.endBlock
    const nextDeployment = (): LegacyPosition | undefined => {
      const n = deployments[index + 1]
      return n === undefined ? undefined : { chainId: n.chainId, escrow: n.address, nextBlock: n.fromBlock }
    }
    if (start > end) {
      // This contract is done (or the cursor is at the head): an empty page that moves on to the next one.
      const n = nextDeployment()
      return n === undefined
        ? { data: [], next: { chainId: dep.chainId, escrow: dep.address, nextBlock: start }, hasMore: false }
        : { data: [], next: n, hasMore: true }
    }
    const size = pageBlocks > 0n && pageBlocks < LEGACY_PAGE_BLOCKS ? pageBlocks : LEGACY_PAGE_BLOCKS
    const to = start + size - 1n < end ? start + size - 1n : end
    const ids = [...new Set(yield* offerIds(client, dep.address, ownerList, start, to))]
    const offers = yield* Effect.forEach(
      ids,
      (id) =>
        Effect.all(
          [
            rpc("eth_call getOffer", () =>
              client.readContract({
                abi: legacyEscrowAbi,
                address: dep.address,
                functionName: "getOffer",
                args: [id],
                blockNumber: latest,
              }),
            ).pipe(retryRpc),
            rpc("eth_call isReclaimable", () =>
              client.readContract({
                abi: legacyEscrowAbi,
                address: dep.address,
                functionName: "isReclaimable",
                args: [id],
                blockNumber: latest,
              }),
            ).pipe(retryRpc),
          ],
          { concurrency: 2 },
        ).pipe(Effect.map(([offer, reclaimable]) => ({ id, offer, reclaimable }))),
      { concurrency: 8 },
    )
    const items = new Map<string, LegacyItem>()
    for (const { id, offer, reclaimable } of offers) {
      const owner = offer.owner.toLowerCase()
      if (offer.reclaimed || offer.amount === 0n || !ownerSet.has(owner)) continue
      const item: LegacyItem = {
        chain_id: dep.chainId,
        escrow: dep.address,
        owner,
        kind: "offer",
        id: id.toString(),
        amount: offer.amount.toString(),
        offer_id: id.toString(),
        refund_at: Number(offer.refundAt),
        reclaimable,
      }
      items.set(`${item.chain_id}:${item.escrow}:${item.owner}:${item.kind}:${item.id}`, item)
    }
    const data = [...items.values()].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
    if (to < end)
      return { data, next: { chainId: dep.chainId, escrow: dep.address, nextBlock: to + 1n }, hasMore: true }
    const n = nextDeployment()
    return n === undefined
      ? { data, next: { chainId: dep.chainId, escrow: dep.address, nextBlock: to + 1n }, hasMore: false }
      : { data, next: n, hasMore: true }
  })
