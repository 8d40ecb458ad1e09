import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { CurrentPrincipal } from "../Domain/Principal.ts"
import { Api } from "../Http/Api.ts"
import { requireScope, requireSession } from "../Http/Guards.ts"
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
        // Authenticated and charged by the middleware (an mk_ bearer in one statement); then one entity call.
        .handle("renewLease", ({ path, payload }) =>
          Effect.flatMap(requireScope("quote"), (principal) =>
            identities.renewLease(principal, path.id, payload.ttl_seconds),
          ),
        )
    )
  }),
).pipe(Layer.provide(QuoteIdentities.Default))
