/**
 * Trades (spec GET /v1/trades, GET /v1/trades/history): a trade is a settled fill. The service answers a pair's
 * recent trades and pages the history, each trade with its proof (both signed agreements, the revealed secret, the
 * settlement transactions); src/Trades/Http.ts authenticates `scope=mine` and serves them.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Redacted } from "effect"
import { AppConfig } from "./Config.ts"
import { RECENT_TRADES } from "./Domain/CursorLimits.ts"
import { InvalidRequest, NotFound } from "./Domain/Errors.ts"
import { decodeTradeCursor, encodeTradeCursor, type TradeFilters, tradeCursorKey } from "./Domain/TradeCursor.ts"
import {
  buildTradeProof,
  buildTradeProofV2,
  SETTLEMENT_EVENTS,
  type SettlementTransaction,
  type WireQuote,
} from "./Domain/TradeProof.ts"
import type { WireQuoteV2 } from "./Domain/WireQuote.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { recentTrades, settlementEvents, settlementEventsV2, type TradeRow, tradePage } from "./Trades/Repo.ts"

export interface HistoryQuery {
  readonly scope: "all" | "mine"
  /** The session's master address for `scope=mine` (the route authenticates it), else null. */
  readonly master: string | null
  readonly a: string | undefined
  readonly b: string | undefined
  readonly after: string | undefined
  readonly limit: number
}

export class Trades extends Effect.Service<Trades>()("Trades", {
  effect: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const venues = new Map(deployment.venues.map((v) => [v.id, v]))
    const cursorKey = tradeCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))

    /** A configured pair of two different venues: 400 for the same venue twice, 404 for an unknown one. */
    const checkPair = (a: string, b: string) =>
      Effect.gen(function* () {
        if (a === b) return yield* new InvalidRequest({ message: "a and b must be different venues" })
        for (const v of [a, b]) if (!venues.has(v)) return yield* new NotFound({ message: `unknown venue ${v}` })
        return [a, b] as const
      })

    /** Settlement transactions by fill id: v1 from the escrow index's events, v2 from the v2 index's rows. */
    const transactionsByFill = (rows: ReadonlyArray<TradeRow>) =>
      Effect.gen(function* () {
        const v1 = rows.filter((r) => r.escrow_version !== 2)
        const v2 = rows.filter((r) => r.escrow_version === 2 && r.fill_digest !== null)
        const idOf = new Map<string, string>([
          ...v1.map((r) => [r.fill_key.toLowerCase(), r.id] as const),
          ...v2.map((r) => [r.fill_digest!.toLowerCase(), r.id] as const),
        ])
        const events = [
          ...(yield* settlementEvents(
            v1.map((r) => ({ fill_key: r.fill_key, maker: r.to_venue, taker: r.from_venue })),
          )),
          ...(yield* settlementEventsV2(
            v2.map((r) => ({ fill_digest: r.fill_digest!, maker: r.to_venue, taker: r.from_venue })),
          )).map((e) => ({ ...e, fill_key: e.fill_digest })),
        ]
        const byFill = new Map<string, Array<SettlementTransaction>>()
        for (const e of events) {
          const kind = SETTLEMENT_EVENTS[e.event]
          const venue = venues.get(e.venue)
          const id = idOf.get(e.fill_key.toLowerCase())
          if (kind === undefined || venue === undefined || id === undefined) continue
          const list = byFill.get(id) ?? []
          list.push({ kind, chain_id: venue.chain_id, hash: e.tx_hash, block_number: Number(e.block_number) })
          byFill.set(id, list)
        }
        return byFill
      }).pipe(Effect.orDie)

    /** A v2 fill's proof (domains from its signed Fill, not from today's config). */
    const proofV2 = (row: TradeRow, transactions: ReadonlyArray<SettlementTransaction>) =>
      buildTradeProofV2({
        quoteSet:
          row.qs_signature === null || row.quote_signer === null || row.order_owner === null
            ? null
            : {
                owner: row.order_owner,
                orderId: row.order_id,
                sequence: row.qs_sequence!,
                generation: row.qs_generation!,
                quoteSize: row.qs_quote_size!,
                issuedAt: row.qs_issued_at!,
                validUntil: row.qs_valid_until!,
                hashlockRoot: row.qs_hashlock_root!,
                hashlockCount: row.qs_hashlock_count!,
                quotes: row.qs_quotes as unknown as ReadonlyArray<WireQuoteV2>,
                signature: row.qs_signature,
                signer: row.quote_signer,
              },
        hashlockIndex: row.hashlock_index,
        hashlockProof: row.hashlock_proof ?? [],
        fill: row.fill,
        fillSignature: row.fill_signature,
        payer: row.payer,
        quoteIndex: row.quote_index,
        payAuthorization:
          row.pay_authorization === null ? null : { signature: row.pay_authorization, fills: row.take_digests ?? [] },
        secret: row.secret,
        transactions,
      })

    const historyItem = (row: TradeRow, transactions: ReadonlyArray<SettlementTransaction>) => {
      const maker = venues.get(row.to_venue)
      if (maker === undefined) throw new Error(`trade ${row.id}: maker venue ${row.to_venue} is not configured`)
      const quoteSet =
        row.qs_signature === null || row.quote_signer === null
          ? null
          : {
              orderId: row.order_id,
              sequence: row.qs_sequence!,
              generation: row.qs_generation!,
              quoteSize: row.qs_quote_size!,
              validUntil: row.qs_valid_until!,
              quotes: row.qs_quotes as unknown as ReadonlyArray<WireQuote>,
              signature: row.qs_signature,
              signer: row.quote_signer,
            }
      return {
        id: row.id,
        from: row.from_venue,
        to: row.to_venue,
        amount_in: row.amount_in,
        amount_out: row.amount_out,
        at: row.settled_at.toISOString(),
        order_id: row.order_id,
        proof:
          row.escrow_version === 2
            ? proofV2(row, transactions)
            : buildTradeProof({
                makerChainId: maker.chain_id,
                makerEscrow: maker.escrow,
                quoteSet,
                fill: row.fill,
                fillSignature: row.fill_signature,
                payer: row.payer,
                quoteIndex: row.quote_index,
                secret: row.secret,
                transactions,
              }),
      }
    }

    /** The last RECENT_TRADES trades between venues a and b, either direction, latest first. */
    const recent = Effect.fn("Trades.recent")(function* (a: string, b: string) {
      const pair = yield* checkPair(a, b)
      const rows = yield* recentTrades(pair[0], pair[1], RECENT_TRADES).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      )
      return { a: pair[0], b: pair[1], rows }
    })

    /** One page of the history: every pair, or the one of `a` and `b`; `scope=mine` keeps the master's trades. */
    const history = Effect.fn("Trades.history")(function* (query: HistoryQuery) {
      const { a, b } = query
      if ((a === undefined) !== (b === undefined)) {
        return yield* new InvalidRequest({ message: "give both a and b (one pair) or neither (every pair)" })
      }
      const pair = a !== undefined && b !== undefined ? yield* checkPair(a, b) : null
      const filters: TradeFilters = { scope: query.scope, master: query.master, pair }
      let after: Parameters<typeof tradePage>[0]["after"]
      if (query.after !== undefined) {
        const decoded = decodeTradeCursor(cursorKey, filters, query.after)
        if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: decoded.left })
        after = decoded.right
      }
      const page = yield* tradePage({ master: query.master, pair, after, limit: query.limit }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      )
      const txs = yield* transactionsByFill(page.rows).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      const data = yield* Effect.try(() => page.rows.map((r) => historyItem(r, txs.get(r.id) ?? []))).pipe(Effect.orDie)
      const last = page.rows[page.rows.length - 1]
      return {
        data,
        next_cursor:
          page.hasMore && last !== undefined
            ? encodeTradeCursor(cursorKey, filters, { settledMicros: BigInt(last.settled_us), id: last.id })
            : null,
        has_more: page.hasMore,
      }
    })

    return { recent, history } as const
  }),
}) {
  /** The service on a throw-away database (SqlTest); the test gives the AppConfig. */
  static readonly Test = Trades.Default.pipe(Layer.provideMerge(SqlTest))
}
