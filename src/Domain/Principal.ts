import { Context } from "effect"

/** A master session: the account owner signed in with SIWE. */
export interface SessionPrincipal {
  readonly _tag: "Session"
  readonly sessionId: string
  /** Lowercase master address. */
  readonly master: string
  readonly admin: boolean
}

/** A maker credential (`mk_…`), bound to one quote identity and its scopes. */
export interface CredentialPrincipal {
  readonly _tag: "Credential"
  readonly credentialId: string
  readonly master: string
  readonly quoteIdentityId: string
  readonly scopes: ReadonlyArray<string>
}

export type Principal = SessionPrincipal | CredentialPrincipal

/** The authenticated caller of the current request, provided by the Authentication middleware. */
export class CurrentPrincipal extends Context.Tag("CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/**
 * The caller of a route that authenticates in its own statement (the lease renewal, DESIGN §4): an `mk_`
 * credential's token hash, not looked up yet (the renewal's statement resolves, charges and renews at once), or a
 * master session the middleware already resolved and charged.
 */
export type DeferredCaller = { readonly _tag: "CredentialToken"; readonly tokenHash: Buffer } | Principal

/** The DeferredCaller of the current request, provided by the DeferredAuthentication middleware. */
export class CurrentDeferredCaller extends Context.Tag("CurrentDeferredCaller")<
  CurrentDeferredCaller,
  DeferredCaller
>() {}
