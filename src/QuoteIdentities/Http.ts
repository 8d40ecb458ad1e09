import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { RateLimited } from "../Domain/Errors.ts"
import { CurrentDeferredCaller, CurrentPrincipal } from "../Domain/Principal.ts"
import { Api } from "../Http/Api.ts"
import { requireSession } from "../Http/Guards.ts"
import { retryAfter } from "../Http/Security.ts"
import { QuoteIdentities } from "../QuoteIdentities.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"

export const QuoteIdentitiesHandlers = HttpApiBuilder.group(Api, "quoteIdentities", (handlers) =>
  Effect.gen(function* () {
    const identities = yield* QuoteIdentities
    return (
      handlers
        .handle("prepareIdentity", ({ payload }) =>
          Effect.flatMap(requireSession, (session) => identities.prepare(session.master, payload.signer)),
        )
        .handle("createIdentity", ({ payload }) =>
          Effect.flatMap(requireSession, (session) =>
            identities.create({ master: session.master, signer: payload.signer, signature: payload.signature }),
          ),
        )
        .handle("getIdentity", ({ path }) =>
          Effect.zipRight(
            snapshotCursor,
            Effect.flatMap(CurrentPrincipal, (principal) => identities.get(principal, path.id)),
          ),
        )
        // The owner's master session only: a credential (even this identity's own) never clears its flag.
        .handle("resumeIdentity", ({ path }) =>
          Effect.flatMap(requireSession, (session) => identities.resume(session.master, path.id)),
        )
        // DeferredAuthentication: an mk_ bearer is resolved, charged and renewed in one statement by the entity.
        .handle("renewLease", ({ path, payload }) =>
          Effect.gen(function* () {
            const renewed = yield* identities.renewLease(yield* CurrentDeferredCaller, path.id, payload.ttl_seconds)
            if (renewed._tag === "Renewed") {
              return {
                identity_id: renewed.identity_id,
                generation: renewed.generation,
                expires_at: renewed.expires_at,
              }
            }
            const seconds = renewed.retryAfterSeconds
            yield* retryAfter(seconds)
            return yield* new RateLimited({ message: `request budget exhausted; retry in ${seconds} s` })
          }),
        )
    )
  }),
).pipe(Layer.provide(QuoteIdentities.Default))
