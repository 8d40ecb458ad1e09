/**
 * Quote identities (spec: Quote identity lease, PUT /v1/quote-identities/{id}/lease): the keys that sign a master's
 * quote sets. Every account has its browser identity (the master key, a lease that never ends); a maker registers a
 * credential identity for a separate signer key (proved by its signature, immutable, one identity per key forever),
 * whose lease starts expired and is renewed by its credential: the dead-man switch. The renewal runs in the
 * identity's lease entity (src/QuoteIdentities/Lease.ts, actors/QuoteIdentityLease.ts), whose answer is the reply.
 * Settlement v2's fade record shows on each identity; its owner resumes a flagged one. src/QuoteIdentities/Http.ts
 * serves these; credentials are src/Credentials.ts.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option } from "effect"
import { verifyTypedData } from "viem"
import { callEntity } from "./Cluster/EntityCall.ts"
import { AppConfig, siweSettings } from "./Config.ts"
import { Forbidden, NotFound, SignatureInvalid, StateConflict } from "./Domain/Errors.ts"
import { toLeaseExpiry } from "./Domain/Primitives.ts"
import type { DeferredCaller, Principal } from "./Domain/Principal.ts"
import { quoteIdentityRegistrationTypedData } from "./Domain/QuoteIdentityRegistration.ts"
import { shapeFailure } from "./Domain/SignatureFailure.ts"
import { checkSignatureShape } from "./Domain/SiweSignature.ts"
import { QuoteIdentityLease } from "./QuoteIdentities/Lease.ts"
import { identityExists, runRenewal } from "./QuoteIdentities/Renewal.ts"
import {
  findQuoteIdentity,
  insertCredentialIdentity,
  type QuoteIdentityRow,
  resumeFadedIdentity,
} from "./QuoteIdentities/Repo.ts"
import { randomUuid, SecureRandom } from "./SecureRandom.ts"
import { Settlement } from "./Settlement.ts"

/** Settlement v2's fade record of the identity's current window (Settlement.identityFades). */
type FadeRecord = {
  readonly chances: number
  readonly fades: number
  readonly flagged_at: Date | null
  readonly window_started_at: Date | null
}
/** An identity with no settlement v2 evidence yet (a new identity). */
const NO_FADES: FadeRecord = { chances: 0, fades: 0, flagged_at: null, window_started_at: null }

/** A quote identity as the wire shows it (spec: Quote identity). */
export const toQuoteIdentity = (row: QuoteIdentityRow, fade: FadeRecord = NO_FADES) => ({
  id: row.id,
  signer: row.signer,
  kind: row.kind,
  generation: row.generation,
  lease_expires_at: toLeaseExpiry(row.lease_expires_at),
  cancel_epoch: row.cancel_epoch,
  revoked: row.revoked_at !== null,
  fade: {
    chances: fade.chances,
    fades: fade.fades,
    flagged_at: fade.flagged_at?.toISOString() ?? null,
    window_started_at: fade.window_started_at?.toISOString() ?? null,
  },
})

/** The renewal's bound: a renewal is one statement, so 2 s without an answer is a retryable 503. */
const RENEWAL_TIMEOUT = "2 seconds"
/** Identity ids this process has seen exist (rows are never deleted), at most this many (then it starts over). */
const KNOWN_IDENTITIES_MAX = 100_000

export class QuoteIdentities extends Effect.Service<QuoteIdentities>()("QuoteIdentities", {
  effect: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const random = yield* SecureRandom
    const lease = yield* QuoteIdentityLease.client
    /** A credential's request budget, charged by its renewal's statement. */
    const bucket = { rate: deployment.limits.requests_per_second, burst: deployment.limits.request_burst }
    const settlement = yield* Settlement
    const { chainId } = siweSettings(deployment)
    const escrow = deployment.venues.find((v) => v.chain_id === chainId)?.escrow ?? deployment.venues[0].escrow
    const run = <A, E>(self: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      self.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
    /**
     * Whether `id` is a quote identity: its lease entity is messaged only then. An id that is none has no lease to
     * time, and an entity started for it would sit in memory for minutes: a client spraying made-up ids (with any
     * `mk_` token, before the statement finds it unknown) would start one per request. Seen ids are remembered, so
     * a renewal reads this once per identity and process.
     */
    const known = new Set<string>()
    const isIdentity = (id: string) =>
      known.has(id)
        ? Effect.succeed(true)
        : Effect.tap(run(identityExists(id)), (exists) => {
            if (!exists) return
            if (known.size >= KNOWN_IDENTITIES_MAX) known.clear()
            known.add(id)
          })
    const registration = (master: string, signer: string) =>
      quoteIdentityRegistrationTypedData({ chainId, verifyingContract: escrow, master, signer })

    /** The identity's view with its current fade record (settlement v2). */
    const view = (row: QuoteIdentityRow) =>
      Effect.map(settlement.identityFades(row.id), (fade) => toQuoteIdentity(row, fade ?? NO_FADES))

    /** The registration typed data `signer` signs to become a quote identity of `master` (eth_signTypedData_v4). */
    const prepare = Effect.fn("QuoteIdentities.prepare")((master: string, signer: string) =>
      Effect.succeed({ typed_data: registration(master, signer) }),
    )

    /**
     * Registers `signer` as a credential identity of `master`, proved by its signature of the registration. The
     * master key quotes through its browser identity, and a signer belongs to one identity forever (STATE_CONFLICT).
     * The lease starts expired at generation 0: nothing it signs is admissible before the first renewal.
     */
    const create = Effect.fn("QuoteIdentities.create")(function* (p: {
      readonly master: string
      readonly signer: string
      readonly signature: string
    }) {
      yield* checkSignatureShape(p.signature).pipe(Effect.catchAll(shapeFailure))
      const signer = p.signer.toLowerCase()
      const valid = yield* Effect.promise(() =>
        verifyTypedData({
          ...registration(p.master, signer),
          address: signer as `0x${string}`,
          signature: p.signature as `0x${string}`,
        }).catch(() => false),
      )
      if (!valid) return yield* new SignatureInvalid({ message: "the registration is not signed by the signer" })
      if (signer === p.master) {
        return yield* new StateConflict({ message: "the master key quotes through its browser identity" })
      }
      const created = yield* run(
        insertCredentialIdentity({
          id: yield* randomUuid.pipe(Effect.provideService(SecureRandom, random)),
          master: p.master,
          signer,
          nowMs: yield* Clock.currentTimeMillis,
        }),
      )
      if (Option.isNone(created)) {
        return yield* new StateConflict({ message: "this signer already belongs to a quote identity; use a new key" })
      }
      return toQuoteIdentity(created.value)
    })

    /**
     * The identity as `principal` may see it: a session sees its master's identities; a credential only the one it
     * is bound to (never another's, not even its master's browser identity). Anything else is NOT_FOUND.
     */
    const get = Effect.fn("QuoteIdentities.get")(function* (principal: Principal, id: string) {
      const identity = yield* run(findQuoteIdentity(id))
      const visible = Option.filter(identity, (row) =>
        principal._tag === "Session" ? row.master === principal.master : row.id === principal.quoteIdentityId,
      )
      if (Option.isNone(visible)) return yield* new NotFound({ message: "no such quote identity" })
      return yield* view(visible.value)
    })

    /**
     * The owner's action on a fade flag: clears it and starts a new counting window (journaled). Only `master`'s
     * identities; a revoked one is STATE_CONFLICT; one that is not flagged is answered unchanged.
     */
    const resume = Effect.fn("QuoteIdentities.resume")(function* (master: string, id: string) {
      const lower = id.toLowerCase()
      const outcome = yield* run(resumeFadedIdentity({ id: lower, master }))
      if (outcome._tag === "NotFound") return yield* new NotFound({ message: "no such quote identity" })
      if (outcome._tag === "Revoked") return yield* new StateConflict({ message: "this quote identity is revoked" })
      const row = yield* run(findQuoteIdentity(lower))
      if (Option.isNone(row)) return yield* new NotFound({ message: "no such quote identity" })
      return yield* view(row.value)
    })

    /**
     * Renews the identity's lease for `ttlSeconds` (database time): one call of its lease entity, which runs the
     * renewal's one statement and answers. An `mk_` caller's token is resolved, charged, checked for the `quote`
     * scope and its binding to this identity in that same statement (the route deferred it: DeferredAuthentication);
     * a session renews only its master's identity. Before expiry the generation is kept; after it, it advances.
     * A spent budget answers BudgetSpent (the route's 429 with Retry-After).
     */
    const renewLease = Effect.fn("QuoteIdentities.renewLease")(function* (
      caller: DeferredCaller,
      id: string,
      ttlSeconds: number,
    ) {
      const lower = id.toLowerCase()
      if (caller._tag === "Credential") {
        // A caller that resolved and charged the credential itself (not the lease route, whose mk_ bearer arrives
        // as a CredentialToken): the scope and the binding are checked here.
        if (!caller.scopes.includes("quote")) {
          return yield* new Forbidden({ message: "this credential lacks the quote scope" })
        }
        if (caller.quoteIdentityId !== lower) return yield* new NotFound({ message: "no such quote identity" })
      }
      const request = {
        ttlSeconds,
        master: caller._tag === "Session" ? caller.master : null,
        credential: caller._tag === "CredentialToken" ? { tokenHash: caller.tokenHash.toString("hex"), bucket } : null,
      }
      // No such identity: the same statement answers here (and charges), as the entity would, without an entity.
      const renewed = (yield* isIdentity(lower))
        ? yield* callEntity(lease(lower).Renew(request), { timeout: RENEWAL_TIMEOUT, what: "lease renewal" })
        : yield* Effect.map(Effect.provideService(runRenewal(lower, request), SqlClient.SqlClient, sql), (r) =>
            r._tag === "Renewed"
              ? { _tag: "Renewed" as const, generation: r.generation, expires_at: toLeaseExpiry(r.lease_expires_at) }
              : r,
          )
      if (renewed._tag === "BudgetSpent") return renewed
      return {
        _tag: "Renewed" as const,
        identity_id: lower,
        generation: renewed.generation,
        expires_at: renewed.expires_at,
      }
    })

    return { prepare, create, get, resume, renewLease } as const
  }),
  dependencies: [Settlement.Default],
}) {
  /**
   * The service on a throw-away database (SqlTest, under Settlement.Test: the fade records are settlement's); the
   * test gives the AppConfig, SecureRandom and a cluster runner (Sharding) with the lease entity registered
   * (actors/QuoteIdentityLease.ts).
   */
  static readonly Test = QuoteIdentities.DefaultWithoutDependencies.pipe(Layer.provideMerge(Settlement.Test))
}
