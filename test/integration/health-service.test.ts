/**
 * The Health service (src/Health.ts) on its Test layer: a throw-away database and the development config, no HTTP
 * and no watcher. The routes' own tests (info-health, health-alerts, chain-health) cover the wire; this proves the
 * spec's ok/degraded rule from rows alone: no status row, a latched integrity mismatch, 32 pending transactions.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { HealthDegraded, HealthOk } from "../../src/Domain/Health.ts"
import { Health } from "../../src/Health.ts"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { insertRow } from "../support/Rows.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"

const deployment = testDeployment()

/** A status row as a healthy watcher leaves it: checked now, head fresh, indexed to the finalized head, gas enough. */
const healthyRow = (venue: (typeof deployment.venues)[number]) =>
  insertRow("chain_status", {
    venue: venue.id,
    chain_id: venue.chain_id,
    latest_block: 120,
    safe_block: 110,
    finalized_block: 100,
    finalized_at: new Date(),
    head_seen_at: new Date(),
    checked_at: new Date(),
    indexed_block: 100,
    error: "",
    operator_gas: (BigInt(venue.watcher.min_operator_gas) * 10n).toString(),
  })

describe("Health service", () => {
  // The real clock: freshness is judged against the rows' database times.
  layer(Health.Test.pipe(Layer.provideMerge(testAppConfig())), { timeout: 120_000, excludeTestServices: true })(
    (it) => {
      it.effect("no watcher has run: degraded (503), each chain not ready with its error; live answers", () =>
        Effect.gen(function* () {
          const health = yield* Health
          const answer = yield* Effect.either(health.check)
          expect(Either.isLeft(answer)).toBe(true)
          const body = Either.merge(answer)
          expect(body).toBeInstanceOf(HealthDegraded)
          expect(body.status).toBe("degraded")
          expect(body.ready).toBe(false)
          expect(body.chains.map((c) => [c.venue, c.chain_id, c.ready, c.error])).toEqual(
            deployment.venues.map((v) => [v.id, v.chain_id, false, "chain watcher not running"]),
          )
          expect(body.pending_transactions).toBe(0)
          expect(body.journal_unpublished).toBe(0)
          expect(body.cluster).toEqual({ actors: [], mailbox_depth: 0, runners: [] })
          expect(body.alerts).toEqual([])
          expect(Math.abs(Date.parse(body.server_time) - Date.now())).toBeLessThan(5000)
          // The report is the same body without the status.
          const report = yield* health.report
          expect(report.ready).toBe(false)
          expect(report.chains).toEqual(body.chains)
          expect(yield* health.live).toEqual({ status: "live" })
        }),
      )

      it.effect("every chain fresh at its finalized head: ok (200); a latched mismatch or 32 pending: degraded", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const health = yield* Health
          for (const venue of deployment.venues) yield* healthyRow(venue)
          // An unpublished journal row is reported, and does not take part in readiness.
          yield* appendJournal({ kind: "probe", master: null, payload: {} })
          const ok = yield* health.check
          expect(ok).toBeInstanceOf(HealthOk)
          expect(ok.status).toBe("ok")
          expect(ok.chains.map((c) => [c.venue, c.ready, c.error, c.block, c.finalized_block])).toEqual(
            deployment.venues.map((v) => [v.id, true, "", "120", "100"]),
          )
          expect(ok.journal_unpublished).toBe(1)
          expect(ok.alerts).toEqual([])
          // A check older than the freshness window is not ready.
          const [first] = deployment.venues
          const stale = first!.watcher.freshness_seconds + 5
          yield* sql`update chain_status set checked_at = now() - make_interval(secs => ${stale}) where venue = ${first!.id}`
          const old = Either.merge(yield* Effect.either(health.check))
          expect(old.status).toBe("degraded")
          expect(old.chains.find((c) => c.venue === first!.id)?.error).toMatch(/^last successful check \d+ s ago$/)
          yield* sql`update chain_status set checked_at = now()`

          // A latched integrity mismatch on one chain: degraded, that chain not ready.
          yield* sql`update chain_status set integrity_mismatch = true, integrity_error = 'order 0x1: 5 != 4'
          where venue = ${first!.id}`
          const mismatch = Either.merge(yield* Effect.either(health.check))
          expect(mismatch.status).toBe("degraded")
          expect(mismatch.chains.map((c) => [c.venue, c.ready, c.integrity_mismatch])).toEqual(
            deployment.venues.map((v) => [v.id, v.id !== first!.id, v.id === first!.id]),
          )
          yield* sql`update chain_status set integrity_mismatch = false, integrity_error = ''`

          // The spec's queue limit: fewer than 32 pending transactions. 31 is ready, 32 is not.
          for (let i = 0; i < 31; i++) {
            yield* insertRow("relayer_requests", {
              idempotency_key: `health-probe:${i}`,
              venue: first!.id,
              status: "queued",
            })
          }
          const below = yield* health.check
          expect([below.status, below.pending_transactions]).toEqual(["ok", 31])
          yield* insertRow("relayer_requests", {
            idempotency_key: "health-probe:31",
            venue: first!.id,
            status: "pending",
          })
          const full = Either.merge(yield* Effect.either(health.check))
          expect([full.status, full.ready, full.pending_transactions]).toEqual(["degraded", false, 32])
          expect(full.chains.every((c) => c.ready)).toBe(true)
        }),
      )
    },
  )
})
