/**
 * CloseQueue (DESIGN §4, issue 22 item 1): one entity per (owner, chain), id "owner:chainId", that drives that
 * queue's accepted closes to their end and with them the `closing` flag of the spec. Built on the keyed loop
 * (actors/Keyed.ts); the database stays the truth.
 *
 * - `Enqueue` (persisted intent): the Escrow service (src/Escrow.ts) has checked the request and
 *   answered an identical repeat from a lookup by digest (or by the managed close's terms) BEFORE sending; the
 *   entity runs src/Escrow/Closes.ts `enqueueClose`: in ONE transaction under the (owner, chain) row lock of
 *   `close_queues`, the limit (10 pending), "same terms → same close", one pending close per order, the close
 *   row, its `close.pending` journal row and its TxRelayer request (key `close:<digest>` or
 *   `close:managed:<id>`). Its answer is the reply: the close, or ClosePending / CloseLimit / StateConflict from
 *   the error catalogue. The message's primary key is the relay key and the new close's id: a refusal (limit,
 *   pending) is the answer of that moment, never replayed to a later retry of the same terms (which the
 *   database de-duplicates: the unique digest index, the lock), while a redelivery after a crash is the same
 *   message. A transient failure dies (never stored as the reply); the handler is idempotent (the transaction
 *   either committed — the retry's lookup finds the close — or did not).
 * - The loop's pass (`stepCloseQueue`) is the old sweep restricted to this key: pending → final when the relayed
 *   transaction is final AND the escrow index holds its OrderClosed (funds in margin or the wallet, or in the
 *   owner's zero-id balance when the venue refused); pending → reverted when it reverted (in simulation, no gas,
 *   or on chain) or was replaced; pending → expired one minute after the CloseOffer's deadline. An expired close
 *   whose transaction ends later records that end too (closing stays false). Every transition is a guarded
 *   UPDATE (`where state = <what was read>`) with its journal row, so two instances overlapping during a shard
 *   move, or a pass after a crash, change each close exactly once.
 * - Cadence: every CLOSE_SWEEP while the queue has an open close (the watcher's ingest, which finality waits
 *   for, does not notify), at once on a close's relayer outcome (`pg_notify` on the relayer's outcome channel,
 *   turned into a `wakeKeyed` of the close's queue by every runner's listener below), and the persisted backstop
 *   tick of the keyed loop after a crash.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Option } from "effect"
import type { Address, Hex } from "viem"
import { withRequestIdOf } from "../src/Cluster/Keyed.ts"
import { wakeOnNotify, wakeOwned } from "../src/Cluster/KeyedWakes.ts"
import { CloseLimit, ClosePending, StateConflict } from "../src/Domain/Errors.ts"
import { type CloseIntent, CloseQueue, closeQueueId } from "../src/Escrow/CloseQueue.ts"
import {
  type CloseQueueKey,
  closeQueueOfRelayKey,
  closeQueueOpen,
  type EnqueueOutcome,
  enqueueClose,
  openCloseQueues,
  settleCloses,
} from "../src/Escrow/Closes.ts"
import { parseRelayerOutcome, RELAYER_OUTCOME_CHANNEL, UNENDED_TRANSITIONS } from "../src/Relayer/Transitions.ts"
import { Relayer } from "../src/Relayer.ts"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "./Keyed.ts"

/** Pass interval while the queue has an open close. */
export const CLOSE_SWEEP = Duration.millis(500)

const keyOf = (id: string): CloseQueueKey => {
  const at = id.lastIndexOf(":")
  return { owner: id.slice(0, at), chainId: Number(id.slice(at + 1)) }
}

/** One pass of queue `id` at the Effect clock's time (tests drive expiry by running it with a later clock). */
export const stepCloseQueue = (id: string) =>
  Effect.gen(function* () {
    const key = keyOf(id)
    yield* settleCloses(yield* Clock.currentTimeMillis, 500, key)
    return (yield* closeQueueOpen(key)) ? again(CLOSE_SWEEP) : idle
  })

/** The queues with a close to move on (start-up adoption wakes them). */
export const pendingKeys = Effect.map(openCloseQueues, (keys) => keys.map((k) => closeQueueId(k.owner, k.chainId)))

const answerOf = (outcome: EnqueueOutcome) => {
  switch (outcome._tag) {
    case "Created":
    case "Existing": {
      const r = outcome.row
      return Effect.succeed({
        id: r.id,
        venue: r.venue,
        escrow_version: r.escrow_version,
        order_id: r.order_id,
        owner: r.owner,
        state: r.state,
      })
    }
    case "Pending":
      return Effect.fail(new ClosePending({ message: `close ${outcome.row.id} of this order is pending` }))
    case "Limit":
      return Effect.fail(
        new CloseLimit({ message: "10 closes of this owner are pending on this chain; wait for one to end" }),
      )
    case "NonceUsed":
      return Effect.fail(
        new StateConflict({ message: "this nonce was used by another close of the owner; prepare again" }),
      )
  }
}

/** Accepts one close in queue `id`'s transaction (see the header). */
const enqueue = (relayer: Relayer, c: CloseIntent) =>
  Effect.gen(function* () {
    const relay = relayer
      .submit({
        idempotencyKey: c.relayKey,
        venue: c.venue,
        to: c.escrow as Address,
        data: c.data as Hex,
        master: c.master,
      })
      .pipe(
        Effect.catchTags({
          IdempotencyConflict: () =>
            Effect.fail(new StateConflict({ message: "this close is already relayed with other calldata" })),
          RelayerRejected: (e) => Effect.dieMessage(`close call not relayable: ${e.reason}`),
        }),
      )
    const outcome = yield* enqueueClose({ ...c, nowMs: yield* Clock.currentTimeMillis }, relay).pipe(
      Effect.catchTag("SqlError", (e) => Effect.die(e)),
    )
    return yield* answerOf(outcome)
  })

const EntityLive = CloseQueue.toLayer(
  Effect.gen(function* () {
    const relayer = yield* Relayer
    const sql = yield* SqlClient.SqlClient
    const drive = yield* keyedDriver(CloseQueue, stepCloseQueue)
    return {
      Wake: drive.onWake,
      Tick: drive.onTick,
      Enqueue: ({ payload, headers }) =>
        enqueue(relayer, payload).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.ensuring(drive.wake),
          withRequestIdOf(headers),
          Effect.annotateLogs({ actor: "close-queue", key: drive.id }),
        ),
    }
  }),
  keyedEntityOptions,
)

/**
 * This runner's listener of relayer outcomes: a close's end (its request final, reverted or replaced) wakes its
 * queue's entity at once when this runner holds its shard (every runner hears every notification; the owner's
 * listener wakes it). A lost wake costs only the cadence (CLOSE_SWEEP).
 */
const OutcomeWakes = wakeOnNotify("close-queue", RELAYER_OUTCOME_CHANNEL, (payload) => {
  const { kind, key } = parseRelayerOutcome(payload)
  // A close moves on its request's end only (final, reverted, replaced); it waits through the other transitions.
  return key.startsWith("close:") && !UNENDED_TRANSITIONS.includes(kind)
    ? Effect.flatMap(closeQueueOfRelayKey(key), (queue) =>
        wakeOwned(CloseQueue, Option.toArray(Option.map(queue, (k) => closeQueueId(k.owner, k.chainId)))),
      )
    : Effect.void
})

export const CloseQueueLive = Layer.mergeAll(EntityLive, OutcomeWakes, keyedAdoption(CloseQueue, pendingKeys))
