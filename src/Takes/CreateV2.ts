import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Address, getAddress, type Hex } from "viem"
import type { DeploymentConfig, VenueConfig } from "../Config.ts"
import { type FillV2, fillDigest, fillV2TypedData, PERPS_DEX } from "../Domain/EscrowTypedDataV2.ts"
import { fillKeyOf } from "../Domain/FillId.ts"
import { permitTypedData, type TokenDomain } from "../Domain/Permit.ts"
import { routeTake, type TakeCandidate } from "../Domain/TakeRouter.ts"
import { takeTimesV2 } from "../Domain/TakeTimingV2.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { type CachedSet, cachedSet, rememberSet } from "../Orders/HashlockTreeCache.ts"
import { randomUuid } from "../SecureRandom.ts"
import { appendJournal } from "../Sql/Journal.ts"
import { TakeNoLiquidity } from "./Errors.ts"
import {
  HOLDS_HASHLOCK_INDEX,
  loadQuoteCandidatesV2,
  type QuoteCandidateV2Row,
  toTakeCandidateV2,
} from "./QuoteCandidatesV2.ts"
import type { TakeSignItem } from "./View.ts"

/** What checkTake let through and the permit context read from the `from` chain (src/Takes/Create.ts). */
export interface TakeV2Context {
  readonly deployment: DeploymentConfig
  readonly master: string
  readonly clientTakeId: string
  readonly from: VenueConfig
  readonly to: VenueConfig
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly maxParts: number
  /** Lowercase. */
  readonly payer: string
  readonly recipient: string
  readonly payKey: string
  readonly nowSeconds: bigint
  readonly permit: { readonly domain: TokenDomain; readonly nonce: bigint }
}

const setKey = (orderId: string, sequence: string | bigint) => `${orderId}/${sequence}`
const lower = (a: string) => getAddress(a).toLowerCase() as Address

/**
 * The `limit` lowest indexes below `count` that no fill of (order, sequence) holds (HOLDS_HASHLOCK_INDEX). Read
 * under the order row's lock, so no other take hands them out meanwhile; the sweep can only free more.
 */
const freeIndexes = (orderId: string, sequence: bigint, count: number, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ i: number }>`
      select i::int from generate_series(0, ${count - 1}::int) i
      where not exists (
        select 1 from fills
        where order_id = ${orderId} and sequence = ${sequence.toString()} and hashlock_index = i
          and ${sql.unsafe(HOLDS_HASHLOCK_INDEX)})
      order by i limit ${limit}`.pipe(Effect.map((rows) => rows.map((r) => r.i))),
  )

/**
 * The v2 take, inside reserveTake's transaction (its advisory lock, client-id check and share lock on the payer's
 * link already taken): routes over v2 quote sets only (src/Takes/QuoteCandidatesV2.ts, order rows locked), then
 * per fill reserves the lowest free hashlock index of its (order, sequence) (freeIndexes: one no fill holds, an
 * index of a fill that expired unsigned being free again, migrations/0029; a set's fills get them in route order;
 * the order rows' locks serialise takes on the same set and fills_hashlock_index refuses a double hold anyway), the
 * hashlock at that index of the published set and its Merkle proof, and builds the v2 Fill
 * (times from takeTimesV2, src/Domain/TakeTimingV2.ts, which explains them) and its digest. `to_sign`: the permit
 * (Σ amountIn to the taker v2 escrow, deadline payBy), then one `margin_move` per fill with its claimed `digest`.
 * No secret exists here: the maker derives them and reveals on chain.
 */
export const reserveTakeV2 = (c: TakeV2Context) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const takerEscrow = c.from.escrow_v2!.address
    const makerEscrow = c.to.escrow_v2!.address
    const rows = yield* loadQuoteCandidatesV2({
      from: { id: c.from.id, chainId: c.from.chain_id, token: c.from.token },
      to: c.to.id,
      takerEscrow,
      lockCutoffSeconds: c.deployment.settlement.lock_cutoff_seconds,
      forUpdate: true,
    })
    const byKey = new Map<string, QuoteCandidateV2Row>()
    const candidates: Array<TakeCandidate> = []
    for (const row of rows) {
      const candidate = toTakeCandidateV2(row)
      if (candidate === undefined) continue
      byKey.set(`${setKey(row.order_id, row.sequence)}/${row.quote_index}`, row)
      candidates.push(candidate)
    }
    const route = routeTake({
      amountIn: c.amountIn,
      candidates,
      maxParts: c.maxParts,
      fillMax: BigInt(c.deployment.limits.fill_max),
    })
    if (route.fills.length === 0 || route.totalOut < c.minOut) {
      return yield* new TakeNoLiquidity({
        message:
          route.fills.length === 0
            ? "no live quote can fill this take now"
            : `the best route now delivers ${route.totalOut}, below min_out ${c.minOut}`,
      })
    }
    const times = takeTimesV2(c.nowSeconds, c.deployment.settlement, c.deployment.limits.pay_window_seconds)

    const takeId = yield* randomUuid
    const inserted = yield* sql`
      insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer, recipient,
        max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at, escrow_version,
        pay_key_address, pay_by)
      values (${takeId}::uuid, ${c.master}, ${c.clientTakeId}, ${c.from.id}, ${c.to.id}, ${c.amountIn.toString()},
        ${c.minOut.toString()}, ${c.payer}, ${c.recipient}, ${c.maxParts}, ${route.totalIn.toString()},
        ${route.totalOut.toString()}, 'reserved', to_timestamp(${times.payDeadline.toString()}::bigint), '[]'::jsonb,
        now(), now(), 2, ${c.payKey}, ${times.payBy.toString()})
      on conflict (master, client_take_id) do nothing
      returning id`
    if (inserted.length === 0) return { _tag: "Raced" as const }

    const items: Array<TakeSignItem> = [
      {
        kind: "permit",
        signer: c.payer,
        typed_data: toWireTypedData(
          permitTypedData(c.permit.domain, {
            owner: c.payer as Address,
            spender: getAddress(takerEscrow),
            value: route.totalIn,
            nonce: c.permit.nonce,
            deadline: times.payBy,
          }),
        ),
      },
    ]
    // Per set: the published hashlocks' tree (built once) and its free indexes, lowest first, one per route fill.
    const trees = new Map<string, CachedSet>()
    const free = new Map<string, Array<number>>()
    const wanted = new Map<string, number>()
    for (const part of route.fills) {
      const key = setKey(part.orderId, part.sequence)
      wanted.set(key, (wanted.get(key) ?? 0) + 1)
    }
    const journalFills: Array<Record<string, string | number>> = []
    for (const part of route.fills) {
      const row = byKey.get(`${setKey(part.orderId, part.sequence)}/${part.quoteIndex}`)!
      const key = setKey(part.orderId, part.sequence)
      if (!trees.has(key)) {
        const cacheKey = { orderId: part.orderId, sequence: row.sequence, root: row.hashlock_root }
        let set = cachedSet(cacheKey)
        if (set === undefined) {
          const [stored] = yield* sql<{ hashlocks: ReadonlyArray<Hex> }>`
            select hashlocks from quote_sets
            where order_id = ${part.orderId} and sequence = ${part.sequence.toString()} and active`
          set = rememberSet(cacheKey, stored!.hashlocks)
        }
        // Checked when the maker published; a row that disagrees now was edited by hand: no fill could lock.
        if (set === undefined || set.tree.count !== row.hashlock_count) {
          return yield* Effect.dieMessage(`quote set ${key}: its hashlocks do not match its signed root`)
        }
        trees.set(key, set)
      }
      const { tree, hashlocks } = trees.get(key)!
      if (!free.has(key)) {
        free.set(key, yield* freeIndexes(part.orderId, part.sequence, row.hashlock_count, wanted.get(key)!))
      }
      const index = free.get(key)!.shift()
      // The router gives a set at most hashlocksLeft fills, counted under the same order row lock.
      if (index === undefined) return yield* Effect.dieMessage(`quote set ${key}: no free hashlock index left`)
      const fillId = yield* randomUuid
      const fill: FillV2 = {
        fillId: fillKeyOf(fillId),
        owner: lower(row.owner),
        orderId: part.orderId.toLowerCase() as Hex,
        sequence: part.sequence,
        makerChainId: BigInt(c.to.chain_id),
        makerEscrow: lower(makerEscrow),
        takerChainId: BigInt(c.from.chain_id),
        takerEscrow: lower(takerEscrow),
        payer: lower(c.payer),
        // The escrow's lock requires payee = the quote's recipient (the maker is paid where it asked).
        payee: lower(row.quote.recipient),
        amountIn: part.amountIn,
        recipient: lower(c.recipient),
        amountOut: part.amountOut,
        // Perps margin: the maker escrow deposits through its router and credits the zero-id balance on refusal.
        dex: PERPS_DEX,
        toMargin: true,
        hashlock: hashlocks[index]!,
        hashlockIndex: index,
        payKey: lower(c.payKey),
        payBy: times.payBy,
        makerExpiry: times.makerExpiry,
        takerExpiry: times.takerExpiry,
      }
      const digest = fillDigest(fill)
      const typed = toWireTypedData(fillV2TypedData(fill)) as { message: Record<string, unknown> }
      items.push({ kind: "margin_move", signer: c.payer, typed_data: typed, fill_id: fillId, digest })
      yield* sql`
        insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
          fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee,
          recipient, hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill, fill_digest, hashlock_index,
          hashlock_proof, pay_by)
        values (${fillId}::uuid, ${takeId}::uuid, ${part.orderId}, ${c.from.id}, ${c.payer}, 'reserved', false,
          now(), now(), ${fill.fillId}, ${c.to.id}, ${part.sequence.toString()}, ${part.quoteIndex},
          ${row.identity_id}::uuid, ${part.amountIn.toString()}, ${part.amountOut.toString()}, ${fill.payee},
          ${c.recipient}, ${fill.hashlock}, null, ${times.makerExpiry.toString()}, ${times.takerExpiry.toString()},
          ${JSON.stringify(typed.message)}::jsonb, ${digest}, ${index}, ${JSON.stringify(tree.proof(index))}::jsonb,
          ${times.payBy.toString()})`
      journalFills.push({
        fill_id: fillId,
        order_id: part.orderId,
        amount_in: part.amountIn.toString(),
        amount_out: part.amountOut.toString(),
        fill_digest: digest,
      })
    }
    yield* sql`update takes set to_sign = ${JSON.stringify(items)}::jsonb where id = ${takeId}::uuid`
    yield* appendJournal({
      kind: "take.created",
      master: c.master,
      payload: {
        take_id: takeId,
        client_take_id: c.clientTakeId,
        from: c.from.id,
        to: c.to.id,
        state: "reserved",
        escrow_version: 2,
        pay_by: times.payBy.toString(),
        total_in: route.totalIn.toString(),
        total_out: route.totalOut.toString(),
        fills: journalFills,
      },
    })
    return { _tag: "Created" as const, takeId }
  })
