/**
 * The stream tail's window (src/Stream/JournalWindow.ts) fed by its two sources in any interleaving: reads of the
 * journal and the hand-over of this process's publisher. No row twice, none skipped, and a restart only when rows
 * were pruned.
 */
import { describe, expect, it } from "vitest"
import type { JournalEvent } from "../../src/Stream/JournalReader.ts"
import { JournalWindow } from "../../src/Stream/JournalWindow.ts"

const ev = (cursor: number): JournalEvent => ({
  cursor: BigInt(cursor),
  kind: "k",
  master: null,
  identityId: null,
  from: null,
  to: null,
  json: `{"cursor":"${cursor}"}`,
})
const evs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ev(from + i))
const cursorsOf = (rows: ReadonlyArray<JournalEvent> | undefined) => rows?.map((r) => Number(r.cursor))

const make = (last = 0, limits = { rows: 100, bytes: 1 << 20 }) => {
  const extended: Array<Array<number>> = []
  const window = new JournalWindow(BigInt(last), limits, (rows) => extended.push(cursorsOf(rows)!))
  return { window, extended }
}

describe("JournalWindow", () => {
  it("a hand-over that continues the window is taken, and pages come from it", () => {
    const { window, extended } = make(10)
    expect(window.handed(evs(11, 13))).toBe(true)
    expect(window.last).toBe(13n)
    expect(cursorsOf(window.pageAfter(10n, 10))).toEqual([11, 12, 13])
    expect(cursorsOf(window.pageAfter(11n, 1))).toEqual([12])
    expect(window.pageAfter(13n, 10)).toEqual([])
    expect(window.pageAfter(9n, 10)).toBeUndefined()
    expect(extended).toEqual([[11, 12, 13]])
  })

  it("a read answered after a hand-over of part of its rows adds only the rest, without a restart", () => {
    // The read of `cursor > 10` was sent; the publisher then handed 11..12; the read answers 11..15.
    const { window, extended } = make(10)
    window.read(evs(1, 0))
    expect(window.handed(evs(11, 12))).toBe(true)
    window.read(evs(11, 15))
    expect(window.last).toBe(15n)
    expect(cursorsOf(window.pageAfter(10n, 100))).toEqual([11, 12, 13, 14, 15])
    expect(extended).toEqual([
      [11, 12],
      [13, 14, 15],
    ])
  })

  it("a read covering only what was handed over changes nothing", () => {
    const { window, extended } = make(10)
    window.handed(evs(11, 14))
    window.read(evs(11, 14))
    window.read(evs(12, 13))
    expect(cursorsOf(window.pageAfter(10n, 100))).toEqual([11, 12, 13, 14])
    expect(extended).toEqual([[11, 12, 13, 14]])
  })

  it("a hand-over of rows already read, or partly read, adds only what is new", () => {
    const { window, extended } = make(10)
    window.read(evs(11, 14))
    expect(window.handed(evs(11, 14))).toBe(false)
    expect(window.handed(evs(13, 16))).toBe(true)
    expect(cursorsOf(window.pageAfter(10n, 100))).toEqual([11, 12, 13, 14, 15, 16])
    expect(extended).toEqual([
      [11, 12, 13, 14],
      [15, 16],
    ])
  })

  it("a hand-over beyond the window (this reader is behind) is left to the reads", () => {
    const { window, extended } = make(10)
    window.read(evs(11, 12))
    expect(window.handed(evs(15, 16))).toBe(false)
    expect(window.last).toBe(12n)
    expect(cursorsOf(window.pageAfter(10n, 100))).toEqual([11, 12])
    window.read(evs(13, 16))
    expect(cursorsOf(window.pageAfter(10n, 100))).toEqual([11, 12, 13, 14, 15, 16])
    expect(extended).toEqual([
      [11, 12],
      [13, 14, 15, 16],
    ])
  })

  it("a read whose first new row is beyond last + 1 (rows pruned meanwhile) restarts the window there", () => {
    const { window } = make(10)
    window.read(evs(11, 12))
    window.read(evs(20, 21))
    expect(window.last).toBe(21n)
    expect(window.pageAfter(12n, 100)).toBeUndefined()
    expect(cursorsOf(window.pageAfter(19n, 100))).toEqual([20, 21])
  })

  it("keeps at most its bound of rows (with a quarter of slack), dropping the oldest", () => {
    const { window } = make(0, { rows: 4, bytes: 1 << 20 })
    window.read(evs(1, 5))
    expect(cursorsOf(window.pageAfter(0n, 100))).toEqual([1, 2, 3, 4, 5])
    window.handed(evs(6, 6))
    expect(window.pageAfter(0n, 100)).toBeUndefined()
    expect(cursorsOf(window.pageAfter(2n, 100))).toEqual([3, 4, 5, 6])
  })
})
