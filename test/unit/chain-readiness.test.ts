import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { VenueConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import type { ChainStatusRow } from "../../src/Escrow/ChainStatus.ts"
import { chainHealth } from "../../src/Health/Readiness.ts"

const venue = Schema.decodeUnknownSync(VenueConfig)({
  ...DevelopmentConfig.venues[0],
  watcher: { freshness_seconds: 10, min_operator_gas: "1000" },
})
const NOW = Date.parse("2026-01-01T00:00:00Z")
const ago = (s: number) => new Date(NOW - s * 1000)

const healthy: ChainStatusRow = {
  venue: "hyperliquid",
  chainId: 999,
  latestBlock: 120n,
  latestHash: "0x01",
  safeBlock: 118n,
  finalizedBlock: 116n,
  finalizedHash: "0x02",
  finalizedAt: ago(8),
  headSeenAt: ago(1),
  checkedAt: ago(0.5),
  indexedBlock: 116n,
  indexedHash: "0x02",
  v2IndexedBlock: 116n,
  error: "",
  operator: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
  operatorGas: 5000n,
  integrityCheckedAt: ago(3),
  integrityCompletedAt: ago(2),
  integrityRequestedAt: null,
  integrityError: "",
  integrityMismatch: false,
}

describe("chain readiness", () => {
  it("is ready only when fresh at the final head, with gas, and no alarm", () => {
    const ok = chainHealth(venue, healthy, NOW)
    expect(ok).toEqual({
      venue: "hyperliquid",
      chain_id: 999,
      ready: true,
      block: "120",
      finalized_block: "116",
      checked_at: ago(0.5).toISOString(),
      finalized_at: ago(8).toISOString(),
      error: "",
      operator_gas: "5000",
      integrity_checked_at: ago(3).toISOString(),
      integrity_completed_at: ago(2).toISOString(),
      integrity_error: "",
      integrity_mismatch: false,
    })
    const cases: Array<[Partial<ChainStatusRow>, RegExp]> = [
      [{ error: "rpc eth_getBlockByNumber: HTTP request failed" }, /HTTP request failed/],
      [{ checkedAt: null }, /not checked yet/],
      [{ checkedAt: ago(11) }, /last successful check 11 s ago/],
      [{ headSeenAt: ago(12) }, /head 120 unchanged for 12 s/],
      [{ indexedBlock: 100n }, /indexing: block 100 of finalized 116/],
      [{ operatorGas: 999n }, /operator gas 999 below the minimum 1000/],
    ]
    for (const [patch, reason] of cases) {
      const h = chainHealth(venue, { ...healthy, ...patch }, NOW)
      expect(h.ready).toBe(false)
      expect(h.error).toMatch(reason)
    }
    const alarm = chainHealth(venue, { ...healthy, integrityMismatch: true, integrityError: "order 0x1 …" }, NOW)
    expect([alarm.ready, alarm.error, alarm.integrity_mismatch, alarm.integrity_error]).toEqual([
      false,
      "",
      true,
      "order 0x1 …",
    ])
  })

  it("with escrow_v2, the v2 index must be at the finalized head too (v2 takes route and settle from it)", () => {
    const v2 = Schema.decodeUnknownSync(VenueConfig)({
      ...DevelopmentConfig.venues[0],
      watcher: { freshness_seconds: 10, min_operator_gas: "1000" },
      escrow_v2: { address: "0x00000000000000000000000000000000000000e2", deployment_block: 1 },
    })
    expect(chainHealth(v2, healthy, NOW)).toMatchObject({ ready: true, error: "" })
    for (const [v2IndexedBlock, reason] of [
      [100n, /v2 indexing: block 100 of finalized 116/],
      [null, /v2 indexing: block none of finalized 116/],
    ] as const) {
      const h = chainHealth(v2, { ...healthy, v2IndexedBlock }, NOW)
      expect([h.ready, h.error]).toEqual([false, expect.stringMatching(reason)])
    }
    // Without escrow_v2 the v2 cursor is not looked at.
    const { escrow_v2: _none, ...v1 } = v2
    expect(chainHealth(v1 as VenueConfig, { ...healthy, v2IndexedBlock: null }, NOW).ready).toBe(true)
  })

  it("a venue whose watcher never ran is reported, not ready", () => {
    const h = chainHealth(venue, undefined, NOW)
    expect([h.ready, h.error, h.block, h.checked_at]).toEqual([false, "chain watcher not running", "0", null])
  })
})
