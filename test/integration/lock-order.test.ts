import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { linkWithAgentApproval } from "../../src/Accounts/VenueAgents.ts"
import { insertCredential, revokeCredentialAndIdentity, rotateCredential } from "../../src/Credentials/Repo.ts"
import { finishFill, settlingFills } from "../../src/Settlement/Repo.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { insertTrade, signTrade } from "../support/TradeFixtures.ts"

/**
 * Two writers of the same rows take their row locks in one order, so neither waits on the other in a cycle
 * (race audit): PostgreSQL would find the deadlock and abort one side (SQLSTATE 40P01), a 500 for a request or a
 * dropped step for an actor. Each case holds the first lock in one transaction, starts the other writer, and only
 * then lets the first go on to its second row; before the fixes both cases deadlocked.
 *
 * A fill's finish (the settlement actor) against a request that holds the fill's take and then writes the fill (a
 * v2 cancel, src/Takes/PayV2.ts): both take their locks take → fill, so neither waits on the other in a cycle.
 * Before, the finish locked the fill first and the take last (its roll-up): PostgreSQL found the deadlock and
 * aborted one side (SQLSTATE 40P01), a 500 for the cancel or a dropped step for the actor (race audit, finding 2).
 */
const venue = (id: string, chainId: number, n: number) => ({
  id,
  chain_id: chainId,
  token: `0x${n.toString(16).padStart(40, "0")}`,
  escrow: `0x${(n + 1).toString(16).padStart(40, "0")}`,
})

/**
 * One transaction runs `first`; then `other` starts in a transaction of its own; once `other` has had time to reach
 * its first wait (500 ms), the first transaction runs `then` with `first`'s result and commits. Both exits.
 */
const interleave = <A, B, C>(
  first: Effect.Effect<A, unknown, SqlClient.SqlClient>,
  then: (a: A) => Effect.Effect<B, unknown, SqlClient.SqlClient>,
  other: Effect.Effect<C, unknown, SqlClient.SqlClient>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const held = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const holder = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const a = yield* first
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(go)
          return yield* then(a)
        }),
      )
      .pipe(Effect.exit, Effect.fork)
    yield* Deferred.await(held)
    const second = yield* sql.withTransaction(other).pipe(Effect.exit, Effect.fork)
    yield* Effect.sleep("500 millis")
    yield* Deferred.succeed(go, undefined)
    return [yield* Fiber.join(holder), yield* Fiber.join(second)] as const
  })

layer(TestDatabaseLive, { timeout: "60 seconds", excludeTestServices: true })("lock order", (it) => {
  it.effect("a finish and a request holding the take, then writing the fill: both complete, no deadlock", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const trade = yield* Effect.promise(() =>
        signTrade({ maker: venue("hyperliquid", 999, 0xa0), taker: venue("aster", 42161, 0xb0), amountIn: 1_000_000n }),
      )
      const fillId = yield* insertTrade(trade, {
        makerMaster: `0x${"aa".repeat(20)}`,
        takerMaster: `0x${"bb".repeat(20)}`,
      })
      const [{ take_id: takeId }] = (yield* sql<{ take_id: string }>`
        select take_id::text from fills where id = ${fillId}`) as [{ take_id: string }]
      // The fixture is a settled trade: make it a live one, locked and waiting.
      yield* sql`update fills set state = 'locked', final = false, settled_at = null where id = ${fillId}`
      yield* sql`update takes set state = 'signed' where id = ${takeId}`
      const [fill] = yield* settlingFills(10, null, takeId)
      expect(fill?.id).toBe(fillId)

      // The request: the take's row lock, then (once the finish is under way) the fill's row, as PayV2's cancels do.
      // Before, the finish had locked the fill and waited for the take by then.
      const [requested, finished] = yield* interleave(
        sql`select 1 from takes where id = ${takeId} for update`,
        () => sql`update fills set error = 'cancel requested' where id = ${fillId}`,
        finishFill(fill!, "failed", "lock window ended"),
      )
      expect(Exit.isSuccess(requested), String(requested)).toBe(true)
      expect(Exit.isSuccess(finished), String(finished)).toBe(true)
      expect(yield* sql`select state, final from fills where id = ${fillId}`).toEqual([
        { state: "failed", final: true },
      ])
      expect(yield* sql`select state from takes where id = ${takeId}`).toEqual([{ state: "failed" }])
    }),
  )

  // An issue for an identity (its row, then the credential's unique index) against a rotation or revocation of the
  // identity's live credential: they locked the credential first, then the identity.
  for (const change of ["rotate", "revoke"] as const) {
    it.effect(`a credential ${change} while another is issued for its identity: both complete, no deadlock`, () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const master = `0x${crypto.randomUUID().replaceAll("-", "").padEnd(40, "0")}`
        const identityId = crypto.randomUUID()
        yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
        yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
          values (${identityId}, ${master}, ${`0x${crypto.randomUUID().replaceAll("-", "").padEnd(40, "1")}`}, 'credential', 1, now(), now())`
        const live = crypto.randomUUID()
        const issued = yield* insertCredential({
          id: live,
          master,
          identityId,
          tokenHash: Buffer.from(crypto.randomUUID()),
          scopes: ["quote"],
          label: null,
          nowMs: Date.now(),
        })
        expect(issued._tag).toBe("Issued")

        const rotateOrRevoke: Effect.Effect<void, unknown, SqlClient.SqlClient> =
          change === "rotate"
            ? Effect.asVoid(
                rotateCredential({ id: live, master, tokenHash: Buffer.from(crypto.randomUUID()), nowMs: Date.now() }),
              )
            : Effect.asVoid(revokeCredentialAndIdentity({ credentialId: live, master, nowMs: Date.now() }))
        // The issue: the identity's row lock, then (once the change is under way) the new credential's insert.
        const [inserted, done] = yield* interleave(
          sql`select 1 from quote_identities where id = ${identityId} for update`,
          () => sql`
            insert into credentials (id, master, quote_identity_id, token_hash, scopes, created_at)
            values (${crypto.randomUUID()}, ${master}, ${identityId}, ${Buffer.from(crypto.randomUUID())},
                    '{quote}'::text[], now())
            on conflict do nothing returning id`,
          rotateOrRevoke,
        )
        expect(Exit.isSuccess(inserted), String(inserted)).toBe(true)
        expect(Exit.isSuccess(done), String(done)).toBe(true)
        // The live credential stayed the identity's one: the issue found it live and inserted nothing.
        expect(Exit.isSuccess(inserted) && inserted.value).toEqual([])
        const [row] = yield* sql<{ revoked: boolean }>`select revoked_at is not null as revoked from credentials
          where id = ${live}`
        expect(row?.revoked).toBe(change === "revoke")
      }),
    )
  }

  // Two identical agent-approval links of one master (a sign-in and a repeat): the loser's insert waited for the
  // winner's row and found it; it answered "address linked to another account" (409) instead of the same link.
  it.effect("an identical agent-approval link racing another: the loser gets the same link, not AddressTaken", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const master = `0x${crypto.randomUUID().replaceAll("-", "").padEnd(40, "2")}`
      const address = `0x${crypto.randomUUID().replaceAll("-", "").padEnd(40, "3")}`
      yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
      const link = { master, venue: "aster", address, expiresMs: Date.now() + 3_600_000, nowMs: Date.now() }
      // The loser's insert waits on the winner's uncommitted row, then finds it.
      const [winner, loser] = yield* interleave(
        linkWithAgentApproval(link),
        Effect.succeed,
        linkWithAgentApproval(link),
      )
      expect(Exit.isSuccess(winner) && winner.value._tag).toBe("Linked")
      expect(Exit.isSuccess(loser) && loser.value).toMatchObject({ _tag: "Linked", created: false, row: { address } })
    }),
  )
})
