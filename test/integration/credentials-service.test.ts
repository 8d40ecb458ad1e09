/**
 * The Credentials service (src/Credentials.ts) on its Test layer: a throw-away database, no HTTP, with the bearer
 * resolver (src/Credentials/Resolver.ts) beside it. makers.test.ts and auth-matrix.test.ts cover the routes; this
 * proves the concept stands alone: a credential is issued only for the master's own live credential identity,
 * once; refusals write nothing; rotation and revocation end the old bearer at once.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ensureAccount, findAccount } from "../../src/Accounts/Repo.ts"
import { CredentialResolver } from "../../src/Auth/Bearer.ts"
import { CredentialResolverLive } from "../../src/Credentials/Resolver.ts"
import { Credentials } from "../../src/Credentials.ts"
import { insertCredentialIdentity } from "../../src/QuoteIdentities/Repo.ts"
import { SecureRandom, sha256 } from "../../src/SecureRandom.ts"
import { failure } from "../support/Exits.ts"

const fresh = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

/** A signed-in master with one credential identity (a fresh signer): its master, browser and credential ids. */
const makerWithIdentity = Effect.gen(function* () {
  const master = fresh()
  yield* ensureAccount({ master, access: "granted", identityId: crypto.randomUUID(), nowMs: Date.now() })
  const browser = (yield* findAccount(master)).pipe(Option.getOrThrow).quote_identity_id!
  const identity = crypto.randomUUID()
  yield* insertCredentialIdentity({ id: identity, master, signer: fresh(), nowMs: Date.now() })
  return { master, browser, identity }
})

const credentialsOf = (master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: string }>`select id from credentials where master = ${master}`)

const journalOf = (master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{
      kind: string
    }>`select kind from journal where master = ${master} and kind like 'credential.%' order by id`.pipe(
      Effect.map((rows) => rows.map((r) => r.kind)),
    ),
  )

const Live = CredentialResolverLive.pipe(Layer.provideMerge(Credentials.Test), Layer.provideMerge(SecureRandom.Live))

describe("Credentials service", () => {
  layer(Live, { timeout: 120_000 })((it) => {
    it.effect("issues only for the master's own live credential identity, once; refusals write nothing", () =>
      Effect.gen(function* () {
        const credentials = yield* Credentials
        const { master, browser, identity } = yield* makerWithIdentity
        const other = yield* makerWithIdentity
        const NO_IDENTITY = { tag: "NotFound", message: "no live credential quote identity with this id" }
        const issue = (identityId: string, by = master) =>
          Effect.exit(credentials.issue({ master: by, identityId, scopes: ["quote"], label: null }))

        expect(failure(yield* issue(crypto.randomUUID()))).toEqual(NO_IDENTITY)
        expect(failure(yield* issue(browser))).toEqual(NO_IDENTITY)
        expect(failure(yield* issue(other.identity))).toEqual(NO_IDENTITY)
        expect(yield* credentialsOf(master)).toEqual([])
        expect(yield* journalOf(master)).toEqual([])

        yield* credentials.issue({ master, identityId: identity, scopes: ["quote", "read"], label: "bot" })
        expect(failure(yield* issue(identity))).toEqual({
          tag: "StateConflict",
          message: "this identity already has a live credential; rotate it instead",
        })
        expect((yield* credentialsOf(master)).length).toBe(1)

        // Another master's credential can be neither rotated nor revoked; an unknown one neither.
        const [mine] = yield* credentials.list(master)
        const NO_CREDENTIAL = { tag: "NotFound", message: "no live credential with this id" }
        expect(failure(yield* Effect.exit(credentials.rotate(other.master, mine!.id)))).toEqual(NO_CREDENTIAL)
        expect(failure(yield* Effect.exit(credentials.revoke(other.master, mine!.id)))).toEqual(NO_CREDENTIAL)
        expect(failure(yield* Effect.exit(credentials.revoke(master, crypto.randomUUID())))).toEqual(NO_CREDENTIAL)
        expect(yield* journalOf(master)).toEqual(["credential.issued"])
      }),
    )

    it.effect("issue, list, rotate and revoke: the token shown once, the old bearer ends at once", () =>
      Effect.gen(function* () {
        const credentials = yield* Credentials
        const resolver = yield* CredentialResolver
        const sql = yield* SqlClient.SqlClient
        const { master, identity } = yield* makerWithIdentity

        const issued = yield* credentials.issue({ master, identityId: identity, scopes: ["quote"], label: "bot" })
        expect(issued).toMatchObject({
          quote_identity_id: identity,
          scopes: ["quote"],
          label: "bot",
          rotated_at: null,
          revoked_at: null,
        })
        expect(issued.token).toMatch(/^mk_[A-Za-z0-9_-]{43}$/)
        const [stored] = yield* sql<{ token_hash: Buffer }>`select token_hash from credentials where id = ${issued.id}`
        expect(Buffer.compare(stored!.token_hash, sha256(issued.token))).toBe(0)
        expect(Option.map(yield* resolver.resolve(sha256(issued.token)), (p) => p.quoteIdentityId)).toEqual(
          Option.some(identity),
        )
        const { token: _token, ...shown } = issued
        expect(yield* credentials.list(master)).toEqual([shown])

        const rotated = yield* credentials.rotate(master, issued.id)
        expect(rotated.id).toBe(issued.id)
        expect(rotated.token).not.toBe(issued.token)
        expect(rotated.rotated_at).not.toBeNull()
        expect(Option.isNone(yield* resolver.resolve(sha256(issued.token)))).toBe(true)
        expect(Option.isSome(yield* resolver.resolve(sha256(rotated.token)))).toBe(true)
        const [epoch] = yield* sql<{ cancel_epoch: string }>`
          select cancel_epoch::text from quote_identities where id = ${identity}`
        expect(epoch!.cancel_epoch).toBe("1")

        expect(yield* credentials.revoke(master, issued.id)).toEqual({ id: issued.id, revoked: true })
        expect(Option.isNone(yield* resolver.resolve(sha256(rotated.token)))).toBe(true)
        const [revoked] = yield* sql<{ revoked: boolean; generation: string }>`
          select revoked_at is not null as revoked, generation::text from quote_identities where id = ${identity}`
        expect(revoked).toEqual({ revoked: true, generation: "1" })
        expect(failure(yield* Effect.exit(credentials.revoke(master, issued.id)))).toMatchObject({ tag: "NotFound" })
        expect((yield* credentials.list(master))[0]!.revoked_at).not.toBeNull()
        expect(yield* journalOf(master)).toEqual(["credential.issued", "credential.rotated", "credential.revoked"])
      }),
    )
  })
})
