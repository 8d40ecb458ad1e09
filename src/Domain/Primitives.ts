import { Schema } from "effect"

/** 20-byte hex address, any case on input. Responses lowercase it where the spec says so. */
export const Address = Schema.String.pipe(
  Schema.pattern(/^0x[0-9a-fA-F]{40}$/),
  Schema.annotations({
    identifier: "Address",
    description: "0x-prefixed 20-byte hex address",
  }),
)

/** Token base units as a decimal string, at most 2^256 - 1 (spec: Wire conventions 2). */
export const MAX_UINT256 = 2n ** 256n - 1n
export const Amount = Schema.String.pipe(
  Schema.pattern(/^[0-9]{1,78}$/),
  Schema.filter((s) => BigInt(s) <= MAX_UINT256, {
    message: () => "must be at most 2^256 - 1",
  }),
  Schema.annotations({
    identifier: "Amount",
    description: "token base units as a decimal string",
  }),
)

/** 32-byte order id. */
export const OrderId = Schema.String.pipe(
  Schema.pattern(/^0x[0-9a-fA-F]{64}$/),
  Schema.annotations({ identifier: "OrderId" }),
)

/** Venue ids are short slugs listed by GET /v1/venues. */
export const VenueId = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_-]{0,31}$/),
  Schema.annotations({
    identifier: "VenueId",
    description: "a venue id from GET /v1/venues",
  }),
)

/** RFC 3339 UTC timestamp as returned in responses. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "RFC 3339 UTC timestamp",
})

export const PositiveInt = Schema.Int.pipe(Schema.positive())
export const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

export const toRfc3339 = (ms: number): string => new Date(ms).toISOString()

/**
 * A lease expiry on the wire: whole seconds, rounded down, so the browser lease reads the spec's literal
 * `9999-12-31T00:00:00Z` and a maker never reads a lease as longer than it is (spec: Wire conventions 3 keeps
 * fractional seconds for snapshots and history only).
 */
export const toLeaseExpiry = (at: Date): string =>
  `${new Date(Math.floor(at.getTime() / 1000) * 1000).toISOString().slice(0, 19)}Z`
