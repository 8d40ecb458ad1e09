/**
 * Settlement v2 hashlocks (DESIGN §6 "Hashlocks", notes/v2-types.md): the maker's secrets, their hashlocks and the
 * Merkle tree whose root a QuoteSet signs.
 *
 * - key      = HMAC-SHA256(quote signer private key bytes, utf8 "cvs/settlement-v2/secret-key"); the maker keeps it.
 * - secret_i = HMAC-SHA256(key, abi.encode(uint256 chainId, address makerEscrow, address owner, bytes32 orderId,
 *              uint64 sequence, uint32 i)): over every field of the set except the root (which is built from the
 *              secrets), so a restarted maker re-derives them from its key and the set alone.
 * - hashlock = keccak256(secret) (as v1), leaf_i = keccak256(keccak256(abi.encode(uint256 i, bytes32 hashlock_i))).
 *   The double hash keeps a 64-byte internal node from passing as a leaf (second preimage).
 * - internal nodes: keccak256 of the sorted pair (OpenZeppelin MerkleProof.verify); the layout is OpenZeppelin's
 *   StandardMerkleTree (leaves sorted by hash, array-packed complete tree), so its root is the same as
 *   `StandardMerkleTree.of([[i, hashlock_i]…], ["uint256", "bytes32"])`. One leaf: root = leaf_0, empty proof.
 *
 * Browser-safe: viem only.
 */
import {
  type Address,
  concatHex,
  encodeAbiParameters,
  type Hex,
  hexToBytes,
  keccak256,
  stringToBytes,
  toHex,
} from "viem"
import { hashlockOf } from "./EscrowTypedData.ts"
import { hmacSha256 } from "./HmacSha256.ts"

export { hashlockOf } from "./EscrowTypedData.ts"

export const SECRET_KEY_LABEL = "cvs/settlement-v2/secret-key"

/** hashlockCount is a uint32; a set's hashlocks are all derived and kept in memory, so far fewer are sane. */
export const MAX_HASHLOCK_COUNT = 65_536

const BYTES32 = /^0x[0-9a-fA-F]{64}$/

const bytes32 = (what: string, v: Hex): Hex => {
  if (!BYTES32.test(v)) throw new RangeError(`${what} is 32 bytes of hex`)
  return v.toLowerCase() as Hex
}

/** The maker's secret key, derived from its quote signer's private key (32 bytes). */
export const secretKeyOf = (signerPrivateKey: Hex): Hex =>
  toHex(hmacSha256(hexToBytes(bytes32("a private key", signerPrivateKey)), stringToBytes(SECRET_KEY_LABEL)))

/** The quote set's fields a secret is bound to (all but the root). `chainId`/`makerEscrow`: the order's chain. */
export interface SecretScope {
  readonly chainId: bigint
  readonly makerEscrow: Address
  readonly owner: Address
  readonly orderId: Hex
  readonly sequence: bigint
}

const checkIndex = (index: number, count: number) => {
  if (!Number.isSafeInteger(index) || index < 0 || index >= count)
    throw new RangeError(`index ${index} ∉ [0, ${count})`)
}

const checkCount = (count: number) => {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_HASHLOCK_COUNT) {
    throw new RangeError(`a hashlock count is in [1, ${MAX_HASHLOCK_COUNT}]`)
  }
}

/** secret_i of a quote set (32 bytes). */
export const secretOf = (key: Hex, scope: SecretScope, index: number): Hex => {
  checkIndex(index, 2 ** 32)
  const data = encodeAbiParameters(
    [
      { type: "uint256" },
      { type: "address" },
      { type: "address" },
      { type: "bytes32" },
      { type: "uint64" },
      { type: "uint32" },
    ],
    [scope.chainId, scope.makerEscrow, scope.owner, scope.orderId, scope.sequence, index],
  )
  return toHex(hmacSha256(hexToBytes(bytes32("a secret key", key)), hexToBytes(data)))
}

/** leaf_i = keccak256(bytes.concat(keccak256(abi.encode(uint256 i, bytes32 hashlock)))). */
export const hashlockLeaf = (index: number | bigint, hashlock: Hex): Hex =>
  keccak256(keccak256(encodeAbiParameters([{ type: "uint256" }, { type: "bytes32" }], [BigInt(index), hashlock])))

/** OpenZeppelin `Hashes.commutativeKeccak256`: keccak256 of the pair, smaller first. */
export const hashPair = (a: Hex, b: Hex): Hex => {
  const x = bytes32("a node", a)
  const y = bytes32("a node", b)
  return keccak256(x < y ? concatHex([x, y]) : concatHex([y, x]))
}

/** OpenZeppelin `MerkleProof.processProof`: the root a leaf and its proof lead to. */
export const processProof = (leaf: Hex, proof: ReadonlyArray<Hex>): Hex => proof.reduce(hashPair, leaf)

/** What the escrow's `lock` checks: `index < count` and the proof of (index, hashlock) leads to `root`. */
export const verifyHashlockProof = (p: {
  readonly root: Hex
  readonly count: number
  readonly index: number
  readonly hashlock: Hex
  readonly proof: ReadonlyArray<Hex>
}): boolean =>
  Number.isSafeInteger(p.index) &&
  p.index >= 0 &&
  p.index < p.count &&
  processProof(hashlockLeaf(p.index, p.hashlock), p.proof) === p.root.toLowerCase()

export interface HashlockTree {
  readonly root: Hex
  readonly count: number
  /** The array-packed tree (StandardMerkleTree's `tree`): root at 0, node p's children at 2p+1 and 2p+2. */
  readonly nodes: ReadonlyArray<Hex>
  /** The proof of leaf `index` (the hashlock at position `index` of the input), leaf to root. */
  readonly proof: (index: number) => ReadonlyArray<Hex>
}

/** The tree over hashlocks[0..n) (the hashlock at position i is leaf i). */
export const hashlockTree = (hashlocks: ReadonlyArray<Hex>): HashlockTree => {
  const count = hashlocks.length
  checkCount(count)
  // StandardMerkleTree: leaves sorted by hash, placed from the end of the array; node p has children 2p+1, 2p+2.
  const sorted = hashlocks.map((h, i) => ({ leaf: hashlockLeaf(i, bytes32("a hashlock", h)), i }))
  sorted.sort((a, b) => (a.leaf < b.leaf ? -1 : a.leaf > b.leaf ? 1 : 0))
  const tree = new Array<Hex>(2 * count - 1)
  const position = new Array<number>(count)
  sorted.forEach(({ leaf, i }, j) => {
    const p = tree.length - 1 - j
    tree[p] = leaf
    position[i] = p
  })
  for (let p = tree.length - 1 - count; p >= 0; p--) tree[p] = hashPair(tree[2 * p + 1]!, tree[2 * p + 2]!)
  return {
    root: tree[0]!,
    count,
    nodes: tree,
    proof: (index) => {
      checkIndex(index, count)
      const proof: Array<Hex> = []
      for (let p = position[index]!; p > 0; p = Math.floor((p - 1) / 2)) proof.push(tree[p % 2 === 1 ? p + 1 : p - 1]!)
      return proof
    },
  }
}

export interface HashlockSet extends HashlockTree {
  readonly secrets: ReadonlyArray<Hex>
  readonly hashlocks: ReadonlyArray<Hex>
  /** The index of one of this set's hashlocks, or undefined when it is not one of them. */
  readonly indexOf: (hashlock: Hex) => number | undefined
}

/** The maker's `count` secrets of a quote set, their hashlocks and tree (the set signs `root` and `count`). */
export const deriveHashlockSet = (key: Hex, scope: SecretScope, count: number): HashlockSet => {
  checkCount(count)
  const secrets = Array.from({ length: count }, (_, i) => secretOf(key, scope, i))
  const hashlocks = secrets.map(hashlockOf)
  const index = new Map(hashlocks.map((h, i) => [h, i]))
  return {
    ...hashlockTree(hashlocks),
    secrets,
    hashlocks,
    indexOf: (h) => index.get(h.toLowerCase() as Hex),
  }
}
