/**
 * Credentials (spec: DELETE /v1/credentials/{id}, Authentication): a maker's `mk_` bearer, bound to one credential
 * quote identity of its master, with scopes (`quote`, `read`). One live credential per identity; the token is shown
 * once and only its SHA-256 is stored; rotation replaces the bearer and clears the identity's quotes; revocation
 * ends bearer and identity together, irreversibly. Only a master session manages credentials (src/Credentials/
 * Http.ts); bearers resolve to principals through src/Credentials/Resolver.ts.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option } from "effect"
import {
  type CredentialRow,
  insertCredential,
  listCredentials,
  revokeCredentialAndIdentity,
  rotateCredential,
} from "./Credentials/Repo.ts"
import { NotFound, StateConflict } from "./Domain/Errors.ts"
import { randomBase64Url, randomUuid, SecureRandom, sha256 } from "./SecureRandom.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

export type CredentialScope = "quote" | "read"

/** A credential as the wire shows it (never its token or hash). */
export const toCredential = (row: CredentialRow) => ({
  id: row.id,
  quote_identity_id: row.quote_identity_id,
  scopes: row.scopes as ReadonlyArray<CredentialScope>,
  label: row.label,
  created_at: row.created_at.toISOString(),
  rotated_at: row.rotated_at?.toISOString() ?? null,
  revoked_at: row.revoked_at?.toISOString() ?? null,
})

export class Credentials extends Effect.Service<Credentials>()("Credentials", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const random = yield* SecureRandom
    const run = <A, E>(self: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      self.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
    /** `mk_` + 256 random bits; only the SHA-256 is stored. */
    const newToken = Effect.map(randomBase64Url(32), (t) => `mk_${t}`).pipe(Effect.provideService(SecureRandom, random))
    const newId = randomUuid.pipe(Effect.provideService(SecureRandom, random))

    /** Issues the identity's credential: it must be the master's live credential identity without a live one. */
    const issue = Effect.fn("Credentials.issue")(function* (p: {
      readonly master: string
      readonly identityId: string
      readonly scopes: ReadonlyArray<CredentialScope>
      readonly label: string | null
    }) {
      const token = yield* newToken
      const outcome = yield* run(
        insertCredential({
          id: yield* newId,
          master: p.master,
          identityId: p.identityId,
          tokenHash: sha256(token),
          scopes: p.scopes,
          label: p.label,
          nowMs: yield* Clock.currentTimeMillis,
        }),
      )
      if (outcome._tag === "IdentityUnavailable") {
        return yield* new NotFound({ message: "no live credential quote identity with this id" })
      }
      if (outcome._tag === "AlreadyIssued") {
        return yield* new StateConflict({ message: "this identity already has a live credential; rotate it instead" })
      }
      return { ...toCredential(outcome.row), token }
    })

    /** The master's credentials, revoked ones included, oldest first; no secrets. */
    const list = Effect.fn("Credentials.list")(function* (master: string) {
      return (yield* run(listCredentials(master))).map(toCredential)
    })

    /** A new bearer for the master's live credential (the old one stops at once); the identity's quotes clear. */
    const rotate = Effect.fn("Credentials.rotate")(function* (master: string, id: string) {
      const token = yield* newToken
      const rotated = yield* run(
        rotateCredential({ id, master, tokenHash: sha256(token), nowMs: yield* Clock.currentTimeMillis }),
      )
      if (Option.isNone(rotated)) return yield* new NotFound({ message: "no live credential with this id" })
      return { ...toCredential(rotated.value), token }
    })

    /** Revokes the master's live credential and its identity (lease expired, generation advanced, quotes cleared). */
    const revoke = Effect.fn("Credentials.revoke")(function* (master: string, id: string) {
      const revoked = yield* run(
        revokeCredentialAndIdentity({ credentialId: id, master, nowMs: yield* Clock.currentTimeMillis }),
      )
      if (!revoked) return yield* new NotFound({ message: "no live credential with this id" })
      return { id, revoked: true as const }
    })

    return { issue, list, rotate, revoke } as const
  }),
}) {
  /** The service on a throw-away database (SqlTest); the test gives SecureRandom. */
  static readonly Test = Credentials.Default.pipe(Layer.provideMerge(SqlTest))
}
