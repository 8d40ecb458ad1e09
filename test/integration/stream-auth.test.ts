import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { controlAndClose, publishedHead, type StreamConn, type StreamEvent, subscribe } from "./stream-client.ts"

const Live = Layer.scopedDiscard(Effect.forkScoped(runJournalPublisher)).pipe(Layer.provideMerge(testStackWithChain()))

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** Reads pages until next_cursor reaches `head`; fails on a control frame. */
const collect = (conn: StreamConn, head: bigint) =>
  Effect.promise(async () => {
    const got: Array<StreamEvent> = []
    while (true) {
      const f = await conn.next(5000)
      if (f.type !== "events") throw new Error(`control ${f.code}: ${f.message}`)
      got.push(...f.events)
      if (BigInt(f.next_cursor) >= head) return got
    }
  })

/** Time from `trigger` to the control frame, with the frame and the close. */
const timeToControl = (conn: StreamConn, trigger: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    const t0 = performance.now()
    yield* trigger
    const { control, closed } = yield* controlAndClose(conn, 5000)
    return { control, closed, ms: performance.now() - t0 }
  })

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("stream: authentication and isolation", (it) => {
  it.effect("a revoked or expired session's stream closes within about a second with auth_revoked", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const token = yield* signIn(base, fresh())
      const { conn, first } = yield* subscribe(base, { token })
      expect(first.type).toBe("events")
      const logout = post(`${base}/v1/auth/logout`, {}, bearer(token))
      const revoked = yield* timeToControl(conn, logout)
      expect(revoked.control).toMatchObject({ type: "control", code: "auth_revoked", message: "session revoked" })
      expect(revoked.closed.code).toBe(4401)
      expect(revoked.ms).toBeLessThan(1200)

      const master = fresh()
      const token2 = yield* signIn(base, master)
      const { conn: conn2 } = yield* subscribe(base, { token: token2, channels: ["account"] })
      const expire = sql`update sessions set expires_at = now() - interval '1 second'
        where master = ${master.address.toLowerCase()}`
      const expired = yield* timeToControl(conn2, expire)
      expect(expired.control).toMatchObject({ code: "auth_revoked", message: "session expired" })
      expect(expired.ms).toBeLessThan(1200)
    }),
  )

  it.effect("rotating or revoking a read credential ends its stream with auth_revoked", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["read"])
      const { conn } = yield* subscribe(base, { token: credential.token })
      const rotate = post(`${base}/v1/credentials/${credential.id}/rotate`, undefined, bearer(token))
      const rotated = yield* timeToControl(conn, rotate)
      expect(rotated.control.code).toBe("auth_revoked")
      expect(rotated.ms).toBeLessThan(1200)
      const list = (yield* rawRequest(`${base}/v1/credentials`, { headers: bearer(token) })).json as {
        data: Array<{ id: string }>
      }
      expect(list.data.map((c) => c.id)).toEqual([credential.id])
      // The rotated bearer streams until the credential is revoked.
      const rotatedToken = (
        (yield* rawRequest(`${base}/v1/credentials/${credential.id}/rotate`, {
          method: "POST",
          headers: bearer(token),
        })).json as { token: string }
      ).token
      const { conn: conn2, first } = yield* subscribe(base, { token: rotatedToken })
      expect(first.type).toBe("events")
      const revoke = rawRequest(`${base}/v1/credentials/${credential.id}`, { method: "DELETE", headers: bearer(token) })
      const revoked = yield* timeToControl(conn2, revoke)
      expect(revoked.control.code).toBe("auth_revoked")
      expect(revoked.closed.code).toBe(4401)
      expect(revoked.ms).toBeLessThan(1200)
    }),
  )

  it.effect("bad tokens and channels the token may not read are refused with a control frame, then a close", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const owner = fresh()
      const token = yield* signIn(base, owner)
      const quoteIdentity = yield* registerIdentity(base, token, fresh())
      const quote = yield* issueCredential(base, token, quoteIdentity.id, ["quote"])
      const expiredOwner = fresh()
      const expiredToken = yield* signIn(base, expiredOwner)
      yield* sql`update sessions set expires_at = now() - interval '1 second'
        where master = ${expiredOwner.address.toLowerCase()}`
      const cases: Array<[Record<string, unknown>, string, number, RegExp]> = [
        [{ token: `st_${"Z".repeat(43)}` }, "unauthorized", 4401, /unknown session/],
        [{ token: "not a token" }, "unauthorized", 4401, /malformed/],
        [{ token: `mk_${"Z".repeat(43)}` }, "unauthorized", 4401, /unknown or revoked credential/],
        [{ token: expiredToken }, "unauthorized", 4401, /expired/],
        [{ channels: ["account"] }, "unauthorized", 4401, /needs a token/],
        [{ token: quote.token, channels: ["account"] }, "forbidden", 4403, /read scope/],
        [{ token: quote.token, channels: ["trades", "account"] }, "forbidden", 4403, /read scope/],
      ]
      for (const [subscription, code, closeCode, message] of cases) {
        const { conn, first } = yield* subscribe(base, subscription)
        const label = JSON.stringify(subscription)
        expect(first, label).toMatchObject({ type: "control", code })
        expect(first.type === "control" && first.message, label).toMatch(message)
        expect((yield* Effect.promise(() => conn.closed)).code, label).toBe(closeCode)
      }
      // A quote-only credential may still follow public trades; by default that is all it gets.
      const { conn, first } = yield* subscribe(base, { token: quote.token })
      expect(first.type).toBe("events")
      yield* sql.withTransaction(
        appendJournal({
          kind: "order.updated",
          master: owner.address.toLowerCase(),
          payload: { identity_id: quoteIdentity.id },
        }),
      )
      yield* sql.withTransaction(appendJournal({ kind: "trade.settled", master: null, payload: { n: 1 } }))
      const got = yield* collect(conn, yield* publishedHead)
      expect(got.map((e) => e.kind)).toEqual(["trade.settled"])
      conn.close()
    }),
  )

  it.effect("randomised: no private event ever reaches another account or another identity's credential", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const seed = Number(process.env.STREAM_SEED ?? Math.floor(Math.random() * 2 ** 31))
      let state = seed
      const random = () => {
        state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff
        return state / 0x7fffffff
      }
      const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!

      // Accounts, each with a session, its browser identity and two credential identities with
      // `read` credentials.
      const accounts = yield* Effect.forEach(
        Array.from({ length: 4 }, () => fresh()),
        (wallet) =>
          Effect.gen(function* () {
            const token = yield* signIn(base, wallet)
            const me = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })).json as {
              quote_identity_id: string
            }
            const identities = [me.quote_identity_id]
            const credentials: Array<{ token: string; identityId: string }> = []
            for (const scopes of [["read"], ["read", "quote"]] as const) {
              const identity = yield* registerIdentity(base, token, fresh())
              const credential = yield* issueCredential(base, token, identity.id, scopes)
              identities.push(identity.id)
              credentials.push({ token: credential.token, identityId: identity.id })
            }
            return { master: wallet.address.toLowerCase(), token, identities, credentials }
          }),
        { concurrency: 4 },
      )
      const start = yield* publishedHead

      type Sees = (row: { master: string | null; kind: string; payload: Record<string, unknown> }) => boolean
      const isTrade = (row: { master: string | null; kind: string }) =>
        row.master === null && row.kind.startsWith("trade.")
      const subscribers: Array<{ name: string; subscription: Record<string, unknown>; sees: Sees; master?: string }> = [
        { name: "public", subscription: {}, sees: isTrade },
        {
          name: "public aster/hyperliquid",
          subscription: { pairs: [{ a: "hyperliquid", b: "aster" }] },
          sees: (r) =>
            isTrade(r) &&
            ((r.payload.from === "aster" && r.payload.to === "hyperliquid") ||
              (r.payload.from === "hyperliquid" && r.payload.to === "aster")),
        },
      ]
      for (const [i, a] of accounts.entries()) {
        subscribers.push({
          name: `session ${i}`,
          subscription: { token: a.token, cursor: start.toString() },
          sees: (r) => isTrade(r) || r.master === a.master,
          master: a.master,
        })
        subscribers.push({
          name: `session ${i} account only`,
          subscription: { token: a.token, channels: ["account"] },
          sees: (r) => r.master === a.master,
          master: a.master,
        })
        for (const [j, c] of a.credentials.entries()) {
          subscribers.push({
            name: `credential ${i}.${j}`,
            subscription: { token: c.token },
            sees: (r) => isTrade(r) || (r.master === a.master && r.payload.identity_id === c.identityId),
            master: a.master,
          })
        }
      }
      const conns = yield* Effect.forEach(subscribers, (s) => subscribe(base, s.subscription), {
        concurrency: "unbounded",
      })
      for (const [i, { first }] of conns.entries()) expect(first.type, subscribers[i]!.name).toBe("events")

      // Random events: private ones for every account (and a stranger), naming identities of the
      // account, of another account, or none; public trades, some off-pair; internal public rows.
      const kinds = ["order.created", "fill.updated", "withdrawal.queued", "quote_set.published", "transfer.created"]
      const allIdentities = accounts.flatMap((a) => a.identities)
      const stranger = fresh().address.toLowerCase()
      const rows = Array.from({ length: 400 }, (_, n) => {
        const r = random()
        if (r < 0.2) {
          const from = pick(["aster", "hyperliquid"])
          const to = random() < 0.8 ? (from === "aster" ? "hyperliquid" : "aster") : from
          return { kind: pick(["trade.settled", "trade.refunded"]), master: null, payload: { n, from, to } }
        }
        if (r < 0.25) return { kind: "chain.indexed", master: null, payload: { n } }
        const owner = random() < 0.95 ? pick(accounts) : undefined
        const identity =
          owner === undefined
            ? pick(allIdentities)
            : random() < 0.7
              ? pick(owner.identities)
              : random() < 0.5
                ? pick(allIdentities)
                : undefined
        return {
          kind: pick(kinds),
          master: owner?.master ?? stranger,
          payload: identity === undefined ? { n } : { n, identity_id: identity },
        }
      })
      yield* Effect.forEach(rows, (row) => sql.withTransaction(appendJournal(row)), {
        concurrency: 8,
        discard: true,
      })
      const head = yield* publishedHead
      const journal = yield* sql<{
        cursor: string
        kind: string
        master: string | null
        payload: Record<string, unknown>
      }>`
        select j.cursor::text as cursor, j.kind, j.master, j.payload from journal j
        where j.cursor > ${start.toString()} order by j.cursor`
      const byCursor = new Map(journal.map((r) => [r.cursor, r]))
      let privateDeliveries = 0
      for (const [i, { conn, first }] of conns.entries()) {
        const s = subscribers[i]!
        const got = [...(first.type === "events" ? first.events : []), ...(yield* collect(conn, head))]
        const label = `${s.name} (seed ${seed})`
        expect(
          got.map((e) => e.cursor),
          label,
        ).toEqual(journal.filter(s.sees).map((r) => r.cursor))
        for (const e of got) {
          const row = byCursor.get(e.cursor)!
          if (row.master !== null) {
            privateDeliveries++
            expect(row.master, label).toBe(s.master)
          }
          expect(e.data, label).toEqual(row.payload)
        }
        conn.close()
      }
      expect(privateDeliveries).toBeGreaterThan(300)
    }),
  )
  it.effect("a read credential's events never carry a withdrawal or a balance; its master's session's do", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const wallet = fresh()
      const master = wallet.address.toLowerCase()
      const token = yield* signIn(base, wallet)
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["read"])
      const withdrawalId = "7d6f1c2e-0a4b-4c3d-9e8f-1a2b3c4d5e6f"
      const rows = [
        {
          kind: "order.awaiting_margin",
          payload: { order_id: "0x01", identity_id: identity.id, withdrawal_id: withdrawalId },
        },
        {
          kind: "order.funded",
          payload: { order_id: "0x01", identity_id: identity.id, escrow_available: "5", quotable: "5" },
        },
        { kind: "order.created", payload: { order_id: "0x02", identity_id: identity.id, venue: "aster", amount: "7" } },
      ]
      const append = Effect.forEach(rows, (row) => sql.withTransaction(appendJournal({ ...row, master })), {
        discard: true,
      })
      const start = yield* publishedHead
      // Followers (subscribed before the rows) and replays (subscribed after, from `start`): both paths.
      const following = yield* Effect.forEach([token, credential.token], (t) =>
        subscribe(base, { token: t, channels: ["account"] }),
      )
      yield* append
      const head = yield* publishedHead
      const replaying = yield* Effect.forEach([token, credential.token], (t) =>
        subscribe(base, { token: t, channels: ["account"], cursor: start.toString() }),
      )
      const [sessionFollow, credentialFollow, sessionReplay, credentialReplay] = yield* Effect.forEach(
        [...following, ...replaying],
        ({ conn, first }) =>
          Effect.map(collect(conn, head), (more) => {
            conn.close()
            return [...(first.type === "events" ? first.events : []), ...more].map((e) => ({
              kind: e.kind,
              data: e.data,
            }))
          }),
      )
      const full = rows.map(({ kind, payload }) => ({ kind, data: payload }))
      const redacted = [
        { kind: "order.awaiting_margin", data: { order_id: "0x01", identity_id: identity.id } },
        { kind: "order.funded", data: { order_id: "0x01", identity_id: identity.id } },
        full[2],
      ]
      expect(sessionFollow).toEqual(full)
      expect(sessionReplay).toEqual(full)
      expect(credentialFollow).toEqual(redacted)
      expect(credentialReplay).toEqual(redacted)
    }),
  )
})
