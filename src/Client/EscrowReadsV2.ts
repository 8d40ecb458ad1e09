/**
 * The parties' own reads of a v2 escrow: a lock (maker chain) or a payment (taker chain) by Fill digest, at a
 * FINALIZED block of a chain endpoint the client chose (never the service's API: it is not a trust root).
 *
 * All reads of one check use one snapshot: the `finalized` block is read once and every `eth_call` names its
 * number, so the lock, the payment and the time they are judged against are of the same block. Each view records
 * where it was read (chain id as the endpoint reports it, escrow, digest, block), so a decision can refuse a read
 * of another chain, escrow or fill.
 *
 * Browser-safe: viem only.
 */
import type { Address, Hex, PublicClient } from "viem"

/** What a client needs of a viem PublicClient (a real one, or one over a custom transport in tests). */
export type ChainReader = Pick<PublicClient, "getChainId" | "getBlock" | "readContract">

// The getters of ISettlementEscrowV2 this side reads (FillLock and Payment; enums are uint8 in the ABI).
// test/unit/typed-data-v2.test.ts checks that the contract's ABI has exactly these entries.
export const escrowV2ReadAbi = [
  {
    type: "function",
    name: "getLock",
    stateMutability: "view",
    inputs: [{ name: "fillDigest", type: "bytes32" }],
    outputs: [
      {
        name: "",
        type: "tuple",
        components: [
          { name: "owner", type: "address" },
          { name: "orderId", type: "bytes32" },
          { name: "sequence", type: "uint64" },
          { name: "expiry", type: "uint64" },
          { name: "state", type: "uint8" },
          { name: "dex", type: "uint32" },
          { name: "toMargin", type: "bool" },
          { name: "recipient", type: "address" },
          { name: "payKey", type: "address" },
          { name: "hashlock", type: "bytes32" },
          { name: "amountOut", type: "uint256" },
        ],
      },
    ],
  },
  {
    type: "function",
    name: "getPayment",
    stateMutability: "view",
    inputs: [{ name: "fillDigest", type: "bytes32" }],
    outputs: [
      {
        name: "",
        type: "tuple",
        components: [
          { name: "payer", type: "address" },
          { name: "expiry", type: "uint64" },
          { name: "state", type: "uint8" },
          { name: "payee", type: "address" },
          { name: "hashlock", type: "bytes32" },
          { name: "amountIn", type: "uint256" },
        ],
      },
    ],
  },
] as const

export const LOCK_STATES = ["None", "Locked", "Claimed", "Refunded", "Cancelled"] as const
export const PAYMENT_STATES = ["None", "Held", "Claimed", "Refunded"] as const
export type LockState = (typeof LOCK_STATES)[number]
export type PaymentState = (typeof PAYMENT_STATES)[number]

/** A finalized block: the snapshot every read of one check uses. */
export interface FinalSnapshot {
  /** As the endpoint reports it (eth_chainId), not as configured. */
  readonly chainId: number
  readonly blockNumber: bigint
  /** Unix seconds of the finalized block. */
  readonly timestamp: bigint
}

interface Provenance {
  readonly chainId: number
  readonly escrow: Address
  readonly digest: Hex
  readonly blockNumber: bigint
}

export interface LockView extends Provenance {
  readonly state: LockState
  /** The order is orderKey(owner, orderId). */
  readonly owner: Address
  readonly orderId: Hex
  readonly sequence: bigint
  /** makerExpiry. */
  readonly expiry: bigint
  readonly dex: number
  readonly toMargin: boolean
  readonly recipient: Address
  readonly payKey: Address
  readonly hashlock: Hex
  readonly amountOut: bigint
}

export interface PaymentView extends Provenance {
  readonly state: PaymentState
  readonly payer: Address
  /** takerExpiry. */
  readonly expiry: bigint
  readonly payee: Address
  readonly hashlock: Hex
  readonly amountIn: bigint
}

/** The endpoint's finalized block (throws when it has none, e.g. a node without the tag). */
export const finalSnapshot = async (client: ChainReader): Promise<FinalSnapshot> => {
  const [chainId, block] = await Promise.all([client.getChainId(), client.getBlock({ blockTag: "finalized" })])
  if (block.number === null) throw new Error("the endpoint returned a finalized block without a number")
  return { chainId, blockNumber: block.number, timestamp: block.timestamp }
}

/** The same at the endpoint's latest block (reads whose result needs no finality, e.g. a secret checked by hash). */
export const latestSnapshot = async (client: ChainReader): Promise<FinalSnapshot> => {
  const [chainId, block] = await Promise.all([client.getChainId(), client.getBlock({ blockTag: "latest" })])
  if (block.number === null) throw new Error("the endpoint returned a latest block without a number")
  return { chainId, blockNumber: block.number, timestamp: block.timestamp }
}

const stateOf = <S extends string>(states: ReadonlyArray<S>, n: number, what: string): S => {
  const s = states[n]
  if (s === undefined) throw new Error(`unknown ${what} state ${n}`)
  return s
}

export const readLock = async (
  client: ChainReader,
  at: FinalSnapshot,
  escrow: Address,
  digest: Hex,
): Promise<LockView> => {
  const l = await client.readContract({
    address: escrow,
    abi: escrowV2ReadAbi,
    functionName: "getLock",
    args: [digest],
    blockNumber: at.blockNumber,
  })
  return {
    chainId: at.chainId,
    escrow,
    digest,
    blockNumber: at.blockNumber,
    ...l,
    state: stateOf(LOCK_STATES, l.state, "lock"),
  }
}

export const readPayment = async (
  client: ChainReader,
  at: FinalSnapshot,
  escrow: Address,
  digest: Hex,
): Promise<PaymentView> => {
  const p = await client.readContract({
    address: escrow,
    abi: escrowV2ReadAbi,
    functionName: "getPayment",
    args: [digest],
    blockNumber: at.blockNumber,
  })
  return {
    chainId: at.chainId,
    escrow,
    digest,
    blockNumber: at.blockNumber,
    ...p,
    state: stateOf(PAYMENT_STATES, p.state, "payment"),
  }
}

const noncesAbi = [
  {
    type: "function",
    name: "nonces",
    stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }],
    outputs: [{ name: "", type: "uint256" }],
  },
] as const

/**
 * `owner`'s EIP-2612 nonce on `token` at the endpoint's latest block: the nonce a permit signed now must use. Refuses
 * an endpoint of another chain than `chainId` (the permit's domain names it).
 */
export const readPermitNonce = async (
  client: ChainReader,
  chainId: number,
  token: Address,
  owner: Address,
): Promise<bigint> => {
  const at = await latestSnapshot(client)
  if (at.chainId !== chainId) throw new Error(`the taker-chain endpoint is chain ${at.chainId}, not ${chainId}`)
  return client.readContract({
    address: token,
    abi: noncesAbi,
    functionName: "nonces",
    args: [owner],
    blockNumber: at.blockNumber,
  })
}
