import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

export interface SessionRow {
  readonly id: string
  readonly master: string
  readonly expires_at: Date
  readonly revoked_at: Date | null
}

export const insertSession = (p: { id: string; tokenHash: Buffer; master: string; nowMs: number; expiresMs: number }) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into sessions (id, token_hash, master, created_at, expires_at)
      values (${p.id}, ${p.tokenHash}, ${p.master}, ${new Date(p.nowMs)}, ${new Date(p.expiresMs)})`,
  ).pipe(Effect.asVoid)

export const findSessionByHash = (tokenHash: Buffer) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<SessionRow>`select id, master, expires_at, revoked_at from sessions where token_hash = ${tokenHash}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export const revokeSession = (id: string, nowMs: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update sessions set revoked_at = ${new Date(nowMs)} where id = ${id} and revoked_at is null`,
  ).pipe(Effect.asVoid)
