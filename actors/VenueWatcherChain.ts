import { Cause, Effect } from "effect"
import type { Address, Hex, PublicClient } from "viem"
import { legacyEscrowAbi, settlementEscrowAbi } from "../src/Chain/artifacts/index.ts"
import type { IndexState } from "../src/Chain/EscrowIndex.ts"
import { isTerminal } from "../src/Chain/Failure.ts"
import { finalizedByConfirmations } from "../src/Chain/Finality.ts"
import type { ChainOrder, ChainSnapshot } from "../src/Chain/Integrity.ts"
import { type RpcError, retryRpc, rpc } from "../src/Chain/RpcError.ts"
import type { VenueConfig } from "../src/Config.ts"

/**
 * The VenueWatcher's chain reads (the poll that ingests and writes is actors/VenueWatcher.ts): the chain's heads,
 * a block's hash, and the escrow's answers for every indexed key at a block (the integrity check's snapshot). It
 * reads and writes no table.
 */

export interface Head {
  readonly number: bigint
  readonly hash: Hex
  readonly timestamp: bigint
}

export interface Heads {
  readonly latest: Head
  readonly safe: bigint
  readonly finalized: Head
}

/** Concurrent reads of the integrity check (batched into JSON-RPC batches by the transport). */
export const READ_CONCURRENCY = 32

/** The node answered something that cannot be this chain's history (a pending block as a head, a block gone). */
export class ChainMismatch extends Error {}

const toHead = (b: { number: bigint | null; hash: Hex | null; timestamp: bigint }, tag: string): Head => {
  if (b.number === null || b.hash === null) throw new ChainMismatch(`the node returned a pending block for ${tag}`)
  return { number: b.number, hash: b.hash, timestamp: b.timestamp }
}

export const readHeads = (client: PublicClient, confirmations: number | undefined) =>
  Effect.gen(function* () {
    const block = (tag: "latest" | "safe" | "finalized") =>
      rpc("eth_getBlockByNumber", () => client.getBlock({ blockTag: tag })).pipe(
        Effect.map((b) => toHead(b, tag)),
        retryRpc,
      )
    if (confirmations === undefined) {
      const [latest, safe, finalized] = yield* Effect.all([block("latest"), block("safe"), block("finalized")], {
        concurrency: "unbounded",
      })
      return { latest, safe: safe.number, finalized } satisfies Heads
    }
    const latest = yield* block("latest")
    const finalizedNumber = finalizedByConfirmations(latest.number, confirmations)
    const finalized = yield* rpc("eth_getBlockByNumber", () => client.getBlock({ blockNumber: finalizedNumber })).pipe(
      Effect.map((b) => toHead(b, "finalized")),
      retryRpc,
    )
    const half = BigInt(Math.floor(confirmations / 2))
    return { latest, safe: latest.number > half ? latest.number - half : 0n, finalized } satisfies Heads
  })

export const blockHashAt = (client: PublicClient, n: bigint) =>
  rpc("eth_getBlockByNumber", () => client.getBlock({ blockNumber: n })).pipe(
    Effect.map((b) => b.hash as Hex | null),
    retryRpc,
  )

export const isTerminalOrMismatch = (cause: Cause.Cause<unknown>): boolean => {
  const defect = Cause.dieOption(cause)
  return isTerminal(cause) || (defect._tag === "Some" && defect.value instanceof ChainMismatch)
}

/** Reads the escrow's answers for every indexed key at `block`. */
export const readChainSnapshot = (
  client: PublicClient,
  venue: VenueConfig,
  indexed: IndexState,
  block: bigint,
): Effect.Effect<ChainSnapshot, RpcError> =>
  Effect.gen(function* () {
    const escrow = venue.escrow as Address
    const read = <A>(method: string, run: () => Promise<A>) => retryRpc(rpc(`eth_call ${method}`, run))
    const blockNumber = block
    const totalLiabilities = yield* read("totalLiabilities", () =>
      client.readContract({ abi: settlementEscrowAbi, address: escrow, functionName: "totalLiabilities", blockNumber }),
    )
    const orders = new Map<string, ChainOrder>()
    yield* Effect.forEach(
      [...indexed.orders.keys()],
      (id) =>
        read("getOrder", () =>
          client.readContract({
            abi: settlementEscrowAbi,
            address: escrow,
            functionName: "getOrder",
            args: [id as Hex],
            blockNumber,
          }),
        ).pipe(Effect.map((o) => orders.set(id, { owner: o.owner, available: o.available, locked: o.locked }))),
      { concurrency: READ_CONCURRENCY, discard: true },
    )
    const balances = new Map<string, bigint>()
    yield* Effect.forEach(
      [...indexed.balances.keys()],
      (owner) =>
        read("balanceOf", () =>
          client.readContract({
            abi: settlementEscrowAbi,
            address: escrow,
            functionName: "balanceOf",
            args: [owner as Address],
            blockNumber,
          }),
        ).pipe(Effect.map((b) => balances.set(owner, b))),
      { concurrency: READ_CONCURRENCY, discard: true },
    )
    const locks = new Map<string, number>()
    yield* Effect.forEach(
      [...indexed.locks.keys()],
      (id) =>
        read("getLock", () =>
          client.readContract({
            abi: settlementEscrowAbi,
            address: escrow,
            functionName: "getLock",
            args: [id as Hex],
            blockNumber,
          }),
        ).pipe(Effect.map((l) => locks.set(id, l.state))),
      { concurrency: READ_CONCURRENCY, discard: true },
    )
    const payments = new Map<string, number>()
    yield* Effect.forEach(
      [...indexed.payments.keys()],
      (id) =>
        read("getPayment", () =>
          client.readContract({
            abi: settlementEscrowAbi,
            address: escrow,
            functionName: "getPayment",
            args: [id as Hex],
            blockNumber,
          }),
        ).pipe(Effect.map((p) => payments.set(id, p.state))),
      { concurrency: READ_CONCURRENCY, discard: true },
    )
    const legacy = new Map<string, boolean>()
    yield* Effect.forEach(
      [...indexed.legacy.values()],
      (o) =>
        read("getOffer", () =>
          client.readContract({
            abi: legacyEscrowAbi,
            address: o.contract,
            functionName: "getOffer",
            args: [o.offerId],
            blockNumber,
          }),
        ).pipe(Effect.map((c) => legacy.set(`${o.contract}:${o.offerId}`, c.reclaimed))),
      { concurrency: READ_CONCURRENCY, discard: true },
    )
    return { block, totalLiabilities, orders, balances, locks, payments, legacy }
  })
