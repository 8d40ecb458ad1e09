/**
 * Closes of escrow orders (spec: Close by signature; DESIGN §6 closeWithSig / operatorClose): the limits, the
 * destination rules, and the CloseOffer the owner signs. Pure: no clock, no randomness, no I/O.
 */
import { Either } from "effect"
import { type Address, getAddress, type Hex, hashTypedData } from "viem"
import { type CloseOffer, closeOfferTypedData, PERPS_DEX, SPOT_DEX } from "./EscrowTypedData.ts"

/** The owner's available (zero-id) balance in the escrow; every other order id is a funded order. */
export const ZERO_ORDER_ID = `0x${"00".repeat(32)}` as Hex
export const ZERO_ADDRESS = `0x${"00".repeat(20)}` as Address

/** A CloseOffer is valid one hour (spec Limits: close signature validity). */
export const CLOSE_VALIDITY_SECONDS = 3600
/** Clock difference tolerated between the process that prepared and the one that accepts (multi-runner). */
export const DEADLINE_SKEW_SECONDS = 60
/** A funded order holds at least this much to be closed by signature (the zero id is exempt). */
export const CLOSE_MINIMUM = 1_000_000n
/** At most this many pending closes per owner and chain. */
export const PENDING_CLOSES_LIMIT = 10
/** `closing` turns false this long after the signed deadline, whatever the transaction does. */
export const CLOSING_GRACE_SECONDS = 60

export type CloseKind = "signed" | "managed"
export type CloseState = "pending" | "final" | "reverted" | "expired"

export const isZeroOrder = (orderId: string) => orderId.toLowerCase() === ZERO_ORDER_ID

/**
 * The destination rules: `dex` 0 (perps) or 4294967295 (spot) on the Hyperliquid-like venue, 0 elsewhere; a
 * payout to the wallet (`to_margin` false) requires dex 0 (the escrow reverts otherwise).
 */
export const checkDestination = (
  kind: "hyperliquid" | "aster",
  dex: number,
  toMargin: boolean,
): Either.Either<void, string> => {
  if (kind === "hyperliquid") {
    if (dex !== PERPS_DEX && dex !== SPOT_DEX) {
      return Either.left(`dex must be ${PERPS_DEX} (perps) or ${SPOT_DEX} (spot) on this venue`)
    }
  } else if (dex !== PERPS_DEX) {
    return Either.left(`dex must be ${PERPS_DEX} on this venue`)
  }
  if (!toMargin && dex !== PERPS_DEX) return Either.left("to_margin false (to the wallet) requires dex 0")
  return Either.right(undefined)
}

/** The CloseOffer of `owner` in the escrow's domain (addresses checksummed as wallets show them). */
export const closeOffer = (
  chainId: number,
  escrow: string,
  terms: {
    readonly orderId: string
    readonly owner: string
    readonly dex: number
    readonly toMargin: boolean
    readonly nonce: bigint
    readonly deadline: bigint
  },
) => {
  const message: CloseOffer = {
    orderId: terms.orderId.toLowerCase() as Hex,
    owner: getAddress(terms.owner),
    dex: terms.dex,
    toMargin: terms.toMargin,
    nonce: terms.nonce,
    deadline: terms.deadline,
  }
  const typedData = closeOfferTypedData(chainId, getAddress(escrow), message)
  return { message, typedData, digest: hashTypedData(typedData).toLowerCase() as Hex }
}
