/**
 * HMAC-SHA256 (RFC 2104) over viem's `sha256`, so that browser code (src/Client, the maker client) needs neither
 * node:crypto nor a dependency of its own: @noble/hashes is only viem's dependency, not ours. Checked against the
 * RFC 4231 vectors and node:crypto in test/unit/hashlocks.test.ts.
 */
import { type ByteArray, concatBytes, sha256 } from "viem"

const BLOCK = 64

export const hmacSha256 = (key: ByteArray, data: ByteArray): ByteArray => {
  // Keys longer than a block are hashed first; then zero-padded to the block size.
  const k = new Uint8Array(BLOCK)
  k.set(key.length > BLOCK ? sha256(key, "bytes") : key)
  const inner = k.map((b) => b ^ 0x36)
  const outer = k.map((b) => b ^ 0x5c)
  return sha256(concatBytes([outer, sha256(concatBytes([inner, data]), "bytes")]), "bytes")
}
