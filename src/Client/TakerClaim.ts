/**
 * The taker client's own `claim` of a stalled lock (settlement v2, DESIGN §10.2; issue 23 item 4). Once the maker
 * revealed (its `claimPayment` on the taker chain made the secret public), anyone may `claim(digest, secret)` on
 * the maker chain before makerExpiry and the lock pays the recipient. The service normally does; if it has not
 * within a grace period after the reveal (stopped, behind), the taker's client sends the claim itself, so the
 * recipient's funds never depend on the service once the payer has paid.
 *
 * Rules: the secret is taken from a `PaymentClaimed` log of the reviewed taker escrow at or below the LATEST block of
 * the client's own taker-chain endpoint, for a payment that reads Claimed there, and only if it opens the Fill's
 * hashlock (keccak256(secret) == hashlock proves it, final or not: a reveal reorged away still opens the lock, and
 * waiting for the taker chain's finality could outlast the claim window when the maker reveals late). Nothing is
 * sent before that, nor when less than `minTimeLeftSeconds` is left before makerExpiry (the claim would revert; the
 * lock refunds to the order then). The grace never runs past makerExpiry − 2 × minTimeLeftSeconds: a maker that
 * reveals at the last moment cannot run the client's claim out of time.
 * The lock is re-read at the maker chain's LATEST block just before sending (the service may have claimed
 * meanwhile), and a claim that reverts on a lock found Claimed is success: running this again is always safe.
 *
 * `decideClaim` is pure (time from the caller); `claimIfStalled` does the reads and the sending. Browser-safe:
 * src/Client and viem only.
 */
import { type Address, type Hex, keccak256, type PublicClient, type WalletClient } from "viem"
import {
  type ChainReader,
  type FinalSnapshot,
  type LockView,
  latestSnapshot,
  readLock,
  readPayment,
} from "./EscrowReadsV2.ts"
import { assertCheckedTake, type CheckedTake } from "./TakerChecks.ts"

/** Seconds after the reveal's block the service has to claim before the client does (a few minutes). */
export const DEFAULT_CLAIM_GRACE_SECONDS = 300n
/** A claim sent with less than this left before makerExpiry may be mined after it and revert: not sent. */
export const DEFAULT_CLAIM_MIN_TIME_LEFT_SECONDS = 30n
/** Blocks per eth_getLogs request: endpoints cap a request's range (5,000 passes the common caps). */
const LOG_RANGE = 5_000n

export type ClaimReason =
  | "claimed" // this client's claim was mined
  | "already_claimed" // the lock is Claimed (by the service, or anyone)
  | "not_revealed" // no final PaymentClaimed with the Fill's secret yet
  | "grace" // revealed, but the service still has time to claim
  | "expired" // too close to (or past) makerExpiry: a claim would revert
  | "lock_state" // no live lock (None, Refunded or Cancelled)
  | "chain" // an endpoint is another chain than the take's
  | "reverted" // the claim reverted and the lock is not Claimed

export interface ClaimOutcome {
  /** Index of the fill in the take. */
  readonly fill: number
  readonly digest: Hex
  readonly reason: ClaimReason
  /** When `grace`: the time (Unix seconds) from which the client claims. */
  readonly retryAt?: bigint
  /** When this client sent a claim. */
  readonly txHash?: Hex
}

export interface Reveal {
  readonly secret: Hex
  /** Unix seconds of the taker-chain block that made it public. */
  readonly revealedAt: bigint
}

export type ClaimDecision =
  | { readonly send: true; readonly secret: Hex }
  | { readonly send: false; readonly reason: ClaimReason; readonly retryAt?: bigint }

/**
 * Claim the lock now? `lock`: read at the maker chain's latest block; `reveal`: the final public secret or null;
 * `now`: the decision time, Unix seconds (the later of the caller's clock and the maker chain's newest block time).
 */
export const decideClaim = (p: {
  readonly lock: LockView
  readonly reveal: Reveal | null
  readonly now: bigint
  readonly graceSeconds: bigint
  readonly minTimeLeftSeconds: bigint
}): ClaimDecision => {
  if (p.lock.state === "Claimed") return { send: false, reason: "already_claimed" }
  if (p.lock.state !== "Locked") return { send: false, reason: "lock_state" }
  if (p.reveal === null || keccak256(p.reveal.secret) !== p.lock.hashlock)
    return { send: false, reason: "not_revealed" }
  // The contract refuses block.timestamp >= expiry; the lock's expiry is the Fill's makerExpiry.
  if (p.now + p.minTimeLeftSeconds >= p.lock.expiry) return { send: false, reason: "expired" }
  // The service's grace ends early enough for the client's own claim to be mined before the lock expires.
  const graceEnds = p.reveal.revealedAt + p.graceSeconds
  const latestStart = p.lock.expiry - 2n * p.minTimeLeftSeconds
  const retryAt = graceEnds < latestStart ? graceEnds : latestStart
  if (p.now < retryAt) return { send: false, reason: "grace", retryAt }
  return { send: true, secret: p.reveal.secret }
}

const paymentClaimedEvent = {
  type: "event",
  name: "PaymentClaimed",
  inputs: [
    { name: "fillDigest", type: "bytes32", indexed: true },
    { name: "payee", type: "address", indexed: true },
    { name: "amountIn", type: "uint256", indexed: false },
    { name: "secret", type: "bytes32", indexed: false },
  ],
} as const

const claimAbi = [
  {
    type: "function",
    name: "claim",
    stateMutability: "nonpayable",
    inputs: [
      { name: "fillDigest", type: "bytes32" },
      { name: "secret", type: "bytes32" },
    ],
    outputs: [],
  },
] as const

/** The client's own taker-chain endpoint: latest reads and the PaymentClaimed logs. */
export type RevealReader = ChainReader & Pick<PublicClient, "getLogs">
/** The client's own maker-chain endpoint: latest reads and the claim's receipt. */
export type ClaimReader = ChainReader & Pick<PublicClient, "waitForTransactionReceipt">

/** Sends claim(digest, secret) to the maker escrow, paying gas on the maker chain; resolves to the tx hash. */
export interface ClaimSender {
  readonly sendClaim: (escrow: Address, digest: Hex, secret: Hex) => Promise<Hex>
}

/** A viem wallet (with its account and the maker chain) as the sender. */
export const walletClaimSender = (wallet: Pick<WalletClient, "account" | "chain" | "writeContract">): ClaimSender => ({
  sendClaim: (address, digest, secret) => {
    if (wallet.account === undefined) throw new Error("the wallet has no account to pay gas")
    return wallet.writeContract({
      address,
      abi: claimAbi,
      functionName: "claim",
      args: [digest, secret],
      account: wallet.account,
      chain: wallet.chain,
    })
  },
})

export interface ClaimOptions {
  /** The caller's clock, Unix seconds. */
  readonly now: () => bigint
  readonly graceSeconds?: bigint
  readonly minTimeLeftSeconds?: bigint
  /** Taker-chain block to search reveals from (e.g. the block before the take started); default 0. */
  readonly fromBlock?: bigint
}

/** The Fill's public secret: a PaymentClaimed log of `escrow` at or below `at`, newest window first. */
const findReveal = async (
  taker: RevealReader,
  at: FinalSnapshot,
  escrow: Address,
  digest: Hex,
  hashlock: Hex,
  fromBlock: bigint,
): Promise<Reveal | null> => {
  for (let to = at.blockNumber; to >= fromBlock; to -= LOG_RANGE) {
    const from = to - LOG_RANGE + 1n > fromBlock ? to - LOG_RANGE + 1n : fromBlock
    const logs = await taker.getLogs({
      address: escrow,
      event: paymentClaimedEvent,
      args: { fillDigest: digest },
      fromBlock: from,
      toBlock: to,
    })
    // A log whose secret does not open the hashlock is not this Fill's (a wrong endpoint): ignored.
    const log = logs.find((l) => l.args.secret !== undefined && keccak256(l.args.secret) === hashlock)
    if (log?.args.secret !== undefined && log.blockNumber !== null) {
      const block = await taker.getBlock({ blockNumber: log.blockNumber })
      return { secret: log.args.secret, revealedAt: block.timestamp }
    }
    if (from === 0n) break
  }
  return null
}

/** The lock at the maker chain's latest block, and that block's time. */
const latestLock = async (maker: ClaimReader, escrow: Address, digest: Hex) => {
  const at = await latestSnapshot(maker)
  return { lock: await readLock(maker, at, escrow, digest), time: at.timestamp }
}

/**
 * For each fill of `take`: when its payment is Claimed at the taker chain's latest block and its lock is still
 * Locked `graceSeconds` after the reveal, sends claim(digest, secret) on the reviewed maker escrow. Run it again
 * until every outcome is final (claimed, already_claimed, expired, lock_state); `grace` says when to come back.
 */
export const claimIfStalled = async (
  makerChain: ClaimReader,
  takerChain: RevealReader,
  take: CheckedTake,
  sender: ClaimSender,
  options: ClaimOptions,
): Promise<ReadonlyArray<ClaimOutcome>> => {
  assertCheckedTake(take)
  const graceSeconds = options.graceSeconds ?? DEFAULT_CLAIM_GRACE_SECONDS
  const minTimeLeftSeconds = options.minTimeLeftSeconds ?? DEFAULT_CLAIM_MIN_TIME_LEFT_SECONDS
  const [atT, makerChainId] = await Promise.all([latestSnapshot(takerChain), makerChain.getChainId()])
  const chainsOk = atT.chainId === take.intent.takerChainId && makerChainId === take.intent.makerChainId
  const outcomes: Array<ClaimOutcome> = []
  for (const [fill, { digest, fill: f }] of take.fills.entries()) {
    if (!chainsOk) {
      outcomes.push({ fill, digest, reason: "chain" })
      continue
    }
    const payment = await readPayment(takerChain, atT, take.takerEscrow, digest)
    const reveal =
      payment.state === "Claimed"
        ? await findReveal(takerChain, atT, take.takerEscrow, digest, f.hashlock, options.fromBlock ?? 0n)
        : null
    // Re-read the lock just before deciding: the service may have claimed since the last run.
    const { lock, time } = await latestLock(makerChain, take.makerEscrow, digest)
    const callerNow = options.now()
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
    const now = callerNow > time ? callerNow : time
    const d = decideClaim({ lock, reveal, now, graceSeconds, minTimeLeftSeconds })
    if (!d.send) {
      outcomes.push({ fill, digest, reason: d.reason, ...(d.retryAt !== undefined ? { retryAt: d.retryAt } : {}) })
      continue
    }
    outcomes.push(await sendClaim(makerChain, take.makerEscrow, digest, d.secret, sender, fill))
  }
  return outcomes
}

/** Sends the claim; a revert (at estimation or mined) on a lock that reads Claimed is success. */
const sendClaim = async (
  maker: ClaimReader,
  escrow: Address,
  digest: Hex,
  secret: Hex,
  sender: ClaimSender,
  fill: number,
): Promise<ClaimOutcome> => {
  const claimedMeanwhile = async () => (await latestLock(maker, escrow, digest)).lock.state === "Claimed"
  let txHash: Hex
  try {
    txHash = await sender.sendClaim(escrow, digest, secret)
  } catch (e) {
    if (await claimedMeanwhile()) return { fill, digest, reason: "already_claimed" }
    throw e
  }
  const receipt = await maker.waitForTransactionReceipt({ hash: txHash })
  if (receipt.status === "success") return { fill, digest, reason: "claimed", txHash }
  return { fill, digest, reason: (await claimedMeanwhile()) ? "already_claimed" : "reverted", txHash }
}
