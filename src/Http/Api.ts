import { HttpApi, OpenApi } from "@effect/platform"
import { AccessApi } from "../Access/Api.ts"
import { AccountApi } from "../Accounts/Api.ts"
import { AuthApi } from "../Auth/Api.ts"
import { CredentialsApi } from "../Credentials/Api.ts"
import { EscrowApi } from "../Escrow/Api.ts"
import { HealthApi } from "../Health/Api.ts"
import { InfoApi } from "../Info/Api.ts"
import { OrdersApi } from "../Orders/Api.ts"
import { QuoteIdentitiesApi } from "../QuoteIdentities/Api.ts"
import { TakesApi } from "../Takes/Api.ts"
import { TradesApi } from "../Trades/Api.ts"
import { TransfersApi } from "../Transfers/Api.ts"
import { WithdrawalsApi } from "../Withdrawals/Api.ts"
import { documentSecurity, SERVERS } from "./ApiDocs.ts"
import { API_GUIDE } from "./ApiGuide.ts"
import { Internal, InvalidRequest, MethodNotAllowed, NotFound, PayloadTooLarge, ServiceUnavailable } from "./Errors.ts"

/**
 * The HTTP contract. Errors every route can answer are declared once here; groups add their own.
 * The default HttpApiDecodeError body is replaced by our envelope (ApiMiddleware), so it is removed
 * from the generated document.
 */
export class Api extends HttpApi.make("settlement")
  .add(HealthApi)
  .add(InfoApi)
  .add(AuthApi)
  .add(AccountApi)
  .add(AccessApi)
  .add(QuoteIdentitiesApi)
  .add(CredentialsApi)
  .add(OrdersApi)
  .add(EscrowApi)
  .add(WithdrawalsApi)
  .add(TakesApi)
  .add(TransfersApi)
  .add(TradesApi)
  .addError(InvalidRequest)
  .addError(NotFound)
  .addError(MethodNotAllowed)
  .addError(PayloadTooLarge)
  .addError(Internal)
  .addError(ServiceUnavailable)
  .annotate(OpenApi.Title, "Cross-Venue Settlement API")
  .annotate(OpenApi.Version, "v1")
  .annotate(OpenApi.Description, API_GUIDE)
  .annotate(OpenApi.Servers, SERVERS)
  .annotate(OpenApi.Transform, (spec) =>
    documentSecurity(declareEventCursor(describeUnavailable(stripDecodeError(spec)))),
  ) {}

type Json = Record<string, unknown>

/**
 * The GET routes whose handlers call `snapshotCursor` (src/Stream/SnapshotCursor.ts) and so answer
 * `x-event-cursor`; a route added here without answering it fails test/integration/trades.test.ts.
 */
export const EVENT_CURSOR_ROUTES: ReadonlyArray<string> = [
  "/v1/me",
  "/v1/credentials",
  "/v1/escrow",
  "/v1/orders",
  "/v1/orders/{id}",
  "/v1/orders/{id}/preparation",
  "/v1/quote-identities/{id}",
  "/v1/withdrawals/history",
  "/v1/withdrawals/{id}",
  "/v1/takes/{id}",
  "/v1/trades",
  "/v1/trades/history",
  "/v1/transfers",
]

/** Declares the `x-event-cursor` header on the 200 response of every EVENT_CURSOR_ROUTES GET. */
const declareEventCursor = (spec: Json): Json => {
  const paths = (spec.paths ?? {}) as Record<string, Record<string, { responses?: Record<string, Json> }>>
  for (const path of EVENT_CURSOR_ROUTES) {
    const ok = paths[path]?.get?.responses?.["200"]
    if (ok === undefined) continue
    ok.headers = {
      ...(ok.headers as Json | undefined),
      "x-event-cursor": {
        description:
          "The journal cursor at snapshot time (decimal): subscribe to GET /v1/stream with this cursor to replay " +
          "every later event.",
        schema: { type: "string", pattern: "^[0-9]+$" },
      },
    }
  }
  return spec
}

const UNAVAILABLE_REF = "#/components/schemas/ServiceUnavailableError"

/**
 * SERVICE_UNAVAILABLE is declared once for the whole API, so every route's 503 lists it; HttpApi
 * then names the 503 after it, the first declared. This keeps each route's own 503 first with its
 * own description (SERVICE_UNAVAILABLE appended), and leaves `/health`'s 503 (its own body, not the
 * envelope) as it is: that route calls no entity.
 */
const describeUnavailable = (spec: Json): Json => {
  const schemas = ((spec.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>
  const describe = (ref: string) => schemas[ref.replace("#/components/schemas/", "")]?.description as string | undefined
  const paths = (spec.paths ?? {}) as Record<string, Record<string, { responses?: Record<string, Json> }>>
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const response = operation.responses?.["503"] as
        | { description?: string; content?: { "application/json"?: { schema?: Json } } }
        | undefined
      const json = response?.content?.["application/json"]
      const members = json?.schema?.anyOf as ReadonlyArray<{ $ref?: string }> | undefined
      if (response === undefined || json === undefined || members === undefined) continue
      const own = members.filter((m) => m.$ref !== UNAVAILABLE_REF)
      if (own.length === members.length) continue
      const envelopes = own.every((m) => m.$ref?.endsWith("Error") === true)
      const kept = envelopes ? [...own, { $ref: UNAVAILABLE_REF }] : own
      json.schema = kept.length === 1 ? (kept[0] as Json) : { anyOf: kept }
      const first = own[0]?.$ref
      const ownDescription = first === undefined ? undefined : describe(first)
      if (ownDescription !== undefined) {
        response.description = envelopes
          ? `${ownDescription} SERVICE_UNAVAILABLE: ${describe(UNAVAILABLE_REF) ?? ""}`.trim()
          : ownDescription
      }
    }
  }
  return spec
}

/** Drops the framework's HttpApiDecodeError schema from responses: our 400 is the envelope. */
const stripDecodeError = (spec: Json): Json => {
  const text = JSON.stringify(spec)
  const parsed = JSON.parse(text) as Json
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(visit)
      return
    }
    if (node === null || typeof node !== "object") return
    const obj = node as Json
    for (const key of ["anyOf", "oneOf"]) {
      const list = obj[key]
      if (Array.isArray(list)) {
        obj[key] = list.filter((s) => (s as Json)?.$ref !== "#/components/schemas/HttpApiDecodeError")
      }
    }
    Object.values(obj).forEach(visit)
  }
  visit(parsed)
  const components = parsed.components as Json | undefined
  const schemas = components?.schemas as Json | undefined
  if (schemas) delete schemas.HttpApiDecodeError
  return parsed
}
