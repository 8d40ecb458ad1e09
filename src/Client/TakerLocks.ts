/**
 * The taker client's lock check and payment authorisation (settlement v2, DESIGN §6 "pay key", §10.2).
 *
 * The pay key signs PayTake(digests) only after this client has read EACH lock of the take at a finalized block of
 * ITS OWN maker-chain endpoint, on the reviewed maker escrow, keyed by the Fill digest, and found it Locked with the
 * Fill's order key, amount, recipient, hashlock, expiry and destination. Without this an operator that is also a
 * maker could have the take paid while no lock exists, then reveal and keep the payment. One PayTake pays all fills
 * of a take (all or nothing), so one missing lock means no signature at all.
 *
 * `signPayTake` accepts only a FinalLocks that `checkLocksFinal` produced (a hand-made object throws).
 *
 * Browser-safe: src/Domain and viem only.
 */
import { type Address, getAddress, type Hex, type LocalAccount } from "viem"
import { payTakeTypedData } from "../Domain/EscrowTypedDataV2.ts"
import { type ChainReader, type FinalSnapshot, finalSnapshot, type LockView, readLock } from "./EscrowReadsV2.ts"
import { assertCheckedTake, type CheckedTake } from "./TakerChecks.ts"

/** `cancelled`: the client cancelled a fill of the take without a PayTake, so it never authorises (TakerFlow). */
export type LockProblemCode = "chain" | "missing" | "state" | "mismatch" | "cancelled"

export interface LockProblem {
  readonly code: LockProblemCode
  /** Index of the fill in the take, or null for the endpoint. */
  readonly fill: number | null
  readonly field: string | null
  readonly message: string
}

/** Proof that every lock of a take was final and right; the only input signPayTake takes. */
export interface FinalLocks {
  readonly take: CheckedTake
  /** The Fill digests in the take's order (the PayTake message). */
  readonly digests: ReadonlyArray<Hex>
  readonly takerChainId: number
  readonly takerEscrow: Address
  /** The maker-chain block the locks were read at. */
  readonly snapshot: FinalSnapshot
  readonly locks: ReadonlyArray<LockView>
}

export type LocksCheck =
  | { readonly ok: true; readonly locks: FinalLocks }
  | { readonly ok: false; readonly problems: ReadonlyArray<LockProblem> }

const issued = new WeakSet<FinalLocks>()

/**
 * Reads every lock of `take` at the finalized block of `makerChain` (the client's own endpoint for the maker chain)
 * on the reviewed maker escrow, and compares it with the Fill the payer signed.
 */
export const checkLocksFinal = async (makerChain: ChainReader, take: CheckedTake): Promise<LocksCheck> => {
  assertCheckedTake(take)
  const problems: Array<LockProblem> = []
  const snapshot = await finalSnapshot(makerChain)
  if (snapshot.chainId !== take.intent.makerChainId) {
    problems.push({
      code: "chain",
      fill: null,
      field: "chainId",
      message: `the endpoint is chain ${snapshot.chainId}, the take's maker chain is ${take.intent.makerChainId}`,
    })
    return { ok: false, problems }
  }
  const locks = await Promise.all(take.fills.map((f) => readLock(makerChain, snapshot, take.makerEscrow, f.digest)))
  locks.forEach((lock, i) => {
    const { fill } = take.fills[i]!
    if (lock.state === "None") {
      problems.push({ code: "missing", fill: i, field: null, message: "no lock with this Fill's digest at finalized" })
      return
    }
    if (lock.state !== "Locked") {
      problems.push({ code: "state", fill: i, field: "state", message: `the lock is ${lock.state}` })
    }
    const must = (field: keyof LockView, ok: boolean) => {
      if (!ok) problems.push({ code: "mismatch", fill: i, field, message: `lock.${field} = ${String(lock[field])}` })
    }
    // Keyed by the digest these hold by construction on the reviewed escrow; checked anyway (defence in depth).
    // The order is orderKey(owner, orderId): the same id under another owner is another order.
    must("owner", getAddress(lock.owner) === fill.owner)
    must("orderId", lock.orderId.toLowerCase() === fill.orderId)
    must("sequence", lock.sequence === fill.sequence)
    must("amountOut", lock.amountOut === fill.amountOut)
    must("recipient", getAddress(lock.recipient) === fill.recipient)
    must("payKey", getAddress(lock.payKey) === fill.payKey)
    must("hashlock", lock.hashlock.toLowerCase() === fill.hashlock)
    must("expiry", lock.expiry === fill.makerExpiry)
    must("dex", lock.dex === fill.dex)
    must("toMargin", lock.toMargin === fill.toMargin)
  })
  if (problems.length > 0) return { ok: false, problems }
  const result: FinalLocks = Object.freeze({
    take,
    digests: Object.freeze(take.fills.map((f) => f.digest)),
    takerChainId: take.intent.takerChainId,
    takerEscrow: take.takerEscrow,
    snapshot,
    locks: Object.freeze(locks),
  })
  issued.add(result)
  return { ok: true, locks: result }
}

export interface PayTakeAuthorisation {
  readonly signature: Hex
  readonly typedData: ReturnType<typeof payTakeTypedData>
}

/** The pay key's PayTake over the take's Fill digests, in the taker escrow's domain. */
export const signPayTake = async (payKey: LocalAccount, locks: FinalLocks): Promise<PayTakeAuthorisation> => {
  if (!issued.has(locks)) throw new TypeError("signPayTake needs the FinalLocks of checkLocksFinal")
  for (const f of locks.take.fills) {
    if (f.fill.payKey !== getAddress(payKey.address)) throw new TypeError("the take's Fills name another pay key")
  }
  const typedData = payTakeTypedData(locks.takerChainId, locks.takerEscrow, locks.digests)
  return { signature: await payKey.signTypedData(typedData), typedData }
}
