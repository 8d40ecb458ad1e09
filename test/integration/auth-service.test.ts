/**
 * The Auth service (src/Auth.ts) on its Test layer: a throw-away database, the development config in beta mode, no
 * HTTP and no chain (no auth chain client: an EOA's signature is checked locally). The routes' own tests
 * (auth.test.ts, aster-signin.test.ts, siwe-smart-wallet.test.ts) cover the wire; this proves the concept stands
 * alone: each refused sign-in answers its catalogue error and opens no session, and the main path opens one.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { Auth } from "../../src/Auth.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { SecureRandom, sha256 } from "../../src/SecureRandom.ts"
import { VenueAdapters } from "../../src/Venues/VenueAdapters.ts"
import { failure } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"

const fresh = () => privateKeyToAccount(generatePrivateKey())

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
/** The same signature with s' = n − s (and v flipped): valid under ecrecover, refused as malleable. */
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

const count = (table: "sessions" | "accounts", master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`select count(*)::int as n from ${sql(table)} where master = ${master.toLowerCase()}`.pipe(
      Effect.map((rows) => rows[0]!.n),
    ),
  )

const consumedAt = (nonce: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ consumed_at: Date | null }>`select consumed_at from auth_challenges where nonce = ${nonce}`.pipe(
      Effect.map((rows) => rows[0]?.consumed_at ?? null),
    ),
  )

const signedChallenge = (auth: Auth, account: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const challenge = yield* auth.challenge({ address: account.address })
    const signature = yield* Effect.promise(() => account.signMessage({ message: challenge.message }))
    return { ...challenge, signature }
  })

/** No auth chain and no venue API: EOAs only, and every venue signs in with SIWE (or is refused). */
const Offline = Layer.mergeAll(
  testAppConfig({ access: { mode: "beta" } }),
  SecureRandom.Live,
  Layer.succeed(ChainClients, ChainClients.of({ venue: () => undefined, auth: undefined, chain: () => undefined })),
  Layer.succeed(VenueAdapters, VenueAdapters.fromList([])),
)

describe("Auth service", () => {
  layer(Auth.Test.pipe(Layer.provideMerge(Offline)), { timeout: 120_000 })((it) => {
    it.effect("refused sign-ins answer their catalogue error and open no session", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const auth = yield* Auth
        const user = fresh()

        // Challenges: an unknown venue, and Aster without API access, write nothing.
        const unknownVenue = yield* Effect.exit(auth.challenge({ address: user.address, venue: "nowhere" }))
        expect(failure(unknownVenue)).toEqual({
          tag: "NotFound",
          message: "unknown venue nowhere; see GET /v1/venues",
        })
        const aster = yield* Effect.exit(auth.challenge({ address: user.address, venue: "aster" }))
        expect(failure(aster)).toEqual({
          tag: "VenueUnavailable",
          message: "the service has no API access to aster for its sign-in",
        })
        const written = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`select 1 from auth_challenges where address = ${user.address.toLowerCase()}`,
        )
        expect(written).toEqual([])

        // Verify: an unknown nonce; a malformed or malleable signature is refused without spending the nonce.
        expect(failure(yield* Effect.exit(auth.verify({ nonce: "a".repeat(32), signature: "0x00" })))).toMatchObject({
          tag: "SignatureMalformed",
        })
        expect(
          failure(yield* Effect.exit(auth.verify({ nonce: "a".repeat(32), signature: `0x${"11".repeat(64)}1b` }))),
        ).toEqual({ tag: "ChallengeUnknown", message: "no challenge with this nonce" })
        const c = yield* signedChallenge(auth, user)
        expect(failure(yield* Effect.exit(auth.verify({ nonce: c.nonce, signature: highS(c.signature) })))).toEqual({
          tag: "SignatureMalleable",
          message: expect.any(String),
        })
        expect(yield* consumedAt(c.nonce)).toBeNull()

        // Signed by another key: the nonce is spent, and used once it stays used.
        const forged = yield* Effect.promise(() => fresh().signMessage({ message: c.message }))
        expect(failure(yield* Effect.exit(auth.verify({ nonce: c.nonce, signature: forged })))).toMatchObject({
          tag: "SignatureInvalid",
        })
        expect(yield* consumedAt(c.nonce)).not.toBeNull()
        expect(failure(yield* Effect.exit(auth.verify({ nonce: c.nonce, signature: c.signature })))).toEqual({
          tag: "ChallengeUsed",
          message: "this challenge was already used",
        })

        // Ten minutes on the Effect clock: the challenge expired.
        const late = yield* signedChallenge(auth, user)
        yield* TestClock.adjust("10 minutes")
        expect(failure(yield* Effect.exit(auth.verify({ nonce: late.nonce, signature: late.signature })))).toEqual({
          tag: "ChallengeExpired",
          message: "the challenge expired",
        })

        expect(yield* count("sessions", user.address)).toBe(0)
        expect(yield* count("accounts", user.address)).toBe(0)
      }),
    )

    it.effect("the challenge budget: six per address, then a wait in seconds", () =>
      Effect.gen(function* () {
        const auth = yield* Auth
        const address = fresh().address
        for (let i = 0; i < 6; i++) {
          expect(yield* auth.admitChallenge(`client-${i}`, address)).toEqual({ allowed: true })
        }
        const seventh = yield* auth.admitChallenge("client-7", address)
        expect(seventh.allowed).toBe(false)
        expect(seventh.allowed === false && seventh.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      }),
    )

    it.effect("sign-in opens a session (token hashed), creates the account once with beta access; logout revokes", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const auth = yield* Auth
        const sql = yield* SqlClient.SqlClient
        const user = fresh()
        const master = user.address.toLowerCase()
        const c = yield* signedChallenge(auth, user)
        expect(c.message).toContain(`${user.address}\n`)
        const session = yield* auth.verify({ nonce: c.nonce, signature: c.signature })
        expect(session.master_address).toBe(master)
        expect(session.token).toMatch(/^st_[A-Za-z0-9_-]{43}$/)
        expect(Date.parse(session.expires_at) - Date.now()).toBeGreaterThan(6 * 86_400_000)
        const [row] = yield* sql<{ id: string; master: string; revoked_at: Date | null }>`
          select id, master, revoked_at from sessions where token_hash = ${sha256(session.token)}`
        expect(row).toMatchObject({ master, revoked_at: null })
        const [account] = yield* sql<{ access: string; identities: number }>`
          select access, (select count(*)::int from quote_identities q
                          where q.master = a.master and q.kind = 'browser') as identities
          from accounts a where master = ${master}`
        expect(account).toEqual({ access: "required", identities: 1 })

        // A second sign-in: a second session, the same account, one account.created in the journal.
        const again = yield* signedChallenge(auth, user)
        yield* auth.verify({ nonce: again.nonce, signature: again.signature })
        expect(yield* count("sessions", master)).toBe(2)
        const created = yield* sql`select 1 from journal where kind = 'account.created' and master = ${master}`
        expect(created.length).toBe(1)

        yield* auth.logout(row!.id)
        const [revoked] = yield* sql<{ revoked_at: Date | null }>`select revoked_at from sessions where id = ${row!.id}`
        expect(revoked!.revoked_at).not.toBeNull()
      }),
    )
  })
})
