import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Clock, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import type { Hex, TransactionReceipt } from "viem"
import { isTerminal } from "../src/Chain/Failure.ts"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
import { decidePending, replacementFees } from "../src/Chain/RelayerPolicy.ts"
import { passLoop } from "../src/Cluster/PassLoop.ts"
import { supervisedSingleton } from "../src/Cluster/Supervision.ts"
import { AppConfig, type VenueConfig } from "../src/Config.ts"
import {
  addAttempt,
  allocateAndPersist,
  attemptsOf,
  markFinalBatch,
  markIncludedBatch,
  markReorged,
  markReplaced,
  markSimulatedRevert,
  openRequests,
  queuedRequests,
  type ReceiptFacts,
  recordBroadcasts,
  recordRequestError,
} from "../src/Relayer/Repo.ts"
import type { AttemptRow, RequestRow } from "../src/Relayer/Rows.ts"
import { RELAYER_QUEUED_CHANNEL } from "../src/Relayer/Transitions.ts"
import { type Heads, makeRelayerChain, receiptFacts, type Simulation } from "./TxRelayerChain.ts"

/**
 * TxRelayer: one cluster singleton per (venue, operator key), the only signer of its requests. Venues on one chain
 * share the operator's nonces there: they allocate from one counter (allocateAndPersist), never the same nonce. Each
 * pass first signs and sends new requests, then follows what was in flight when the pass began (a request queued
 * while a pass ran goes out at the start of the next one, not after it has followed everything):
 * - queued: simulate (estimateGas, eth_call for the reason) — a revert ends the request with its
 *   decoded reason and no gas spent; otherwise nonces are allocated, transactions signed and
 *   (nonce, raw bytes, hash, fees) persisted in ONE database transaction, and only then broadcast;
 * - pending: classified by query (receipts of every attempt, the signer's nonce count at latest and
 *   at finalized, the node's knowledge of the last attempt), never by error text: included;
 *   replaced (our nonce consumed, at finality, by none of our attempts); rebroadcast of the stored
 *   bytes (dropped, or a crash before/after the first broadcast); or, for a nonce that has been the
 *   lowest open one for `bump_after_blocks` blocks since its last attempt, a replacement with fees
 *   raised by at least `bump_percent`;
 * - included: re-checked each pass (a reorg sends it back to pending) and made final (or reverted)
 *   only once its block is at or below the finalized head.
 */

/** Queued requests simulated in parallel (the transport batches them into one HTTP request). */
const SIMULATE_CONCURRENCY = 64
/** An idle follow loop (nothing in flight) looks again after this many poll intervals, unless a send wakes it. */
const IDLE_FOLLOW_POLLS = 10

type FollowOutcome =
  | { readonly _tag: "nothing" }
  | { readonly _tag: "included"; readonly request: RequestRow; readonly receipt: ReceiptFacts }
  | { readonly _tag: "final"; readonly request: RequestRow; readonly success: boolean; readonly reason: string | null }
const NOTHING: FollowOutcome = { _tag: "nothing" }
const includedOutcome = (request: RequestRow, receipt: ReceiptFacts): FollowOutcome => ({
  _tag: "included",
  request,
  receipt,
})
const finalOutcome = (request: RequestRow, success: boolean, reason: string | null): FollowOutcome => ({
  _tag: "final",
  request,
  success,
  reason,
})

export interface RelayerHandle {
  /** One pass: sign and send queued requests, then follow the ones in flight before it. */
  readonly tick: Effect.Effect<{ readonly signed: number; readonly open: number }, unknown, SqlClient.SqlClient>
}

export const makeTxRelayer = (venue: VenueConfig) =>
  Effect.gen(function* () {
    const fault = yield* FaultPoint
    const chain = yield* makeRelayerChain(venue)
    const { signer, cap, heads, market, sign, broadcast, broadcastNew, simulate, onChainReason } = chain
    const settings = venue.relayer
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    /** The venues on this chain: one operator key has one nonce sequence per chain, whichever venue relays. */
    const chainVenues = (yield* AppConfig).deployment.venues
      .filter((v) => v.chain_id === venue.chain_id)
      .map((v) => v.id)

    /** Requests persisted by a send that has not yet recorded their broadcast: the follow loop leaves them alone. */
    const sending = new Set<bigint>()

    const sendQueued = (h: Heads, queued: ReadonlyArray<RequestRow>) =>
      Effect.gen(function* () {
        if (queued.length === 0) return 0
        // The simulations, the nonce floor and the fees are independent: one round trip (a JSON-RPC batch), not two.
        // A failed nonce read is reported only after the simulations' outcomes are recorded.
        const [sims, floorRead, fees] = yield* Effect.all(
          [
            Effect.forEach(queued, simulate, { concurrency: SIMULATE_CONCURRENCY }),
            Effect.either(chain.nonceCount("latest")),
            market(h),
          ],
          { concurrency: "unbounded" },
        )
        for (const s of sims) {
          if (s._tag === "reverted") {
            yield* markSimulatedRevert(s.request, s.reason)
            yield* fault.hit("relayer.after-commit-before-publish")
          } else if (s._tag === "retry") {
            yield* recordRequestError(s.request, s.error)
          }
        }
        const ok = sims.filter((s): s is Extract<Simulation, { _tag: "ok" }> => s._tag === "ok")
        if (ok.length === 0) return 0
        const floor = yield* floorRead
        const ids = ok.map((s) => s.request.id)
        for (const id of ids) sending.add(id)
        return yield* Effect.gen(function* () {
          const persisted = yield* allocateAndPersist(
            venue.id,
            chainVenues,
            signer,
            floor,
            h.latest,
            ok.map((s) => ({ request: s.request, gasLimit: s.gasLimit })),
            (r, nonce, gasLimit) =>
              sign(r, nonce, gasLimit, fees).pipe(Effect.tap(() => fault.hit("relayer.after-sign-before-persist"))),
          )
          yield* fault.hit("relayer.after-persist-before-broadcast")
          yield* broadcastNew(persisted)
          yield* fault.hit("relayer.after-broadcast-before-record")
          yield* recordBroadcasts(
            persisted.map((p) => p.attempt.txHash),
            yield* now,
          )
          return persisted.length
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              for (const id of ids) sending.delete(id)
            }),
          ),
        )
      })

    /**
     * Included transactions above the finalized head are re-checked only when the chain may have
     * re-organised under them since the last completed pass: `unchangedUpTo` is the highest block
     * known to be the same as then (the new head extends the head read then), -1 when unknown. A
     * row included above that block is always re-checked; at the finalized head every row is
     * re-checked anyway, so a missed reorg can never make a transaction final wrongly.
     */
    let lastHead: { readonly number: bigint; readonly hash: Hex } | undefined
    /**
     * Request id → head of the first pass that saw its nonce as the lowest open one. In memory: after a
     * restart the count starts again, which only delays a bump. When a stuck nonce is finally mined, the
     * ones queued behind it are not replaced at once for the blocks they spent waiting on it.
     */
    const lineSince = new Map<bigint, bigint>()
    const unchangedUpTo = (h: Heads) =>
      Effect.gen(function* () {
        const last = lastHead
        if (last === undefined) return -1n
        if (h.latestHash === last.hash) return last.number
        if (h.latest === last.number + 1n) return h.parentHash === last.hash ? last.number : -1n
        if (h.latest <= last.number) return -1n
        return (yield* chain.blockHashAt(last.number)) === last.hash ? last.number : -1n
      })

    const follow = (h: Heads, all: ReadonlyArray<RequestRow>) =>
      Effect.gen(function* () {
        const open = all.filter((r) => !sending.has(r.id))
        const unchanged = yield* unchangedUpTo(h)
        if (open.length === 0) {
          lastHead = { number: h.latest, hash: h.latestHash }
          return 0
        }
        yield* fault.hit("relayer.follow-after-heads")
        // Both counts at the heads' own blocks (not the tag "latest"): a nonce is the lowest open one *at* h.latest,
        // so blocks mined after the heads were read never count as blocks it waited (a needless replacement).
        const [latestCount, finalizedCount] = yield* Effect.all(
          [chain.nonceCount(h.latest), chain.nonceCount(h.finalized)],
          {
            concurrency: "unbounded",
          },
        )
        const openIds = new Set(open.map((r) => r.id))
        for (const id of lineSince.keys()) if (!openIds.has(id)) lineSince.delete(id)
        const attempts = yield* attemptsOf(open.map((r) => r.id))
        const byRequest = new Map<bigint, Array<AttemptRow>>()
        for (const a of attempts) byRequest.set(a.requestId, [...(byRequest.get(a.requestId) ?? []), a])
        // Queries run concurrently; the common transitions (included, final) are then written in one
        // transaction each, the rare ones (reorged, replaced, replacement) as they are found.
        const outcomes = yield* Effect.forEach(
          open,
          (r) => followOne(r, byRequest.get(r.id) ?? [], h, latestCount, finalizedCount, unchanged),
          { concurrency: 32 },
        )
        const at = yield* now
        const included = outcomes.flatMap((o: FollowOutcome) => (o._tag === "included" ? [o] : []))
        if (included.length > 0) yield* markIncludedBatch(included, at)
        const finals = outcomes.flatMap((o: FollowOutcome) => (o._tag === "final" ? [o] : []))
        if (finals.length > 0) {
          const changed = yield* markFinalBatch(finals, at)
          for (let i = 0; i < changed; i++) yield* fault.hit("relayer.after-commit-before-publish")
        }
        // Only a completed pass vouches for the rows it saw (a failed one re-checks everything next).
        lastHead = { number: h.latest, hash: h.latestHash }
        return open.length
      })

    const followOne = (
      r: RequestRow,
      attempts: ReadonlyArray<AttemptRow>,
      h: Heads,
      latestCount: bigint,
      finalizedCount: bigint,
      unchanged: bigint,
    ) =>
      Effect.gen(function* () {
        if (r.status === "included" && r.txHash !== null) {
          if (r.blockNumber !== null && r.blockNumber > h.finalized && r.blockNumber <= unchanged) return NOTHING
          const receipt = yield* chain.receipt(r.txHash)
          if (receipt === null) {
            yield* markReorged(r)
            return NOTHING
          }
          if (receipt.blockHash.toLowerCase() !== r.blockHash) {
            return includedOutcome(r, receiptFacts(receipt))
          }
          if (receipt.blockNumber <= h.finalized) {
            const success = receipt.status === "success"
            const reason = success ? null : yield* onChainReason(r, receipt)
            return finalOutcome(r, success, reason)
          }
          return NOTHING
        }
        const last = attempts.at(-1)
        if (last === undefined || r.nonce === null) return NOTHING
        const consumed = latestCount > r.nonce
        let receipt: TransactionReceipt | null = null
        if (consumed) {
          const receipts = yield* Effect.forEach(attempts, (a) => chain.receipt(a.txHash), {
            concurrency: "unbounded",
          })
          receipt = receipts.find((x) => x !== null) ?? null
        }
        const headOfLine = r.nonce === latestCount
        const since = lineSince.get(r.id) ?? h.latest
        if (headOfLine) lineSince.set(r.id, since)
        const known = consumed || !headOfLine ? true : yield* chain.known(last.txHash)
        const decision = decidePending({
          nonce: r.nonce,
          latestCount,
          finalizedCount,
          receiptFound: receipt !== null,
          lastAttemptKnown: known,
          broadcasts: last.broadcasts,
          head: h.latest,
          sentBlock: last.sentBlock ?? h.latest,
          headOfLineSince: headOfLine ? since : h.latest,
          bumpAfterBlocks: settings.bump_after_blocks,
        })
        switch (decision) {
          case "included":
            return receipt === null ? NOTHING : includedOutcome(r, receiptFacts(receipt))
          case "replaced":
            yield* markReplaced(r, yield* now)
            yield* Effect.logWarning("nonce consumed by a foreign transaction").pipe(
              Effect.annotateLogs({
                venue: venue.id,
                tx_key: r.idempotencyKey,
                nonce: String(r.nonce),
                tx_hash: r.txHash,
              }),
            )
            return NOTHING
          case "rebroadcast":
            yield* broadcast([last.rawTx])
            yield* recordBroadcasts([last.txHash], yield* now)
            return NOTHING
          case "bump": {
            const fees = replacementFees(
              { maxFeePerGas: last.maxFeePerGas, maxPriorityFeePerGas: last.maxPriorityFeePerGas },
              yield* market(h),
              settings.bump_percent,
              cap,
            )
            if (fees === undefined) {
              yield* broadcast([last.rawTx])
              return NOTHING
            }
            const attempt = yield* sign(r, r.nonce, last.gasLimit, fees)
            const added = yield* addAttempt(r, last.attempt + 1, h.latest, attempt)
            if (!added) return NOTHING
            yield* Effect.logInfo("replacing a stuck transaction").pipe(
              Effect.annotateLogs({
                venue: venue.id,
                tx_key: r.idempotencyKey,
                nonce: String(r.nonce),
                attempt: last.attempt + 1,
                tx_hash: attempt.txHash,
                replaces: last.txHash,
                max_fee_per_gas: fees.maxFeePerGas.toString(),
              }),
            )
            yield* broadcast([attempt.rawTx])
            yield* recordBroadcasts([attempt.txHash], yield* now)
            return NOTHING
          }
          default:
            return NOTHING
        }
      })

    /** Sends the oldest queued requests (at most a batch); the number signed. */
    const sendPass = Effect.gen(function* () {
      const [h, queued] = yield* Effect.all([heads, queuedRequests(venue.id, signer, settings.batch)], {
        concurrency: 2,
      })
      return yield* sendQueued(h, queued)
    })

    /** Follows every request in flight; their number. */
    const followPass = Effect.gen(function* () {
      // Rows still being sent are set aside before the heads are read, so every row followed was on the node by
      // then: blocks mined before its broadcast landed never count as blocks it waited.
      const open = (yield* openRequests(venue.id, signer)).filter((r) => !sending.has(r.id))
      // Nothing in flight: no head to read (the next pass re-checks from its own head: unchangedUpTo).
      if (open.length === 0) return 0
      return yield* follow(yield* heads, open)
    })

    /** Both in one pass, for the tests: queued first, then the rows that were open before it sent. */
    const tick = Effect.gen(function* () {
      const h = yield* heads
      const open = yield* openRequests(venue.id, signer)
      const signed = yield* sendQueued(h, yield* queuedRequests(venue.id, signer, settings.batch))
      return { signed, open: yield* follow(h, open) }
    })

    const handle: RelayerHandle = { tick }

    /**
     * Two loops: a new request (a lock, a payTake, a claim) is what a user waits for, so sending never waits behind
     * a follow pass (its receipt reads for every request in flight). The send loop wakes on the queue's notification
     * (at the latest after poll_ms); the follow loop after each send, and every poll_ms while anything is in flight.
     * They touch disjoint rows: follow skips the requests a send has persisted and not yet recorded as broadcast
     * (`sending`), every transition is guarded by the row's status, and a replacement (same nonce) never touches the
     * nonce counter.
     */
    const run = Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      const queuedWake = yield* Queue.sliding<void>(1)
      const sentWake = yield* Queue.sliding<void>(1)
      yield* pg.listen(RELAYER_QUEUED_CHANNEL).pipe(
        Stream.filter((v) => v === venue.id),
        Stream.runForEach(() => Queue.offer(queuedWake, undefined)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped,
      )
      const waitFor = (wake: Queue.Queue<void>, ms = settings.poll_ms) =>
        Queue.take(wake).pipe(Effect.timeout(Duration.millis(ms)), Effect.ignore)
      const loop = (
        name: string,
        pass: Effect.Effect<number, unknown, SqlClient.SqlClient>,
        next: (n: number) => Effect.Effect<void>,
      ) =>
        passLoop({
          pass,
          next,
          baseMs: settings.poll_ms,
          terminal: isTerminal,
          failureLog: `relayer ${name} pass failed`,
        })
      yield* Effect.all(
        [
          // A full batch: more may be queued, go again at once.
          loop("send", sendPass, (signed) =>
            signed > 0
              ? Queue.offer(sentWake, undefined).pipe(
                  Effect.zipRight(signed >= settings.batch ? Effect.void : waitFor(queuedWake)),
                )
              : waitFor(queuedWake),
          ),
          // Only a send puts a request in flight, and it wakes this loop: with nothing in flight, the poll interval
          // is only a backstop, so an idle relayer's follow loop reads its rows every IDLE_FOLLOW_POLLS polls.
          loop("follow", followPass, (open) =>
            waitFor(sentWake, open === 0 ? settings.poll_ms * IDLE_FOLLOW_POLLS : settings.poll_ms),
          ),
        ],
        { concurrency: 2, discard: true },
      )
    }).pipe(Effect.scoped)

    return { handle, run }
  })

/** The relayer's body; it ends only by failing (its supervisor restarts it) or by interruption. */
export const runTxRelayer = (venue: VenueConfig) =>
  makeTxRelayer(venue).pipe(
    Effect.flatMap(({ run }) => run),
    Effect.annotateLogs({ actor: "TxRelayer", venue: venue.id }),
  )

/** One supervised relayer singleton per venue chain and operator key. */
export const TxRelayersLive = Layer.unwrapEffect(
  Effect.map(AppConfig, ({ deployment, operator }) => {
    const layers = deployment.venues.map((v) => supervisedSingleton(`tx-relayer:${v.id}:${operator}`, runTxRelayer(v)))
    return Layer.mergeAll(layers[0] ?? Layer.empty, ...layers.slice(1))
  }),
)
