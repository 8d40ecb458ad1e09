import { Metric, MetricBoundaries, MetricLabel } from "effect"

/**
 * The service's metrics (issue 17 item 2), in Effect's global registry, exported in Prometheus text format
 * on the operator listener (src/Observability/OperatorListener.ts). Counters are updated where things
 * happen; the gauges of persisted state (queues, lags, balances, rows by state) are read from the database
 * when /metrics is scraped (src/Observability/Collect.ts), so every runner reports the same figures.
 *
 * The README's "Operating" section lists them with what to alert on.
 */

const seconds = MetricBoundaries.fromIterable([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
])
const stepSeconds = MetricBoundaries.fromIterable([1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200])

// ------------------------------------------------------------------------------------------ HTTP

export const httpRequests = Metric.counter("http_requests_total", {
  description: "HTTP requests answered, by method, route template and status",
  incremental: true,
})
export const httpDuration = Metric.histogram(
  "http_request_duration_seconds",
  seconds,
  "HTTP request latency (first byte of the request to the response written), by method and route template",
)

// ------------------------------------------------------------------------------------------ relayer

const relayerEvents = (name: string, what: string) =>
  Metric.counter(name, { description: `Relayer transactions ${what}, by venue`, incremental: true })
/** By the relayer's journal kinds (src/Relayer/Transitions.ts). */
const RELAYER_COUNTERS: Record<string, Metric.Metric.Counter<number>> = {
  "tx.pending": relayerEvents("relayer_submitted_total", "signed and submitted (nonce assigned)"),
  "tx.bumped": relayerEvents("relayer_bumped_total", "re-priced: a replacement at the same nonce"),
  "tx.included": relayerEvents("relayer_included_total", "included in a block"),
  "tx.final": relayerEvents("relayer_final_total", "final and succeeded"),
  "tx.reverted": relayerEvents("relayer_reverted_total", "final as reverted (on chain or in simulation)"),
  "tx.replaced": relayerEvents("relayer_replaced_total", "whose nonce a foreign transaction consumed"),
  "tx.reorged": relayerEvents("relayer_reorged_total", "that left the chain in a reorg (back to pending)"),
}
export const countRelayerTransition = (venue: string, kind: string) => {
  const counter = RELAYER_COUNTERS[kind]
  if (counter !== undefined) bump(counter, [["venue", venue]])
}
export const relayerPending = Metric.gauge("relayer_pending", {
  description: "Relayer requests not yet included (queued or in flight), by venue and status",
})
export const relayerGasBalance = Metric.gauge("relayer_gas_balance_wei", {
  description: "The operator's native balance on the venue chain (wei), by venue",
})

// ------------------------------------------------------------------------------------------ watcher

export const watcherHeadLag = Metric.gauge("watcher_head_lag_blocks", {
  description: "Chain head minus the last indexed block, by venue",
})
export const watcherFinalizedLag = Metric.gauge("watcher_finalized_lag_blocks", {
  description: "Finalized block minus the last indexed block (0 when indexing is at finality), by venue",
})
export const watcherCheckAge = Metric.gauge("watcher_last_check_age_seconds", {
  description: "Seconds since the watcher's last successful check of the chain, by venue",
})
export const watcherReady = Metric.gauge("watcher_ready", {
  description: "1 when the chain is ready (fresh, indexed to finality, operator gas above the minimum), by venue",
})
export const watcherReorgs = Metric.counter("watcher_reorgs_total", {
  description: "Reorganisations the watcher rewound over, by venue",
  incremental: true,
})
export const watcherFaults = Metric.counter("watcher_faults_total", {
  description: "Watcher poll failures, finality violations and integrity mismatches, by venue and kind",
  incremental: true,
})

// ------------------------------------------------------------------------------------------ settlement

export const fillsByState = Metric.gauge("settlement_fills", {
  description: "Fills not final, by state (from the database at scrape time)",
})
export const fillTransitions = Metric.counter("settlement_fill_transitions_total", {
  description: "Fill state changes written by this runner, by new state",
  incremental: true,
})
export const fillStepSeconds = Metric.histogram(
  "settlement_fill_step_seconds",
  stepSeconds,
  "Seconds from a fill's creation to reaching each state, by state",
)
export const fillsWaiting = Metric.gauge("settlement_fills_waiting_seconds", {
  description: "Age of the oldest fill not final (0 when none)",
})

// ------------------------------------------------------------------------------------------ closes, withdrawals

export const closesByState = Metric.gauge("closes", { description: "Escrow closes, by state (pending is open)" })
export const closeTransitions = Metric.counter("close_transitions_total", {
  description: "Close state changes written by this runner, by new state",
  incremental: true,
})
export const withdrawalsByState = Metric.gauge("withdrawals", { description: "Withdrawals, by state" })
export const withdrawalTransitions = Metric.counter("withdrawal_transitions_total", {
  description: "Withdrawal state changes written by this runner, by new state",
  incremental: true,
})

// ------------------------------------------------------------------------------------------ stream, journal, limits

export const streamConnections = Metric.gauge("stream_connections", {
  description: "Open /v1/stream WebSocket connections on this runner, by kind (signed: with a token; anonymous)",
})
export const streamBacklog = Metric.gauge("stream_send_backlog_peak_bytes", {
  description: "Largest send backlog (bytes queued in one socket after a page write) on this runner since it started",
})
export const streamRefused = Metric.counter("stream_refused_total", {
  description: "Stream connections refused with too_many_connections on this runner",
  incremental: true,
})
export const journalUnpublished = Metric.gauge("journal_unpublished_rows", {
  description: "Journal rows committed without a cursor yet",
})
export const journalOldest = Metric.gauge("journal_oldest_unpublished_seconds", {
  description: "Age of the oldest journal row without a cursor (0 when none)",
})
export const rateLimitRefusals = Metric.counter("rate_limit_refusals_total", {
  description: "Requests refused with 429 RATE_LIMITED, by route template",
  incremental: true,
})

// ------------------------------------------------------------------------------------------ actors

export const actorRestarts = Metric.gauge("actor_restarts", {
  description: "Restarts of a singleton after a failure on this runner since it started, by actor",
})
export const actorActive = Metric.gauge("actor_active", {
  description: "1 while the singleton's body runs on this runner, by actor",
})

// ------------------------------------------------------------------------------------------ helpers

/**
 * Label arrays kept by value: Effect caches a metric's hook per label array (by identity), so reusing the
 * same array makes an update a map lookup.
 */
const labelCache = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
export const labels = (...pairs: ReadonlyArray<readonly [string, string]>): ReadonlyArray<MetricLabel.MetricLabel> => {
  let key = ""
  for (const [k, v] of pairs) key += `${k}\u0000${v}\u0001`
  let cached = labelCache.get(key)
  if (cached === undefined) {
    cached = pairs.map(([k, v]) => MetricLabel.make(k, v))
    // Bounded: label values come from route templates, venues and states, never from raw input.
    if (labelCache.size < 10_000) labelCache.set(key, cached)
  }
  return cached
}

/** Bumps a counter outside a fiber (cheap: a cached hook). */
export const bump = (counter: Metric.Metric.Counter<number>, pairs: ReadonlyArray<readonly [string, string]>, by = 1) =>
  counter.unsafeUpdate(by, labels(...pairs))
