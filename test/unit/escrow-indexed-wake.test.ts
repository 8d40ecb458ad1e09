/**
 * Which takes an index page wakes (src/Settlement/IndexedWake.ts, actors/EscrowV2Ingest.ts): a v2
 * page whose every event names a Fill digest names those fills, so only their takes get a pass; any other page (an
 * order event in it, a v1 page, too many fills for one NOTIFY) names the venue alone, which wakes every take with a
 * fill open there, as before. Order funding always reads the venue.
 */
import { describe, expect, it } from "vitest"
import { fillsNamed } from "../../actors/EscrowV2Ingest.ts"
import type { IndexedEventV2 } from "../../src/Chain/EscrowLogsV2.ts"
import { escrowIndexedPayload, parseEscrowIndexed } from "../../src/Settlement/IndexedWake.ts"

const digest = (byte: string) => `0x${byte.repeat(32)}`
const event = (eventName: string, args: Record<string, unknown>) => ({ decoded: { eventName, args } }) as IndexedEventV2

describe("escrow index wake-ups", () => {
  it("a page of lock and payment events names its fills, lowercase and once each", () => {
    const page = [
      event("Locked", { fillDigest: digest("AB"), orderKey: digest("01") }),
      event("Paid", { fillDigest: digest("cd") }),
      event("Claimed", { fillDigest: digest("ab"), orderKey: digest("01") }),
    ]
    expect(fillsNamed(page)).toEqual([digest("ab"), digest("cd")])
  })

  it("a page with an event that names no fill names none: the venue is woken", () => {
    const page = [
      event("Locked", { fillDigest: digest("ab"), orderKey: digest("01") }),
      event("OrderFunded", { orderKey: digest("01"), owner: digest("02").slice(0, 42) }),
    ]
    expect(fillsNamed(page)).toBeUndefined()
    expect(escrowIndexedPayload("hyperliquid", fillsNamed(page))).toBe("hyperliquid")
  })

  it("the payload round-trips; a v1 page, an empty list or too many fills give the venue alone", () => {
    const two = [digest("ab"), digest("cd")]
    expect(parseEscrowIndexed(escrowIndexedPayload("aster", two))).toEqual({ venue: "aster", fillDigests: two })
    expect(parseEscrowIndexed(escrowIndexedPayload("aster"))).toEqual({ venue: "aster", fillDigests: undefined })
    expect(escrowIndexedPayload("aster", [])).toBe("aster")
    const many = Array.from({ length: 101 }, (_, i) => `0x${i.toString(16).padStart(64, "0")}`)
    expect(escrowIndexedPayload("aster", many)).toBe("aster")
    // 100 fills fit in one NOTIFY (payloads stay under 8,000 bytes).
    expect(escrowIndexedPayload("aster", many.slice(0, 100)).length).toBeLessThan(8000)
  })
})
