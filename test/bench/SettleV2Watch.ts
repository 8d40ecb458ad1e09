import { type Hex, parseEventLogs } from "viem"
import { settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import type { TestChain } from "../support/ChainDevnet.ts"
import type { V2Stack } from "../support/SettleV2Stack.ts"

/**
 * The settle bench's one view of both chains (test/bench/settle-v2.ts): a 20 ms poll of each head, shared by every
 * take, so waits cost one request per block, not one per take (at 256 concurrent takes, per-take 20 ms polls were
 * thousands of requests a second on a 2-core machine). `at(c, n)`: when block n of c was first seen
 * (performance.now ms; a skipped block: the next seen). `claimed(digest)`: resolves when a Claimed of that fill is
 * seen in a maker-chain block (one getLogs per new block).
 */
export const CONFIRMATIONS = 2n

export const chainWatcher = (s: V2Stack) => {
  const seen = new Map<number, Map<bigint, number>>()
  const heads = new Map<number, bigint>()
  const waiting = new Map<number, Array<() => void>>()
  const claims = new Map<string, bigint>()
  const claimWaiters = new Map<string, (block: bigint) => void>()
  let stop = false
  const scanClaims = async (from: bigint, to: bigint) => {
    const logs = parseEventLogs({
      abi: settlementEscrowV2Abi,
      eventName: "Claimed",
      logs: await s.hl.pub.getLogs({ address: s.hl.escrowV2!, fromBlock: from, toBlock: to }),
    })
    for (const log of logs) {
      const digest = (log.args as { fillDigest: Hex }).fillDigest.toLowerCase()
      claims.set(digest, log.blockNumber)
      claimWaiters.get(digest)?.(log.blockNumber)
      claimWaiters.delete(digest)
    }
  }
  const watch = async (c: TestChain) => {
    const mine = new Map<bigint, number>()
    seen.set(c.chain.id, mine)
    let last = (await c.pub.getBlockNumber({ cacheTime: 0 })) - 1n
    heads.set(c.chain.id, last)
    while (!stop) {
      const head = await c.pub.getBlockNumber({ cacheTime: 0 })
      if (head > last) {
        const now = performance.now()
        for (let b = last + 1n; b <= head; b++) mine.set(b, now)
        if (c === s.hl) await scanClaims(last + 1n, head)
        last = head
        heads.set(c.chain.id, head)
        const ws = waiting.get(c.chain.id) ?? []
        waiting.set(c.chain.id, [])
        for (const w of ws) w()
      }
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  const running = Promise.all([watch(s.hl), watch(s.aster)])
  const nextHead = (c: TestChain) =>
    new Promise<void>((resolve) => waiting.set(c.chain.id, [...(waiting.get(c.chain.id) ?? []), resolve]))
  return {
    at: (c: TestChain, block: bigint) => seen.get(c.chain.id)?.get(block) ?? Number.NaN,
    final: (c: TestChain, block: bigint) => seen.get(c.chain.id)?.get(block + CONFIRMATIONS) ?? Number.NaN,
    head: (c: TestChain) => heads.get(c.chain.id) ?? -1n,
    /** Resolves at the next new block of `c` this watcher sees. */
    nextHead,
    /** Resolves once `block` is final on `c` (CONFIRMATIONS deep) as this watcher saw it. */
    finalOn: async (c: TestChain, block: bigint) => {
      while ((heads.get(c.chain.id) ?? -1n) < block + CONFIRMATIONS) await nextHead(c)
    },
    /** The block of the fill's Claimed on the maker chain, once seen. */
    claimed: (digest: Hex) => {
      const known = claims.get(digest.toLowerCase())
      return known !== undefined
        ? Promise.resolve(known)
        : new Promise<bigint>((resolve) => claimWaiters.set(digest.toLowerCase(), resolve))
    },
    stop: () => {
      stop = true
      return running
    },
  }
}
export type Watcher = ReturnType<typeof chainWatcher>

/** Block of each v2 event per fill digest, from the escrows' logs. */
export const eventBlocks = async (s: V2Stack) => {
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

/** The p-th percentile (nearest rank), NaN left out. */
export const pct = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN
}
