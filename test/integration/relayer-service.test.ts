/**
 * The Relayer service (src/Relayer.ts) on its Test layer: a throw-away database and the development config, no
 * chain and no TxRelayer. chain-relayer.test.ts drives the relayer against a real chain; this proves the outbox's
 * front door alone: a request is one row per idempotency key (a repeat answers the same request, a different
 * request under the key is a conflict), what is not relayable is refused with nothing written, a new request's row,
 * journal entry and wake-ups are written together, and a waiter wakes on the relayer's outcome notification.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Queue } from "effect"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { markFinalBatch, markIncludedBatch, markSimulatedRevert, requestByKey } from "../../src/Relayer/Repo.ts"
import { RELAYER_OUTCOME_CHANNEL, RELAYER_QUEUED_CHANNEL } from "../../src/Relayer/Transitions.ts"
import { Relayer } from "../../src/Relayer.ts"
import { JOURNAL_PENDING_CHANNEL } from "../../src/Sql/Journal.ts"
import { listenLive } from "../support/Listen.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"

const deployment = testDeployment()
const venue = deployment.venues[0]!
const escrow = venue.escrow as Address
const cancelLock = (n: number): Hex =>
  encodeFunctionData({
    abi: settlementEscrowAbi,
    functionName: "cancelLock",
    args: [`0x${n.toString(16).padStart(64, "0")}`],
  })

/** The failure a call ended with (its tag and fields), or undefined when it succeeded or died. */
const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as Record<string, unknown>) : undefined

const counts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ requests: number; journal: number }>`
    select (select count(*)::int from relayer_requests) as requests,
           (select count(*)::int from journal where kind like 'tx.%') as journal`
  return row!
})

describe("Relayer service", () => {
  // The real clock: waits run against the database's notifications.
  layer(Relayer.Test.pipe(Layer.provideMerge(testAppConfig())), { timeout: 120_000, excludeTestServices: true })(
    (it) => {
      it.effect("refuses what is not relayable, writing nothing", () =>
        Effect.gen(function* () {
          const relayer = yield* Relayer
          const ok = { idempotencyKey: "svc:refused", venue: venue.id, to: escrow, data: cancelLock(1) }
          const refusals: Array<[Parameters<typeof relayer.submit>[0], string]> = [
            [{ ...ok, venue: "nowhere" }, "unknown venue nowhere"],
            [{ ...ok, idempotencyKey: "" }, "the idempotency key must be 1 to 200 printable characters"],
            [{ ...ok, idempotencyKey: "has space" }, "the idempotency key must be 1 to 200 printable characters"],
            [{ ...ok, idempotencyKey: "k".repeat(201) }, "the idempotency key must be 1 to 200 printable characters"],
            [{ ...ok, data: "0x123" as Hex }, "calldata must be even-length hex"],
            [
              { ...ok, to: venue.token as Address },
              `${venue.token} ${cancelLock(1).slice(0, 10)} is not an allowlisted contract function on ${venue.id}`,
            ],
            [
              { ...ok, data: "0xdeadbeef" },
              `${escrow} 0xdeadbeef is not an allowlisted contract function on ${venue.id}`,
            ],
          ]
          for (const [request, reason] of refusals) {
            expect(failureOf(yield* Effect.exit(relayer.submit(request)))).toMatchObject({
              _tag: "RelayerRejected",
              reason,
            })
          }
          expect(yield* counts).toEqual({ requests: 0, journal: 0 })
          expect(yield* relayer.status("svc:refused")).toEqual(Option.none())
          expect(failureOf(yield* Effect.exit(relayer.awaitOutcome("svc:refused")))).toMatchObject({
            _tag: "UnknownRequest",
            idempotencyKey: "svc:refused",
          })
        }),
      )

      it.effect("one request per key: a repeat answers the same request, a different one under the key conflicts", () =>
        Effect.gen(function* () {
          const relayer = yield* Relayer
          const before = yield* counts
          const master = "0xAbCdEf0000000000000000000000000000000001"
          const request = { idempotencyKey: "svc:cancel:2", venue: venue.id, to: escrow, data: cancelLock(2), master }
          const first = yield* relayer.submit(request)
          expect(first).toMatchObject({
            idempotencyKey: "svc:cancel:2",
            venue: venue.id,
            status: "queued",
            functionName: "cancelLock",
            nonce: null,
            txHash: null,
            attempts: [],
            simulated: false,
          })
          // The same request again (addresses and hex in another case are the same request): the same answer.
          expect(yield* relayer.submit(request)).toEqual(first)
          expect(
            yield* relayer.submit({
              ...request,
              to: escrow.toUpperCase().replace("0X", "0x") as Address,
              data: request.data.toUpperCase().replace("0X", "0x") as Hex,
            }),
          ).toEqual(first)
          expect(yield* counts).toEqual({ requests: before.requests + 1, journal: before.journal + 1 })
          const row = yield* requestByKey("svc:cancel:2")
          expect([row?.master, row?.target, row?.calldata]).toEqual([
            master.toLowerCase(),
            escrow.toLowerCase(),
            request.data,
          ])

          // Another call, value or venue under the same key: a conflict, and the stored request is unchanged.
          for (const other of [
            { ...request, data: cancelLock(3) },
            { ...request, value: 1n },
            { ...request, venue: deployment.venues[1]!.id, to: deployment.venues[1]!.escrow as Address },
          ]) {
            expect(failureOf(yield* Effect.exit(relayer.submit(other)))).toEqual(
              expect.objectContaining({ _tag: "IdempotencyConflict", idempotencyKey: "svc:cancel:2" }),
            )
          }
          expect(yield* counts).toEqual({ requests: before.requests + 1, journal: before.journal + 1 })
          expect(yield* requestByKey("svc:cancel:2")).toEqual(row)
          expect(yield* relayer.status("svc:cancel:2")).toEqual(Option.some(first))
        }),
      )

      it.effect("a new request's row, its journal entry and its three wake-ups commit together, or not at all", () =>
        Effect.gen(function* () {
          const relayer = yield* Relayer
          const sql = yield* SqlClient.SqlClient
          const heard = yield* Queue.unbounded<string>()
          for (const channel of [RELAYER_QUEUED_CHANNEL, RELAYER_OUTCOME_CHANNEL, JOURNAL_PENDING_CHANNEL]) {
            yield* listenLive(channel, (payload) => Queue.offer(heard, `${channel}: ${payload}`))
          }
          const request = { idempotencyKey: "svc:cancel:5", venue: venue.id, to: escrow, data: cancelLock(5) }
          // Inside a transaction that rolls back: no row, no journal entry, no wake-up.
          const before = yield* counts
          yield* sql
            .withTransaction(Effect.zipRight(relayer.submit(request), Effect.fail("roll back")))
            .pipe(Effect.ignore)
          expect(yield* counts).toEqual(before)
          yield* relayer.submit(request)
          const wakes = yield* Effect.forEach([1, 2, 3], () => Queue.take(heard).pipe(Effect.timeout("5 seconds")))
          expect(wakes.sort()).toEqual([
            `${JOURNAL_PENDING_CHANNEL}: 1`,
            `${RELAYER_OUTCOME_CHANNEL}: tx.queued svc:cancel:5`,
            `${RELAYER_QUEUED_CHANNEL}: ${venue.id}`,
          ])
          expect(yield* Queue.size(heard)).toBe(0)
          const journal = yield* sql<{ kind: string; master: string | null; payload: unknown }>`
            select kind, master, payload from journal where payload->>'key' = 'svc:cancel:5'`
          expect(journal).toEqual([
            {
              kind: "tx.queued",
              master: null,
              payload: {
                key: "svc:cancel:5",
                venue: venue.id,
                chain_id: venue.chain_id,
                function: "cancelLock",
                target: escrow.toLowerCase(),
                status: "queued",
              },
            },
          ])
        }).pipe(Effect.scoped),
      )

      it.effect("a waiter times out while the request is queued, and wakes on its outcome", () =>
        Effect.gen(function* () {
          const relayer = yield* Relayer
          const request = { idempotencyKey: "svc:cancel:4", venue: venue.id, to: escrow, data: cancelLock(4) }
          yield* relayer.submit(request)
          expect(
            failureOf(yield* Effect.exit(relayer.awaitOutcome("svc:cancel:4", { timeout: "300 millis" }))),
          ).toMatchObject({ _tag: "OutcomeTimeout", idempotencyKey: "svc:cancel:4", status: "queued" })
          const waiter = yield* Effect.fork(relayer.awaitOutcome("svc:cancel:4", { timeout: "30 seconds" }))
          // The TxRelayer's simulation finds a revert: the request ends, nothing was sent.
          const row = yield* requestByKey("svc:cancel:4")
          yield* markSimulatedRevert(row!, "NotLocked(0x04)")
          const outcome = yield* Fiber.join(waiter)
          expect(outcome).toMatchObject({
            idempotencyKey: "svc:cancel:4",
            status: "reverted",
            simulated: true,
            revertReason: "NotLocked(0x04)",
            txHash: null,
          })
          // A repeat of the ended request answers its outcome; it is not queued again.
          expect(yield* relayer.submit(request)).toEqual(outcome)
        }),
      )

      it.effect(
        "a batch of transitions writes journal rows and wake-ups for the requests it moved only, in order",
        () =>
          Effect.gen(function* () {
            const relayer = yield* Relayer
            const sql = yield* SqlClient.SqlClient
            const heard = yield* Queue.unbounded<string>()
            yield* listenLive(RELAYER_OUTCOME_CHANNEL, (payload) => Queue.offer(heard, payload))
            const keys = ["svc:batch:1", "svc:batch:2", "svc:batch:3"]
            for (const [i, key] of keys.entries()) {
              yield* relayer.submit({ idempotencyKey: key, venue: venue.id, to: escrow, data: cancelLock(20 + i) })
            }
            yield* Effect.forEach(keys, () => Queue.take(heard)) // their tx.queued wake-ups
            // 1 and 3 were sent; 2 is still queued, so a relayer that thinks it was sent is stale for it.
            yield* sql`update relayer_requests set status = 'pending', nonce = 900 + id
            where idempotency_key in ('svc:batch:1', 'svc:batch:3')`
            const rows = yield* Effect.forEach(keys, (k) => requestByKey(k).pipe(Effect.map((r) => r!)))
            const receipt = (n: number) => ({
              txHash: `0x${n.toString(16).padStart(64, "0")}` as Hex,
              blockNumber: 7n,
              blockHash: `0x${"b".repeat(64)}` as Hex,
              gasUsed: 21_000n,
              success: true,
            })
            const at = new Date()
            const included = rows.map((request, i) => ({ request, receipt: receipt(i + 1) }))
            // Listed 3, 2, 1: the rows follow the list, not the ids.
            expect(yield* markIncludedBatch(included.slice().reverse(), at)).toBe(2)
            const journal = sql<{ kind: string; key: string }>`
            select kind, payload->>'key' as key from journal where payload->>'key' like 'svc:batch:%'
            and kind <> 'tx.queued' order by id`
            expect(yield* journal).toEqual([
              { kind: "tx.included", key: "svc:batch:3" },
              { kind: "tx.included", key: "svc:batch:1" },
            ])
            const fresh = yield* Effect.forEach(keys, (k) => requestByKey(k).pipe(Effect.map((r) => r!)))
            const finals = fresh.map((request) => ({ request, success: true, reason: null }))
            expect(yield* markFinalBatch(finals, at)).toBe(2)
            // A repeat (a stale relayer) moves nothing and writes nothing.
            expect(yield* markFinalBatch(finals, at)).toBe(0)
            expect((yield* journal).map((j) => `${j.kind} ${j.key}`)).toEqual([
              "tx.included svc:batch:3",
              "tx.included svc:batch:1",
              "tx.final svc:batch:1",
              "tx.final svc:batch:3",
            ])
            const wakes = yield* Effect.forEach([1, 2, 3, 4], () => Queue.take(heard).pipe(Effect.timeout("5 seconds")))
            expect(wakes).toEqual([
              "tx.included svc:batch:3",
              "tx.included svc:batch:1",
              "tx.final svc:batch:1",
              "tx.final svc:batch:3",
            ])
            yield* Effect.sleep("200 millis")
            expect(yield* Queue.size(heard)).toBe(0)
            expect((yield* requestByKey("svc:batch:2"))!.status).toBe("queued")
          }).pipe(Effect.scoped),
      )
    },
  )
})
