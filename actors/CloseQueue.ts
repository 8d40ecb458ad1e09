/**
 * CloseQueue (DESIGN §4): drives every accepted close to its end and with it the `closing` flag of the spec.
 *
 * Shape: a persisted queue per (owner, chain) — the `closes` table, appended to by src/Store/Closes.ts
 * `enqueueClose` under the (owner, chain) row lock of `close_queues` — drained by this one cluster singleton,
 * instead of a cluster entity per (owner, chain). The choice, and why it holds across several processes:
 * - the limit (10 pending per owner and chain), "same terms → same close" and one pending close per order are
 *   checked and written in ONE SQL transaction under that row lock, so concurrent requests on different runners
 *   serialise on the database, not on a mailbox; the unique indexes back it up;
 * - the close row, its `close.pending` journal row and its TxRelayer request (key `close:<digest>` or
 *   `close:managed:<id>`) commit together, so a crash never leaves a close without its transaction or the reverse;
 * - every transition below is a guarded UPDATE (`where state = <what was read>`) with its journal row, and the
 *   facts it reads (relayer outcome, escrow index, the clock) are durable or recomputable, so a restart, or two
 *   sweeps overlapping during a singleton hand-over, change each close exactly once.
 * An entity would add a second copy of the queue (its persisted messages) to keep consistent with these rows.
 *
 * Transitions (spec: Close by signature): pending → final when the relayed transaction is final AND the escrow
 * index holds its OrderClosed (funds in margin or the wallet, or in the owner's zero-id balance when the venue
 * refused); pending → reverted when it reverted (in simulation, no gas, or on chain) or was replaced; pending →
 * expired one minute after the CloseOffer's deadline. An expired close whose transaction ends later records that
 * end too (closing stays false).
 */
import { PgClient } from "@effect/sql-pg"
import { Clock, Duration, Effect, Queue, Schedule, Stream } from "effect"
import { settleCloses } from "../src/Store/Closes.ts"
import { RELAYER_OUTCOME_CHANNEL } from "../src/Store/Relayer.ts"
import { supervisedSingleton } from "../src/Supervision.ts"

/** Fallback pass interval (the watcher's ingest, which finality also waits for, does not notify). */
export const CLOSE_SWEEP = Duration.millis(500)

/** One pass at the Effect clock's time (tests drive expiry by running it with a later clock). */
export const sweepCloses = Effect.flatMap(Clock.currentTimeMillis, (now) => settleCloses(now))

export const runCloseQueue = Effect.gen(function* () {
  const pg = yield* PgClient.PgClient
  const wake = yield* Queue.sliding<void>(1)
  // A close's relayer outcome wakes the queue at once.
  yield* pg.listen(RELAYER_OUTCOME_CHANNEL).pipe(
    Stream.filter((key) => key.startsWith("close:")),
    Stream.runForEach(() => Queue.offer(wake, undefined)),
    Effect.retry(Schedule.spaced("1 second")),
    Effect.forkScoped,
  )
  yield* sweepCloses.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("close queue pass failed; retrying", cause)),
    Effect.zipRight(Queue.take(wake).pipe(Effect.timeout(CLOSE_SWEEP), Effect.ignore)),
    Effect.forever,
  )
}).pipe(Effect.scoped, Effect.annotateLogs({ actor: "CloseQueue" }))

export const CloseQueueLive = supervisedSingleton("close-queue", runCloseQueue)
