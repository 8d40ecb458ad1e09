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
