/**
 * The API's two security middlewares as the contract declares them (no implementation: src/Http/Security.ts
 * provides them on the server). Kept apart so that the contract, and the typed client built from it, load no
 * server code (SQL, configuration, hashing).
 */
import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Schema } from "effect"
import { CurrentDeferredCaller, CurrentPrincipal } from "../Domain/Principal.ts"
import * as Wire from "./Errors.ts"

/** Requests that carry a bearer: a master session or a maker credential (`mk_…`). */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(Wire.Unauthorized, Wire.RateLimited),
  provides: CurrentPrincipal,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

/**
 * Routes that authenticate in their own statement (the lease renewal: its entity resolves the credential, charges
 * its budget and renews in one statement). A malformed header is refused here (401) and a session is resolved and
 * charged here, as by Authentication; an `mk_` bearer is only read: its token hash goes to the route, and the token
 * is kept in DeferredToken so that a request the route never runs (a body or path that fails to decode) is still
 * authenticated and charged before its 400 (src/Http/ApiMiddleware.ts): the bearer before the body, one charge.
 */
export class DeferredAuthentication extends HttpApiMiddleware.Tag<DeferredAuthentication>()("DeferredAuthentication", {
  failure: Schema.Union(Wire.Unauthorized, Wire.RateLimited),
  provides: CurrentDeferredCaller,
  security: { bearer: HttpApiSecurity.bearer },
}) {}
