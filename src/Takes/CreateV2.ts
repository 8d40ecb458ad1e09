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
import { journalNotify, journalRowsInsert } from "../Sql/Journal.ts"
import { TakeNoLiquidity } from "./Errors.ts"
import { loadQuoteCandidatesV2, type QuoteCandidateV2Row, toTakeCandidateV2 } from "./QuoteCandidatesV2.ts"
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

/** A fill of the take, written with the take in one statement (column arrays). */
interface FillRow {
  readonly id: string
  readonly orderId: string
  readonly fillKey: string
  readonly sequence: string
  readonly quoteIndex: number
  readonly identityId: string
  readonly amountIn: string
  readonly amountOut: string
  readonly payee: string
  readonly hashlock: string
  /** The EIP-712 message as the taker signs it (wire form). */
  readonly fill: Record<string, unknown>
  readonly digest: string
  readonly index: number
  readonly proof: unknown
}

const setKey = (orderId: string, sequence: string | bigint) => `${orderId}/${sequence}`
const lower = (a: string) => getAddress(a).toLowerCase() as Address

/**
 * The v2 take, inside reserveTake's transaction (its advisory lock, client-id check and share lock on the payer's
 * link already taken): routes over v2 quote sets only (src/Takes/QuoteCandidatesV2.ts, order rows locked), then
 * per fill reserves the lowest free hashlock index of its (order, sequence) (read in the candidates' fresh read
 * under the locks, QuoteCandidatesV2.ts freeIndexesOf: one no fill holds, an index of a fill that expired unsigned
 * being free again, migrations/0029; a set's fills get them in route order; the order rows' locks serialise takes
 * on the same set and fills_hashlock_index refuses a double hold anyway), the hashlock at that index of the
 * published set and its Merkle proof, and builds the v2 Fill (times from takeTimesV2, src/Domain/TakeTimingV2.ts,
 * which explains them) and its digest. `to_sign`: the permit (Σ amountIn to the taker v2 escrow, deadline payBy),
 * then one `margin_move` per fill with its claimed `digest`.
 * The take, its fills and its journal row are then one statement.
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
      // A set gives a take at most max_parts fills, each its own index.
      freeIndexes: c.maxParts,
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
    const journalFills: Array<Record<string, string | number>> = []
    const fillRows: Array<FillRow> = []
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
      if (!free.has(key)) free.set(key, [...(row.free_indexes ?? [])])
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
      fillRows.push({
        id: fillId,
        orderId: part.orderId,
        fillKey: fill.fillId,
        sequence: part.sequence.toString(),
        quoteIndex: part.quoteIndex,
        identityId: row.identity_id,
        amountIn: part.amountIn.toString(),
        amountOut: part.amountOut.toString(),
        payee: fill.payee,
        hashlock: fill.hashlock,
        fill: typed.message,
        digest,
        index,
        proof: tree.proof(index),
      })
      journalFills.push({
        fill_id: fillId,
        order_id: part.orderId,
        amount_in: part.amountIn.toString(),
        amount_out: part.amountOut.toString(),
        fill_digest: digest,
      })
    }
    const created = {
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
    }
    // The take, its fills and its journal row: one statement, the last under the order rows' locks before COMMIT
    // (each round trip here is time other takes on these orders wait). The fills and the row are written only if
    // the take was (a concurrent request with the same client id: Raced, nothing written).
    const inserted = yield* sql<{ id: string; notified: number }>`
      with take as (
        insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer, recipient,
          max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at, escrow_version,
          pay_key_address, pay_by)
        values (${takeId}::uuid, ${c.master}, ${c.clientTakeId}, ${c.from.id}, ${c.to.id}, ${c.amountIn.toString()},
          ${c.minOut.toString()}, ${c.payer}, ${c.recipient}, ${c.maxParts}, ${route.totalIn.toString()},
          ${route.totalOut.toString()}, 'reserved', to_timestamp(${times.payDeadline.toString()}::bigint),
          ${JSON.stringify(items)}::jsonb, now(), now(), 2, ${c.payKey}, ${times.payBy.toString()})
        on conflict (master, client_take_id) do nothing
        returning id
      ), fills as (
        insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
          fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee,
          recipient, hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill, fill_digest, hashlock_index,
          hashlock_proof, pay_by)
        select f.id, ${takeId}::uuid, f.order_id, ${c.from.id}, ${c.payer}, 'reserved', false, now(), now(),
          f.fill_key, ${c.to.id}, f.sequence, f.quote_index, f.identity_id, f.amount_in, f.amount_out, f.payee,
          ${c.recipient}, f.hashlock, null, ${times.makerExpiry.toString()}, ${times.takerExpiry.toString()}, f.fill,
          f.digest, f.index, f.proof, ${times.payBy.toString()}
        from rows from (
          unnest(${fillRows.map((f) => f.id)}::uuid[]), unnest(${fillRows.map((f) => f.orderId)}::text[]),
          unnest(${fillRows.map((f) => f.fillKey)}::text[]), unnest(${fillRows.map((f) => f.sequence)}::bigint[]),
          unnest(${fillRows.map((f) => f.quoteIndex)}::int[]), unnest(${fillRows.map((f) => f.identityId)}::uuid[]),
          unnest(${fillRows.map((f) => f.amountIn)}::numeric[]), unnest(${fillRows.map((f) => f.amountOut)}::numeric[]),
          unnest(${fillRows.map((f) => f.payee)}::text[]), unnest(${fillRows.map((f) => f.hashlock)}::text[]),
          jsonb_array_elements(${JSON.stringify(fillRows.map((f) => f.fill))}::jsonb),
          unnest(${fillRows.map((f) => f.digest)}::text[]), unnest(${fillRows.map((f) => f.index)}::int[]),
          jsonb_array_elements(${JSON.stringify(fillRows.map((f) => f.proof))}::jsonb)
        ) as f(id, order_id, fill_key, sequence, quote_index, identity_id, amount_in, amount_out, payee, hashlock, fill,
          digest, index, proof)
        where exists (select 1 from take)
      ), appended as (${journalRowsInsert(sql, [created], sql`exists (select 1 from take)`)})
      select take.id::text as id,
        (select count(*)::int from (${journalNotify(sql, [])}) n where exists (select 1 from appended)) as notified
      from take`
    if (inserted.length === 0) return { _tag: "Raced" as const }
    return { _tag: "Created" as const, takeId }
  })
