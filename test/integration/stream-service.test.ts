/**
 * The Stream service (src/Stream.ts) on its Test layer: a throw-away database and the development config with small
 * shares (2 connections per client, 1 without a token), no HTTP and no socket. The stream-* tests drive real
 * WebSockets through the route; this proves the connection limits alone, as rows of stream_slots: the client's
 * share, the token-less share (a reserve slot kept only by a token), the global 256, release, and a dead process's
 * rows not counting.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Admission, Slot } from "../../src/Stream/Connections.ts"
import { Stream } from "../../src/Stream.ts"
import { testAppConfig } from "../support/TestConfig.ts"

const Live = Stream.Test.pipe(
  Layer.provideMerge(testAppConfig({ limits: { stream_connections_per_client: 2, stream_anonymous_connections: 1 } })),
)

const slotOf = (admission: Admission): Slot => {
  if (admission._tag !== "Admitted") throw new Error(`refused: ${admission.message}`)
  return admission.slot
}

const rows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ client: string; kind: string }>`select client, kind from stream_slots order by client, kind`,
)

describe("Stream service", () => {
  layer(Live, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("a client's share, the token-less share and release", () =>
      Effect.gen(function* () {
        const stream = yield* Stream
        const before = yield* stream.stats
        const a1 = slotOf(yield* stream.admit("client-a"))
        const a2 = slotOf(yield* stream.admit("client-a"))
        // The first takes the one token-less place; the second is held for a subscription with a token.
        expect([a1.kind, a2.kind]).toEqual(["anonymous", "reserve"])
        expect(yield* stream.admit("client-a")).toEqual({
          _tag: "Refused",
          reason: "client",
          message: "this client already holds 2 stream connections; retry later",
        })
        // The reserve slot's subscription has no token: no room among the token-less connections.
        expect(yield* stream.settle(a2, false)).toBe(
          "the 1 stream connections without a token are all open; retry later, or subscribe with a token",
        )
        yield* stream.release(a2)
        yield* stream.release(a2)
        expect(yield* rows).toEqual([{ client: "client-a", kind: "anonymous" }])

        // Another client's reserve slot is kept by a token; the anonymous one stays anonymous.
        const b = slotOf(yield* stream.admit("client-b"))
        expect(b.kind).toBe("reserve")
        expect(yield* stream.settle(b, true)).toBeUndefined()
        expect(yield* stream.settle(a1, false)).toBeUndefined()
        expect(yield* rows).toEqual([
          { client: "client-a", kind: "anonymous" },
          { client: "client-b", kind: "signed" },
        ])

        // Released, the token-less place is free again.
        yield* stream.release(a1)
        const c = slotOf(yield* stream.admit("client-c"))
        expect(c.kind).toBe("anonymous")
        const after = yield* stream.stats
        expect(after.active - before.active).toBe(2)
        expect(after.refusedBy.client - before.refusedBy.client).toBe(1)
        expect(after.refusedBy.anonymous - before.refusedBy.anonymous).toBe(1)
        for (const slot of [b, c]) yield* stream.release(slot)
        expect(yield* rows).toEqual([])
        expect((yield* stream.stats).active).toBe(before.active)
      }),
    )

    it.effect("256 connections in all, whoever holds them; a dead process's rows do not count", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const stream = yield* Stream
        // Rows of a process that stopped refreshing them 11 s ago (they count for 10 s): not counted.
        const dead = randomUUID()
        for (const kind of ["anonymous", "signed"]) {
          yield* sql`insert into stream_slots (id, holder, client, kind, heartbeat_at)
            values (${randomUUID()}, ${dead}, 'client-dead', ${kind}, now() - interval '11 seconds')`
        }
        const held: Array<Slot> = []
        for (let i = 0; held.length < 256; i++) {
          held.push(slotOf(yield* stream.admit(`client-${i >> 1}`)))
        }
        expect(held.filter((s) => s.kind === "anonymous").length).toBe(1)
        expect(yield* stream.admit("client-new")).toEqual({
          _tag: "Refused",
          reason: "full",
          message: "256 stream connections are open; retry later",
        })
        const [counted] = yield* sql<{ n: number; dead: number }>`
          select count(*)::int as n, (count(*) filter (where client = 'client-dead'))::int as dead from stream_slots`
        expect(counted).toEqual({ n: 256, dead: 0 })
        yield* stream.release(held.pop()!)
        held.push(slotOf(yield* stream.admit("client-new")))
        for (const slot of held) yield* stream.release(slot)
        expect(yield* rows).toEqual([])
      }),
    )
  })
})
