/**
 * Takes (spec POST /v1/takes/preview, POST /v1/takes, POST /v1/takes/{id}/signatures, GET /v1/takes/{id}; DESIGN
 * §10.1): a take routes `amount_in` over live quote sets, reserves its fills and answers what the payer signs; the
 * payer's signatures move it to `signed`, from where its Settlement entity drives the fills; on settlement v2 the
 * client's pay key then authorises payment (or cancels). src/Takes/Http.ts authenticates and serves these.
 *
 * This module is where a take reads a chain (the payer's permit nonce on the `from` token): it passes the values to
 * the repository functions of src/Takes/*, which run the SQL and read no chain. It imports no SQL client: the
 * service binds its repository calls to the database it was built with (bindSql, src/Sql/Bind.ts) and gives them
 * exactly the config, chain clients and randomness it captured. A take's Settlement entity is woken through the
 * Settlement service after each commit that gives it work.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { AccessGate } from "./Access.ts"
import { ChainClients } from "./Chain/ChainClients.ts"
import { readPermitContext } from "./Chain/TokenReads.ts"
import { AppConfig, type VenueConfig } from "./Config.ts"
import { InvalidRequest, NotFound, SignatureInvalid, StateConflict } from "./Domain/Errors.ts"
import { routeTake, type TakeCandidate } from "./Domain/TakeRouter.ts"
import { SecureRandom } from "./SecureRandom.ts"
import { Settlement } from "./Settlement.ts"
import { bindSql } from "./Sql/Bind.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { type CreateTakeInput, checkTake, reserveTake, type TakePermit, takeEscrowVersion } from "./Takes/Create.ts"
import { TakeChainUnavailable, takeFailure } from "./Takes/Errors.ts"
import { acceptCancels, acceptPayAuthorization } from "./Takes/PayKey.ts"
import { loadQuoteCandidates, type QuoteCandidateRow, toTakeCandidate } from "./Takes/QuoteCandidates.ts"
import { loadQuoteCandidatesV2, toTakeCandidateV2 } from "./Takes/QuoteCandidatesV2.ts"
import { signTake } from "./Takes/Repo.ts"
import { canonical, signedBy } from "./Takes/Signatures.ts"
import { type TakeWithSignItems, takeOwnedBy } from "./Takes/View.ts"

export type { CreateTakeInput } from "./Takes/Create.ts"

/**
 * The payer's permit context on the `from` token (its EIP-712 domain and permit nonce), from the `from` chain's
 * node: TakeChainUnavailable when the deployment has no node for it or the node did not answer.
 */
export const readTakePermit = (from: VenueConfig, payer: string) =>
  Effect.gen(function* () {
    const client = (yield* ChainClients).venue(from.id)
    if (!client) return yield* new TakeChainUnavailable({ message: `no node for ${from.id}` })
    const context = yield* readPermitContext(client, from.token, payer).pipe(
      Effect.mapError((e) => new TakeChainUnavailable({ message: e.message })),
    )
    return { domain: context.domain, nonce: context.nonce } satisfies TakePermit
  })

/**
 * Creates a take: the checks (checkTake: parameters, an existing take of the client id, unpaid locks, the payer's
 * link), then the payer's permit context from the `from` chain, then the reservation in one transaction
 * (reserveTake, which explains routing, times and `to_sign`). The same (master, clientTakeId) with the same
 * parameters answers the existing take (`created: false`, the same `to_sign`), with other parameters TakeConflict.
 * Fails with the TakeCreateError refusals (the transfer desk records them); nothing is written on a refusal.
 * `access` (the beta gate) runs after a repeat is answered, before anything new. Run inside a caller's transaction
 * (a transfer's take), the reservation is a savepoint of it.
 */
export const createTake = <E = never, R = never>(
  input: CreateTakeInput,
  // No gate by default: a transfer's take was admitted when its transfer was.
  access: Effect.Effect<void, E, R> = Effect.void as Effect.Effect<void, E, R>,
) =>
  Effect.gen(function* () {
    const check = yield* checkTake(input)
    if (check._tag === "Existing") return check.take
    yield* access
    const permit = yield* readTakePermit(check.plan.from, check.plan.payer)
    return yield* reserveTake(check.plan, permit)
  })

export interface PreviewInput {
  readonly from: string
  readonly to: string
  readonly amountIn: bigint
  readonly maxParts?: number | undefined
}

/** POST /v1/takes/{id}/signatures: the payer's permit and Fills, or the pay key's authorisation, or its cancels. */
export interface TakeSignatures {
  readonly permit?: string | undefined
  readonly fills?: ReadonlyArray<{ readonly fill_id: string; readonly signature: string }> | undefined
  readonly pay_authorization?: string | undefined
  readonly cancels?: ReadonlyArray<{ readonly fill_id: string; readonly signature: string }> | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const candidateKey = (orderId: string, sequence: bigint | string, quoteIndex: number) =>
  `${orderId}/${sequence}/${quoteIndex}`

export class Takes extends Effect.Service<Takes>()("Takes", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { deployment } = config
    const settlement = yield* Settlement
    const db = yield* bindSql
    // Exactly these services (not the whole context of construction, which would shadow the caller's span).
    const context = Context.make(AppConfig, config).pipe(
      Context.add(ChainClients, yield* ChainClients),
      Context.add(SecureRandom, yield* SecureRandom),
    )
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const fillMax = BigInt(deployment.limits.fill_max)
    const partsMax = deployment.limits.take_parts_max

    /** Repository calls and chain reads, on the database, config, chain clients and randomness it was built with. */
    const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => db(Effect.provide(effect, context))

    /**
     * Wakes the take's Settlement entity after a commit. Woken, not sent as a persisted intent: the rows are
     * committed and a repeat is answered from the take's row (client_take_id, state). The entity expires an
     * unsigned take at the end of its pay window.
     */
    const wake = settlement.wake

    /** The master's own take, or 404 (another master's take is indistinguishable from none, as is a non-id). */
    const ownTake = (id: string, master: string) =>
      UUID.test(id)
        ? Effect.flatMap(run(takeOwnedBy(id.toLowerCase(), master)).pipe(Effect.orDie), (v) =>
            Option.isSome(v) ? Effect.succeed(v.value) : new NotFound({ message: "no such take" }),
          )
        : new NotFound({ message: "no such take" })

    /**
     * The route the take would get now, committing nothing: the same candidates as create (v2 sets only on a v2
     * deployment), `max_parts` capped at the deployment's limit. An empty route is an answer, not an error.
     */
    const preview = Effect.fn("Takes.preview")(function* (p: PreviewInput) {
      const from = venueOf(p.from)
      const to = venueOf(p.to)
      if (!from) return yield* new NotFound({ message: `unknown venue ${p.from}` })
      if (!to) return yield* new NotFound({ message: `unknown venue ${p.to}` })
      if (from.id === to.id) return yield* new InvalidRequest({ message: "from and to must be different venues" })
      if (p.amountIn === 0n) return yield* new InvalidRequest({ message: "amount_in must be positive" })
      const query = {
        from: { id: from.id, chainId: from.chain_id, token: from.token },
        to: to.id,
        lockCutoffSeconds: deployment.settlement.lock_cutoff_seconds,
      }
      const v2 = takeEscrowVersion(deployment, from, to) === 2
      const rows: ReadonlyArray<QuoteCandidateRow> = yield* run(
        v2 ? loadQuoteCandidatesV2({ ...query, takerEscrow: from.escrow_v2!.address }) : loadQuoteCandidates(query),
      ).pipe(Effect.orDie)
      const byKey = new Map<string, QuoteCandidateRow>()
      const candidates: Array<TakeCandidate> = []
      for (const row of rows) {
        const candidate = v2 ? toTakeCandidateV2(row as Parameters<typeof toTakeCandidateV2>[0]) : toTakeCandidate(row)
        if (candidate === undefined) continue
        byKey.set(candidateKey(row.order_id, row.sequence, row.quote_index), row)
        candidates.push(candidate)
      }
      const route = routeTake({
        amountIn: p.amountIn,
        candidates,
        maxParts: Math.min(p.maxParts ?? partsMax, partsMax),
        fillMax,
      })
      return {
        from: from.id,
        to: to.id,
        amount_in: p.amountIn.toString(),
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
    })

    /** createTake with its refusals as catalogue errors; the take's Settlement entity is woken after the commit. */
    /** A repeat of an earlier take is answered whatever the account's access since; `access` gates a new one. */
    const create = Effect.fn("Takes.create")(function* <R>(input: CreateTakeInput, access: AccessGate<R>) {
      const out = yield* run(createTake(input, access)).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.catchIf((e) => e._tag !== "AccessRequired", takeFailure),
      )
      yield* wake(out.take.id)
      return out
    })

    /** The payer's permit and one signature per fill: verified against the payer, stored once (reserved → signed). */
    const signByPayer = (
      view: TakeWithSignItems,
      master: string,
      permitGiven: string,
      fillsGiven: NonNullable<TakeSignatures["fills"]>,
    ) =>
      Effect.gen(function* () {
        if (view.take.signed_at === null && view.take.state !== "reserved") {
          return yield* new StateConflict({ message: `the take is ${view.take.state}; create a new take` })
        }
        const payer = view.take.payer
        const permitItem = view.toSign.find((i) => i.kind === "permit")!
        const moves = view.toSign.filter((i) => i.kind === "margin_move")
        const given = new Map<string, string>()
        for (const f of fillsGiven) {
          const id = f.fill_id.toLowerCase()
          if (given.has(id)) return yield* new InvalidRequest({ message: `fill ${id} is given twice` })
          given.set(id, f.signature)
        }
        if (given.size !== moves.length || moves.some((m) => !given.has(m.fill_id!))) {
          return yield* new InvalidRequest({
            message: "give exactly one signature for every fill_id of the take's to_sign",
          })
        }
        const permit = yield* canonical(permitGiven)
        if (!(yield* signedBy(permitItem, payer, permit))) {
          return yield* new SignatureInvalid({ message: "the permit is not signed by the payer" })
        }
        const fills = new Map<string, string>()
        for (const move of moves) {
          const signature = yield* canonical(given.get(move.fill_id!)!)
          if (!(yield* signedBy(move, payer, signature))) {
            return yield* new SignatureInvalid({ message: `the Fill of ${move.fill_id} is not signed by the payer` })
          }
          fills.set(move.fill_id!, signature)
        }
        const outcome = yield* run(
          signTake({ takeId: view.take.id, master, permitSignature: permit, fillSignatures: fills }),
        ).pipe(Effect.orDie)
        if (outcome._tag === "Missing") return yield* new NotFound({ message: "no such take" })
        if (outcome._tag === "Closed") {
          return yield* new StateConflict({
            message:
              outcome.state === "expired"
                ? "the take's pay window has passed; create a new take"
                : `the take is ${outcome.state}`,
          })
        }
      })

    /**
     * The take's signatures (one route, three forms): the payer's `permit` and `fills`, or (settlement v2) the pay
     * key's `pay_authorization`, or its `cancels` (src/Takes/PayKey.ts). Exactly one form per call. Answers the take
     * as it is after them; its Settlement entity is woken (signed: it drives the fills from here).
     */
    const sign = Effect.fn("Takes.sign")(function* (master: string, id: string, s: TakeSignatures) {
      const view = yield* ownTake(id, master)
      const walletItems = s.permit !== undefined || s.fills !== undefined
      const payKeyItems = [s.pay_authorization, s.cancels].filter((x) => x !== undefined).length
      if (walletItems ? payKeyItems > 0 : payKeyItems !== 1) {
        return yield* new InvalidRequest({
          message: "give either permit and fills (the payer's), or pay_authorization, or cancels (the pay key's)",
        })
      }
      if (s.pay_authorization !== undefined) {
        // The locks are the maker chain's (fills.maker_venue is the take's `to`).
        yield* run(acceptPayAuthorization(view, master, s.pay_authorization, settlement.nextIndexed(view.take.to)))
      } else if (s.cancels !== undefined) {
        yield* run(acceptCancels(view, master, s.cancels))
      } else if (s.permit === undefined || s.fills === undefined) {
        return yield* new InvalidRequest({ message: "permit and fills go together" })
      } else {
        yield* signByPayer(view, master, s.permit, s.fills)
      }
      yield* wake(view.take.id)
      return yield* ownTake(view.take.id, master)
    })

    /** Settlement v2: the pay key's payment authorisation (PayTake over the take's Fill digests); `sign`'s form. */
    const authorizePay = (master: string, id: string, signature: string) =>
      sign(master, id, { pay_authorization: signature })

    /** The master's take with its `to_sign` (the pay key's item once every lock is final), or 404. */
    const get = Effect.fn("Takes.get")(function* (master: string, id: string) {
      return yield* ownTake(id, master)
    })

    return { preview, create, sign, authorizePay, get } as const
  }),
  dependencies: [Settlement.Default],
}) {
  /**
   * The service on a throw-away database (SqlTest); the test gives the AppConfig, ChainClients, SecureRandom and
   * the Settlement service (Settlement.Test on the same database).
   */
  static readonly Test = Takes.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
