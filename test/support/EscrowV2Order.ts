import type { Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { type QuoteSetV2, quoteSetV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, type HashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { fundV2Order, startV2Chain, V2_TIMING, type V2Chain } from "./EscrowV2Chains.ts"

/**
 * The settlement-v2 client tests' fixture: a maker chain and a taker chain (test/support/EscrowV2Chains.ts) and one
 * maker order funded on the maker chain with its signed quote set (sequence 1, 8 hashlocks, one quote on the taker
 * chain at 1:1), the payer minted on the taker chain.
 */

export const MAKER_CHAIN = 999
export const TAKER_CHAIN = 42161
export const v2Account = (i: number) => privateKeyToAccount(ANVIL_PRIVATE_KEYS[i] as Hex)

const quoteSignerKey = ANVIL_PRIVATE_KEYS[5] as Hex

/** The anvil accounts the fixture gives its roles; the maker's secrets derive from `quoteSignerKey`. */
export const V2_PARTIES = {
  operator: v2Account(0),
  owner: v2Account(1),
  payer: v2Account(2),
  recipient: v2Account(4),
  quoteSignerKey,
  quoteSigner: privateKeyToAccount(quoteSignerKey),
  /** The maker's payee on the taker chain. */
  payee: v2Account(6).address,
} as const

/** Both chains, `finalized` 2 blocks behind `latest`. */
export const startV2Chains = () =>
  Promise.all([startV2Chain(MAKER_CHAIN, { slotsInAnEpoch: 1 }), startV2Chain(TAKER_CHAIN, { slotsInAnEpoch: 1 })])

export interface V2Order {
  readonly quoteSet: QuoteSetV2
  readonly quoteSig: Hex
  readonly hashlocks: HashlockSet
}

/** Funds order `orderId` (10 USDC) on M, signs its quote set for T, and mints the payer 10 USDC on T. */
export const openV2Order = async (M: V2Chain, T: V2Chain, orderId: Hex): Promise<V2Order> => {
  const { operator, owner, payer, quoteSigner, payee } = V2_PARTIES
  await fundV2Order(M, {
    owner,
    relayer: operator,
    orderId,
    operator: operator.address,
    quoteSigner: quoteSigner.address,
    amount: 10_000_000n,
  })
  const now = await M.latestTime()
  const sequence = 1n
  const hashlocks = deriveHashlockSet(
    secretKeyOf(quoteSignerKey),
    { chainId: BigInt(MAKER_CHAIN), makerEscrow: M.escrow, owner: owner.address, orderId, sequence },
    8,
  )
  const quoteSet: QuoteSetV2 = {
    owner: owner.address,
    orderId,
    sequence,
    generation: 1n,
    quoteSize: 10_000_000n,
    issuedAt: now,
    validUntil: now + V2_TIMING.maxQuoteLife,
    hashlockRoot: hashlocks.root,
    hashlockCount: hashlocks.count,
    quotes: [
      {
        chainId: BigInt(TAKER_CHAIN),
        token: T.token,
        escrow: T.escrow,
        recipient: payee,
        supply: 1n,
        receive: 1n,
        minFill: 1n,
      },
    ],
  }
  const quoteSig = await quoteSigner.signTypedData(quoteSetV2TypedData(MAKER_CHAIN, M.escrow, quoteSet))
  await T.send(operator, "mint", [payer.address, 10_000_000n], T.token)
  return { quoteSet, quoteSig, hashlocks }
}
