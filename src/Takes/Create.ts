import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { type Address, getAddress, type Hex } from "viem"
import { AppConfig, type DeploymentConfig, type VenueConfig } from "../Config.ts"
import { type Fill, fillTypedData, PERPS_DEX } from "../Domain/EscrowTypedData.ts"
import { fillKeyOf } from "../Domain/FillId.ts"
import { permitTypedData, type TokenDomain } from "../Domain/Permit.ts"
import { MAX_UINT256 } from "../Domain/Primitives.ts"
import { routeTake, type TakeCandidate } from "../Domain/TakeRouter.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { randomUuid } from "../SecureRandom.ts"
import { fillSecretKeyring, generateFillSecret } from "../Settlement/FillSecrets.ts"
import { takerUnpaidLocks } from "../Settlement/RepoV2.ts"
import { appendJournal } from "../Sql/Journal.ts"
import { reserveTakeV2 } from "./CreateV2.ts"
import {
  TakeConflict,
  TakeInvalid,
  TakeNoLiquidity,
  TakePayerNotLinked,
  TakeUnpaidLocks,
  TakeVenueUnknown,
} from "./Errors.ts"
import { loadQuoteCandidates, type QuoteCandidateRow, toTakeCandidate } from "./QuoteCandidates.ts"
import { findTakeDetailByClientId, type TakeDetail, type TakeRow } from "./Repo.ts"
import { type TakeSignItem, type TakeWithSignItems, takeViewOf } from "./View.ts"

/** What a take asks for (POST /v1/takes, or a transfer intent's take). Addresses any case; amounts base units. */
export interface CreateTakeInput {
  /** Lowercase master address of the session. */
  readonly master: string
  readonly clientTakeId: string
  readonly from: string
  readonly to: string
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly payer: string
  readonly recipient: string
  readonly maxParts: number
  /**
   * The taker client's pay key (address), required when the take is v2 (takeEscrowVersion); ignored for a v1 take,
   * whose Fill names none.
   */
  readonly payKey?: string | undefined
}

/**
 * Settlement v2 takes: when `settlement.escrow_version` is 2 and both venues name their SettlementEscrowV2, the take
 * routes over v2 orders only and its Fills name the client's pay key; otherwise v1, over v1 orders only.
 */
export const takeEscrowVersion = (deployment: DeploymentConfig, from: VenueConfig, to: VenueConfig): 1 | 2 =>
  deployment.settlement.escrow_version === 2 && from.escrow_v2 !== undefined && to.escrow_v2 !== undefined ? 2 : 1

const sameParameters = (row: TakeRow, i: CreateTakeInput) =>
  (row.escrow_version !== 2 || row.pay_key_address === i.payKey?.toLowerCase()) &&
  row.from_venue === i.from &&
  row.to_venue === i.to &&
  BigInt(row.amount_in) === i.amountIn &&
  BigInt(row.min_out) === i.minOut &&
  row.payer === i.payer.toLowerCase() &&
  row.recipient === i.recipient.toLowerCase() &&
  row.max_parts === i.maxParts

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** Advisory lock space (first key) of take creation per (master, client id); the second key is a hash of both. */
const TAKE_CLIENT_LOCK = 7_210_011

const candidateKey = (orderId: string, sequence: bigint | string, quoteIndex: number) =>
  `${orderId}/${sequence}/${quoteIndex}`

/** A created take's view; `created` is false when an earlier request made it (a retry). */
export type CreatedTake = TakeWithSignItems & { readonly created: boolean }

/** An existing take for the same (master, client id): the same one for the same parameters, else a conflict. */
const existing = (detail: TakeDetail, input: CreateTakeInput) =>
  sameParameters(detail.take, input)
    ? Effect.succeed<CreatedTake>({ ...takeViewOf(detail), created: false })
    : Effect.fail(new TakeConflict({ takeId: detail.take.id }))

/** A take the checks let through: its venues, the lowercase payer and recipient, its settlement version. */
export interface TakePlan {
  readonly input: CreateTakeInput
  readonly from: VenueConfig
  readonly to: VenueConfig
  readonly payer: string
  readonly recipient: string
  readonly version: 1 | 2
}

/** The payer's permit context on the `from` token, read from its chain by the caller before reserveTake. */
export interface TakePermit {
  readonly domain: TokenDomain
  readonly nonce: bigint
}

export type TakeCheck =
  | { readonly _tag: "Existing"; readonly take: CreatedTake }
  | { readonly _tag: "New"; readonly plan: TakePlan }

/**
 * The checks of a take before anything is read from a chain (src/Takes.ts createTake runs them, reads the permit
 * context, then reserveTake): the parameters, then an existing take of (master, clientTakeId) (the same parameters
 * answer it, `Existing`; others TakeConflict), then (v2) the taker's unpaid locks, then the payer's link on `from`.
 * Beta access is the caller's check (requireAccess).
 */
export const checkTake = (input: CreateTakeInput) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const from = venueOf(input.from)
    const to = venueOf(input.to)
    if (!from) return yield* new TakeVenueUnknown({ venue: input.from })
    if (!to) return yield* new TakeVenueUnknown({ venue: input.to })
    if (from.id === to.id) return yield* new TakeInvalid({ message: "from and to must be different venues" })
    if (input.amountIn <= 0n || input.amountIn > MAX_UINT256) {
      return yield* new TakeInvalid({ message: "amount_in must be positive and at most 2^256 - 1" })
    }
    if (input.minOut < 0n || input.minOut > MAX_UINT256) {
      return yield* new TakeInvalid({ message: "min_out must be at most 2^256 - 1" })
    }
    const partsMax = deployment.limits.take_parts_max
    if (!Number.isInteger(input.maxParts) || input.maxParts < 1 || input.maxParts > partsMax) {
      return yield* new TakeInvalid({ message: `max_parts must be an integer from 1 to ${partsMax}` })
    }
    if (!ADDRESS.test(input.payer) || !ADDRESS.test(input.recipient)) {
      return yield* new TakeInvalid({ message: "payer and recipient must be addresses" })
    }
    if (BigInt(input.recipient) === 0n) return yield* new TakeInvalid({ message: "recipient must not be zero" })
    const payer = input.payer.toLowerCase()
    const recipient = input.recipient.toLowerCase()
    const version = takeEscrowVersion(deployment, from, to)
    if (version === 2) {
      if (input.payKey === undefined) {
        return yield* new TakeInvalid({ message: "pay_key is required: settlement v2 Fills name the client's pay key" })
      }
      if (!ADDRESS.test(input.payKey) || BigInt(input.payKey) === 0n) {
        return yield* new TakeInvalid({ message: "pay_key must be a non-zero address" })
      }
    }
    // A retry of an existing take is answered whatever the account's record since.
    const before = yield* findTakeDetailByClientId(input.master, input.clientTakeId)
    if (Option.isSome(before)) {
      return { _tag: "Existing", take: yield* existing(before.value, input) } as TakeCheck
    }
    if (version === 2) {
      // Takers whose locks were left unpaid are limited (DESIGN §10.2); counted by settlement (SettlementV2.ts).
      const record = yield* takerUnpaidLocks(input.master, deployment.settlement.max_unpaid_locks)
      if (record.over) return yield* new TakeUnpaidLocks({ unpaid: record.unpaid, limit: record.limit })
    }

    // Checked again under a share lock in reserveTake's transaction; here first so a refusal needs no chain read.
    const linkedNow = yield* sql`
      select 1 from linked_accounts where master = ${input.master} and venue = ${from.id} and address = ${payer}`
    if (linkedNow.length === 0) return yield* new TakePayerNotLinked({ venue: from.id, payer })
    return { _tag: "New", plan: { input, from, to, payer, recipient, version } } as TakeCheck
  })

/**
 * Reserves a checked take (checkTake) with the payer's permit context: routes `amountIn` over the live quotes NOW,
 * reserves the fills and answers what the payer signs (`created: true`, or `created: false` when a concurrent
 * request with the same client id committed first and the parameters match; else TakeConflict).
 *
 * In one transaction (a savepoint when the caller already has one; READ COMMITTED assumed): the payer's link is
 * share-locked (an unlink cannot slip in), the candidate orders are locked (`forUpdate`, so concurrent takes never
 * over-allocate an order or a set), the route must reach `minOut` with at least one fill (else TakeNoLiquidity,
 * nothing written), then per fill a UUID, its bytes32 fill key, a fresh secret (sealed, src/Settlement/FillSecrets.ts)
 * and hashlock, the taker's `Fill`; the take (state reserved) and its fills (state reserved) are inserted and
 * `take.created` is journaled for the master.
 *
 * Times come from the database clock (`now()` of the transaction), whole seconds:
 * - pay_deadline = now + limits.pay_window_seconds (signatures are accepted until then; unsigned reservations
 *   release then);
 * - makerExpiry = pay_deadline + settlement.maker_timeout_seconds (the lock can be made until the pay deadline and
 *   then has the full maker timeout);
 * - takerExpiry = makerExpiry + max(taker_timeout − maker_timeout, reveal_cutoff_seconds). The escrows require
 *   takerExpiry ≥ makerExpiry + REVEAL_WINDOW: a deployment's REVEAL_WINDOW must not exceed reveal_cutoff_seconds
 *   (devnet: both 600).
 * Payout: dex 0 (perps) and toMargin true: the `to` escrow deposits through its margin router and credits the
 * recipient's zero-id balance when the venue refuses, so margin is always the right request.
 *
 * The permit (EIP-2612 on the `from` token, spender the `from` escrow, value Σ amountIn) has deadline makerExpiry,
 * not pay_deadline: it is spent by the first `pay`, which comes only after that fill's lock is final and may
 * legitimately happen after pay_deadline (a take signed at the end of its window); the escrow refuses `pay` from
 * makerExpiry on anyway, and pulls only with the payer's signed Fill. Its nonce is `permit.nonce`, read from the
 * chain by the caller. A permit still unused by an earlier take has the same nonce: the escrow tolerates a consumed
 * permit by checking the allowance.
 *
 * Settlement v2 (takeEscrowVersion 2): the same transaction, then src/Takes/CreateV2.ts routes over v2 sets,
 * reserves hashlock indexes and answers the v2 Fills (its times: src/Domain/TakeTimingV2.ts).
 */
export const reserveTake = (plan: TakePlan, permit: TakePermit) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const { input, from, to, payer, recipient, version } = plan
    const outcome = yield* sql.withTransaction(
      Effect.gen(function* () {
        // Identical requests in flight at once: the second waits here until the first commits and then answers its
        // take (without this it would route over what the first reserved and could answer NO_LIQUIDITY). now() is
        // the transaction's start, the same in every statement of it.
        // plan_cache_mode, for this transaction only: under `auto` each pool connection plans a named statement
        // afresh for its first five calls, and the candidates reads are the take's costliest plans (13 ms a read on
        // average at 64 takes in the settle bench, the fresh one under the order rows' locks, where every other take
        // on the order waits). A generic plan is made once per connection and again after an ANALYZE; results never
        // depend on the plan (test/bench/candidates.ts: the generic plan stays flat to 200,000 fills of history).
        const [clock] = yield* sql<{ now: string }>`
          select pg_advisory_xact_lock(${TAKE_CLIENT_LOCK}, hashtext(${`${input.master}\n${input.clientTakeId}`})),
            set_config('plan_cache_mode', 'force_generic_plan', true),
            floor(extract(epoch from now()))::bigint::text as now`
        // A statement after the lock's, so its snapshot sees what an identical request committed meanwhile.
        const [state] = yield* sql<{ raced: boolean; linked: boolean }>`
          select exists (select 1 from takes where master = ${input.master} and client_take_id = ${input.clientTakeId})
              as raced,
            exists (select 1 from linked_accounts
              where master = ${input.master} and venue = ${from.id} and address = ${payer} for share) as linked`
        if (state!.raced) return { _tag: "Raced" as const }
        if (!state!.linked) return yield* new TakePayerNotLinked({ venue: from.id, payer })
        const nowSeconds = BigInt(clock!.now)
        if (version === 2) {
          return yield* reserveTakeV2({
            deployment,
            master: input.master,
            clientTakeId: input.clientTakeId,
            from,
            to,
            amountIn: input.amountIn,
            minOut: input.minOut,
            maxParts: input.maxParts,
            payer,
            recipient,
            payKey: input.payKey!.toLowerCase(),
            nowSeconds,
            permit,
          })
        }
        const rows = yield* loadQuoteCandidates({
          from: { id: from.id, chainId: from.chain_id, token: from.token },
          to: to.id,
          lockCutoffSeconds: deployment.settlement.lock_cutoff_seconds,
          forUpdate: true,
        })
        const byKey = new Map<string, QuoteCandidateRow>()
        const candidates: Array<TakeCandidate> = []
        for (const row of rows) {
          const candidate = toTakeCandidate(row)
          if (candidate === undefined) continue
          byKey.set(candidateKey(row.order_id, row.sequence, row.quote_index), row)
          candidates.push(candidate)
        }
        const route = routeTake({
          amountIn: input.amountIn,
          candidates,
          maxParts: input.maxParts,
          fillMax: BigInt(deployment.limits.fill_max),
        })
        if (route.fills.length === 0 || route.totalOut < input.minOut) {
          return yield* new TakeNoLiquidity({
            message:
              route.fills.length === 0
                ? "no live quote can fill this take now"
                : `the best route now delivers ${route.totalOut}, below min_out ${input.minOut}`,
          })
        }
        const timings = deployment.settlement
        const payDeadline = nowSeconds + BigInt(deployment.limits.pay_window_seconds)
        const makerExpiry = payDeadline + BigInt(timings.maker_timeout_seconds)
        const takerExpiry =
          makerExpiry +
          BigInt(Math.max(timings.taker_timeout_seconds - timings.maker_timeout_seconds, timings.reveal_cutoff_seconds))

        const takeId = yield* randomUuid
        const inserted = yield* sql`
          insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer, recipient,
            max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at)
          values (${takeId}::uuid, ${input.master}, ${input.clientTakeId}, ${from.id}, ${to.id},
            ${input.amountIn.toString()}, ${input.minOut.toString()}, ${payer}, ${recipient}, ${input.maxParts},
            ${route.totalIn.toString()}, ${route.totalOut.toString()}, 'reserved',
            to_timestamp(${payDeadline.toString()}::bigint), '[]'::jsonb, now(), now())
          on conflict (master, client_take_id) do nothing
          returning id`
        // A concurrent create with the same client id committed first: answer as a retry would.
        if (inserted.length === 0) return { _tag: "Raced" as const }

        const ring = fillSecretKeyring(deployment)
        const items: Array<TakeSignItem> = [
          {
            kind: "permit",
            signer: payer,
            typed_data: toWireTypedData(
              permitTypedData(permit.domain, {
                owner: payer,
                spender: from.escrow,
                value: route.totalIn,
                nonce: permit.nonce,
                deadline: makerExpiry,
              }),
            ),
          },
        ]
        const journalFills: Array<Record<string, string>> = []
        for (const part of route.fills) {
          const row = byKey.get(candidateKey(part.orderId, part.sequence, part.quoteIndex))!
          const fillId = yield* randomUuid
          const fillKey = fillKeyOf(fillId)
          const secret = yield* generateFillSecret(ring, fillKey)
          const fill = fillMessage({
            fillKey,
            row,
            from,
            to,
            payer,
            recipient,
            amountIn: part.amountIn,
            amountOut: part.amountOut,
            hashlock: secret.hashlock,
            makerExpiry,
            takerExpiry,
          })
          const typed = toWireTypedData(fillTypedData(fill)) as { message: Record<string, unknown> }
          items.push({ kind: "margin_move", signer: payer, typed_data: typed, fill_id: fillId })
          yield* sql`
            insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
              fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee,
              recipient, hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill)
            values (${fillId}::uuid, ${takeId}::uuid, ${part.orderId}, ${from.id}, ${payer}, 'reserved', false,
              now(), now(),
              ${fillKey}, ${to.id}, ${part.sequence.toString()}, ${part.quoteIndex}, ${row.identity_id}::uuid,
              ${part.amountIn.toString()}, ${part.amountOut.toString()}, ${fill.payee}, ${recipient},
              ${secret.hashlock}, ${secret.ciphertext}, ${makerExpiry.toString()}, ${takerExpiry.toString()},
              ${JSON.stringify(typed.message)}::jsonb)`
          journalFills.push({
            fill_id: fillId,
            order_id: part.orderId,
            amount_in: part.amountIn.toString(),
            amount_out: part.amountOut.toString(),
          })
        }
        yield* sql`update takes set to_sign = ${JSON.stringify(items)}::jsonb where id = ${takeId}::uuid`
        yield* appendJournal({
          kind: "take.created",
          master: input.master,
          payload: {
            take_id: takeId,
            client_take_id: input.clientTakeId,
            from: from.id,
            to: to.id,
            state: "reserved",
            total_in: route.totalIn.toString(),
            total_out: route.totalOut.toString(),
            fills: journalFills,
          },
        })
        return { _tag: "Created" as const, takeId }
      }),
    )
    const row = yield* findTakeDetailByClientId(input.master, input.clientTakeId)
    if (Option.isNone(row)) return yield* Effect.dieMessage("the take vanished after its insert")
    if (outcome._tag === "Raced") return yield* existing(row.value, input)
    const created: CreatedTake = { ...takeViewOf(row.value), created: true }
    return created
  })

/**
 * The taker's Fill for one routed part, in wire-stable form: lowercase addresses (the stored `fill` column and
 * `to_sign` show them so), every number a bigint (decimal strings on the wire).
 */
const fillMessage = (p: {
  readonly fillKey: Hex
  readonly row: QuoteCandidateRow
  readonly from: VenueConfig
  readonly to: VenueConfig
  readonly payer: string
  readonly recipient: string
  readonly amountIn: bigint
  readonly amountOut: bigint
  readonly hashlock: Hex
  readonly makerExpiry: bigint
  readonly takerExpiry: bigint
}): Fill => ({
  fillId: p.fillKey,
  orderId: p.row.order_id.toLowerCase() as Hex,
  sequence: BigInt(p.row.sequence),
  makerChainId: BigInt(p.to.chain_id),
  makerEscrow: lower(p.to.escrow),
  takerChainId: BigInt(p.from.chain_id),
  takerEscrow: lower(p.from.escrow),
  payer: lower(p.payer),
  // The escrow's lock requires payee = the quote's recipient (the maker is paid where it asked).
  payee: lower(p.row.quote.recipient),
  amountIn: p.amountIn,
  recipient: lower(p.recipient),
  amountOut: p.amountOut,
  dex: PERPS_DEX,
  toMargin: true,
  hashlock: p.hashlock,
  makerExpiry: p.makerExpiry,
  takerExpiry: p.takerExpiry,
})

const lower = (a: string) => getAddress(a).toLowerCase() as Address
