import { type Address, decodeEventLog, type Hex, keccak256, type Log, toEventSelector } from "viem"
import type { EventMeta } from "./EscrowLogs.ts"
import { escrowV2Events, escrowV2EventsAbi } from "./EscrowV2Abi.ts"

/**
 * SettlementEscrowV2 logs → decoded events (the v2 twin of EscrowLogs.ts): viem's decodeEventLog against the v2 events
 * ABI (strict: a log that does not decode is skipped), and the maker reveals among them. EscrowIndexV2.ts folds them.
 */

const events = escrowV2Events

/** topic0 of every v2 event: the `topics` filter of the v2 eth_getLogs. */
export const escrowV2Topics: ReadonlyArray<Hex> = events.map((e) => toEventSelector(e))
const topicSet = new Set(escrowV2Topics)

type Decoded = ReturnType<typeof decodeEventLog<typeof escrowV2EventsAbi>>
export type DecodedV2 = Decoded
export type IndexedEventV2 = EventMeta & { readonly decoded: DecodedV2 }

/** Decodes raw logs of the v2 escrow `escrow`, in (block, log index) order; anything else is skipped. */
export const decodeV2Logs = (logs: ReadonlyArray<Log>, escrow: Address): Array<IndexedEventV2> => {
  const want = escrow.toLowerCase()
  const out: Array<IndexedEventV2> = []
  for (const raw of logs) {
    if (raw.removed || raw.address.toLowerCase() !== want) continue
    if (raw.blockNumber === null || raw.blockHash === null || raw.logIndex === null || raw.transactionHash === null) {
      continue
    }
    const selector = raw.topics[0]
    if (selector === undefined || !topicSet.has(selector.toLowerCase() as Hex)) continue
    let decoded: DecodedV2
    try {
      decoded = decodeEventLog({ abi: escrowV2EventsAbi, data: raw.data, topics: raw.topics, strict: true })
    } catch {
      continue
    }
    out.push({
      blockNumber: raw.blockNumber,
      blockHash: raw.blockHash,
      logIndex: raw.logIndex,
      txHash: raw.transactionHash,
      contract: want as Address,
      decoded,
    })
  }
  return out.sort((a, b) =>
    a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
  )
}

const lc = <T extends string>(s: T): T => s.toLowerCase() as T

/** `PaymentClaimed` (a maker's reveal on the taker chain): the event the scan for fresh reveals asks for. */
export const paymentClaimedEvent = events.find((e) => e.name === "PaymentClaimed")!

/** A maker's reveal seen in a block not final yet: its Fill digest, the secret and the hashlock it opens. */
export interface SeenReveal {
  readonly fillDigest: Hex
  readonly hashlock: Hex
  readonly secret: Hex
  readonly txHash: Hex
  readonly blockNumber: bigint
}

/** The reveals (`PaymentClaimed`) among decoded events, the hashlock computed from the secret as the escrow does. */
export const revealsOf = (evs: ReadonlyArray<IndexedEventV2>): Array<SeenReveal> =>
  evs.flatMap(({ decoded: e, txHash, blockNumber }) =>
    e.eventName === "PaymentClaimed"
      ? [
          {
            fillDigest: lc(e.args.fillDigest),
            hashlock: lc(keccak256(e.args.secret)),
            secret: lc(e.args.secret),
            txHash: lc(txHash),
            blockNumber,
          },
        ]
      : [],
  )
