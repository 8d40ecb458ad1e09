import { randomBytes, randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sha256 } from "../../src/SecureRandom.ts"
import { JOURNAL_PENDING_CHANNEL } from "../../src/Sql/Journal.ts"

/** An identity the lease bench renews, with its credential's bearer. */
export interface LeaseIdentity {
  readonly id: string
  readonly token: string
}

/**
 * `count` credential quote identities of `master`, each with a live `mk_` credential scoped `quote`, written in one
 * transaction of four statements instead of 2 × `count` HTTP calls (registering 10,000 one by one is too slow).
 * The rows are what registration and issuance write (insertCredentialIdentity, insertCredential): the identity's
 * lease starts expired at generation 0, the credential stores only the SHA-256 of `mk_` + 256 random bits (the hash
 * the renewal statement looks up), and each gets its journal row. The signer is a random lowercase address: the
 * renewal never checks it, and no registration signature is made (that is what the HTTP-registered ones prove).
 */
export const seedIdentities = (master: string, count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = Array.from({ length: count }, () => {
      const token = `mk_${randomBytes(32).toString("base64url")}`
      return {
        id: randomUUID(),
        signer: `0x${randomBytes(20).toString("hex")}`,
        credential: randomUUID(),
        hash: sha256(token).toString("hex"),
        token,
      }
    })
    // One parameter for all rows (a multi-row VALUES list would pass PostgreSQL's 65,535 parameters at 10,000).
    const doc = JSON.stringify(rows.map(({ token: _, ...r }) => r))
    const each = sql`jsonb_to_recordset(${doc}::jsonb) as r(id uuid, signer text, credential uuid, hash text)`
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`
          insert into quote_identities (id, master, signer, kind, lease_expires_at, created_at)
          select r.id, ${master}, r.signer, 'credential', now(), now() from ${each}`
        yield* sql`
          insert into credentials (id, master, quote_identity_id, token_hash, scopes, label, created_at)
          select r.credential, ${master}, r.id, decode(r.hash, 'hex'), '{quote}'::text[], null, now() from ${each}`
        yield* sql`
          insert into journal (kind, master, payload)
          select e.kind, ${master}, e.payload from ${each}, lateral (values
            (1, 'quote_identity.created',
             jsonb_build_object('identity_id', r.id, 'signer', r.signer, 'kind', 'credential')),
            (2, 'credential.issued',
             jsonb_build_object('credential_id', r.credential, 'identity_id', r.id, 'scopes', jsonb_build_array('quote')))
          ) as e(n, kind, payload)
          order by r.id, e.n`
        yield* sql`select pg_notify(${JOURNAL_PENDING_CHANNEL}, '1')`
      }),
    )
    return rows.map((r): LeaseIdentity => ({ id: r.id, token: r.token }))
  })
