import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../Config.ts"
import { routeTake, type TakeCandidate } from "../Domain/TakeRouter.ts"
import { loadQuoteCandidates, type QuoteCandidateRow, toTakeCandidate } from "../Store/QuoteCandidates.ts"
import { Api } from "./Api.ts"
import { apiError, InvalidRequest, NotFound } from "./Errors.ts"

const candidateKey = (orderId: string, sequence: bigint | string, quoteIndex: number) =>
  `${orderId}/${sequence}/${quoteIndex}`

export const TakesHandlers = HttpApiBuilder.group(Api, "takes", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const fillMax = BigInt(deployment.limits.fill_max)
    const partsMax = deployment.limits.take_parts_max
    return handlers.handle("preview", ({ payload }) =>
      Effect.gen(function* () {
        const from = venueOf(payload.from)
        const to = venueOf(payload.to)
        if (!from) return yield* apiError(NotFound, `unknown venue ${payload.from}`)
        if (!to) return yield* apiError(NotFound, `unknown venue ${payload.to}`)
        if (from.id === to.id) return yield* apiError(InvalidRequest, "from and to must be different venues")
        const amountIn = BigInt(payload.amount_in)
        if (amountIn === 0n) return yield* apiError(InvalidRequest, "amount_in must be positive")
        const rows = yield* loadQuoteCandidates({
          from: { id: from.id, chainId: from.chain_id, token: from.token },
          to: to.id,
          lockCutoffSeconds: deployment.settlement.lock_cutoff_seconds,
        }).pipe(Effect.orDie)
        const byKey = new Map<string, QuoteCandidateRow>()
        const candidates: Array<TakeCandidate> = []
        for (const row of rows) {
          const candidate = toTakeCandidate(row)
          if (candidate === undefined) continue
          byKey.set(candidateKey(row.order_id, row.sequence, row.quote_index), row)
          candidates.push(candidate)
        }
        const route = routeTake({
          amountIn,
          candidates,
          maxParts: Math.min(payload.max_parts ?? partsMax, partsMax),
          fillMax,
        })
        return {
          from: from.id,
          to: to.id,
          amount_in: amountIn.toString(),
          fills: route.fills.map((f) => {
            const row = byKey.get(candidateKey(f.orderId, f.sequence, f.quoteIndex))!
            return {
              order_id: f.orderId,
              quote: row.quote,
              quote_index: f.quoteIndex,
              sequence: Number(f.sequence),
              amount_in: f.amountIn.toString(),
              amount_out: f.amountOut.toString(),
            }
          }),
          total_in: route.totalIn.toString(),
          total_out: route.totalOut.toString(),
        }
      }),
    )
  }),
)
