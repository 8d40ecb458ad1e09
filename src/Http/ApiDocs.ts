/**
 * What the generated OpenAPI document says about authentication (spec Authentication 8): two bearer schemes, a
 * master `session` and a maker `credential` (`mk_…`) with its scopes, named per route. Both middlewares
 * (src/Http/Security.ts) read the same `Authorization: Bearer` header, so the framework documents one `bearer`
 * scheme; this rewrites it. A route that accepts a credential says so beside its endpoint with `acceptsCredential`;
 * every other authenticated route is a session's only (test/integration/auth-matrix.test.ts holds both to the
 * routes' behaviour).
 */
import type { OpenApi } from "@effect/platform"

type Json = Record<string, unknown>

export const SECURITY_SCHEMES = {
  session: {
    type: "http",
    scheme: "bearer",
    description:
      "A master session token from POST /v1/auth/verify (sign-in with Ethereum): seven days by default, revoked " +
      "by POST /v1/auth/logout. Every financial route needs one.",
  },
  credential: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "mk_…",
    description:
      "A maker credential (`mk_…`) from POST /v1/credentials, shown once, bound to one quote identity. Scopes: " +
      "`quote` (renew the identity's lease, publish and cancel its quote sets) and `read` (the legacy escrow scan, " +
      "private stream events). A credential never moves capital, links accounts, takes or closes.",
  },
} as const

/**
 * The route also accepts a maker credential with these scopes (none: any credential, each seeing only its own
 * identity). Annotate the endpoint: `.annotate(OpenApi.Override, acceptsCredential("quote"))`.
 */
export const acceptsCredential = (...scopes: ReadonlyArray<"quote" | "read">) => ({
  security: [{ session: [] }, { credential: [...scopes] }],
})

/** The framework's one `bearer` scheme becomes `session` (and `credential` where a route says so). */
export const documentSecurity = (spec: Json): Json => {
  const components = (spec.components ?? {}) as Json
  const schemes = (components.securitySchemes ?? {}) as Json
  delete schemes.bearer
  components.securitySchemes = { ...schemes, ...SECURITY_SCHEMES }
  spec.components = components
  const paths = (spec.paths ?? {}) as Record<string, Record<string, { security?: Array<Json> }>>
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      if (operation.security === undefined) continue
      operation.security = operation.security.map((requirement) =>
        "bearer" in requirement ? { session: requirement.bearer } : requirement,
      )
    }
  }
  return spec
}

/** Where the document is served from: the deployment's own origin (the API has no prefix). */
export const SERVERS: ReadonlyArray<OpenApi.OpenAPISpecServer> = [
  { url: "/", description: "this deployment (the origin serving this document)" },
]
