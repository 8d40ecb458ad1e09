import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Credentials } from "../Credentials.ts"
import { Api } from "../Http/Api.ts"
import { requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"

/** Every credential route is a master session's: a credential never manages credentials. */
export const CredentialsHandlers = HttpApiBuilder.group(Api, "credentials", (handlers) =>
  Effect.gen(function* () {
    const credentials = yield* Credentials
    return handlers
      .handle("createCredential", ({ payload }) =>
        Effect.flatMap(requireSession, (session) =>
          credentials.issue({
            master: session.master,
            identityId: payload.quote_identity_id,
            scopes: payload.scopes,
            label: payload.label ?? null,
          }),
        ),
      )
      .handle("listCredentials", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return { data: yield* credentials.list(session.master) }
        }),
      )
      .handle("rotateCredential", ({ path }) =>
        Effect.flatMap(requireSession, (session) => credentials.rotate(session.master, path.id)),
      )
      .handle("revokeCredential", ({ path }) =>
        Effect.flatMap(requireSession, (session) => credentials.revoke(session.master, path.id)),
      )
  }),
).pipe(Layer.provide(Credentials.Default))
