import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, FiberRef } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Access } from "../../src/Access.ts"
import { classOf } from "../../src/Domain/Errors.ts"
import { CurrentRequestId } from "../../src/Domain/RequestId.ts"
import { requireAccess } from "../../src/Http/Guards.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const admin = privateKeyToAccount(generatePrivateKey())
const Live = testStackWithChain({ admins: [admin.address], access: { mode: "beta" } })
const fresh = () => privateKeyToAccount(generatePrivateKey())
const code = (res: { json: unknown }) => (res.json as { error?: { code: string } }).error?.code

/** A nonfinal fill row on `orderId` paid by `payer` (every column the takes store writes; values are inert). */
const insertFill = (orderId: string, payer: string, state: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
        fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient,
        hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill)
      select id, gen_random_uuid(), ${orderId}, 'aster', ${payer}, ${state}, false, now(), now(),
        '0x' || lpad(replace(id::text, '-', ''), 64, '0'), 'hyperliquid', 1, 0, gen_random_uuid(), 1, 1, ${payer},
        ${payer}, '0x' || repeat('00', 32), '\\x00'::bytea, 0, 0, '{}'::jsonb
      from (select gen_random_uuid() as id) g`,
  )

/** A signed-in master with link and unlink of its own address, for the unlink tests. */
const linkingMaster = Effect.gen(function* () {
  const base = yield* baseUrl
  const master = fresh()
  const token = yield* signIn(base, master)
  const auth = bearer(token)
  return {
    base,
    auth,
    m: master.address.toLowerCase(),
    link: (venue: string) => post(`${base}/v1/accounts`, { venue, address: master.address }, auth),
    unlink: (venue: string) => rawRequest(`${base}/v1/accounts/${venue}`, { method: "DELETE", headers: auth }),
  }
})

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("linked accounts and access", (it) => {
  it.effect("the master address links without a signature; another address with its signed challenge", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const master = fresh()
      const token = yield* signIn(base, master)
      const auth = bearer(token)
      const own = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: master.address }, auth)
      expect(own.status).toBe(201)
      expect(own.json).toMatchObject({
        venue: "hyperliquid",
        address: master.address.toLowerCase(),
        venue_wallet: null,
        expires_at: null,
      })
      // Without signature, a non-master address is refused.
      const wallet = fresh()
      const unsigned = yield* post(`${base}/v1/accounts`, { venue: "aster", address: wallet.address }, auth)
      expect([unsigned.status, code(unsigned)]).toEqual([400, "INVALID_REQUEST"])
      const challenge = yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: wallet.address }, auth)
      expect(challenge.status).toBe(200)
      const { nonce, message } = challenge.json as { nonce: string; message: string }
      expect(message).toContain("Venue: aster")
      expect(message).toContain(`Address: ${wallet.address}`)
      expect(message).toContain(`Master: ${master.address}`)
      // Signed by the wrong key: refused, and the nonce is spent.
      const wrong = yield* Effect.promise(() => fresh().signMessage({ message }))
      const r1 = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: wallet.address, nonce, signature: wrong },
        auth,
      )
      expect([r1.status, code(r1)]).toEqual([422, "SIGNATURE_INVALID"])
      const signature = yield* Effect.promise(() => wallet.signMessage({ message }))
      const reused = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: wallet.address, nonce, signature },
        auth,
      )
      expect([reused.status, code(reused)]).toEqual([409, "CHALLENGE_USED"])
      const c2 = (yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: wallet.address }, auth))
        .json as { nonce: string; message: string }
      const sig2 = yield* Effect.promise(() => wallet.signMessage({ message: c2.message }))
      // The nonce is bound to its venue and address.
      const otherVenue = yield* post(
        `${base}/v1/accounts`,
        { venue: "hyperliquid", address: wallet.address, nonce: c2.nonce, signature: sig2 },
        auth,
      )
      expect([otherVenue.status, code(otherVenue)]).toEqual([400, "INVALID_REQUEST"])
      const c3 = (yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: wallet.address }, auth))
        .json as { nonce: string; message: string }
      const sig3 = yield* Effect.promise(() => wallet.signMessage({ message: c3.message }))
      const linked = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: wallet.address.toUpperCase().replace("0X", "0x"), nonce: c3.nonce, signature: sig3 },
        auth,
      )
      expect(linked.status).toBe(201)
      expect((linked.json as { address: string }).address).toBe(wallet.address.toLowerCase())
      // Linking the venue twice is a conflict.
      const twice = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: master.address }, auth)
      expect([twice.status, code(twice)]).toEqual([409, "STATE_CONFLICT"])
      const me = (yield* rawRequest(`${base}/v1/me`, { headers: auth })).json as { accounts: Array<{ venue: string }> }
      expect(me.accounts.map((a) => a.venue)).toEqual(["aster", "hyperliquid"])
      // Unknown venue.
      const unknown = yield* post(`${base}/v1/accounts/challenge`, { venue: "nowhere", address: wallet.address }, auth)
      expect([unknown.status, code(unknown)]).toEqual([404, "NOT_FOUND"])
    }),
  )

  it.effect("an address linked by one master cannot be linked by another on the same venue", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = fresh()
      const b = fresh()
      const tokenA = yield* signIn(base, a)
      const tokenB = yield* signIn(base, b)
      expect((yield* post(`${base}/v1/accounts`, { venue: "aster", address: a.address }, bearer(tokenA))).status).toBe(
        201,
      )
      const c = (yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: a.address }, bearer(tokenB)))
        .json as { nonce: string; message: string }
      const sig = yield* Effect.promise(() => a.signMessage({ message: c.message }))
      const res = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: a.address, nonce: c.nonce, signature: sig },
        bearer(tokenB),
      )
      expect([res.status, code(res)]).toEqual([409, "STATE_CONFLICT"])
    }),
  )

  it.effect("unlink: ACCOUNT_IN_USE while an order, a nonfinal fill or an open withdrawal uses it", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { m, link, unlink } = yield* linkingMaster
      expect((yield* link("hyperliquid")).status).toBe(201)

      const orderId = `0x${"ab".repeat(32)}`
      yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at, updated_at)
        values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 5000000, now(), now())`
      const r1 = yield* unlink("hyperliquid")
      expect([r1.status, code(r1)]).toEqual([409, "ACCOUNT_IN_USE"])
      yield* sql`update orders set state = 'closed' where id = ${orderId}`
      // A nonfinal fill on the (closed) order still uses the maker's account.
      yield* insertFill(orderId, "0x0000000000000000000000000000000000000001", "locked")
      expect(code(yield* unlink("hyperliquid"))).toBe("ACCOUNT_IN_USE")
      yield* sql`update fills set final = true, state = 'claimed' where order_id = ${orderId}`
      // A nonfinal fill where the account pays (taker side).
      expect((yield* link("aster")).status).toBe(201)
      yield* insertFill(orderId, m, "paid")
      expect(code(yield* unlink("aster"))).toBe("ACCOUNT_IN_USE")
      yield* sql`update fills set final = true where payer = ${m}`
      // Withdrawals: queued, submitting and unknown block; relayed does not.
      for (const state of ["queued", "submitting", "unknown"]) {
        yield* sql`insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at)
          values (gen_random_uuid(), ${m}, 'aster', ${m}, 1, ${m}, ${state}, now(), now())`
        expect(code(yield* unlink("aster"))).toBe("ACCOUNT_IN_USE")
        yield* sql`update withdrawals set state = 'relayed' where master = ${m}`
      }
      const ok = yield* unlink("aster")
      expect(ok.status).toBe(200)
      expect((yield* unlink("hyperliquid")).status).toBe(200)
      const gone = yield* unlink("hyperliquid")
      expect([gone.status, code(gone)]).toEqual([404, "NOT_FOUND"])
      const rows = yield* sql`select 1 from linked_accounts where master = ${m}`
      expect(rows.length).toBe(0)
    }),
  )

  it.effect(
    "unlink: a preparing or failed order stops using the account an hour past its fund deadline, unless its escrow holds funds",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { base, auth, m, link, unlink } = yield* linkingMaster
        const nowS = Math.floor(Date.now() / 1000)
        const order = (id: string, state: string, deadline: number) =>
          sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, fund_deadline,
            created_at, updated_at)
          values (${id}, ${m}, 'hyperliquid', 'aster', ${m}, ${state}, 5000000, ${deadline}, now(), now())`
        expect((yield* link("hyperliquid")).status).toBe(201)

        // Never signed, deadline 30 min ago (within the hour's grace): still in use.
        const preparing = `0x${"c1".repeat(32)}`
        yield* order(preparing, "preparing", nowS - 1800)
        expect(code(yield* unlink("hyperliquid"))).toBe("ACCOUNT_IN_USE")
        // Past the grace: nothing can fund it any more.
        yield* sql`update orders set fund_deadline = ${nowS - 3700} where id = ${preparing}`
        // A failed order past the grace whose escrow holds funds (a fund by another relayer, indexed): still in use.
        const failed = `0x${"c2".repeat(32)}`
        yield* order(failed, "failed", nowS - 7200)
        yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('hyperliquid', ${failed}, ${m}, ${m}, ${m}, 3, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
        const held = yield* unlink("hyperliquid")
        expect([held.status, code(held)]).toEqual([409, "ACCOUNT_IN_USE"])
        // Once those funds are closed out, neither order uses the account.
        yield* sql`update escrow_orders set available = 0 where order_id = ${failed}`
        expect((yield* unlink("hyperliquid")).status).toBe(200)
        // Signing the stale order now is refused; it stays preparing and nothing is relayed.
        expect((yield* link("hyperliquid")).status).toBe(201)
        const signed = yield* post(
          `${base}/v1/orders/${preparing}/signatures`,
          { fund_order: `0x${"11".repeat(65)}`, permit: `0x${"11".repeat(65)}` },
          auth,
        )
        expect([signed.status, code(signed)]).toEqual([409, "STATE_CONFLICT"])
        const [row] = yield* sql<{ state: string }>`select state from orders where id = ${preparing}`
        expect(row?.state).toBe("preparing")
        const relayed = yield* sql`select 1 from relayer_requests where idempotency_key = ${`fund:${preparing}`}`
        expect(relayed.length).toBe(0)
      }),
  )

  it.effect("beta: access is required until an admin grants it; only admins may grant", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const user = fresh()
      const userToken = yield* signIn(base, user)
      const adminToken = yield* signIn(base, admin)
      const me = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(userToken) })).json as Record<string, unknown>
      expect(me.access).toBe("required")
      expect(me.admin).toBe(false)
      const adminMe = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(adminToken) })).json as Record<
        string,
        unknown
      >
      expect(adminMe.admin).toBe(true)

      const grant = (token: string, address: string, access: string) =>
        rawRequest(`${base}/v1/admin/access/${address}`, {
          method: "PUT",
          headers: { ...bearer(token), "content-type": "application/json" },
          body: JSON.stringify({ access }),
        })
      const denied = yield* grant(userToken, user.address, "granted")
      expect([denied.status, code(denied)]).toEqual([403, "FORBIDDEN"])
      const bad = yield* grant(adminToken, user.address, "maybe")
      expect([bad.status, code(bad)]).toEqual([400, "INVALID_REQUEST"])

      // The guard every commitment route uses (on the Access service, which HandlersLive provides to the routes).
      const guard = requireAccess(user.address.toLowerCase()).pipe(
        Effect.provide(Access.Default),
        Effect.locally(CurrentRequestId, "00000000-0000-4000-8000-000000000000"),
        Effect.either,
      )
      const before = yield* guard
      expect(Either.isLeft(before) && classOf(before.left).code).toBe("ACCESS_REQUIRED")

      const granted = yield* grant(adminToken, user.address, "granted")
      expect(granted.status).toBe(200)
      expect(granted.json).toEqual({ master_address: user.address.toLowerCase(), access: "granted" })
      expect(Either.isRight(yield* guard)).toBe(true)
      const after = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(userToken) })).json as Record<string, unknown>
      expect(after.access).toBe("granted")

      yield* grant(adminToken, user.address, "suspended")
      const suspended = yield* guard
      expect(Either.isLeft(suspended) && classOf(suspended.left).code).toBe("ACCESS_REQUIRED")
      // An address that has never signed in can be granted ahead of time.
      const later = fresh()
      expect((yield* grant(adminToken, later.address, "granted")).status).toBe(200)
      const laterToken = yield* signIn(base, later)
      const laterMe = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(laterToken) })).json as Record<
        string,
        unknown
      >
      expect(laterMe.access).toBe("granted")
      expect(yield* FiberRef.get(CurrentRequestId)).toBeDefined()
    }),
  )
})
