/**
 * WithdrawalDesk (DESIGN §4, issue 22 item 1): one entity per linked venue account, id "venue:address"
 * (lowercase address), that relays each signed withdrawal of that account to its venue once, and reconciles the
 * ones whose outcome is unknown against venue evidence until they resolve. Built on the keyed loop
 * (actors/Keyed.ts); the database stays the truth.
 * - `Submit` (persisted intent): the Withdrawals service (src/Withdrawals.ts) has verified the signed
 *   preparation and answered an identical repeat from a lookup by preparation BEFORE sending; the entity runs
 *   src/Withdrawals/Repo.ts `createWithdrawal` (one transaction under the linked-account row lock: the `queued`
 *   row and its journal row) and replies the withdrawal's id, or ChallengeExpired / NotFound / WithdrawalPending
 *   from the error catalogue. Primary key: the preparation's digest and the new withdrawal's id (a refusal is the
 *   answer of that moment, never replayed to a later retry; the preparation's unique withdrawal de-duplicates).
 * - One withdrawal at a time per account: the partial unique index `withdrawals_one_open` (queued, submitting,
 *   unknown), checked under the linked-account row lock at submit.
 * - At most one send per withdrawal: a send happens only after this desk's own conditional UPDATE
 *   `queued → submitting` committed, and nothing ever moves a row back to `queued`. A `submitting` row found by a
 *   new desk instance (a crash, a move between runners, an entity restart: its first pass) may or may not have
 *   been sent, so it becomes `unknown` and is reconciled by evidence, never re-sent; later passes do the same for
 *   a row no send of this instance holds, older than any send can take. Two instances overlapping during a move
 *   cannot both claim a row, and the outcome of a send is written only `where state = 'submitting'`, so a late
 *   writer changes nothing.
 * - An `unknown` row is never re-signed or re-sent: it becomes `relayed` when the venue's ledger shows it, or
 *   `failed` once the venue says it is absent *after* the signed transfer's nonce window closed (it can no longer
 *   land); until then it stays `unknown` and blocks the account's next withdrawal.
 * - Cadence: a pass every `withdrawals.poll_ms` while the account has an open withdrawal, at once after a submit
 *   or a send's outcome, and the keyed loop's persisted backstop tick after a crash. Sends and evidence checks run
 *   beside the loop (in the entity's scope), so a slow venue never holds the pass.
 */
import { Entity } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Effect, Exit, Layer, Option, Schedule } from "effect"
import type { Address, Hex } from "viem"
import { VenueAdaptersLive } from "../src/Accounts/VenueAdaptersLive.ts"
import { withRequestIdOf } from "../src/Cluster/Keyed.ts"
import { AppConfig } from "../src/Config.ts"
import { ChallengeExpired, NotFound, WithdrawalPending } from "../src/Domain/Errors.ts"
import type { WithdrawalState } from "../src/Domain/Withdrawal.ts"
import { VenueAdapters } from "../src/Venues/VenueAdapters.ts"
import { WithdrawalDesk, type WithdrawalIntent, withdrawalDeskId } from "../src/Withdrawals/Desk.ts"
import {
  accountHasOpenWithdrawal,
  accountsWithOpenWithdrawals,
  claimedVenueRefs,
  createWithdrawal,
  dueUnknownWithdrawals,
  findPreparationByDigest,
  queuedWithdrawals,
  scheduleCheck,
  submittingWithdrawals,
  type TransitionFields,
  transition,
  type VenueAccount,
  venueRefClaimed,
  type WithdrawalRow,
} from "../src/Withdrawals/Repo.ts"
import { withdrawalView } from "../src/Withdrawals/View.ts"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "./Keyed.ts"

const BATCH = 64

/** Retry of an outcome's write: exponential with jitter, at most every 10 s. */
const exponentialCapped = Schedule.exponential("100 millis").pipe(
  Schedule.jittered,
  Schedule.union(Schedule.spaced("10 seconds")),
)

/** How long a send is retried while the service cannot read the account's agent (nothing sent meanwhile). */
const TRANSIENT_AGENT_RETRY = "2 minutes"

const accountOf = (id: string): VenueAccount => {
  const at = id.lastIndexOf(":")
  return { venue: id.slice(0, at), address: id.slice(at + 1) }
}

/** The accounts with an open withdrawal (start-up and periodic adoption wake their desks). */
export const pendingKeys = Effect.map(accountsWithOpenWithdrawals, (accounts) =>
  accounts.map((a) => withdrawalDeskId(a.venue, a.address)),
)

/** Queues a verified preparation's withdrawal on this account (see the header). */
const submit = (id: string, intent: typeof WithdrawalIntent.Type) =>
  Effect.gen(function* () {
    const found = yield* findPreparationByDigest(intent.digest)
    if (Option.isNone(found)) return yield* new NotFound({ message: "no such withdrawal preparation" })
    const prep = found.value
    if (withdrawalDeskId(prep.venue, prep.address) !== id) {
      return yield* Effect.dieMessage(`withdrawal desk ${id}: a preparation of ${prep.venue}:${prep.address}`)
    }
    const now = yield* Clock.currentTimeMillis
    const outcome = yield* createWithdrawal({
      id: intent.id,
      preparation: prep,
      signature: intent.signature,
      nowMs: now,
      expired: prep.expires_at.getTime() <= now,
    })
    switch (outcome._tag) {
      case "Created":
      case "Existing":
        return withdrawalView(outcome.row)
      case "Expired":
        return yield* new ChallengeExpired({ message: "the preparation expired; prepare and sign again" })
      case "NotLinked":
        return yield* new NotFound({ message: "the account that prepared this withdrawal is no longer linked" })
      case "Pending":
        return yield* new WithdrawalPending({
          message: `withdrawal ${outcome.id} on ${prep.venue} is still open; it must resolve first`,
        })
    }
  }).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))

const EntityLive = WithdrawalDesk.toLayer(
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const adapters = yield* VenueAdapters
    const sql = yield* SqlClient.SqlClient
    const scope = yield* Effect.scope
    const settings = deployment.withdrawals
    const { entityId } = yield* Entity.CurrentAddress
    const account = accountOf(entityId)
    /** Withdrawals a fiber of this instance is sending or checking. */
    const inFlight = new Set<string>()
    /** Set once the driver exists: a finished send or check asks for a pass. */
    let wake: Effect.Effect<void> = Effect.void

    const move = (row: WithdrawalRow, from: WithdrawalState, to: WithdrawalState, fields: TransitionFields) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => transition(row.id, from, to, fields, now)).pipe(
        // A move written is logged by the store (src/Withdrawals/Repo.ts) with its fields.
        Effect.tap((moved) =>
          Option.isNone(moved)
            ? Effect.logWarning("withdrawal not moved: another desk moved it first").pipe(
                Effect.annotateLogs({ withdrawal_id: row.id, from_state: from, state: to }),
              )
            : Effect.void,
        ),
      )

    /**
     * Rows left submitting by an earlier desk (a crash, a move, an entity restart), or by a send of this one whose
     * outcome could not be recorded, may have reached the venue: unknown, reconciled by evidence, never re-sent.
     * At this instance's first pass every such row qualifies; later only rows no fiber here is sending, older
     * than any send can take.
     */
    const orphanAfterMs = 2 * Math.max(...deployment.venues.map((v) => v.venue_api.request_timeout_ms)) + 60_000
    const recoverInterrupted = (olderThanMs: number) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        for (const row of yield* submittingWithdrawals(account)) {
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
          .pipe(
            // The service could not read or open the account's agent (its store or keyring): nothing was sent, so
            // the send is tried again for a while (TRANSIENT_AGENT_RETRY) before the withdrawal fails.
            Effect.retry({
              while: (e) => e._tag === "AgentUnavailable" && e.transient === true,
              schedule: exponentialCapped.pipe(Schedule.upTo(TRANSIENT_AGENT_RETRY)),
            }),
            Effect.exit,
          )
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
              error:
                e._tag !== "AgentUnavailable"
                  ? e.reason
                  : e.transient
                    ? `the service could not read the account's agent approval (${e.reason}); nothing was sent, prepare again`
                    : `no agent for the account: ${e.reason}`,
            })
          } else if (!Cause.isInterruptedOnly(sent.cause)) {
            // A defect mid-send: it may have left.
            yield* record("unknown", {
              error: "the send failed unexpectedly",
              nextCheckMs: now + settings.reconcile_ms,
            })
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
              error: result.sent
                ? `refused by the venue (${result.code}): ${result.error}`
                : `not sent: ${result.error}`,
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
          claimedRefs: yield* claimedVenueRefs(row.venue, row.address, row.id),
        })
        switch (evidence._tag) {
          case "Found": {
            // Claimed refs were excluded; one claimed since (a race) is not evidence for this one either.
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

    /** Runs `work` for `row` beside the loop (in the entity's scope) unless the row is already being handled here. */
    const dispatch = (
      row: WithdrawalRow,
      work: (row: WithdrawalRow) => Effect.Effect<void, unknown, SqlClient.SqlClient>,
    ) =>
      inFlight.has(row.id)
        ? Effect.void
        : Effect.sync(() => inFlight.add(row.id)).pipe(
            Effect.zipRight(
              work(row).pipe(
                Effect.provideService(SqlClient.SqlClient, sql),
                Effect.catchAllCause((cause) =>
                  Cause.isInterruptedOnly(cause)
                    ? Effect.void
                    : Effect.logWarning(`withdrawal ${row.id}: desk step failed; retrying later`, cause),
                ),
                Effect.ensuring(
                  Effect.suspend(() =>
                    Effect.zipRight(
                      Effect.sync(() => inFlight.delete(row.id)),
                      wake,
                    ),
                  ),
                ),
                Effect.forkIn(scope),
              ),
            ),
          )

    let firstPass = true
    let lastSweepMs = 0
    /** One pass over this account's rows: orphans, queued rows to send, unknown rows due for a check. */
    const step = (_id: string) =>
      Effect.gen(function* () {
        const start = yield* Clock.currentTimeMillis
        if (firstPass || start - lastSweepMs >= 10_000) {
          yield* recoverInterrupted(firstPass ? 0 : orphanAfterMs)
          firstPass = false
          lastSweepMs = start
        }
        for (const row of yield* queuedWithdrawals(account, BATCH)) yield* dispatch(row, relay)
        const now = yield* Clock.currentTimeMillis
        for (const row of yield* dueUnknownWithdrawals(account, now, BATCH)) yield* dispatch(row, reconcile)
        return (yield* accountHasOpenWithdrawal(account)) ? again(settings.poll_ms) : idle
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

    const drive = yield* keyedDriver(WithdrawalDesk, step)
    wake = drive.wake
    return {
      Wake: drive.onWake,
      Tick: drive.onTick,
      Submit: ({ payload, headers }) =>
        submit(drive.id, payload).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.ensuring(drive.wake),
          withRequestIdOf(headers),
          Effect.annotateLogs({ actor: "withdrawal-desk", key: drive.id }),
        ),
    }
  }),
  keyedEntityOptions,
)

export const WithdrawalDeskLive = Layer.merge(EntityLive, keyedAdoption(WithdrawalDesk, pendingKeys)).pipe(
  Layer.provide(VenueAdaptersLive),
)
