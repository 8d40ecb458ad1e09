/**
 * Typed data on the wire: the spec allows integers as JSON numbers or decimal strings; uint256 values
 * do not fit a JSON number, so every bigint becomes a decimal string (eth_signTypedData_v4 accepts
 * them). The inverse is not needed: the service rebuilds typed data from its own records.
 */
export const toWireTypedData = (value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString()
  if (Array.isArray(value)) return value.map(toWireTypedData)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toWireTypedData(v)]))
  }
  return value
}
