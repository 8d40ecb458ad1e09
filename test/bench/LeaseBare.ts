import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { renewLeaseWithCredential } from "../../src/QuoteIdentities/Repo.ts"
import { sha256 } from "../../src/SecureRandom.ts"

/** A request that gets no answer in this long fails the phase: no phase hangs on a lost connection. */
const REQUEST_TIMEOUT_MS = 10_000

const PATH = /^\/v1\/quote-identities\/([0-9a-f-]{36})\/lease$/

/**
 * The bare baseline: a `node:http` server on loopback (no Effect HTTP, no framework, no entity, no timer) answering
 * PUT /v1/quote-identities/:id/lease with the service's own renewal statement (renewLeaseWithCredential: resolve the
 * `mk_` token's hash, charge its budget, renew), run on the service's SqlClient instance (the same @effect/sql-pg
 * pool, pg driver, statements prepared: src/Sql/PreparedStatements.ts). What the service adds on top of this is its
 * HTTP framework and the lease entity.
 */
export const bareLeaseServer = (bucket: { readonly rate: number; readonly burst: number }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const answer = (res: ServerResponse, status: number, body: unknown) => {
      const text = JSON.stringify(body)
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      res.end(text)
    }
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Array<Buffer> = []
      for await (const c of req) chunks.push(c as Buffer)
      const id = PATH.exec(req.url ?? "")?.[1]
      const token = /^Bearer (mk_\S+)$/.exec(req.headers.authorization ?? "")?.[1]
      if (req.method !== "PUT" || id === undefined || token === undefined)
        return answer(res, 404, { code: "NOT_FOUND" })
      const { ttl_seconds } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { ttl_seconds: number }
      const outcome = await Effect.runPromise(
        renewLeaseWithCredential(id, ttl_seconds, sha256(token), bucket).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
        ),
      )
      if (outcome._tag !== "Renewed") return answer(res, 409, { code: outcome._tag })
      answer(res, 200, {
        identity_id: id,
        generation: outcome.generation,
        expires_at: outcome.lease_expires_at.toISOString(),
      })
    }
    const server = createServer((req, res) => {
      handle(req, res).catch((e: unknown) => answer(res, 500, { code: "INTERNAL", message: String(e) }))
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () => Effect.sync(() => server.close()),
    )
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

/**
 * The client both servers get: keep-alive connections (one per closed loop), a PUT …/lease with the identity's
 * bearer. Answers 200 or 503 (the service's retryable answer when the renewal missed its 2 s bound: counted by the
 * caller as an overrun); anything else fails.
 */
export const leaseClient = (base: string, ttlSeconds: number) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => new Agent({ keepAlive: true, maxSockets: 32 })),
      (agent) => Effect.sync(() => agent.destroy()),
    ),
    (agent) => {
      const body = JSON.stringify({ ttl_seconds: ttlSeconds })
      return (id: string, token: string) =>
        Effect.async<number, Error>((resume) => {
          const req = request(
            `${base}/v1/quote-identities/${id}/lease`,
            {
              method: "PUT",
              agent,
              timeout: REQUEST_TIMEOUT_MS,
              headers: {
                authorization: `Bearer ${token}`,
                "content-type": "application/json",
                "content-length": Buffer.byteLength(body),
              },
            },
            (res) => {
              const chunks: Array<Buffer> = []
              res.on("data", (c: Buffer) => chunks.push(c))
              res.on("error", (e) => resume(Effect.fail(e)))
              res.on("end", () =>
                resume(
                  res.statusCode === 200 || res.statusCode === 503
                    ? Effect.succeed(res.statusCode)
                    : Effect.fail(new Error(`renew ${res.statusCode} ${Buffer.concat(chunks).toString("utf8")}`)),
                ),
              )
            },
          )
          req.on("timeout", () => req.destroy(new Error(`renew: no answer in ${REQUEST_TIMEOUT_MS} ms`)))
          req.on("error", (e) => resume(Effect.fail(e)))
          req.end(body)
        })
    },
  )
