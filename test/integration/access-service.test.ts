/**
 * The Access service (src/Access.ts) on its Test layer: a throw-away database, no HTTP. accounts.test.ts covers
 * the admin route and the guard through the wire; this proves the concept stands alone: the gate refuses every
 * account whose access is not `granted` (and writes nothing), and the grant is journaled with its admin.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Access, initialAccess } from "../../src/Access.ts"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { failure } from "../support/Exits.ts"
import { testDeployment } from "../support/TestConfig.ts"

const fresh = () => privateKeyToAccount(generatePrivateKey()).address

const NOT_GRANTED = { tag: "AccessRequired", message: "access has not been granted to this account yet" }
const SUSPENDED = { tag: "AccessRequired", message: "access is suspended for this account" }

const accountRows = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ access: string }>`select access from accounts where master = ${master.toLowerCase()}`,
  )

describe("Access service", () => {
  it("a new account starts granted in open mode, required in beta", () => {
    expect(initialAccess(testDeployment())).toBe("granted")
    expect(initialAccess(testDeployment({ access: { mode: "beta" } }))).toBe("required")
  })

  layer(Access.Test, { timeout: 120_000 })((it) => {
    it.effect("the gate refuses an unknown, a required and a suspended account and writes nothing", () =>
      Effect.gen(function* () {
        const access = yield* Access
        const stranger = fresh().toLowerCase()
        expect(failure(yield* Effect.exit(access.require(stranger)))).toEqual(NOT_GRANTED)
        expect(yield* accountRows(stranger)).toEqual([])

        const user = fresh().toLowerCase()
        yield* ensureAccount({ master: user, access: "required", identityId: crypto.randomUUID(), nowMs: Date.now() })
        expect(failure(yield* Effect.exit(access.require(user)))).toEqual(NOT_GRANTED)
        expect(yield* accountRows(user)).toEqual([{ access: "required" }])
      }),
    )

    it.effect("grant: granted opens the gate, suspended closes it, each journaled with the admin", () =>
      Effect.gen(function* () {
        const access = yield* Access
        const sql = yield* SqlClient.SqlClient
        const admin = fresh().toLowerCase()
        const user = fresh()
        const master = user.toLowerCase()
        yield* ensureAccount({ master, access: "required", identityId: crypto.randomUUID(), nowMs: Date.now() })

        expect(yield* access.grant({ master: user, access: "granted", by: admin })).toEqual({
          master_address: master,
          access: "granted",
        })
        yield* access.require(master)
        yield* access.grant({ master, access: "suspended", by: admin })
        expect(failure(yield* Effect.exit(access.require(master)))).toEqual(SUSPENDED)
        const journal = yield* sql<{ payload: unknown }>`
          select payload from journal where kind = 'account.access_changed' and master = ${master} order by id`
        expect(journal.map((r) => r.payload)).toEqual([
          { master_address: master, access: "granted", by: admin },
          { master_address: master, access: "suspended", by: admin },
        ])

        // An address that has not signed in yet is granted ahead of time: its account row exists now.
        const later = fresh().toLowerCase()
        yield* access.grant({ master: later, access: "granted", by: admin })
        yield* access.require(later)
        expect(yield* accountRows(later)).toEqual([{ access: "granted" }])
      }),
    )
  })
})
