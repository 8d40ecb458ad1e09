import { SqlClient } from "@effect/sql"
import { Clock, Effect, type Metric } from "effect"
import { Supervision } from "../Cluster/Supervision.ts"
import { AppConfig } from "../Config.ts"
import { WITHDRAWAL_STATES } from "../Domain/Withdrawal.ts"
import { chainStatusRows } from "../Escrow/ChainStatus.ts"
import { chainHealth } from "../Health/Readiness.ts"
import { journalStats } from "../Sql/Journal.ts"
import { stateTotals } from "../Sql/StateTotals.ts"
import { StreamConnections } from "../Stream/Connections.ts"
import {
  actorActive,
  actorRestarts,
  closesByState,
  fillsByState,
  fillsWaiting,
  journalOldest,
  journalUnpublished,
  labels,
  relayerGasBalance,
  relayerPending,
  streamBacklog,
  streamConnections,
  streamRefused,
  watcherCheckAge,
  watcherFinalizedLag,
  watcherHeadLag,
  watcherReady,
  withdrawalsByState,
} from "./Metrics.ts"

/**
 * The gauges of persisted state, read when /metrics is scraped: every runner reads the same rows, so any
 * runner's figures are the service's (aggregate with max(), not sum()). Each state of a kind is written,
 * 0 when it has no row, so a gauge never keeps a stale value. A read that fails leaves its gauges as
 * they were and is logged; the scrape still answers.
 */

const NONFINAL_FILL_STATES = ["signed", "locking", "locked", "paying", "paid", "claiming", "claimed"] as const
const CLOSE_STATES = ["pending", "final", "reverted", "expired"] as const
const RELAYER_OPEN = ["queued", "pending", "included"] as const

const set = (gauge: Metric.Metric.Gauge<number>, value: number, ...pairs: ReadonlyArray<readonly [string, string]>) =>
  gauge.unsafeUpdate(value, labels(...pairs))

const countsBy = <K extends string>(rows: ReadonlyArray<{ readonly k: K; readonly n: string }>) =>
  new Map(rows.map((r) => [r.k, Number(r.n)]))

const safely = <E, R>(what: string, read: Effect.Effect<void, E, R>) =>
  read.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`metrics: reading ${what} failed`, cause)))

let lastRefused = 0

export const collectGauges = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis

  const chains = safely(
    "chain status",
    Effect.gen(function* () {
      const rows = new Map((yield* chainStatusRows).map((r) => [r.venue, r]))
      for (const venue of deployment.venues) {
        const row = rows.get(venue.id)
        const v = ["venue", venue.id] as const
        set(watcherReady, chainHealth(venue, row, now).ready ? 1 : 0, v)
        if (row === undefined) continue
        const indexed = Number(row.indexedBlock)
        if (row.latestBlock !== null) set(watcherHeadLag, Math.max(0, Number(row.latestBlock) - indexed), v)
        if (row.finalizedBlock !== null) set(watcherFinalizedLag, Math.max(0, Number(row.finalizedBlock) - indexed), v)
        if (row.checkedAt !== null) set(watcherCheckAge, Math.max(0, (now - row.checkedAt.getTime()) / 1000), v)
        if (row.operatorGas !== null) set(relayerGasBalance, Number(row.operatorGas), v)
      }
    }),
  )

  const relayer = safely(
    "relayer requests",
    Effect.gen(function* () {
      const rows = yield* sql<{ venue: string; k: string; n: string }>`
        select venue, status as k, count(*)::text as n from relayer_requests
        where status in ('queued', 'pending', 'included') group by venue, status`
      for (const venue of deployment.venues) {
        const mine = countsBy(rows.filter((r) => r.venue === venue.id))
        for (const status of RELAYER_OPEN)
          set(relayerPending, mine.get(status) ?? 0, ["venue", venue.id], ["status", status])
      }
    }),
  )

  const fills = safely(
    "fills",
    Effect.gen(function* () {
      const rows = yield* sql<{ k: string; n: string; oldest: string | null }>`
        select state as k, count(*)::text as n, extract(epoch from now() - min(created_at))::text as oldest
        from fills where not final group by state`
      const by = countsBy(rows)
      for (const state of NONFINAL_FILL_STATES) set(fillsByState, by.get(state) ?? 0, ["state", state])
      set(fillsWaiting, Math.max(0, ...rows.map((r) => Number(r.oldest ?? 0))))
    }),
  )

  const states = safely(
    "closes and withdrawals",
    Effect.map(stateTotals, (totals) => {
      for (const state of CLOSE_STATES) set(closesByState, totals.get("closes")!.get(state) ?? 0, ["state", state])
      for (const state of WITHDRAWAL_STATES)
        set(withdrawalsByState, totals.get("withdrawals")!.get(state) ?? 0, ["state", state])
    }),
  )

  const journal = safely(
    "journal",
    Effect.map(journalStats, (s) => {
      set(journalUnpublished, s.unpublished)
      set(journalOldest, s.oldestUnpublishedSeconds)
    }),
  )

  yield* Effect.all([chains, relayer, fills, states, journal], { concurrency: 3, discard: true })

  // This process's own figures.
  const stream = yield* StreamConnections.stats
  set(streamConnections, stream.active - stream.anonymous, ["kind", "signed"])
  set(streamConnections, stream.anonymous, ["kind", "anonymous"])
  set(streamBacklog, stream.maxQueuedBytes)
  if (stream.refused > lastRefused) streamRefused.unsafeUpdate(stream.refused - lastRefused, [])
  lastRefused = stream.refused

  const supervision = yield* Effect.serviceOption(Supervision)
  if (supervision._tag === "Some") {
    for (const actor of yield* supervision.value.snapshot) {
      set(actorRestarts, actor.restarts, ["actor", actor.name])
      set(actorActive, actor.active ? 1 : 0, ["actor", actor.name])
    }
  }
})
