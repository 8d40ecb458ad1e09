import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Accounts } from "../Accounts.ts"
import { Auth } from "../Auth.ts"
import { Api } from "../Http/Api.ts"
import { requireSession } from "../Http/Guards.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"

export const AccountHandlers = HttpApiBuilder.group(Api, "account", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const auth = yield* Auth
    return handlers
      .handle("me", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          return { ...(yield* accounts.account(session.master)), admin: session.admin }
        }),
      )
      .handle("logout", () => Effect.flatMap(requireSession, (session) => auth.logout(session.sessionId)))
      .handle("linkChallenge", ({ payload }) =>
        Effect.flatMap(requireSession, (session) =>
          accounts.linkChallenge({ master: session.master, venue: payload.venue, address: payload.address }),
        ),
      )
      .handle("link", ({ payload }) =>
        Effect.flatMap(requireSession, (session) => accounts.link(session.master, payload)),
      )
      .handle("unlink", ({ path }) =>
        Effect.flatMap(requireSession, (session) => accounts.unlink(session.master, path.venue)),
      )
  }),
).pipe(Layer.provide(Layer.merge(Accounts.Default, Auth.Default)))
