import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { wakeIfClustered } from "../Cluster/KeyedWakes.ts"
import { AppConfig } from "../Config.ts"
import {
  ChainUnavailable,
  InvalidRequest,
  NoLiquidity,
  NotFound,
  PayerNotLinked,
  SignatureInvalid,
  StateConflict,
} from "../Domain/Errors.ts"
import { routeTake, type TakeCandidate } from "../Domain/TakeRouter.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { Settlement } from "../Settlement/Entity.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { createTake, takeEscrowVersion } from "./Create.ts"
import type { TakeCreateError } from "./Errors.ts"
import { acceptCancels, acceptPayAuthorization } from "./PayKey.ts"
import { loadQuoteCandidates, type QuoteCandidateRow, toTakeCandidate } from "./QuoteCandidates.ts"
import { loadQuoteCandidatesV2, toTakeCandidateV2 } from "./QuoteCandidatesV2.ts"
import { signTake } from "./Repo.ts"
import { canonical, signedBy } from "./Signatures.ts"
import { type TakeWithSignItems, takeOwnedBy } from "./View.ts"

const candidateKey = (orderId: string, sequence: bigint | string, quoteIndex: number) =>
  `${orderId}/${sequence}/${quoteIndex}`

/** createTake's refusals as the API's codes (POST /v1/takes; transfers may reuse it). */
export const takeFailure = (
  e: TakeCreateError,
): Effect.Effect<
  never,
  InvalidRequest | NotFound | StateConflict | PayerNotLinked | NoLiquidity | ChainUnavailable
> => {
  switch (e._tag) {
    case "TakeInvalid":
      return new InvalidRequest({ message: e.message })
    case "TakeVenueUnknown":
      return new NotFound({ message: `unknown venue ${e.venue}` })
    case "TakeConflict":
      return new StateConflict({ message: "client_take_id was used with other parameters" })
    case "TakePayerNotLinked":
      return new PayerNotLinked({ message: `payer is not your linked account on ${e.venue}` })
    case "TakeNoLiquidity":
      return new NoLiquidity({ message: e.message })
    case "TakeChainUnavailable":
      return new ChainUnavailable({ message: "the from chain's node did not answer; retry", retryable: true })
    case "TakeUnpaidLocks":
      return new StateConflict({
        message: `this account left ${e.unpaid} locks unpaid (limit ${e.limit}): no new take until they are settled`,
      })
  }
}

const wire = (v: TakeWithSignItems) => ({ take: v.take, to_sign: v.toSign })

/** The session's own take, or 404. */
const ownTake = (id: string, master: string) =>
  Effect.flatMap(takeOwnedBy(id.toLowerCase(), master).pipe(Effect.orDie), (v) =>
    Option.isSome(v) ? Effect.succeed(v.value) : new NotFound({ message: "no such take" }),
  )

export const TakesHandlers = HttpApiBuilder.group(Api, "takes", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const fillMax = BigInt(deployment.limits.fill_max)
    const partsMax = deployment.limits.take_parts_max
    return handlers
      .handle("preview", ({ payload }) =>
        Effect.gen(function* () {
          const from = venueOf(payload.from)
          const to = venueOf(payload.to)
          if (!from) return yield* new NotFound({ message: `unknown venue ${payload.from}` })
          if (!to) return yield* new NotFound({ message: `unknown venue ${payload.to}` })
          if (from.id === to.id) return yield* new InvalidRequest({ message: "from and to must be different venues" })
          const amountIn = BigInt(payload.amount_in)
          if (amountIn === 0n) return yield* new InvalidRequest({ message: "amount_in must be positive" })
          const query = {
            from: { id: from.id, chainId: from.chain_id, token: from.token },
            to: to.id,
            lockCutoffSeconds: deployment.settlement.lock_cutoff_seconds,
          }
          // A v2 deployment routes over v2 sets only, as POST /v1/takes does.
          const v2 = takeEscrowVersion(deployment, from, to) === 2
          const rows: ReadonlyArray<QuoteCandidateRow> = yield* (
            v2 ? loadQuoteCandidatesV2({ ...query, takerEscrow: from.escrow_v2!.address }) : loadQuoteCandidates(query)
          ).pipe(Effect.orDie)
          const byKey = new Map<string, QuoteCandidateRow>()
          const candidates: Array<TakeCandidate> = []
          for (const row of rows) {
            const candidate = v2
              ? toTakeCandidateV2(row as Parameters<typeof toTakeCandidateV2>[0])
              : toTakeCandidate(row)
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
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          const out = yield* createTake({
            master: session.master,
            clientTakeId: payload.client_take_id,
            from: payload.from,
            to: payload.to,
            amountIn: BigInt(payload.amount_in),
            minOut: BigInt(payload.min_out),
            payer: payload.payer,
            recipient: payload.recipient,
            maxParts: payload.max_parts,
            payKey: payload.pay_key,
          }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.catchAll(takeFailure))
          // Each change of a take is woken, not sent as a persisted intent: createTake/signTake/authorizePay commit
          // the rows in their own transactions and a repeat is answered from the take's row (client_take_id, state).
          // The take's Settlement entity expires it at the end of its pay window unless signed.
          yield* wakeIfClustered(Settlement, out.take.id)
          return wire(out)
        }),
      )
      .handle("sign", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const view = yield* ownTake(path.id, session.master)
          const walletItems = payload.permit !== undefined || payload.fills !== undefined
          const payKeyItems = [payload.pay_authorization, payload.cancels].filter((x) => x !== undefined).length
          if (walletItems ? payKeyItems > 0 : payKeyItems !== 1) {
            return yield* new InvalidRequest({
              message: "give either permit and fills (the payer's), or pay_authorization, or cancels (the pay key's)",
            })
          }
          if (payload.pay_authorization !== undefined) {
            yield* acceptPayAuthorization(view, session.master, payload.pay_authorization)
            yield* wakeIfClustered(Settlement, view.take.id)
            return wire(yield* ownTake(view.take.id, session.master))
          }
          if (payload.cancels !== undefined) {
            yield* acceptCancels(view, session.master, payload.cancels)
            yield* wakeIfClustered(Settlement, view.take.id)
            return wire(yield* ownTake(view.take.id, session.master))
          }
          if (payload.permit === undefined || payload.fills === undefined) {
            return yield* new InvalidRequest({ message: "permit and fills go together" })
          }
          if (view.take.signed_at === null && view.take.state !== "reserved") {
            return yield* new StateConflict({ message: `the take is ${view.take.state}; create a new take` })
          }
          const payer = view.take.payer
          const permitItem = view.toSign.find((i) => i.kind === "permit")!
          const moves = view.toSign.filter((i) => i.kind === "margin_move")
          const given = new Map<string, string>()
          for (const f of payload.fills) {
            const id = f.fill_id.toLowerCase()
            if (given.has(id)) return yield* new InvalidRequest({ message: `fill ${id} is given twice` })
            given.set(id, f.signature)
          }
          if (given.size !== moves.length || moves.some((m) => !given.has(m.fill_id!))) {
            return yield* new InvalidRequest({
              message: "give exactly one signature for every fill_id of the take's to_sign",
            })
          }
          const permit = yield* canonical(payload.permit)
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
          const outcome = yield* signTake({
            takeId: view.take.id,
            master: session.master,
            permitSignature: permit,
            fillSignatures: fills,
          }).pipe(Effect.orDie)
          if (outcome._tag === "Missing") return yield* new NotFound({ message: "no such take" })
          if (outcome._tag === "Closed") {
            return yield* new StateConflict({
              message:
                outcome.state === "expired"
                  ? "the take's pay window has passed; create a new take"
                  : `the take is ${outcome.state}`,
            })
          }
          // Signed (or a repeat): the take's Settlement entity drives its fills from here.
          yield* wakeIfClustered(Settlement, view.take.id)
          return wire(yield* ownTake(view.take.id, session.master))
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return wire(yield* ownTake(path.id, session.master))
        }),
      )
  }),
)
