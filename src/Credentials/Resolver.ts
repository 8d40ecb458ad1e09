import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { CredentialResolver } from "../Auth/Bearer.ts"
import type { CredentialPrincipal } from "../Domain/Principal.ts"
import { retryAfterSeconds as retryAfterSeconds_ } from "../Sql/RateLimiter.ts"
import { type CredentialRow, chargeLiveCredential, findLiveCredentialByHash } from "./Repo.ts"

const toPrincipal = (row: CredentialRow): CredentialPrincipal => ({
  _tag: "Credential",
  credentialId: row.id,
  master: row.master,
  quoteIdentityId: row.quote_identity_id,
  scopes: row.scopes,
})

/** Resolves `mk_` bearers against the credentials table (live ones only). */
export const CredentialResolverLive = Layer.effect(
  CredentialResolver,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    resolve: (tokenHash: Buffer) =>
      findLiveCredentialByHash(tokenHash).pipe(
        Effect.map(Option.map(toPrincipal)),
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      ),
    resolveCharged: (tokenHash: Buffer, bucket: { readonly rate: number; readonly burst: number }) =>
      Effect.gen(function* () {
        const row = yield* chargeLiveCredential(tokenHash, bucket)
        if (Option.isNone(row)) return Option.none()
        const principal = toPrincipal(row.value)
        const retryAfterSeconds = row.value.allowed
          ? null
          : yield* retryAfterSeconds_({ key: `credential:${row.value.id}`, ...bucket })
        return Option.some({ principal, retryAfterSeconds })
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie),
  })),
)
