import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import type { CredentialPrincipal } from "../Domain/Principal.ts"
import { findLiveCredentialByHash } from "../Store/Credentials.ts"
import { CredentialResolver } from "./Security.ts"

/** Resolves `mk_` bearers against the credentials table (live ones only). */
export const CredentialResolverLive = Layer.effect(
  CredentialResolver,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    resolve: (tokenHash: Buffer) =>
      findLiveCredentialByHash(tokenHash).pipe(
        Effect.map(
          Option.map(
            (row): CredentialPrincipal => ({
              _tag: "Credential",
              credentialId: row.id,
              master: row.master,
              quoteIdentityId: row.quote_identity_id,
              scopes: row.scopes,
            }),
          ),
        ),
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      ),
  })),
)
