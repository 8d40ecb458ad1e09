import { HttpApiBuilder } from "@effect/platform"
import { RpcClient } from "@effect/rpc"
import { Effect, Either, FiberRef, Option, Redacted } from "effect"
import type { Hex } from "viem"
import { callEntity } from "../Cluster/EntityCall.ts"
import { REQUEST_ID_HEADER } from "../Cluster/Keyed.ts"
import { AppConfig } from "../Config.ts"
import { InvalidRequest, NotFound, SignatureInvalid } from "../Domain/Errors.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { CurrentRequestId } from "../Domain/RequestId.ts"
import { canonicalSignature } from "../Domain/Signature.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { HISTORY_LIMIT_DEFAULT } from "../Domain/Withdrawal.ts"
import { decodeHistoryCursor, encodeHistoryCursor, historyCursorKey } from "../Domain/WithdrawalCursor.ts"
import { digestOfUntrusted, recoverDigestSigner } from "../Domain/WithdrawalTypedData.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { randomUuid } from "../SecureRandom.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { WithdrawalDesk, withdrawalDeskId } from "./Desk.ts"
import { linkedAccountOn, prepareWithdrawal } from "./Prepare.ts"
import { findPreparationByDigest, findWithdrawal, historyPage, withdrawalOfPreparation } from "./Repo.ts"
import { withdrawalView } from "./View.ts"

const NOT_PREPARED =
  "typed_data is not a withdrawal prepared for this account: POST /v1/withdrawals/prepare and submit its typed_data unchanged"

export const WithdrawalsHandlers = HttpApiBuilder.group(Api, "withdrawals", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const desks = yield* WithdrawalDesk.client
    const cursorKey = historyCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))

    return handlers
      .handle("prepare", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          const prepared = yield* prepareWithdrawal({
            master: session.master,
            venue: payload.venue,
            amount: BigInt(payload.amount),
            to: payload.to,
          })
          return {
            venue: prepared.venue,
            amount: prepared.amount.toString(),
            to: prepared.to,
            destination: prepared.destination,
            typed_data: prepared.typedData,
            expires_at: toRfc3339(prepared.expiresMs),
          }
        }),
      )
      .handle("submit", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          yield* linkedAccountOn(session.master, payload.venue)
          // Shape first (65 bytes, v, low s): nothing is looked up for a signature no venue would accept.
          yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(shapeFailure))
          const signature = Either.getOrThrow(canonicalSignature(payload.signature as Hex))
          const digest = digestOfUntrusted(payload.typed_data)
          if (Either.isLeft(digest)) return yield* new InvalidRequest({ message: `${NOT_PREPARED} (${digest.left})` })
          const found = yield* findPreparationByDigest(digest.right).pipe(Effect.orDie)
          if (Option.isNone(found) || found.value.master !== session.master) {
            return yield* new InvalidRequest({ message: NOT_PREPARED })
          }
          const prep = found.value
          if (
            prep.venue !== payload.venue ||
            BigInt(prep.amount) !== BigInt(payload.amount) ||
            prep.target !== payload.to
          ) {
            return yield* new InvalidRequest({
              message: "venue, amount and to must be those the typed data was prepared for",
            })
          }
          const signer = yield* recoverDigestSigner(digest.right, signature)
          if (signer !== prep.address) {
            return yield* new SignatureInvalid({
              message: `the typed data must be signed by the linked address ${prep.address}`,
            })
          }
          // The same preparation submitted again (a lost response): the withdrawal it made, whatever happened since.
          const made = yield* withdrawalOfPreparation(prep.id).pipe(Effect.orDie)
          if (Option.isSome(made)) return withdrawalView(made.value)
          // A new intent: the account's desk (actors/WithdrawalDesk.ts) queues it in one transaction and answers.
          const requestId = yield* FiberRef.get(CurrentRequestId)
          const accepted = yield* callEntity(
            desks(withdrawalDeskId(prep.venue, prep.address))
              .Submit({ id: yield* randomUuid, digest: digest.right, signature })
              .pipe(RpcClient.withHeaders({ [REQUEST_ID_HEADER]: requestId })),
            { what: "withdrawal" },
          )
          const row = yield* findWithdrawal(accepted.id).pipe(Effect.orDie)
          if (Option.isNone(row)) return yield* Effect.dieMessage(`withdrawal ${accepted.id} accepted but not found`)
          return withdrawalView(row.value)
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const row = yield* findWithdrawal(path.id).pipe(Effect.orDie)
          if (Option.isNone(row) || row.value.master !== session.master) {
            return yield* new NotFound({ message: "no such withdrawal" })
          }
          return withdrawalView(row.value)
        }),
      )
      .handle("history", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const limit = urlParams.limit ?? HISTORY_LIMIT_DEFAULT
          let after: Parameters<typeof historyPage>[1]
          if (urlParams.after !== undefined) {
            const decoded = decodeHistoryCursor(cursorKey, session.master, urlParams.after)
            if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: decoded.left })
            after = decoded.right
          }
          yield* snapshotCursor
          const page = yield* historyPage(session.master, after, limit).pipe(Effect.orDie)
          const last = page.rows[page.rows.length - 1]
          return {
            data: page.rows.map(withdrawalView),
            next_cursor:
              page.hasMore && last !== undefined
                ? encodeHistoryCursor(cursorKey, session.master, {
                    createdMicros: BigInt(last.created_us),
                    id: last.id,
                  })
                : null,
            has_more: page.hasMore,
          }
        }),
      )
  }),
)
