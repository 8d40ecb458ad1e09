/**
 * A v2 Fill message from its wire form (decimal strings, addresses in any case), strictly: exactly the 21 fields of
 * the pinned type, each in its Solidity range. Used where a Fill arrives from outside (the taker client reading the
 * API's `to_sign`, trade proofs): a field too many or out of range is an error, never dropped or truncated.
 */
import type { FillV2 } from "./EscrowTypedDataV2.ts"
import { fillV2Types } from "./EscrowTypedDataV2.ts"
import { wireAddress, wireBool, wireBytes32, wireUint } from "./WireValues.ts"

const FIELDS: ReadonlyArray<string> = fillV2Types.Fill.map((f) => f.name)

/** Throws TypeError naming the first bad field. */
export const parseWireFillV2 = (message: unknown): FillV2 => {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new TypeError("a Fill is an object")
  }
  const m = message as Record<string, unknown>
  const extra = Object.keys(m).filter((k) => !FIELDS.includes(k))
  if (extra.length > 0) throw new TypeError(`unknown Fill fields: ${extra.join(", ")}`)
  const field = <T>(name: string, parse: (v: unknown) => T): T => {
    if (!(name in m)) throw new TypeError(`Fill.${name} is missing`)
    try {
      return parse(m[name])
    } catch (e) {
      throw new TypeError(`Fill.${name}: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  const u = (bits: number) => (v: unknown) => wireUint(v, bits)
  return {
    fillId: field("fillId", wireBytes32),
    owner: field("owner", wireAddress),
    orderId: field("orderId", wireBytes32),
    sequence: field("sequence", u(64)),
    makerChainId: field("makerChainId", u(256)),
    makerEscrow: field("makerEscrow", wireAddress),
    takerChainId: field("takerChainId", u(256)),
    takerEscrow: field("takerEscrow", wireAddress),
    payer: field("payer", wireAddress),
    payee: field("payee", wireAddress),
    amountIn: field("amountIn", u(256)),
    recipient: field("recipient", wireAddress),
    amountOut: field("amountOut", u(256)),
    dex: Number(field("dex", u(32))),
    toMargin: field("toMargin", wireBool),
    hashlock: field("hashlock", wireBytes32),
    hashlockIndex: Number(field("hashlockIndex", u(32))),
    payKey: field("payKey", wireAddress),
    payBy: field("payBy", u(64)),
    makerExpiry: field("makerExpiry", u(64)),
    takerExpiry: field("takerExpiry", u(64)),
  }
}
