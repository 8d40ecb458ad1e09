import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { verifyTypedData } from "viem"
import { callEntity } from "../Cluster/EntityCall.ts"
import { AppConfig, siweSettings } from "../Config.ts"
import { type CredentialRow, insertCredential, listCredentials, rotateCredential } from "../Credentials/Repo.ts"
import { NotFound, SignatureInvalid, StateConflict } from "../Domain/Errors.ts"
import { CurrentPrincipal } from "../Domain/Principal.ts"
import { quoteIdentityRegistrationTypedData } from "../Domain/QuoteIdentityRegistration.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { Api } from "../Http/Api.ts"
import { requireScope, requireSession } from "../Http/Guards.ts"
import { randomBase64Url, randomUuid, sha256 } from "../SecureRandom.ts"
import { identityFades } from "../Settlement/RepoV2.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { QuoteIdentityLease } from "./Lease.ts"
import {
  findQuoteIdentity,
  insertCredentialIdentity,
  type QuoteIdentityRow,
  resumeFadedIdentity,
  revokeCredentialAndIdentity,
} from "./Repo.ts"

/** Settlement v2's fade record of the identity's current window (src/Settlement/RepoV2.ts identityFades). */
type FadeRecord = {
  readonly chances: number
  readonly fades: number
  readonly flagged_at: Date | null
  readonly window_started_at: Date | null
}
/** An identity with no settlement v2 evidence yet (a new identity). */
const NO_FADES: FadeRecord = { chances: 0, fades: 0, flagged_at: null, window_started_at: null }

export const toQuoteIdentity = (row: QuoteIdentityRow, fade: FadeRecord = NO_FADES) => ({
  id: row.id,
  signer: row.signer,
  kind: row.kind,
  generation: row.generation,
  lease_expires_at: row.lease_expires_at.toISOString(),
  cancel_epoch: row.cancel_epoch,
  revoked: row.revoked_at !== null,
  fade: {
    chances: fade.chances,
    fades: fade.fades,
    flagged_at: fade.flagged_at?.toISOString() ?? null,
    window_started_at: fade.window_started_at?.toISOString() ?? null,
  },
})

/** The identity's view with its current fade record (settlement v2). */
const identityView = (row: QuoteIdentityRow) =>
  Effect.map(identityFades(row.id).pipe(Effect.orDie), (fade) => toQuoteIdentity(row, fade ?? NO_FADES))

const toCredential = (row: CredentialRow) => ({
  id: row.id,
  quote_identity_id: row.quote_identity_id,
  scopes: row.scopes as ReadonlyArray<"quote" | "read">,
  label: row.label,
  created_at: row.created_at.toISOString(),
  rotated_at: row.rotated_at?.toISOString() ?? null,
  revoked_at: row.revoked_at?.toISOString() ?? null,
})

/** `mk_` + 256 random bits; only the SHA-256 is stored. */
const newCredentialToken = Effect.map(randomBase64Url(32), (t) => `mk_${t}`)

/**
 * The identity as the caller may see it: a session sees its own identities; a credential sees only
 * the identity it is bound to (never another's, not even its master's browser identity).
 */
const visibleIdentity = (id: string) =>
  Effect.gen(function* () {
    const principal = yield* CurrentPrincipal
    const identity = yield* findQuoteIdentity(id).pipe(Effect.orDie)
    const visible = Option.filter(identity, (row) =>
      principal._tag === "Session" ? row.master === principal.master : row.id === principal.quoteIdentityId,
    )
    return Option.isSome(visible) ? visible.value : yield* new NotFound({ message: "no such quote identity" })
  })

export const MakersHandlers = HttpApiBuilder.group(Api, "makers", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const { chainId } = siweSettings(deployment)
    const escrow = deployment.venues.find((v) => v.chain_id === chainId)?.escrow ?? deployment.venues[0].escrow
    const lease = yield* QuoteIdentityLease.client
    const registration = (master: string, signer: string) =>
      quoteIdentityRegistrationTypedData({ chainId, verifyingContract: escrow, master, signer })
    return handlers
      .handle("prepareIdentity", ({ payload }) =>
        Effect.map(requireSession, (session) => ({ typed_data: registration(session.master, payload.signer) })),
      )
      .handle("createIdentity", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(shapeFailure))
          const signer = payload.signer.toLowerCase()
          const valid = yield* Effect.promise(() =>
            verifyTypedData({
              ...registration(session.master, signer),
              address: signer as `0x${string}`,
              signature: payload.signature as `0x${string}`,
            }).catch(() => false),
          )
          if (!valid) return yield* new SignatureInvalid({ message: "the registration is not signed by the signer" })
          if (signer === session.master) {
            return yield* new StateConflict({ message: "the master key quotes through its browser identity" })
          }
          const created = yield* insertCredentialIdentity({
            id: yield* randomUuid,
            master: session.master,
            signer,
            nowMs: yield* Clock.currentTimeMillis,
          }).pipe(Effect.orDie)
          if (Option.isNone(created)) {
            return yield* new StateConflict({
              message: "this signer already belongs to a quote identity; use a new key",
            })
          }
          return toQuoteIdentity(created.value)
        }),
      )
      .handle("getIdentity", ({ path }) =>
        Effect.zipRight(snapshotCursor, Effect.flatMap(visibleIdentity(path.id), identityView)),
      )
      .handle("resumeIdentity", ({ path }) =>
        Effect.gen(function* () {
          // The owner's master session only: a credential (even this identity's own) never clears its flag.
          const session = yield* requireSession
          const id = path.id.toLowerCase()
          const outcome = yield* resumeFadedIdentity({ id, master: session.master }).pipe(Effect.orDie)
          if (outcome._tag === "NotFound") return yield* new NotFound({ message: "no such quote identity" })
          if (outcome._tag === "Revoked") return yield* new StateConflict({ message: "this quote identity is revoked" })
          const row = yield* findQuoteIdentity(id).pipe(Effect.orDie)
          if (Option.isNone(row)) return yield* new NotFound({ message: "no such quote identity" })
          return yield* identityView(row.value)
        }),
      )
      .handle("renewLease", ({ path, payload }) =>
        Effect.gen(function* () {
          // Authenticated and charged by the middleware; the renewal itself runs in the identity's lease entity
          // (actors/QuoteIdentityLease.ts), whose answer is the reply. A credential renews only its own identity
          // (no query for another); a session only its master's.
          const id = path.id.toLowerCase()
          const principal = yield* requireScope("quote")
          if (principal._tag !== "Session" && principal.quoteIdentityId !== id) {
            return yield* new NotFound({ message: "no such quote identity" })
          }
          // Bounded at 2 s (a renewal is one statement): a timeout or a cluster failure is a retryable 503.
          const renewed = yield* callEntity(
            lease(id).Renew({
              ttlSeconds: payload.ttl_seconds,
              master: principal._tag === "Session" ? principal.master : null,
            }),
            { timeout: "2 seconds", what: "lease renewal" },
          )
          return { identity_id: id, generation: renewed.generation, expires_at: renewed.expires_at }
        }),
      )
      .handle("createCredential", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const token = yield* newCredentialToken
          const outcome = yield* insertCredential({
            id: yield* randomUuid,
            master: session.master,
            identityId: payload.quote_identity_id,
            tokenHash: sha256(token),
            scopes: payload.scopes,
            label: payload.label ?? null,
            nowMs: yield* Clock.currentTimeMillis,
          }).pipe(Effect.orDie)
          if (outcome._tag === "IdentityUnavailable") {
            return yield* new NotFound({ message: "no live credential quote identity with this id" })
          }
          if (outcome._tag === "AlreadyIssued") {
            return yield* new StateConflict({
              message: "this identity already has a live credential; rotate it instead",
            })
          }
          return { ...toCredential(outcome.row), token }
        }),
      )
      .handle("listCredentials", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const rows = yield* listCredentials(session.master).pipe(Effect.orDie)
          return { data: rows.map(toCredential) }
        }),
      )
      .handle("rotateCredential", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const token = yield* newCredentialToken
          const rotated = yield* rotateCredential({
            id: path.id,
            master: session.master,
            tokenHash: sha256(token),
            nowMs: yield* Clock.currentTimeMillis,
          }).pipe(Effect.orDie)
          if (Option.isNone(rotated)) return yield* new NotFound({ message: "no live credential with this id" })
          return { ...toCredential(rotated.value), token }
        }),
      )
      .handle("revokeCredential", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const revoked = yield* revokeCredentialAndIdentity({
            credentialId: path.id,
            master: session.master,
            nowMs: yield* Clock.currentTimeMillis,
          }).pipe(Effect.orDie)
          if (!revoked) return yield* new NotFound({ message: "no live credential with this id" })
          return { id: path.id, revoked: true as const }
        }),
      )
  }),
)
