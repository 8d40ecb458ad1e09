import { encodeFunctionData, type Hex, hexToNumber, slice } from "viem"
import { settlementEscrowAbi, settlementEscrowV2Abi } from "./artifacts/index.ts"
import type { EscrowVersion } from "./OrderEscrow.ts"

/** The FundOrder message as stored in an order's `fund_order` sign item (wire form: integers as strings). */
export interface FundOrderWire {
  readonly orderId: Hex
  readonly owner: Hex
  readonly operator: Hex
  readonly quoteSigner: Hex
  readonly amount: string | number
  readonly deadline: string | number
}

/** The permit's v as the contract takes it (27/28). */
const normalizeV = (v: number) => (v < 27 ? v + 27 : v)

/**
 * Calldata of the escrow's `fund(FundOrder, ownerSig, permit)` (the same arguments on v1 and v2; `version` picks the
 * ABI, the caller sends it to that version's address): the owner's FundOrder signature and the EIP-2612 permit
 * (value = amount, same deadline) split into v, r, s. Both signatures were verified against the owner before this
 * is built.
 */
export const fundCall = (m: FundOrderWire, fundSignature: Hex, permitSignature: Hex, version: EscrowVersion = 1): Hex =>
  encodeFunctionData({
    abi: version === 2 ? settlementEscrowV2Abi : settlementEscrowAbi,
    functionName: "fund",
    args: [
      {
        orderId: m.orderId,
        owner: m.owner,
        operator: m.operator,
        quoteSigner: m.quoteSigner,
        amount: BigInt(m.amount),
        deadline: BigInt(m.deadline),
      },
      fundSignature,
      {
        value: BigInt(m.amount),
        deadline: BigInt(m.deadline),
        v: normalizeV(hexToNumber(slice(permitSignature, 64, 65))),
        r: slice(permitSignature, 0, 32),
        s: slice(permitSignature, 32, 64),
      },
    ],
  })
