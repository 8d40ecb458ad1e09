/**
 * Access (spec: Beta access): an account's `access` is `granted`, `required` or `suspended`; while it is not
 * `granted`, every new commitment (orders, takes, transfers, withdrawals, closes) answers ACCESS_REQUIRED. The
 * service is that gate (`require`, which src/Http/Guards.ts `requireAccess` calls for every commitment route) and
 * the app's grant (`grant`, PUT /v1/admin/access/{address}, admins only: src/Access/Http.ts checks the session).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option } from "effect"
import { type AccessLevel, findAccess, setAccess } from "./Access/Repo.ts"
import type { DeploymentConfig } from "./Config.ts"
import { AccessRequired } from "./Domain/Errors.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

export type { AccessLevel } from "./Access/Repo.ts"

/**
 * The beta gate as a commitment's service runs it (spec: access is needed for new commitments only): after a
 * repeat of an earlier request is answered and before anything new is accepted. The route passes its guard
 * (src/Http/Guards.ts requireAccess).
 */
export type AccessGate<R> = Effect.Effect<void, AccessRequired, R>

/** A new account's access: `granted` when the deployment is open, else `required` until an admin grants it. */
export const initialAccess = (deployment: DeploymentConfig): "granted" | "required" =>
  deployment.access.mode === "open" ? "granted" : "required"

export class Access extends Effect.Service<Access>()("Access", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The beta gate: succeeds only when the master's account has access `granted` (one statement). */
    const require = Effect.fn("Access.require")(function* (master: string) {
      const access = yield* findAccess(master).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
      if (Option.contains(access, "granted")) return
      return yield* new AccessRequired({
        message: Option.contains(access, "suspended")
          ? "access is suspended for this account"
          : "access has not been granted to this account yet",
      })
    })

    /**
     * Sets `master`'s access (lowercased), journaled with the admin who set it; an address that has not signed in
     * yet gets its account row now and keeps this access at its first sign-in.
     */
    const grant = Effect.fn("Access.grant")(function* (p: {
      readonly master: string
      readonly access: AccessLevel
      readonly by: string
    }) {
      const master = p.master.toLowerCase()
      yield* setAccess({ master, access: p.access, nowMs: yield* Clock.currentTimeMillis, by: p.by }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      )
      return { master_address: master, access: p.access }
    })

    return { require, grant } as const
  }),
}) {
  /** The service on a throw-away database (SqlTest). */
  static readonly Test = Access.Default.pipe(Layer.provideMerge(SqlTest))
}
