import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { audienceOf, visibleTo } from "../../src/Stream/EventFilter.ts"
import type { JournalEvent } from "../../src/Stream/JournalReader.ts"
import { CONTROL_CODES } from "../../src/Stream/StreamProtocol.ts"

const root = new URL("../..", import.meta.url).pathname
const schema = JSON.parse(readFileSync(join(root, "src/Stream/events.schema.json"), "utf8"))
const readme = readFileSync(join(root, "README.md"), "utf8")
const documented: Record<string, { "x-channel": string; properties: Record<string, unknown> }> = schema.$defs.kinds

const sources = (dir: string): Array<string> =>
  readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) return sources(path)
    return path.endsWith(".ts") ? [path] : []
  })

/** Every `x.y` kind literal in a module that appends to the journal. */
const journaledKinds = () => {
  const kinds = new Set<string>()
  for (const file of [...sources("src"), ...sources("actors")]) {
    const text = readFileSync(join(root, file), "utf8")
    if (!text.includes("appendJournal(") || file.endsWith("Sql/Journal.ts")) continue
    for (const m of text.matchAll(/"([a-z][a-z_]*\.[a-z][a-z_]*)"/g)) kinds.add(m[1]!)
  }
  return [...kinds].sort()
}

const row = (p: Partial<JournalEvent>): JournalEvent => ({
  cursor: 1n,
  kind: "order.created",
  master: null,
  identityId: null,
  from: null,
  to: null,
  json: "{}",
  ...p,
})

describe("stream: event documentation and visibility rules", () => {
  it("every journaled kind is documented in events.schema.json and the README", () => {
    const kinds = journaledKinds()
    expect(kinds.length).toBeGreaterThan(8)
    for (const kind of kinds) {
      const publicTrade = kind.startsWith("trade.")
      expect(
        publicTrade || documented[kind] !== undefined,
        `document ${kind} in src/Stream/events.schema.json ($defs.kinds) and the README's Events section`,
      ).toBe(true)
    }
    for (const kind of Object.keys(documented)) expect(readme, `README lists ${kind}`).toContain(`\`${kind}\``)
  })

  it("documented channels and identity_id agree with the visibility rules", () => {
    for (const [kind, def] of Object.entries(documented)) {
      expect(kind.startsWith("trade."), kind).toBe(false)
      expect(["account", "internal"], kind).toContain(def["x-channel"])
    }
    expect(schema.$defs.StreamControl.properties.code.enum.sort()).toEqual(Object.keys(CONTROL_CODES).sort())
    expect(schema.$defs.StreamControl["x-close-codes"]).toEqual(CONTROL_CODES)
  })

  it("public trades by pair, private rows per master, credential rows per identity, internal rows to nobody", () => {
    const m = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    const other = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
    const session = { _tag: "Session", sessionId: "s", master: m, admin: false } as const
    const reader = {
      _tag: "Credential",
      credentialId: "c",
      master: m,
      quoteIdentityId: "id-1",
      scopes: ["read"],
    } as const
    const trade = row({ kind: "trade.settled", from: "a", to: "b" })
    const reverse = row({ kind: "trade.settled", from: "b", to: "a" })
    const offPair = row({ kind: "trade.settled", from: "a", to: "c" })
    const noVenues = row({ kind: "trade.settled" })
    const internal = row({ kind: "chain.indexed", from: "a", to: "b" })
    const mine = row({ master: m })
    const mineForId1 = row({ master: m, identityId: "id-1" })
    const mineForId2 = row({ master: m, identityId: "id-2" })
    const theirsForId1 = row({ master: other, identityId: "id-1" })
    const all = [trade, reverse, offPair, noVenues, internal, mine, mineForId1, mineForId2, theirsForId1]
    const sees = (audience: ReturnType<typeof audienceOf>) => all.map(visibleTo(audience))
    expect(sees(audienceOf(["trades"], undefined, undefined))).toEqual([1, 1, 1, 1, 0, 0, 0, 0, 0].map(Boolean))
    expect(sees(audienceOf(["trades"], [{ a: "b", b: "a" }], undefined))).toEqual(
      [1, 1, 0, 0, 0, 0, 0, 0, 0].map(Boolean),
    )
    expect(sees(audienceOf(["trades", "account"], undefined, session))).toEqual(
      [1, 1, 1, 1, 0, 1, 1, 1, 0].map(Boolean),
    )
    expect(sees(audienceOf(["account"], undefined, session))).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 0].map(Boolean))
    expect(sees(audienceOf(["account"], undefined, reader))).toEqual([0, 0, 0, 0, 0, 0, 1, 0, 0].map(Boolean))
    // Without the account channel a token sees public trades only.
    expect(sees(audienceOf(["trades"], undefined, session))).toEqual([1, 1, 1, 1, 0, 0, 0, 0, 0].map(Boolean))
  })
})
