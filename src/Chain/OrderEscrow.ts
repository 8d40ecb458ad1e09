/**
 * Which escrow an order lives on (orders.escrow_version, migration 0019), and what that means for the calls and the
 * typed data that touch it: v1 = the venue's SettlementEscrow (`escrow`), v2 = its SettlementEscrowV2
 * (`escrow_v2.address`, domain version "2"). FundOrder and CloseOffer have the same types and message shapes on both
 * (only the domain differs); `fund` and `closeWithSig` have the same arguments; v2's `operatorClose` also names the
 * owner, because v2 keys orders by (owner, order id).
 */
import { type Address, encodeFunctionData, getAddress, type Hex, hashTypedData } from "viem"
import type { DeploymentConfig, VenueConfig } from "../Config.ts"
import { type CloseOffer, closeOfferTypedData, type FundOrder, fundOrderTypedData } from "../Domain/EscrowTypedData.ts"
import { closeOfferV2TypedData, fundOrderV2TypedData } from "../Domain/EscrowTypedDataV2.ts"
import { settlementEscrowAbi, settlementEscrowV2Abi } from "./artifacts/index.ts"

export type EscrowVersion = 1 | 2

export interface OrderEscrow {
  readonly version: EscrowVersion
  readonly venue: string
  readonly chainId: number
  /** Checksummed. */
  readonly address: Address
}

/**
 * The escrow of version `version` on `venue`; undefined for v2 on a venue without `escrow_v2` (a config that dropped
 * the v2 escrow while its orders still exist: callers answer as for an unknown chain).
 */
export const orderEscrow = (venue: VenueConfig, version: EscrowVersion): OrderEscrow | undefined => {
  if (version === 2 && venue.escrow_v2 === undefined) return undefined
  const address = getAddress(version === 2 ? venue.escrow_v2!.address : venue.escrow)
  return { version, venue: venue.id, chainId: venue.chain_id, address }
}

/** The escrows of `venue`, v2 first when it has one (v1 only drains once orders go to v2). */
export const venueEscrows = (venue: VenueConfig): ReadonlyArray<OrderEscrow> =>
  [orderEscrow(venue, 2), orderEscrow(venue, 1)].filter((e): e is OrderEscrow => e !== undefined)

/** The version a new order on `venue` is funded on: config `settlement.escrow_version`, 2 only with `escrow_v2`. */
export const newOrderEscrowVersion = (deployment: DeploymentConfig, venue: VenueConfig): EscrowVersion =>
  deployment.settlement.escrow_version === 2 && venue.escrow_v2 !== undefined ? 2 : 1

/** The owner's FundOrder in the escrow's domain. */
export const fundOrderTypedDataOn = (escrow: OrderEscrow, message: FundOrder) =>
  escrow.version === 2
    ? fundOrderV2TypedData(escrow.chainId, escrow.address, message)
    : fundOrderTypedData(escrow.chainId, escrow.address, message)

/** The owner's CloseOffer in the escrow's domain, and its digest (lowercase: the closes table's key). */
export const closeOfferOn = (escrow: OrderEscrow, message: CloseOffer) => {
  const typedData =
    escrow.version === 2
      ? closeOfferV2TypedData(escrow.chainId, escrow.address, message)
      : closeOfferTypedData(escrow.chainId, escrow.address, message)
  return { message, typedData, digest: hashTypedData(typedData).toLowerCase() as Hex }
}

/** Calldata of `closeWithSig(offer, signature)` (same arguments on both versions). */
export const closeWithSigCall = (escrow: OrderEscrow, offer: CloseOffer, signature: Hex): Hex =>
  escrow.version === 2
    ? encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "closeWithSig", args: [offer, signature] })
    : encodeFunctionData({ abi: settlementEscrowAbi, functionName: "closeWithSig", args: [offer, signature] })

/** Calldata of the operator's close: v1 `operatorClose(orderId, dex, toMargin)`, v2 `operatorClose(owner, …)`. */
export const operatorCloseCall = (
  escrow: OrderEscrow,
  owner: Address,
  orderId: Hex,
  dex: number,
  toMargin: boolean,
): Hex =>
  escrow.version === 2
    ? encodeFunctionData({
        abi: settlementEscrowV2Abi,
        functionName: "operatorClose",
        args: [getAddress(owner), orderId, dex, toMargin],
      })
    : encodeFunctionData({ abi: settlementEscrowAbi, functionName: "operatorClose", args: [orderId, dex, toMargin] })
