import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context, Schema } from "effect"
import type { Principal } from "../Domain/Principal.ts"
import { RateLimited, Unauthorized } from "./Errors.ts"

/**
 * The caller of `PUT /v1/quote-identities/{id}/lease` as LeaseAuthentication leaves it: the renewal an `mk_`
 * credential already made in the one statement that authenticated and charged it (`Renewed`), or found its
 * identity revoked after the charge (`Revoked`), or an authenticated, charged principal whose renewal the
 * handler makes (sessions, and every `mk_` request the statement did not serve).
 */
export type LeaseCallerShape =
  | { readonly _tag: "Renewed"; readonly generation: string; readonly lease_expires_at: Date }
  | { readonly _tag: "Revoked" }
  | { readonly _tag: "Principal"; readonly principal: Principal }

export class LeaseCaller extends Context.Tag("LeaseCaller")<LeaseCaller, LeaseCallerShape>() {}

/** The lease route's bearer security: the scheme and failures of Authentication (src/Http/Security.ts). */
export class LeaseAuthentication extends HttpApiMiddleware.Tag<LeaseAuthentication>()("LeaseAuthentication", {
  failure: Schema.Union(Unauthorized, RateLimited),
  provides: LeaseCaller,
  security: { bearer: HttpApiSecurity.bearer },
}) {}
