import { Effect } from "effect"
import { Access } from "../Access.ts"
import { Forbidden } from "../Domain/Errors.ts"
import { type CredentialPrincipal, CurrentPrincipal, type SessionPrincipal } from "../Domain/Principal.ts"

/** Routes that move capital, link, take or close: a master session only, never a credential. */
export const requireSession = Effect.flatMap(CurrentPrincipal, (p) =>
  p._tag === "Session"
    ? Effect.succeed(p as SessionPrincipal)
    : Effect.fail(
        new Forbidden({ message: "a maker credential may not use this route; sign in with the master wallet" }),
      ),
)

/** A credential route with a scope (`quote`, `read`); sessions pass. */
export const requireScope = (scope: string) =>
  Effect.flatMap(CurrentPrincipal, (p) =>
    p._tag === "Session" || (p as CredentialPrincipal).scopes.includes(scope)
      ? Effect.succeed(p)
      : Effect.fail(new Forbidden({ message: `this credential lacks the ${scope} scope` })),
  )

export const requireAdmin = Effect.flatMap(requireSession, (p) =>
  p.admin ? Effect.succeed(p) : Effect.fail(new Forbidden({ message: "admin only" })),
)

/**
 * The beta gate for every new commitment: the account's access must be `granted` (the Access service, which
 * HandlersLive provides). One guard, used by every route that creates an economic intent.
 */
export const requireAccess = (master: string) => Effect.flatMap(Access, (access) => access.require(master))
