/**
 * A fill's two names: the API's UUID (`fill_id`) and the escrow's bytes32 `fillId` (the `fill_key` column).
 * The bytes32 is the UUID's 16 bytes, left-padded with 16 zero bytes, lowercase hex. The mapping is a bijection
 * between UUIDs and bytes32 values whose upper half is zero, so either side can be recomputed from the other and
 * a fill id seen on chain names exactly one fill of ours (or none, when its upper half is not zero).
 */
import type { Hex } from "viem"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const KEY = /^0x0{32}([0-9a-f]{32})$/

/** The escrow's bytes32 fillId of a fill UUID; throws RangeError on anything but a UUID. */
export const fillKeyOf = (uuid: string): Hex => {
  const id = uuid.toLowerCase()
  if (!UUID.test(id)) throw new RangeError("a fill id is a UUID")
  return `0x${"0".repeat(32)}${id.replace(/-/g, "")}` as Hex
}

/** The fill UUID behind an on-chain fillId, or undefined when the bytes32 is not one of ours. */
export const fillIdOf = (key: string): string | undefined => {
  const m = KEY.exec(key.toLowerCase())
  if (!m) return undefined
  const h = m[1]!
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
