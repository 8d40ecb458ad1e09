import { type Address, getAddress, type Hex, keccak256, toHex } from "viem"
import type { ProposedSignItem, TakerConfig, TakerIntent } from "../../src/Client/TakerChecks.ts"
import { type FillV2, fillDigest, fillV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"

/**
 * What an honest settlement-v2 API would propose as a take's `to_sign` (the permit, then one `margin_move` per Fill,
 * each with its claimed digest), in wire form, as the service stores and serves it (lowercase addresses).
 */
export const proposeTake = (
  intent: TakerIntent,
  config: TakerConfig,
  fills: ReadonlyArray<FillV2>,
  permit: { readonly nonce: bigint; readonly deadline: bigint; readonly tokenName?: string },
): Array<ProposedSignItem> => {
  const taker = config.chains[intent.takerChainId]!
  const value = fills.reduce((s, f) => s + f.amountIn, 0n)
  return [
    {
      kind: "permit",
      signer: intent.payer.toLowerCase(),
      typed_data: toWireTypedData(
        permitTypedData(
          {
            name: permit.tokenName ?? taker.tokenName ?? "USD Coin",
            version: taker.tokenVersion ?? "1",
            chainId: intent.takerChainId,
            verifyingContract: taker.token,
          },
          { owner: intent.payer, spender: taker.escrow, value, nonce: permit.nonce, deadline: permit.deadline },
        ),
      ),
    },
    ...fills.map((f, i) => marginMove(f, `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)),
  ]
}

/** One `margin_move` item for `fill`, its digest claimed honestly. */
export const marginMove = (fill: FillV2, fillId: string): ProposedSignItem => ({
  kind: "margin_move",
  signer: fill.payer.toLowerCase(),
  fill_id: fillId,
  typed_data: toWireTypedData(fillV2TypedData(fill)),
  digest: fillDigest(fill),
})

/**
 * The Fills an honest route would make: `parts` fills over distinct orders of `owner`, amounts adding up to the
 * intent's amount_in, paying at least min_out; payBy is the intent's bound, takerExpiry 600 s later, makerExpiry the
 * configured claim window after that.
 */
export const honestFills = (
  intent: TakerIntent,
  config: TakerConfig,
  p: {
    readonly parts: number
    readonly owner: Address
    readonly payee: Address
    readonly hashlocks?: ReadonlyArray<{ readonly hashlock: Hex; readonly index: number }>
    readonly orderIds?: ReadonlyArray<Hex>
    readonly sequence?: bigint
  },
): Array<FillV2> => {
  const payBy = intent.maxPayBy
  const takerExpiry = payBy + 600n
  const makerExpiry = takerExpiry + config.minClaimWindowSeconds
  const share = intent.amountIn / BigInt(p.parts)
  return Array.from({ length: p.parts }, (_, i) => {
    const amountIn = i === p.parts - 1 ? intent.amountIn - share * BigInt(p.parts - 1) : share
    return {
      fillId: keccak256(toHex(`fill-${i}`)),
      owner: getAddress(p.owner),
      orderId: p.orderIds?.[i] ?? keccak256(toHex(`order-${i}`)),
      sequence: p.sequence ?? 1n,
      makerChainId: BigInt(intent.makerChainId),
      makerEscrow: getAddress(config.chains[intent.makerChainId]!.escrow),
      takerChainId: BigInt(intent.takerChainId),
      takerEscrow: getAddress(config.chains[intent.takerChainId]!.escrow),
      payer: getAddress(intent.payer),
      payee: getAddress(p.payee),
      amountIn,
      recipient: getAddress(intent.recipient),
      // At least the intent's price: amountOut / amountIn ≥ min_out / amount_in, rounded up.
      amountOut: (amountIn * intent.minOut + intent.amountIn - 1n) / intent.amountIn,
      dex: intent.dex,
      toMargin: intent.toMargin,
      hashlock: p.hashlocks?.[i]?.hashlock ?? keccak256(toHex(`hashlock-${i}`)),
      hashlockIndex: p.hashlocks?.[i]?.index ?? i,
      payKey: getAddress(intent.payKey),
      payBy,
      makerExpiry,
      takerExpiry,
    }
  })
}

/** The escrow's lock of `f` as its `getLock` answers it (without the state, which callers give). */
export const lockFieldsOf = (f: FillV2) => ({
  owner: f.owner,
  orderId: f.orderId,
  sequence: f.sequence,
  expiry: f.makerExpiry,
  dex: f.dex,
  toMargin: f.toMargin,
  recipient: f.recipient,
  payKey: f.payKey,
  hashlock: f.hashlock,
  amountOut: f.amountOut,
})
