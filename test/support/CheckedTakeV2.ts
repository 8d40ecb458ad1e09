import { type Address, type Hex, keccak256, parseSignature, toHex } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { type CheckedTake, checkTakeProposal, type TakerIntent } from "../../src/Client/TakerChecks.ts"
import { quoteSetV2AbiArg } from "../../src/Domain/EscrowTypedDataV2.ts"
import { V2_TIMING, type V2Chain } from "./EscrowV2Chains.ts"
import { MAKER_CHAIN, TAKER_CHAIN, V2_PARTIES, type V2Order } from "./EscrowV2Order.ts"
import { honestFills, proposeTake } from "./TakeProposalV2.ts"

/**
 * A take over an order of test/support/EscrowV2Order.ts as the taker client sees it: proposed by an honest API,
 * passed through the client's checks, signed by the payer, locked by the operator.
 */

/**
 * The checked take of `payer` over the order's hashlock `slots` (one Fill each, fill id `${fillIds} ${slot}`):
 * `amountIn` to the recipient at 1:1, pay by 250 s after the taker chain's latest block, permit 60 s after that.
 */
export const checkedV2Take = async (
  M: V2Chain,
  T: V2Chain,
  order: Pick<V2Order, "quoteSet" | "hashlocks">,
  p: {
    readonly payer: PrivateKeyAccount
    readonly payKey: Address
    readonly amountIn: bigint
    readonly slots: ReadonlyArray<number>
    readonly fillIds: string
  },
): Promise<CheckedTake> => {
  const { owner, recipient, payee } = V2_PARTIES
  const takerConfig = {
    chains: {
      [MAKER_CHAIN]: { escrow: M.escrow, token: M.token },
      [TAKER_CHAIN]: { escrow: T.escrow, token: T.token, tokenName: "USD Coin", tokenVersion: "1" },
    },
    minClaimWindowSeconds: V2_TIMING.claimWindow,
  }
  const now = await T.latestTime()
  const intent: TakerIntent = {
    takerChainId: TAKER_CHAIN,
    makerChainId: MAKER_CHAIN,
    payer: p.payer.address,
    recipient: recipient.address,
    amountIn: p.amountIn,
    minOut: p.amountIn,
    maxParts: 8,
    payKey: p.payKey,
    maxPayBy: now + 250n,
    dex: 0,
    toMargin: false,
  }
  const fills = honestFills(intent, takerConfig, {
    parts: p.slots.length,
    owner: owner.address,
    payee,
    orderIds: p.slots.map(() => order.quoteSet.orderId),
    sequence: order.quoteSet.sequence,
    hashlocks: p.slots.map((index) => ({ index, hashlock: order.hashlocks.hashlocks[index]! })),
  }).map((f, i) => ({ ...f, fillId: keccak256(toHex(`${p.fillIds} ${p.slots[i]}`)) }))
  const nonce = await T.pub.readContract({
    address: T.token,
    abi: mockUSDCAbi,
    functionName: "nonces",
    args: [p.payer.address],
  })
  const toSign = proposeTake(intent, takerConfig, fills, { nonce, deadline: intent.maxPayBy })
  const checked = checkTakeProposal(intent, takerConfig, toSign, now)
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems))
  return checked.take
}

/** The payer's signature of each Fill, and its permit as payTake's argument. */
export const signV2Take = async (payer: PrivateKeyAccount, take: CheckedTake) => {
  const fillSigs = await Promise.all(take.fills.map((f) => payer.signTypedData(f.typedData)))
  const permit = parseSignature(await payer.signTypedData(take.permit))
  return {
    fillSigs,
    permit: {
      value: take.permit.message.value,
      deadline: take.permit.message.deadline,
      v: Number(permit.v),
      r: permit.r,
      s: permit.s,
    },
  }
}

/** The operator's lock of each Fill of `take` on the maker chain, under the order's set, one after the other. */
export const lockV2Take = async (M: V2Chain, order: V2Order, take: CheckedTake, fillSigs: ReadonlyArray<Hex>) => {
  for (const [i, f] of take.fills.entries()) {
    const proof = order.hashlocks.proof(f.fill.hashlockIndex)
    await M.send(V2_PARTIES.operator, "lock", [
      f.fill,
      fillSigs[i],
      quoteSetV2AbiArg(order.quoteSet),
      0n,
      order.quoteSig,
      proof,
    ])
  }
}
