import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Duration, Effect, Layer, Queue, Random, Redacted, Schedule, Stream } from "effect"
import { type Address, type Hex, keccak256, type PublicClient, type TransactionReceipt } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { describeCause, isTerminal } from "../src/Chain/Failure.ts"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
import {
  decidePending,
  decodeRevertData,
  type Fees,
  initialFees,
  replacementFees,
  revertDataOf,
} from "../src/Chain/RelayerPolicy.ts"
import { retryRpc, rpc } from "../src/Chain/RpcError.ts"
import { supervisedSingleton } from "../src/Cluster/Supervision.ts"
import { AppConfig, type VenueConfig } from "../src/Config.ts"
import { parentOf } from "../src/Observability/Tracing.ts"
import {
  type AttemptRow,
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
  RELAYER_QUEUED_CHANNEL,
  type ReceiptFacts,
  type RequestRow,
  recordBroadcasts,
  recordRequestError,
  type SignedAttempt,
} from "../src/Relayer/Repo.ts"

/**
 * TxRelayer: one cluster singleton per (venue chain, operator key), the only nonce authority. Each
 * pass it first follows what is in flight, then signs new requests:
 * - queued: simulate (estimateGas, eth_call for the reason) — a revert ends the request with its
 *   decoded reason and no gas spent; otherwise nonces are allocated, transactions signed and
 *   (nonce, raw bytes, hash, fees) persisted in ONE database transaction, and only then broadcast;
 * - pending: classified by query (receipts of every attempt, the signer's nonce count at latest and
 *   at finalized, the node's knowledge of the last attempt), never by error text: included;
 *   replaced (our nonce consumed, at finality, by none of our attempts); rebroadcast of the stored
 *   bytes (dropped, or a crash before/after the first broadcast); or, for the lowest open nonce
 *   after `bump_after_blocks`, a replacement with fees raised by at least `bump_percent`;
 * - included: re-checked each pass (a reorg sends it back to pending) and made final (or reverted)
 *   only once its block is at or below the finalized head.
 */

const GWEI = 1_000_000_000n
/** Queued requests simulated in parallel (the transport batches them into one HTTP request). */
const SIMULATE_CONCURRENCY = 64
const MAX_BACKOFF_MS = 15_000

interface Heads {
  readonly latest: bigint
  readonly latestHash: Hex
  readonly parentHash: Hex
  readonly baseFee: bigint
  readonly finalized: bigint
}

type Simulation =
  | { readonly _tag: "ok"; readonly request: RequestRow; readonly gasLimit: bigint }
  | { readonly _tag: "reverted"; readonly request: RequestRow; readonly reason: string }
  | { readonly _tag: "retry"; readonly request: RequestRow; readonly error: string }

const receiptOrNull = (client: PublicClient, hash: Hex) =>
  rpc("eth_getTransactionReceipt", () =>
    client.getTransactionReceipt({ hash }).catch((e: unknown) => {
      if (e instanceof Error && e.name === "TransactionReceiptNotFoundError") return null
      throw e
    }),
  ).pipe(retryRpc)

const transactionKnown = (client: PublicClient, hash: Hex) =>
  rpc("eth_getTransactionByHash", () =>
    client.getTransaction({ hash }).then(
      () => true,
      (e: unknown) => {
        if (e instanceof Error && e.name === "TransactionNotFoundError") return false
        throw e
      },
    ),
  ).pipe(retryRpc)

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
  /** One pass: follow in-flight transactions, then sign and send queued ones. */
  readonly tick: Effect.Effect<{ readonly signed: number; readonly open: number }, unknown, SqlClient.SqlClient>
}

export const makeTxRelayer = (venue: VenueConfig) =>
  Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const clients = yield* ChainClients
    const fault = yield* FaultPoint
    const client = clients.chain(venue.id)
    if (client === undefined) return yield* Effect.die(new Error(`no chain client for venue ${venue.id}`))
    const account = privateKeyToAccount(Redacted.value(deployment.operator_key) as Hex)
    const signer = operator as Address
    const settings = venue.relayer
    const cap = settings.max_fee_per_gas === undefined ? undefined : BigInt(settings.max_fee_per_gas)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const heads = Effect.gen(function* () {
      const latest = yield* rpc("eth_getBlockByNumber", () => client.getBlock({ blockTag: "latest" })).pipe(retryRpc)
      const confirmations = venue.watcher.confirmations
      const finalized =
        confirmations === undefined
          ? (yield* rpc("eth_getBlockByNumber", () => client.getBlock({ blockTag: "finalized" })).pipe(retryRpc)).number
          : latest.number - BigInt(confirmations)
      return {
        latest: latest.number,
        latestHash: latest.hash,
        parentHash: latest.parentHash,
        baseFee: latest.baseFeePerGas ?? GWEI,
        finalized: finalized ?? 0n,
      } satisfies Heads
    })

    const market = (h: Heads) =>
      rpc("eth_maxPriorityFeePerGas", () => client.estimateMaxPriorityFeePerGas()).pipe(
        retryRpc,
        Effect.orElseSucceed(() => GWEI),
        Effect.map((tip) => initialFees(h.baseFee, tip, cap)),
      )

    const sign = (r: RequestRow, nonce: bigint, gasLimit: bigint, fees: Fees) =>
      Effect.promise(() =>
        account.signTransaction({
          chainId: venue.chain_id,
          type: "eip1559",
          nonce: Number(nonce),
          to: r.target as Address,
          data: r.calldata,
          value: r.value,
          gas: gasLimit,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        }),
      ).pipe(
        Effect.map(
          (rawTx): SignedAttempt => ({
            rawTx,
            txHash: keccak256(rawTx),
            maxFeePerGas: fees.maxFeePerGas,
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
            gasLimit,
          }),
        ),
      )

    const send = (raw: Hex) =>
      rpc("eth_sendRawTransaction", () => client.request({ method: "eth_sendRawTransaction", params: [raw] })).pipe(
        Effect.tapError((e) => Effect.logDebug("broadcast answered an error (outcome decided by query)", e.message)),
        Effect.ignore,
      )

    /** Sends stored bytes; the answer is not trusted either way (the next pass queries the outcome). */
    const broadcast = (raws: ReadonlyArray<Hex>) =>
      Effect.forEach(raws, send, { concurrency: "unbounded", discard: true })

    /**
     * The first broadcast of newly signed requests. A request stored with its submitter's traceparent (traces
     * exported: src/Observability/Tracing.ts) is sent inside a `relayer.sent` span of that trace.
     */
    const broadcastNew = (
      persisted: ReadonlyArray<{
        readonly request: RequestRow
        readonly nonce: bigint
        readonly attempt: SignedAttempt
      }>,
    ) =>
      Effect.forEach(
        persisted,
        ({ request, nonce, attempt }) => {
          const parent = parentOf(request.traceParent)
          return parent === undefined
            ? send(attempt.rawTx)
            : send(attempt.rawTx).pipe(
                Effect.withSpan("relayer.sent", {
                  parent,
                  kind: "client",
                  captureStackTrace: false,
                  attributes: {
                    venue: venue.id,
                    tx_key: request.idempotencyKey,
                    call: request.functionName,
                    nonce: nonce.toString(),
                    tx_hash: attempt.txHash,
                  },
                }),
              )
        },
        { concurrency: "unbounded", discard: true },
      )

    const simulate = (r: RequestRow): Effect.Effect<Simulation> =>
      Effect.gen(function* () {
        const call = { account: signer, to: r.target as Address, data: r.calldata, value: r.value } as const
        const estimate = yield* rpc("eth_estimateGas", () => client.estimateGas({ ...call, blockTag: "pending" })).pipe(
          Effect.either,
        )
        if (estimate._tag === "Right") {
          const withMargin = (estimate.right * BigInt(settings.gas_margin_percent) + 99n) / 100n
          const max = BigInt(settings.gas_limit_max)
          return { _tag: "ok", request: r, gasLimit: withMargin > max ? max : withMargin } as const
        }
        const revert = revertDataOf(estimate.left.cause)
        if (revert.reverted) return { _tag: "reverted", request: r, reason: decodeRevertData(revert.data) } as const
        // Not a revert as far as the estimate says: eth_call tells a revert from a node problem.
        const called = yield* rpc("eth_call", () => client.call({ ...call, blockTag: "pending" })).pipe(Effect.either)
        if (called._tag === "Left") {
          const r2 = revertDataOf(called.left.cause)
          if (r2.reverted) return { _tag: "reverted", request: r, reason: decodeRevertData(r2.data) } as const
        }
        return { _tag: "retry", request: r, error: `simulation failed: ${estimate.left.message}` } as const
      })

    /**
     * Why an included transaction reverted: the call replayed on the state after its block (the
     * revert left it unchanged), then before it; the first revert data decoded wins.
     */
    const onChainReason = (r: RequestRow, receipt: TransactionReceipt) =>
      Effect.gen(function* () {
        for (const blockNumber of [receipt.blockNumber, receipt.blockNumber - 1n]) {
          const replay = yield* rpc("eth_call", () =>
            client.call({ account: signer, to: r.target as Address, data: r.calldata, value: r.value, blockNumber }),
          ).pipe(Effect.either)
          if (replay._tag === "Left") {
            const d = revertDataOf(replay.left.cause)
            if (d.reverted) return decodeRevertData(d.data)
          }
        }
        return "reverted on chain"
      })

    const sendQueued = (h: Heads) =>
      Effect.gen(function* () {
        const queued = yield* queuedRequests(venue.id, signer, settings.batch)
        if (queued.length === 0) return 0
        const sims = yield* Effect.forEach(queued, simulate, { concurrency: SIMULATE_CONCURRENCY })
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
        const floor = BigInt(
          yield* rpc("eth_getTransactionCount", () =>
            client.getTransactionCount({ address: signer, blockTag: "latest" }),
          ).pipe(retryRpc),
        )
        const fees = yield* market(h)
        const persisted = yield* allocateAndPersist(
          venue.id,
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
      })

    /**
     * Included transactions above the finalized head are re-checked only when the chain may have
     * re-organised under them since the last completed pass: `unchangedUpTo` is the highest block
     * known to be the same as then (the new head extends the head read then), -1 when unknown. A
     * row included above that block is always re-checked; at the finalized head every row is
     * re-checked anyway, so a missed reorg can never make a transaction final wrongly.
     */
    let lastHead: { readonly number: bigint; readonly hash: Hex } | undefined
    const unchangedUpTo = (h: Heads) =>
      Effect.gen(function* () {
        const last = lastHead
        if (last === undefined) return -1n
        if (h.latestHash === last.hash) return last.number
        if (h.latest === last.number + 1n) return h.parentHash === last.hash ? last.number : -1n
        if (h.latest <= last.number) return -1n
        const then = yield* rpc("eth_getBlockByNumber", () => client.getBlock({ blockNumber: last.number })).pipe(
          retryRpc,
        )
        return then.hash === last.hash ? last.number : -1n
      })

    const follow = (h: Heads) =>
      Effect.gen(function* () {
        const unchanged = yield* unchangedUpTo(h)
        const open = yield* openRequests(venue.id, signer)
        if (open.length === 0) {
          lastHead = { number: h.latest, hash: h.latestHash }
          return 0
        }
        const [latestCount, finalizedCount] = yield* Effect.all(
          [
            rpc("eth_getTransactionCount", () => client.getTransactionCount({ address: signer, blockTag: "latest" })),
            rpc("eth_getTransactionCount", () =>
              client.getTransactionCount({ address: signer, blockNumber: h.finalized }),
            ),
          ],
          { concurrency: "unbounded" },
        ).pipe(retryRpc)
        const attempts = yield* attemptsOf(open.map((r) => r.id))
        const byRequest = new Map<bigint, Array<AttemptRow>>()
        for (const a of attempts) byRequest.set(a.requestId, [...(byRequest.get(a.requestId) ?? []), a])
        // Queries run concurrently; the common transitions (included, final) are then written in one
        // transaction each, the rare ones (reorged, replaced, replacement) as they are found.
        const outcomes = yield* Effect.forEach(
          open,
          (r) => followOne(r, byRequest.get(r.id) ?? [], h, BigInt(latestCount), BigInt(finalizedCount), unchanged),
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
          const receipt = yield* receiptOrNull(client, r.txHash)
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
          const receipts = yield* Effect.forEach(attempts, (a) => receiptOrNull(client, a.txHash), {
            concurrency: "unbounded",
          })
          receipt = receipts.find((x) => x !== null) ?? null
        }
        const headOfLine = r.nonce === latestCount
        const known = consumed || !headOfLine ? true : yield* transactionKnown(client, last.txHash)
        const decision = decidePending({
          nonce: r.nonce,
          latestCount,
          finalizedCount,
          receiptFound: receipt !== null,
          lastAttemptKnown: known,
          broadcasts: last.broadcasts,
          head: h.latest,
          sentBlock: last.sentBlock ?? h.latest,
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

    const tick = Effect.gen(function* () {
      const h = yield* heads
      const open = yield* follow(h)
      const signed = yield* sendQueued(h)
      return { signed, open }
    })

    const handle: RelayerHandle = { tick }

    const run = Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      const wake = yield* Queue.sliding<void>(1)
      yield* pg.listen(RELAYER_QUEUED_CHANNEL).pipe(
        Stream.filter((v) => v === venue.id),
        Stream.runForEach(() => Queue.offer(wake, undefined)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped,
      )
      let failures = 0
      for (;;) {
        const exit = yield* Effect.exit(tick)
        if (exit._tag === "Success") {
          failures = 0
          // A full batch: more may be queued, go again at once.
          if (exit.value.signed >= settings.batch) continue
          yield* Queue.take(wake).pipe(Effect.timeout(Duration.millis(settings.poll_ms)), Effect.ignore)
          continue
        }
        if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
        failures++
        const terminal = isTerminal(exit.cause)
        const error = describeCause(exit.cause)
        // Once per streak, then every 20th failure: a dead RPC must not flood the log.
        if (failures === 1 || failures % 20 === 0) {
          yield* Effect.logWarning("relayer pass failed").pipe(
            Effect.annotateLogs({ venue: venue.id, failures, error }),
          )
        }
        const base = terminal ? MAX_BACKOFF_MS : Math.min(MAX_BACKOFF_MS, settings.poll_ms * 2 ** (failures - 1))
        yield* Effect.sleep(Duration.millis(Math.round(base * (yield* Random.nextRange(0.8, 1.2)))))
      }
    }).pipe(Effect.scoped)

    return { handle, run }
  })

const receiptFacts = (receipt: TransactionReceipt): ReceiptFacts => ({
  txHash: receipt.transactionHash,
  blockNumber: receipt.blockNumber,
  blockHash: receipt.blockHash,
  gasUsed: receipt.gasUsed,
  success: receipt.status === "success",
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
