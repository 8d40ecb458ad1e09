/**
 * The QuoteIdentities service (src/QuoteIdentities.ts) on its Test layer: a throw-away database, the development
 * config and an in-memory cluster runner with the lease entity (actors/QuoteIdentityLease.ts), no HTTP. makers.test.ts,
 * lease-route.test.ts and auth-matrix.test.ts cover the routes; this proves the concept stands alone: a refused
 * registration writes nothing, an identity is seen and renewed only by its master or its own credential, and the
 * main path registers, renews (generation 0 → 1, then kept) and resumes.
 */
import { TestRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { QuoteIdentityLeaseLive } from "../../actors/QuoteIdentityLease.ts"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import type { CredentialPrincipal, SessionPrincipal } from "../../src/Domain/Principal.ts"
import { QuoteIdentities } from "../../src/QuoteIdentities.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { failure } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"

const fresh = () => privateKeyToAccount(generatePrivateKey())

const NO_IDENTITY = { tag: "NotFound", message: "no such quote identity" }

/** A signed-in master (its account row and browser identity) as its session principal. */
const signedIn = Effect.gen(function* () {
  const master = fresh()
  const address = master.address.toLowerCase()
  yield* ensureAccount({ master: address, access: "granted", identityId: crypto.randomUUID(), nowMs: Date.now() })
  const session: SessionPrincipal = { _tag: "Session", sessionId: crypto.randomUUID(), master: address, admin: false }
  return { account: master, session }
})

const credentialFor = (master: string, identityId: string): CredentialPrincipal => ({
  _tag: "Credential",
  credentialId: crypto.randomUUID(),
  master,
  quoteIdentityId: identityId,
  scopes: ["quote"],
})

const identitiesOf = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ id: string }>`select id from quote_identities where master = ${master} and kind = 'credential'`,
  )

const Live = QuoteIdentityLeaseLive.pipe(
  Layer.provideMerge(QuoteIdentities.Test),
  Layer.provideMerge(Layer.mergeAll(TestRunner.layer, Supervision.Live, testAppConfig(), SecureRandom.Live)),
)

describe("QuoteIdentities service", () => {
  layer(Live, { timeout: 120_000, excludeTestServices: true })((it) => {
    /** `signer`'s signature of its registration for `master` (what a maker bot sends). */
    const register = (master: string, signer: PrivateKeyAccount, by: PrivateKeyAccount = signer) =>
      Effect.gen(function* () {
        const identities = yield* QuoteIdentities
        const { typed_data } = yield* identities.prepare(master, signer.address)
        const signature = yield* Effect.promise(() => by.signTypedData(typed_data))
        return yield* Effect.exit(identities.create({ master, signer: signer.address, signature }))
      })

    it.effect("refused registrations write nothing; others' identities are not found, not renewed", () =>
      Effect.gen(function* () {
        const identities = yield* QuoteIdentities
        const { account, session } = yield* signedIn
        const master = session.master
        const signer = fresh()

        const malformed = identities.create({ master, signer: signer.address, signature: "0x00" })
        expect(failure(yield* Effect.exit(malformed))).toMatchObject({ tag: "SignatureMalformed" })
        expect(failure(yield* register(master, signer, fresh()))).toEqual({
          tag: "SignatureInvalid",
          message: "the registration is not signed by the signer",
        })
        expect(failure(yield* register(master, account))).toEqual({
          tag: "StateConflict",
          message: "the master key quotes through its browser identity",
        })
        expect(yield* identitiesOf(master)).toEqual([])

        // Someone else's identity: not seen, not renewed, not resumed, by this master or by a credential of another.
        const other = yield* signedIn
        const theirs = yield* register(other.session.master, fresh())
        if (!Exit.isSuccess(theirs)) return yield* Effect.die(theirs)
        const id = theirs.value.id
        expect(failure(yield* Effect.exit(identities.get(session, id)))).toEqual(NO_IDENTITY)
        expect(failure(yield* Effect.exit(identities.get(credentialFor(master, crypto.randomUUID()), id)))).toEqual(
          NO_IDENTITY,
        )
        expect(failure(yield* Effect.exit(identities.renewLease(session, id, 30)))).toEqual(NO_IDENTITY)
        const stranger = credentialFor(other.session.master, crypto.randomUUID())
        expect(failure(yield* Effect.exit(identities.renewLease(stranger, id, 30)))).toEqual(NO_IDENTITY)
        expect(failure(yield* Effect.exit(identities.resume(master, id)))).toEqual(NO_IDENTITY)
        expect(yield* identities.get(other.session, id)).toMatchObject({ generation: "0" })
      }),
    )

    it.effect("registers once, renews (generation 0 → 1, then kept), shows its fade record, resumes", () =>
      Effect.gen(function* () {
        const identities = yield* QuoteIdentities
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* signedIn
        const signer = fresh()

        const created = yield* register(session.master, signer)
        if (!Exit.isSuccess(created)) return yield* Effect.die(created)
        const identity = created.value
        expect(identity).toMatchObject({
          signer: signer.address.toLowerCase(),
          kind: "credential",
          generation: "0",
          revoked: false,
          fade: { chances: 0, fades: 0, flagged_at: null, window_started_at: null },
        })
        expect(Date.parse(identity.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 1000)
        expect(failure(yield* register(session.master, signer))).toEqual({
          tag: "StateConflict",
          message: "this signer already belongs to a quote identity; use a new key",
        })

        // Its own credential renews it (the id in any case): expired → generation 1; live → kept.
        const bot = credentialFor(session.master, identity.id)
        const first = yield* identities.renewLease(bot, identity.id.toUpperCase(), 30)
        expect(first).toMatchObject({ _tag: "Renewed", identity_id: identity.id, generation: "1" })
        if (first._tag !== "Renewed") return yield* Effect.die(first)
        expect(Date.parse(first.expires_at)).toBeGreaterThan(Date.now() + 20_000)
        expect(yield* identities.renewLease(session, identity.id, 60)).toMatchObject({
          _tag: "Renewed",
          generation: "1",
        })
        expect(yield* identities.get(bot, identity.id)).toMatchObject({ id: identity.id, generation: "1" })

        // Not flagged: resume answers it unchanged; flagged: cleared, a new window, journaled once.
        expect(yield* identities.resume(session.master, identity.id)).toMatchObject({ fade: { flagged_at: null } })
        yield* sql`update quote_identities set fade_flagged_at = now() where id = ${identity.id}`
        const resumed = yield* identities.resume(session.master, identity.id)
        expect(resumed.fade.flagged_at).toBeNull()
        expect(resumed.fade.window_started_at).not.toBeNull()
        const journal = yield* sql`
          select 1 from journal where kind = 'quote_identity.fade_resumed' and master = ${session.master}`
        expect(journal.length).toBe(1)

        // Revoked (as DELETE /v1/credentials/{id} does): neither renewed nor resumed.
        yield* sql`update quote_identities set revoked_at = now() where id = ${identity.id}`
        const REVOKED = { tag: "StateConflict", message: "this quote identity is revoked" }
        expect(failure(yield* Effect.exit(identities.renewLease(bot, identity.id, 30)))).toEqual(REVOKED)
        expect(failure(yield* Effect.exit(identities.resume(session.master, identity.id)))).toEqual(REVOKED)
      }),
    )
  })
})
