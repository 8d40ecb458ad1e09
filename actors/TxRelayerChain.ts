import { Effect, Redacted } from "effect"
import { type Address, type Hex, hexToBigInt, keccak256, type PublicClient, type TransactionReceipt } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { finalizedByConfirmations } from "../src/Chain/Finality.ts"
import { decodeRevertData, type Fees, initialFees, revertDataOf } from "../src/Chain/RelayerPolicy.ts"
import { retryRpc, rpc } from "../src/Chain/RpcError.ts"
import { AppConfig, type VenueConfig } from "../src/Config.ts"
import { maskText } from "../src/Observability/Log.ts"
import { parentOf } from "../src/Observability/Tracing.ts"
import type { ReceiptFacts, SignedAttempt } from "../src/Relayer/Repo.ts"
import type { RequestRow } from "../src/Relayer/Rows.ts"

/**
 * The TxRelayer's chain side (the pass that decides and writes is actors/TxRelayer.ts): one venue chain's heads,
 * fees, simulations, receipts and revert reasons, and the operator's transactions signed and broadcast. It reads
 * and writes no table: every state change, and the persist-before-broadcast order, is the pass's.
 */

/** 1 gwei in wei: the fee floor when a node reports no base fee or no tip. */
const GWEI = 1_000_000_000n

export interface Heads {
  readonly latest: bigint
  readonly latestHash: Hex
  readonly parentHash: Hex
  readonly baseFee: bigint
  readonly finalized: bigint
}

export type Simulation =
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

export const receiptFacts = (receipt: TransactionReceipt): ReceiptFacts => ({
  txHash: receipt.transactionHash,
  blockNumber: receipt.blockNumber,
  blockHash: receipt.blockHash,
  gasUsed: receipt.gasUsed,
  success: receipt.status === "success",
})

/** The chain side of `venue`'s relayer: the operator key signs, its address is the nonce authority's. */
export const makeRelayerChain = (venue: VenueConfig) =>
  Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const clients = yield* ChainClients
    const client = clients.chain(venue.id)
    if (client === undefined) return yield* Effect.die(new Error(`no chain client for venue ${venue.id}`))
    const account = privateKeyToAccount(Redacted.value(deployment.operator_key) as Hex)
    const signer = operator as Address
    const settings = venue.relayer
    /** The configured fee ceiling (wei per gas), if any. */
    const cap = settings.max_fee_per_gas === undefined ? undefined : BigInt(settings.max_fee_per_gas)

    const block = (blockTag: "latest" | "finalized") =>
      rpc("eth_getBlockByNumber", () => client.getBlock({ blockTag })).pipe(retryRpc)
    const heads = Effect.gen(function* () {
      const confirmations = venue.watcher.confirmations
      // With block tags, both heads in one round trip (one JSON-RPC batch); a failure of latest is reported first.
      const [latestRead, finalizedRead] = yield* Effect.all(
        [block("latest"), confirmations === undefined ? block("finalized") : Effect.succeed(undefined)],
        { concurrency: "unbounded", mode: "either" },
      )
      const latest = yield* latestRead
      const finalized =
        confirmations === undefined
          ? (yield* finalizedRead)?.number
          : finalizedByConfirmations(latest.number, confirmations)
      return {
        latest: latest.number,
        latestHash: latest.hash,
        parentHash: latest.parentHash,
        baseFee: latest.baseFeePerGas ?? GWEI,
        finalized: finalized ?? 0n,
      } satisfies Heads
    })

    /**
     * Fees from the head's base fee and the node's tip. The tip is asked for directly: viem's
     * estimateMaxPriorityFeePerGas fetches the latest block again first (one more round trip before every send).
     * A node that refuses the method (a terminal error) gets viem's fallback (gas price − base fee); any other
     * failure, 1 gwei, as before.
     */
    const market = (h: Heads) =>
      rpc("eth_maxPriorityFeePerGas", () =>
        client.request({ method: "eth_maxPriorityFeePerGas" }).then((tip) => hexToBigInt(tip)),
      ).pipe(
        retryRpc,
        Effect.catchIf(
          (e) => !e.retryable,
          () => rpc("eth_maxPriorityFeePerGas", () => client.estimateMaxPriorityFeePerGas()).pipe(retryRpc),
        ),
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
        // Both parties read it (transactions[].error): masked, as a node's answer may quote the request.
        return { _tag: "retry", request: r, error: `simulation failed: ${maskText(estimate.left.message)}` } as const
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

    /** The signer's transaction count (its next nonce) at the latest block or at block `at`. */
    const nonceCount = (at: "latest" | bigint) =>
      rpc("eth_getTransactionCount", () =>
        at === "latest"
          ? client.getTransactionCount({ address: signer, blockTag: "latest" })
          : client.getTransactionCount({ address: signer, blockNumber: at }),
      ).pipe(
        retryRpc,
        Effect.map((n) => BigInt(n)),
      )

    /** The hash of block `number` as the node sees it now. */
    const blockHashAt = (number: bigint) =>
      rpc("eth_getBlockByNumber", () => client.getBlock({ blockNumber: number })).pipe(
        retryRpc,
        Effect.map((b) => b.hash),
      )

    return {
      signer,
      cap,
      heads,
      market,
      sign,
      broadcast,
      broadcastNew,
      simulate,
      onChainReason,
      nonceCount,
      blockHashAt,
      receipt: (hash: Hex) => receiptOrNull(client, hash),
      known: (hash: Hex) => transactionKnown(client, hash),
    } as const
  })
