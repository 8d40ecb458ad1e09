/**
 * WithdrawalDesk (DESIGN §4): relays each signed withdrawal to its venue once, and reconciles the ones whose
 * outcome is unknown against venue evidence until they resolve.
 *
 * Shape: a persisted per-account queue (the `withdrawals` table) drained by one cluster singleton, instead of an
 * entity per venue account. Judged simpler and equally safe because every property an entity would give is
 * already a database invariant here, and the rest would be duplicated state:
 * - one withdrawal at a time per venue account: the partial unique index `withdrawals_one_open` (queued,
 *   submitting, unknown), checked under the linked-account row lock at submit; no mailbox ordering is needed;
 * - durability: a submit commits the `queued` row before answering; there is no second copy in cluster message
 *   storage to keep consistent with it;
 * - at most one send per withdrawal: a send happens only after this desk's own conditional UPDATE
 *   `queued → submitting` committed, and nothing ever moves a row back to `queued`. A `submitting` row found when
 *   a desk starts (a crash, a hand-over between runners) may or may not have been sent, so it becomes `unknown`
 *   and is reconciled by evidence, never re-sent. Two desks overlapping during a hand-over cannot both claim a row,
 *   and the outcome of a send is written only `where state = 'submitting'`, so a late writer changes nothing;
 * - an `unknown` row is never re-signed or re-sent: it becomes `relayed` when the venue's ledger shows it, or
 *   `failed` once the venue says it is absent *after* the signed transfer's nonce window closed (it can no longer
 *   land); until then it stays `unknown` and blocks the account's next withdrawal.
 */
import { Cause, Clock, Duration, Effect, Exit, Layer, Option, Schedule } from "effect"
import type { Address, Hex } from "viem"
import { AppConfig } from "../src/Config.ts"
import type { WithdrawalState } from "../src/Domain/Withdrawal.ts"
import {
  dueUnknownWithdrawals,
  queuedWithdrawals,
  scheduleCheck,
  submittingWithdrawals,
  type TransitionFields,
  transition,
  venueRefClaimed,
  type WithdrawalRow,
} from "../src/Store/Withdrawals.ts"
import { supervisedSingleton } from "../src/Supervision.ts"
import { VenueAdapters } from "../src/Venues/VenueAdapters.ts"
import { VenueAdaptersLive } from "../src/Venues/VenueAdaptersLive.ts"

const BATCH = 64

/** Retry of the start-up step: exponential with jitter, at most every 10 s. */
const exponentialCapped = Schedule.exponential("100 millis").pipe(
  Schedule.jittered,
  Schedule.union(Schedule.spaced("10 seconds")),
)

/** The desk's loop; runs until interrupted. Exported so tests can run it without a cluster. */
export const runWithdrawalDesk = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const adapters = yield* VenueAdapters
  const settings = deployment.withdrawals
  const permits = yield* Effect.makeSemaphore(settings.concurrency)
  const inFlight = new Set<string>()

  const move = (row: WithdrawalRow, from: WithdrawalState, to: WithdrawalState, fields: TransitionFields) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => transition(row.id, from, to, fields, now)).pipe(
      // A move written is logged by the store (src/Store/Withdrawals.ts) with its fields.
      Effect.tap((moved) =>
        Option.isNone(moved)
          ? Effect.logWarning("withdrawal not moved: another desk moved it first").pipe(
              Effect.annotateLogs({ withdrawal_id: row.id, from_state: from, state: to }),
            )
          : Effect.void,
      ),
    )

  /**
   * Rows left submitting by an earlier desk (a crash, a hand-over), or by a send of this one whose outcome could
   * not be recorded, may have reached the venue: unknown, reconciled by evidence, never re-sent. At start every
   * such row qualifies; later only rows no fiber here is sending, older than any send can take.
   */
  const orphanAfterMs = 2 * Math.max(...deployment.venues.map((v) => v.venue_api.request_timeout_ms)) + 60_000
  const recoverInterrupted = (olderThanMs: number) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      for (const row of yield* submittingWithdrawals) {
        if (inFlight.has(row.id)) continue
        if (olderThanMs > 0 && (row.submitted_at?.getTime() ?? 0) > now - olderThanMs) continue
        yield* move(row, "submitting", "unknown", {
          error:
            "interrupted while submitting (the service stopped or lost the outcome); reconciling against venue evidence",
          nextCheckMs: now,
        })
      }
    })

  const relay = (row: WithdrawalRow) =>
    Effect.gen(function* () {
      const adapter = adapters.get(row.venue)
      if (adapter === undefined || row.typed_data === null || row.signature === null) {
        // Never sent: failing it is safe, and the account may prepare again.
        yield* move(row, "queued", "failed", {
          error: adapter === undefined ? `the service has no API access to ${row.venue}` : "incomplete withdrawal",
        })
        return
      }
      const claimed = yield* move(row, "queued", "submitting", { submittedMs: yield* Clock.currentTimeMillis })
      if (Option.isNone(claimed)) return
      const sent = yield* adapter
        .submitWithdrawal({
          address: row.address as Address,
          typedData: row.typed_data,
          signature: row.signature as Hex,
        })
        .pipe(Effect.exit)
      const now = yield* Clock.currentTimeMillis
      // The outcome is known only here: its write is retried until it lands (a restart turns the row unknown).
      const record = (to: WithdrawalState, fields: TransitionFields) =>
        move(row, "submitting", to, fields).pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning(`withdrawal ${row.id}: recording ${to} failed`, cause)),
          Effect.retry({ schedule: exponentialCapped }),
        )
      if (Exit.isFailure(sent)) {
        const failure = Cause.failureOption(sent.cause)
        if (Option.isSome(failure)) {
          // Rejected before sending (typed data not the adapter's, no agent key): nothing reached the venue.
          const e = failure.value
          yield* record("failed", {
            error: e._tag === "AgentUnavailable" ? `no agent for the account: ${e.reason}` : e.reason,
          })
        } else if (!Cause.isInterruptedOnly(sent.cause)) {
          // A defect mid-send: it may have left.
          yield* record("unknown", { error: "the send failed unexpectedly", nextCheckMs: now + settings.reconcile_ms })
        }
        // Interrupted (shutdown, hand-over): left submitting for the next desk to turn unknown.
        return
      }
      const result = sent.value
      switch (result._tag) {
        case "Acknowledged":
          yield* record("relayed", { venueRef: result.venueRef, relayedMs: now })
          return
        case "Refused":
          yield* record("failed", {
            error: result.sent ? `refused by the venue (${result.code}): ${result.error}` : `not sent: ${result.error}`,
          })
          return
        case "Unknown":
          yield* record("unknown", { error: result.reason, nextCheckMs: now + settings.reconcile_ms })
          return
      }
    })

  const reconcile = (row: WithdrawalRow) =>
    Effect.gen(function* () {
      const later = (note: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          scheduleCheck(
            row.id,
            now + Math.min(settings.reconcile_ms * 2 ** Math.min(row.checks, 16), settings.reconcile_max_ms),
            note,
          ),
        )
      const adapter = adapters.get(row.venue)
      if (adapter === undefined || row.nonce === null) return yield* later("")
      const evidence = yield* adapter.findEvidence({
        address: row.address as Address,
        nonce: Number(row.nonce),
        amountBaseUnits: BigInt(row.amount),
        destination: row.destination as Address,
      })
      switch (evidence._tag) {
        case "Found": {
          // A ref already attributed to another withdrawal of the account is not evidence for this one.
          if (yield* venueRefClaimed(row.venue, row.address, evidence.venueRef, row.id)) return yield* later("")
          yield* move(row, "unknown", "relayed", {
            venueRef: evidence.venueRef,
            relayedMs: yield* Clock.currentTimeMillis,
            error: "",
          })
          return
        }
        case "NotFound":
          if (evidence.checkedAtMs > evidence.replayableUntilMs) {
            yield* move(row, "unknown", "failed", {
              error:
                "the venue never applied it, and the signed transfer can no longer be accepted (nonce window passed)",
            })
            return
          }
          return yield* later("")
        case "Unavailable":
          return yield* later("")
      }
    })

  /** Runs `work` for `row` in the background unless the row is already being handled here. */
  const dispatch = <R>(row: WithdrawalRow, work: (row: WithdrawalRow) => Effect.Effect<void, unknown, R>) =>
    inFlight.has(row.id)
      ? Effect.void
      : Effect.sync(() => inFlight.add(row.id)).pipe(
          Effect.zipRight(
            permits
              .withPermits(1)(work(row))
              .pipe(
                Effect.catchAllCause((cause) =>
                  Cause.isInterruptedOnly(cause)
                    ? Effect.void
                    : Effect.logWarning(`withdrawal ${row.id}: desk step failed; retrying later`, cause),
                ),
                Effect.ensuring(Effect.sync(() => inFlight.delete(row.id))),
                Effect.forkScoped,
              ),
          ),
        )

  let lastSweepMs = 0
  const tick = Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    if (start - lastSweepMs >= 10_000) {
      lastSweepMs = start
      yield* recoverInterrupted(orphanAfterMs)
    }
    for (const row of yield* queuedWithdrawals(BATCH)) yield* dispatch(row, relay)
    const now = yield* Clock.currentTimeMillis
    for (const row of yield* dueUnknownWithdrawals(now, BATCH)) yield* dispatch(row, reconcile)
  })

  yield* recoverInterrupted(0).pipe(
    Effect.tapErrorCause((cause) => Effect.logError("withdrawal desk: recovering submitting rows failed", cause)),
    Effect.retry({ schedule: exponentialCapped }),
  )
  yield* tick.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("withdrawal desk tick failed; retrying", cause)),
    Effect.zipRight(Effect.sleep(Duration.millis(settings.poll_ms))),
    Effect.forever,
  )
}).pipe(Effect.scoped, Effect.annotateLogs({ actor: "WithdrawalDesk" }))

export const WithdrawalDeskLive = supervisedSingleton("withdrawal-desk", runWithdrawalDesk).pipe(
  Layer.provide(VenueAdaptersLive),
)
