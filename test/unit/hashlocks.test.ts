/**
 * Settlement v2 hashlocks (src/Domain/Hashlocks.ts): HMAC-SHA256 against RFC 4231 and node:crypto, the maker's
 * secret derivation (independently recomputed with node:crypto, stable across restarts), and the Merkle tree's
 * properties. That the contract's MerkleProof accepts these proofs is checked in typed-data-v2.test.ts.
 */
import { createHmac } from "node:crypto"
import fc from "fast-check"
import { type Address, bytesToHex, encodeAbiParameters, type Hex, hexToBytes, keccak256, stringToBytes } from "viem"
import { describe, expect, it } from "vitest"
import {
  deriveHashlockSet,
  hashlockLeaf,
  hashlockOf,
  hashlockTree,
  hashPair,
  processProof,
  type SecretScope,
  secretKeyOf,
  secretOf,
  verifyHashlockProof,
} from "../../src/Domain/Hashlocks.ts"
import { hmacSha256 } from "../../src/Domain/HmacSha256.ts"

const hex = (b: Uint8Array) => bytesToHex(b)
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(hex)
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => hex(b) as Address)
const scopeArb: fc.Arbitrary<SecretScope> = fc.record({
  chainId: fc.bigInt({ min: 1n, max: 2n ** 256n - 1n }),
  makerEscrow: address,
  owner: address,
  orderId: bytes32,
  sequence: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
})
const hashlocksArb = fc.uniqueArray(bytes32, { minLength: 1, maxLength: 40 })

describe("HMAC-SHA256 (viem sha256, no node:crypto)", () => {
  it("RFC 4231 test cases 1, 2, 6 and 7", () => {
    const cases: ReadonlyArray<readonly [Uint8Array, string, string]> = [
      [new Uint8Array(20).fill(0x0b), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"],
      [
        stringToBytes("Jefe"),
        "what do ya want for nothing?",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
      ],
      [
        new Uint8Array(131).fill(0xaa),
        "Test Using Larger Than Block-Size Key - Hash Key First",
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
      ],
      [
        new Uint8Array(131).fill(0xaa),
        "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
      ],
    ]
    for (const [key, data, mac] of cases) expect(hex(hmacSha256(key, stringToBytes(data)))).toBe(`0x${mac}`)
  })

  it("equals node:crypto for any key and data", () =>
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 300 }), (key, data) => {
        const expected = createHmac("sha256", key).update(data).digest("hex")
        expect(hex(hmacSha256(key, data))).toBe(`0x${expected}`)
      }),
    ))
})

describe("secret derivation", () => {
  const nodeHmac = (key: Hex, data: Hex) =>
    `0x${createHmac("sha256", hexToBytes(key)).update(hexToBytes(data)).digest("hex")}` as Hex

  it("key and secrets are the pinned HMACs (recomputed with node:crypto)", () =>
    fc.assert(
      fc.property(bytes32, scopeArb, fc.nat({ max: 2 ** 32 - 1 }), (privateKey, scope, i) => {
        const key = secretKeyOf(privateKey)
        expect(key).toBe(
          `0x${createHmac("sha256", hexToBytes(privateKey)).update("cvs/settlement-v2/secret-key").digest("hex")}`,
        )
        const data = encodeAbiParameters(
          [
            { type: "uint256" },
            { type: "address" },
            { type: "address" },
            { type: "bytes32" },
            { type: "uint64" },
            { type: "uint32" },
          ],
          [scope.chainId, scope.makerEscrow, scope.owner, scope.orderId, scope.sequence, i],
        )
        expect(secretOf(key, scope, i)).toBe(nodeHmac(key, data))
      }),
      { numRuns: 50 },
    ))

  it("a restart re-derives the same secrets and tree from the key and the set's fields alone", () =>
    fc.assert(
      fc.property(bytes32, scopeArb, fc.integer({ min: 1, max: 12 }), (privateKey, scope, count) => {
        const first = deriveHashlockSet(secretKeyOf(privateKey), scope, count)
        // "Restart": nothing is shared with the first derivation but the inputs (rebuilt from their text).
        const copy: SecretScope = {
          chainId: BigInt(scope.chainId.toString()),
          makerEscrow: `${scope.makerEscrow}` as Address,
          owner: `${scope.owner}` as Address,
          orderId: `${scope.orderId}` as Hex,
          sequence: BigInt(scope.sequence.toString()),
        }
        const again = deriveHashlockSet(secretKeyOf(`${privateKey}` as Hex), copy, count)
        expect(again.secrets).toEqual(first.secrets)
        expect(again.root).toBe(first.root)
        for (let i = 0; i < count; i++) {
          expect(first.indexOf(first.hashlocks[i]!)).toBe(i)
          expect(first.hashlocks[i]).toBe(hashlockOf(first.secrets[i]!))
        }
      }),
      { numRuns: 30 },
    ))

  it("a pinned vector (a change here strands every maker's open fills)", () => {
    const key = secretKeyOf("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
    const scope: SecretScope = {
      chainId: 42161n,
      makerEscrow: "0x00000000000000000000000000000000000000e1",
      owner: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      orderId: `0x${"11".repeat(32)}`,
      sequence: 7n,
    }
    expect(secretOf(key, scope, 3)).toBe("0xcabbe46c4441be396672cfe54f65080e43cf0582785b3468358c900b227b2a80")
  })

  it("every field of the scope, the index and the key change the secret", () =>
    fc.assert(
      fc.property(bytes32, scopeArb, scopeArb, fc.nat({ max: 1000 }), (privateKey, a, b, i) => {
        const key = secretKeyOf(privateKey)
        const base = secretOf(key, a, i)
        for (const field of Object.keys(a) as Array<keyof SecretScope>) {
          if (String(a[field]).toLowerCase() === String(b[field]).toLowerCase()) continue
          expect(secretOf(key, { ...a, [field]: b[field] }, i)).not.toBe(base)
        }
        expect(secretOf(key, a, i + 1)).not.toBe(base)
        expect(secretOf(secretKeyOf(keccak256(privateKey)), a, i)).not.toBe(base)
      }),
    ))

  it("refuses malformed keys and indexes", () => {
    expect(() => secretKeyOf("0x1234")).toThrow(RangeError)
    const scope = fc.sample(scopeArb, 1)[0]!
    expect(() => secretOf(`0x${"00".repeat(32)}`, scope, -1)).toThrow(RangeError)
    expect(() => secretOf(`0x${"00".repeat(32)}`, scope, 2 ** 32)).toThrow(RangeError)
    expect(() => deriveHashlockSet(`0x${"00".repeat(32)}`, scope, 0)).toThrow(RangeError)
  })
})

describe("hashlock Merkle tree (OpenZeppelin sorted pairs, StandardMerkleTree layout)", () => {
  it("every proof verifies; one leaf is its own root with an empty proof", () =>
    fc.assert(
      fc.property(hashlocksArb, (hashlocks) => {
        const tree = hashlockTree(hashlocks)
        expect(tree.count).toBe(hashlocks.length)
        hashlocks.forEach((hashlock, index) => {
          const proof = tree.proof(index)
          expect(proof.length).toBeLessThanOrEqual(Math.ceil(Math.log2(hashlocks.length)) + 1)
          expect(verifyHashlockProof({ root: tree.root, count: tree.count, index, hashlock, proof })).toBe(true)
        })
        if (hashlocks.length === 1) {
          expect(tree.root).toBe(hashlockLeaf(0, hashlocks[0]!))
          expect(tree.proof(0)).toEqual([])
        }
      }),
    ))

  it("a proof for i does not verify at j, nor for another hashlock, nor past the count", () =>
    fc.assert(
      fc.property(hashlocksArb, fc.nat(), fc.nat(), bytes32, (hashlocks, a, b, other) => {
        const tree = hashlockTree(hashlocks)
        const i = a % hashlocks.length
        const j = b % (hashlocks.length + 2)
        const hashlock = hashlocks[i]!
        const proof = tree.proof(i)
        const at = (index: number, h: Hex) =>
          verifyHashlockProof({ root: tree.root, count: tree.count, index, hashlock: h, proof })
        if (j !== i) expect(at(j, hashlock)).toBe(false)
        if (other !== hashlock) expect(at(i, other)).toBe(false)
        // Past the count: even the right leaf is refused (hashlockCount bounds the set).
        expect(verifyHashlockProof({ root: tree.root, count: i, index: i, hashlock, proof })).toBe(false)
      }),
    ))

  it("an internal node does not pass as a leaf (the second preimage a single hash would allow)", () =>
    fc.assert(
      fc.property(fc.uniqueArray(bytes32, { minLength: 2, maxLength: 24 }), (hashlocks) => {
        const tree = hashlockTree(hashlocks)
        const nodes = tree.nodes
        const pathOf = (p: number) => {
          const proof: Array<Hex> = []
          for (let q = p; q > 0; q = Math.floor((q - 1) / 2)) proof.push(nodes[q % 2 === 1 ? q + 1 : q - 1]!)
          return proof
        }
        for (let p = 0; p < hashlocks.length - 1; p++) {
          const [l, r] = [nodes[2 * p + 1]!, nodes[2 * p + 2]!].sort()
          expect(nodes[p]).toBe(hashPair(l!, r!))
          // The 64 bytes under node p, read as abi.encode(uint256 i, bytes32 hashlock):
          const forged = { index: BigInt(l!), hashlock: r! }
          // With a single hash the forged leaf WOULD be the internal node (so this test can tell the difference)…
          expect(
            keccak256(encodeAbiParameters([{ type: "uint256" }, { type: "bytes32" }], [forged.index, forged.hashlock])),
          ).toBe(nodes[p])
          // …with the double hash it is not, and its path does not lead to the root.
          expect(hashlockLeaf(forged.index, forged.hashlock)).not.toBe(nodes[p])
          expect(processProof(hashlockLeaf(forged.index, forged.hashlock), pathOf(p))).not.toBe(tree.root)
          // The internal node itself, presented as a hashlock at any index, fails too.
          for (let i = 0; i < hashlocks.length; i++) {
            expect(
              verifyHashlockProof({
                root: tree.root,
                count: tree.count,
                index: i,
                hashlock: nodes[p]!,
                proof: pathOf(p),
              }),
            ).toBe(false)
          }
        }
      }),
      { numRuns: 50 },
    ))

  it("the root is independent of nothing but the hashlocks and their order", () =>
    fc.assert(
      fc.property(fc.uniqueArray(bytes32, { minLength: 2, maxLength: 16 }), (hashlocks) => {
        const root = hashlockTree(hashlocks).root
        expect(hashlockTree([...hashlocks]).root).toBe(root)
        // Swapping two hashlocks swaps their indexes, hence other leaves: another root.
        const swapped = [hashlocks[1]!, hashlocks[0]!, ...hashlocks.slice(2)]
        expect(hashlockTree(swapped).root).not.toBe(root)
      }),
    ))
})
