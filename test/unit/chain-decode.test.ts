import fc from "fast-check"
import {
  type AbiEvent,
  type AbiParameter,
  type Address,
  bytesToHex,
  decodeEventLog,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  type Log,
  pad,
  toEventSelector,
} from "viem"
import { describe, expect, it } from "vitest"
import { decodeLogs, indexedEventsAbi, jsonSafe, jsonSafeText } from "../../src/Chain/EscrowLogs.ts"
import { ESCROW } from "../support/ChainLogs.ts"

/**
 * The hand-written static decoder of src/Chain/EscrowLogs.ts against viem's decodeEventLog, for
 * every indexed event (the Fill tuple of Locked and Paid included), on logs encoded as the EVM
 * emits them. The one documented difference: our addresses are lowercase, viem's checksummed.
 */

const lowerAddresses = (v: unknown): unknown => {
  if (typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v)) return v.toLowerCase()
  if (Array.isArray(v)) return v.map(lowerAddresses)
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lowerAddresses(x)]))
  }
  return v
}

const hexOf = (size: number) => fc.uint8Array({ minLength: size, maxLength: size }).map((b) => bytesToHex(b))

/** Arbitrary values of one ABI parameter, edge values (0, max) weighted in by fast-check. */
const arbitraryOf = (p: AbiParameter): fc.Arbitrary<unknown> => {
  if (p.type === "tuple") {
    const components = (p as { components: ReadonlyArray<AbiParameter> }).components
    return fc.record(Object.fromEntries(components.map((c) => [c.name!, arbitraryOf(c)])))
  }
  if (p.type === "address") return hexOf(20)
  if (p.type === "bytes32") return hexOf(32)
  if (p.type === "bool") return fc.boolean()
  const uint = /^uint(\d+)$/.exec(p.type)
  if (uint !== null) return fc.bigInt({ min: 0n, max: 2n ** BigInt(uint[1]!) - 1n })
  throw new Error(`no arbitrary for ${p.type}`)
}

let logIndex = 0
const rawLog = (event: AbiEvent, args: Record<string, unknown>): Log => {
  const indexed = Object.fromEntries(event.inputs.filter((i) => i.indexed).map((i) => [i.name!, args[i.name!]]))
  const rest = event.inputs.filter((i) => !i.indexed)
  return {
    address: ESCROW,
    topics: encodeEventTopics({ abi: [event], eventName: event.name, args: indexed } as never) as [Hex, ...Array<Hex>],
    data: encodeAbiParameters(
      rest,
      rest.map((i) => args[i.name!]),
    ),
    blockNumber: 7n,
    blockHash: pad("0x07", { size: 32 }),
    logIndex: logIndex++,
    transactionHash: pad("0x1234", { size: 32 }),
    transactionIndex: 0,
    removed: false,
  }
}

describe("static event decoder", () => {
  const events = indexedEventsAbi as unknown as ReadonlyArray<AbiEvent>

  it("covers every indexed event, the Fill tuple included", () => {
    const names = events.map((e) => e.name)
    for (const n of ["OrderFunded", "OrderClosed", "Locked", "Claimed", "Paid", "OfferCreated", "OfferReclaimed"]) {
      expect(names).toContain(n)
    }
    expect(events.some((e) => e.inputs.some((i) => i.type === "tuple"))).toBe(true)
  })

  for (const event of events) {
    it(`decodes ${event.name} exactly as viem's decodeEventLog`, () => {
      fc.assert(
        fc.property(fc.record(Object.fromEntries(event.inputs.map((i) => [i.name!, arbitraryOf(i)]))), (args) => {
          const log = rawLog(event, args)
          const [ours] = decodeLogs([log], [ESCROW])
          const theirs = decodeEventLog({ abi: [event], topics: log.topics, data: log.data, strict: true })
          expect(ours?.decoded.eventName).toBe(theirs.eventName)
          expect(ours?.decoded.args).toEqual(lowerAddresses(theirs.args))
          // The other fields of the log pass through untouched.
          expect(ours?.decoded.topics).toEqual(log.topics)
          expect(ours?.decoded.data).toBe(log.data)
          // The args' text in the event table: one pass, the same JSON as the copy (bigints as strings).
          expect(jsonSafeText(ours?.decoded.args)).toBe(JSON.stringify(jsonSafe(ours?.decoded.args)))
        }),
        { numRuns: 60 },
      )
    })
  }

  it("writes args text as JSON of the JSON-safe copy, for any mix of bigints, mixed-case hex, tuples and arrays", () => {
    const leaf = fc.oneof(
      fc.bigInt(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEFx") }),
      fc.string(),
    )
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("node")), fc.dictionary(fc.string(), tie("node"))),
    })).node
    fc.assert(
      fc.property(value, (v) => {
        expect(jsonSafeText(v)).toBe(JSON.stringify(jsonSafe(v)))
      }),
      { numRuns: 300 },
    )
  })

  it("skips what viem's strict parsing skips: short data, wrong topic count, a bool word other than 0/1", () => {
    const funded = events.find((e) => e.name === "OrderClosed")!
    const sample = fc.sample(fc.record(Object.fromEntries(funded.inputs.map((i) => [i.name!, arbitraryOf(i)]))), 1)[0]!
    const log = rawLog(funded, sample)
    expect(decodeLogs([log], [ESCROW])).toHaveLength(1)
    expect(decodeLogs([{ ...log, data: log.data.slice(0, -64) as Hex }], [ESCROW])).toHaveLength(0)
    expect(decodeLogs([{ ...log, topics: log.topics.slice(0, -1) as [Hex, ...Array<Hex>] }], [ESCROW])).toHaveLength(0)
    // The first bool of OrderClosed's data: find its word and set it to 2.
    const dataInputs = funded.inputs.filter((i) => !i.indexed)
    const word = dataInputs.findIndex((i) => i.type === "bool")
    expect(word).toBeGreaterThanOrEqual(0)
    const at = 2 + word * 64
    const bad = `${log.data.slice(0, at)}${"0".repeat(63)}2${log.data.slice(at + 64)}` as Hex
    expect(() => decodeEventLog({ abi: [funded], topics: log.topics, data: bad, strict: true })).toThrow()
    expect(decodeLogs([{ ...log, data: bad }], [ESCROW])).toHaveLength(0)
    // An unknown selector is not ours.
    const other = {
      ...log,
      topics: [toEventSelector("Other(uint256)"), ...log.topics.slice(1)] as [Hex, ...Array<Hex>],
    }
    expect(decodeLogs([other], [ESCROW])).toHaveLength(0)
    expect(decodeLogs([log], ["0x0000000000000000000000000000000000000bad" as Address])).toHaveLength(0)
  })
})
