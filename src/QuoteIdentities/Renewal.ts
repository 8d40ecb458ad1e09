import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Forbidden, NotFound, StateConflict, Unauthorized } from "../Domain/Errors.ts"
import { retryAfterSeconds } from "../Sql/RateLimiter.ts"
import { renewLease, renewLeaseWithCredential } from "./Repo.ts"

/**
 * A renewal as the lease entity receives it (src/QuoteIdentities/Lease.ts RenewRequest): a session's (its master,
 * already authenticated and charged by the route's middleware) or a credential's (its token's SHA-256, hex, not
 * looked up yet, and the request budget to charge).
 */
export interface RenewalRequest {
  readonly ttlSeconds: number
  readonly master: string | null
  readonly credential: {
    readonly tokenHash: string
    readonly bucket: { readonly rate: number; readonly burst: number }
  } | null
}

/**
 * The renewal's one statement and its answer: Renewed (database time), or BudgetSpent with how long until the
 * credential's budget refills (the only second read, on the refused path), or the catalogue error. The lease entity
 * runs it for its identity (actors/QuoteIdentityLease.ts); the route runs it itself for an id that is no quote
 * identity, so that no entity is started where there is no lease (src/QuoteIdentities.ts).
 */
export const runRenewal = (id: string, request: RenewalRequest) =>
  Effect.gen(function* () {
    const credential = request.credential
    const outcome =
      credential === null
        ? yield* renewLease(id, request.ttlSeconds, request.master)
        : yield* renewLeaseWithCredential(
            id,
            request.ttlSeconds,
            Buffer.from(credential.tokenHash, "hex"),
            credential.bucket,
          )
    switch (outcome._tag) {
      case "Renewed":
        return outcome
      case "BudgetSpent": {
        const key = `credential:${outcome.credentialId}`
        const retryAfter = yield* retryAfterSeconds({ key, ...credential!.bucket })
        return { _tag: "BudgetSpent" as const, retryAfterSeconds: retryAfter }
      }
      case "Unknown":
        return yield* new Unauthorized({ message: "unknown or revoked credential" })
      case "Unscoped":
        return yield* new Forbidden({ message: "this credential lacks the quote scope" })
      case "Unbound":
      case "NotFound":
        return yield* new NotFound({ message: "no such quote identity" })
      case "Revoked":
        return yield* new StateConflict({ message: "this quote identity is revoked" })
    }
  }).pipe(Effect.catchTag("SqlError", Effect.die))

/** Whether `id` names a quote identity (revoked or not): one with no row has no lease to keep. */
export const identityExists = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql`select 1 from quote_identities where id = ${id}`, (rows) => rows.length > 0),
  )
