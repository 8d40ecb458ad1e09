/**
 * The maker client's reveal loop (settlement v2, DESIGN §10.2): find payments held for this maker on each taker
 * chain, check each against the maker's own lock with src/Client/MakerReveal.ts `decideReveal`, and reveal by
 * broadcasting the maker's own `claimPayment(digest, secret)` when it says so.
 *
 * Everything comes from the chains, at finalized blocks of the maker's own endpoints, never from the service:
 * - payments: `Paid` events of the reviewed taker escrow naming this maker's payee (indexed), then `getPayment`;
 * - the lock: `getLock` on the maker's own escrow by the same Fill digest;
 * - the quote set the lock was made under: the calldata of the `lock` call that emitted `Locked` for the digest,
 *   accepted only when it hashes to the event's `quoteSetDigest` (so it is the set the escrow checked, signed by the
 *   order's quote signer), or else a set this process published itself (`knownSets`);
 * - the secrets: re-derived from the maker's key and the set (src/Domain/Hashlocks.ts), so a restarted loop with no
 *   state reveals exactly as before.
 * Only this maker's orders (owner + order id, `orders`) are considered at all. A refusal that time can cure (no lock
 * yet, payment not final yet) keeps the payment under watch; others drop it. One log line per reveal and per new
 * refusal, never a secret.
 *
 * The payments under watch are independent: a pass checks and sends reveals for up to `revealConcurrency` of them
 * at once (each still only once its payment and lock are final). A slot is free again once its claimPayment is sent:
 * the pass then waits for all its sent reveals' inclusions together, so no reveal waits for another's receipt before
 * it is sent (a slot held until inclusion revealed `revealConcurrency` a block). A pass ends when all of them are
 * done (included, or failed), so what it returns and what it records as sent are as before; a failure of one does
 * not stop the others, and the pass then fails (the first error) once they have all settled, so nothing of a failed
 * pass is still running when the next one starts.
 *
 * Browser-safe: viem only (the claim broadcaster is given by the caller).
 */
import { type Address, decodeFunctionData, getAbiItem, getAddress, type Hex, type PublicClient } from "viem"
import { settlementEscrowV2Abi } from "../Chain/artifacts/SettlementEscrowV2.ts"
import { orderKey, type QuoteSetV2, quoteSetDigest } from "../Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, type HashlockSet } from "../Domain/Hashlocks.ts"
import { finalSnapshot, readLock, readPayment } from "./EscrowReadsV2.ts"
import { decideReveal, type MakerConfig, type RevealRefusalCode } from "./MakerReveal.ts"

/** The reads the loop makes (a viem PublicClient on the party's own endpoint). */
export type RevealReader = Pick<PublicClient, "getChainId" | "getBlock" | "readContract" | "getLogs" | "getTransaction">

export interface MakerOrderRef {
  readonly owner: Address
  readonly orderId: Hex
}

export interface RevealLoopConfig extends MakerConfig {
  /** The orders this maker quotes, as funded on its maker escrow (owner + id: the escrow keys orders by both). */
  readonly orders: ReadonlyArray<MakerOrderRef>
  /** First block to scan per chain id (maker and taker chains; e.g. the v2 escrow's deployment block); default 0. */
  readonly fromBlocks?: Readonly<Record<number, bigint>>
}

export interface RevealLoopDeps {
  /** The maker chain's reader. */
  readonly maker: RevealReader
  /**
   * Per taker chain id: its reader, the broadcaster of `claimPayment(digest, secret)` from the maker's key, which
   * resolves once the transaction is sent (its hash), and `included(hash)`, which resolves once that transaction is
   * included and succeeded (and rejects if it reverted). The broadcaster is called for several payments at once (up
   * to `revealConcurrency`): it must keep its sends' nonces apart (infra/maker/Run.ts sends one at a time).
   */
  readonly takers: Readonly<
    Record<
      number,
      {
        readonly reader: RevealReader
        readonly claimPayment: (digest: Hex, secret: Hex) => Promise<Hex>
        readonly included: (hash: Hex) => Promise<void>
      }
    >
  >
  /** secretKeyOf(quote signer private key). */
  readonly key: Hex
  /** Unix seconds of the local clock. */
  readonly nowSeconds: () => bigint
  readonly log: (line: string) => void
  /** Sets this process published (a fallback when a lock's calldata is not a direct `lock` call). */
  readonly knownSets?: () => ReadonlyArray<QuoteSetV2>
  /** How many watched payments a pass checks and reveals at once (default REVEAL_CONCURRENCY). */
  readonly revealConcurrency?: number
}

/** Payments a pass checks and reveals at once, by default. */
export const REVEAL_CONCURRENCY = 16

/**
 * `f` over `items`, at most `limit` at a time; the results in the items' order. Every item is tried: the first
 * failure is thrown only once all have settled.
 */
const pooled = async <A, B>(items: ReadonlyArray<A>, limit: number, f: (a: A) => Promise<B>): Promise<Array<B>> => {
  const out: Array<B> = new Array(items.length)
  const failures: Array<unknown> = []
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      try {
        out[i] = await f(items[i]!)
      } catch (e) {
        failures.push(e)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  if (failures.length > 0) throw failures[0]
  return out
}

/** A reveal sent this pass, its inclusion not yet seen. */
interface SentReveal {
  readonly digest: Hex
  readonly tx: Hex
  readonly hashlockIndex: number
}

export type RevealOutcome =
  | { readonly digest: Hex; readonly kind: "revealed"; readonly hashlockIndex: number; readonly tx: Hex }
  | { readonly digest: Hex; readonly kind: "refused"; readonly codes: ReadonlyArray<RevealRefusalCode | "not_ours"> }

// Refusals that a later finalized block can cure: the lock or the payment is not final (or not there) yet.
const TRANSIENT: ReadonlySet<string> = new Set(["lock_state", "payment_state"])

const paidEvent = getAbiItem({ abi: settlementEscrowV2Abi, name: "Paid" })
const lockedEvent = getAbiItem({ abi: settlementEscrowV2Abi, name: "Locked" })

/** Blocks per eth_getLogs request: endpoints cap a request's range (5,000 passes the common caps). */
export const LOG_RANGE = 5_000n

/** [from, to] in windows of LOG_RANGE blocks, oldest first. */
const windows = (from: bigint, to: bigint): Array<readonly [bigint, bigint]> => {
  const out: Array<readonly [bigint, bigint]> = []
  for (let a = from; a <= to; a += LOG_RANGE) out.push([a, a + LOG_RANGE - 1n < to ? a + LOG_RANGE - 1n : to])
  return out
}

const sameOrder = (a: MakerOrderRef, b: MakerOrderRef) =>
  orderKey(getAddress(a.owner), a.orderId) === orderKey(getAddress(b.owner), b.orderId)

/** The quote set a `lock` call carried (the ABI names the price field `receive_`). */
const quoteSetOfLockCall = (input: Hex): QuoteSetV2 | undefined => {
  try {
    const call = decodeFunctionData({ abi: settlementEscrowV2Abi, data: input })
    if (call.functionName !== "lock") return undefined
    const qs = call.args[2]
    return {
      owner: getAddress(qs.owner),
      orderId: qs.orderId,
      sequence: qs.sequence,
      generation: qs.generation,
      quoteSize: qs.quoteSize,
      issuedAt: qs.issuedAt,
      validUntil: qs.validUntil,
      hashlockRoot: qs.hashlockRoot,
      hashlockCount: qs.hashlockCount,
      quotes: qs.quotes.map(({ receive_, ...q }) => ({ ...q, receive: receive_ })),
    }
  } catch {
    return undefined
  }
}

export const makeRevealLoop = (config: RevealLoopConfig, deps: RevealLoopDeps) => {
  const makerEscrow = getAddress(config.makerEscrow)
  // Payments under watch: digest → the taker chain it was paid on. Lost on restart; rebuilt by the scan.
  const watching = new Map<Hex, number>()
  const cursors = new Map<number, bigint>()
  const logged = new Map<Hex, string>()
  // Our claimPayment per digest, with the taker chain's newest block once it was sent: included by then.
  const sent = new Map<Hex, bigint>()
  const derived = new Map<string, HashlockSet>()

  const hashlocksOf = (set: QuoteSetV2): HashlockSet => {
    const id = `${set.owner}:${set.orderId}:${set.sequence}:${set.hashlockCount}`
    let h = derived.get(id)
    if (h === undefined) {
      h = deriveHashlockSet(
        deps.key,
        {
          chainId: BigInt(config.makerChainId),
          makerEscrow,
          owner: getAddress(set.owner),
          orderId: set.orderId,
          sequence: set.sequence,
        },
        set.hashlockCount,
      )
      derived.set(id, h)
    }
    return h
  }

  /** The set the escrow checked when it locked `digest` (finalized), or one this process published. */
  const quoteSetOf = async (digest: Hex, makerBlock: bigint, ref: MakerOrderRef & { sequence: bigint }) => {
    // Newest window first: a lock that matters is recent (at most MAX_LOCK old), and a digest locks once.
    for (const [fromBlock, toBlock] of windows(config.fromBlocks?.[config.makerChainId] ?? 0n, makerBlock).reverse()) {
      const logs = await deps.maker.getLogs({
        address: makerEscrow,
        event: lockedEvent,
        args: { fillDigest: digest },
        fromBlock,
        toBlock,
      })
      for (const log of logs) {
        const tx = await deps.maker.getTransaction({ hash: log.transactionHash! })
        const set = quoteSetOfLockCall(tx.input)
        if (
          set !== undefined &&
          tx.to !== null &&
          getAddress(tx.to) === makerEscrow &&
          quoteSetDigest(config.makerChainId, makerEscrow, set) === log.args.quoteSetDigest
        ) {
          return set
        }
      }
      if (logs.length > 0) break
    }
    return deps.knownSets?.().find((s) => sameOrder(s, ref) && s.sequence === ref.sequence)
  }

  const report = (outcome: RevealOutcome) => {
    if (outcome.kind === "revealed") {
      deps.log(`reveal: claimPayment ${outcome.digest} (hashlock index ${outcome.hashlockIndex}) sent in ${outcome.tx}`)
      return
    }
    const line = outcome.codes.join(",")
    if (logged.get(outcome.digest) === line) return
    logged.set(outcome.digest, line)
    deps.log(`no reveal for ${outcome.digest}: ${line}`)
  }

  /** One pass: scan new payments, then decide each watched one. Returns what it decided this pass. */
  const tick = async (): Promise<ReadonlyArray<RevealOutcome>> => {
    const outcomes: Array<RevealOutcome> = []
    const atM = await finalSnapshot(deps.maker)
    for (const [idText, taker] of Object.entries(config.takerChains)) {
      const chainId = Number(idText)
      const t = deps.takers[chainId]
      if (t === undefined) continue
      const atT = await finalSnapshot(t.reader)
      // The scan: this payee's payments on the reviewed escrow, up to the finalized head.
      const from = cursors.get(chainId) ?? config.fromBlocks?.[chainId] ?? 0n
      if (from <= atT.blockNumber) {
        const paid = []
        for (const [fromBlock, toBlock] of windows(from, atT.blockNumber)) {
          paid.push(
            ...(await t.reader.getLogs({
              address: getAddress(taker.escrow),
              event: paidEvent,
              args: { payee: getAddress(taker.payee) },
              fromBlock,
              toBlock,
            })),
          )
        }
        for (const log of paid) {
          const fill = log.args.fill!
          const ref = { owner: getAddress(fill.owner), orderId: fill.orderId }
          // Another owner's order (even with one of our ids) is never ours to reveal for.
          if (!config.orders.some((o) => sameOrder(o, ref))) {
            const outcome: RevealOutcome = { digest: log.args.fillDigest!, kind: "refused", codes: ["not_ours"] }
            report(outcome)
            outcomes.push(outcome)
            continue
          }
          watching.set(log.args.fillDigest!, chainId)
        }
        cursors.set(chainId, atT.blockNumber + 1n)
      }
      const latest = await t.reader.getBlock({ blockTag: "latest" })
      // The later of the local clock and the taker chain's newest block (MakerReveal's `now`).
      // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
      const now = [latest.timestamp, deps.nowSeconds()].reduce((a, b) => (a > b ? a : b))
      // Each watched payment of this chain, up to revealConcurrency at once (a snapshot: only the scan adds to it).
      const mine = [...watching].filter(([, on]) => on === chainId).map(([digest]) => digest)
      const decided = await pooled(mine, deps.revealConcurrency ?? REVEAL_CONCURRENCY, async (digest) => {
        const payment = await readPayment(t.reader, atT, getAddress(taker.escrow), digest)
        if (payment.state !== "Held") {
          watching.delete(digest)
          return undefined
        }
        // Our claimPayment is on its way: the payment leaves Held once its block is final. Still Held at a finalized
        // head past the block it was sent by: it is not in the chain (reorged out or dropped), so reveal again.
        const sentBy = sent.get(digest)
        if (sentBy !== undefined && atT.blockNumber < sentBy) return undefined
        sent.delete(digest)
        const lock = await readLock(deps.maker, atM, makerEscrow, digest)
        const ref = { owner: getAddress(lock.owner), orderId: lock.orderId, sequence: lock.sequence }
        const set = lock.state === "None" ? undefined : await quoteSetOf(digest, atM.blockNumber, ref)
        if (set === undefined || !config.orders.some((o) => sameOrder(o, set))) {
          const outcome: RevealOutcome = {
            digest,
            kind: "refused",
            // No lock (yet), no set this maker can recognise (quote_set), or a set of another order (lock_order).
            codes: [lock.state === "None" ? "lock_state" : set === undefined ? "quote_set" : "lock_order"],
          }
          report(outcome)
          if (lock.state !== "None") watching.delete(digest)
          return outcome
        }
        const decision = decideReveal({ config, quoteSet: set, hashlocks: hashlocksOf(set), payment, lock, now })
        if (!decision.reveal) {
          const codes = [...new Set(decision.reasons.map((r) => r.code))]
          const outcome: RevealOutcome = { digest, kind: "refused", codes }
          report(outcome)
          if (!codes.every((c) => TRANSIENT.has(c))) watching.delete(digest)
          return outcome
        }
        let tx: Hex
        try {
          tx = await t.claimPayment(decision.digest, decision.secret)
        } catch (e) {
          claimFailed(digest, e)
          return undefined
        }
        // Sent: the slot is free; the pass waits for the inclusion with the others' (below).
        return { digest, tx, hashlockIndex: decision.hashlockIndex } satisfies SentReveal
      })
      const included = await Promise.all(
        decided.map((d) => (d === undefined || "kind" in d ? d : includedReveal(t, d))),
      )
      for (const outcome of included) if (outcome !== undefined) outcomes.push(outcome)
    }
    return outcomes
  }

  // Only the error's name: a client error's message may quote the call's arguments (the secret).
  const claimFailed = (digest: Hex, e: unknown) =>
    deps.log(`claimPayment for ${digest} failed (${e instanceof Error ? e.name : "error"}); retried next pass`)

  /** A sent reveal once included: recorded as sent with the newest block by then, and reported (else retried). */
  const includedReveal = async (
    t: RevealLoopDeps["takers"][number],
    { digest, tx, hashlockIndex }: SentReveal,
  ): Promise<RevealOutcome | undefined> => {
    try {
      await t.included(tx)
    } catch (e) {
      claimFailed(digest, e)
      return undefined
    }
    sent.set(digest, (await t.reader.getBlock({ blockTag: "latest" })).number)
    const outcome: RevealOutcome = { digest, kind: "revealed", hashlockIndex, tx }
    report(outcome)
    return outcome
  }

  return { tick, watching: () => [...watching.keys()] }
}
