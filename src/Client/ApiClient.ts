/**
 * The typed client of the service, derived from the HttpApi contract (`HttpApiClient.make(Api)`): every route as a
 * method of its group (`client.quoteIdentities.renewLease({ path: { id }, payload: { ttl_seconds } })`), payloads
 * encoded and answers decoded by the contract's own schemas. Over it:
 *
 * - **errors by code**: any failure becomes an `ApiError` (`status`, `code`, `message`, `requestId`, `retryable`,
 *   `retryAfterMs`), decoded here from the spec's envelope `{error:{code,message,request_id,retryable}}` whatever
 *   the route declared, or an `ApiUnreachable` (the request never got an answer: network, timeout);
 * - **Retry-After**: a 429 (and a 503) is sent again after the service's Retry-After (or a short backoff), up to
 *   `retries` times, before it surfaces as a retryable ApiError;
 * - **recovery by client ids**: `recoverable(call)` sends a request that carries the client's own id again when its
 *   answer was lost, and `orderByClientId` finds an order by its id (spec "Recovery");
 * - **sign-in**: `signIn` runs SIWE (challenge → `personal_sign` of the message exactly as given → verify) with any
 *   viem account or wallet that can sign a message; `linkAccount` links a venue account (its message, or the
 *   venue's agent approval typed data).
 *
 * Neither it nor the contract it is made from (src/Http/Api.ts, with the security middlewares' declarations in
 * src/Http/SecurityContract.ts) loads a Node-only module or server code: a browser app bundles it as is
 * (test/unit/import-flow.test.ts holds this).
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { Clock, Data, Duration, Effect, Option, ParseResult, Schedule, Schema } from "effect"
import { ServiceUnavailable } from "../Domain/Errors.ts"
import { Api } from "../Http/Api.ts"
import { linkProblem, signInProblem } from "./SignChecks.ts"

/** The service answered with an error (its envelope's code and message), or with a body the contract rejects. */
export class ApiError extends Data.TaggedError("ApiError")<{
  readonly status: number
  readonly code: string
  readonly message: string
  readonly retryable: boolean
  readonly requestId?: string | undefined
  /** The service's Retry-After, when it sent one. */
  readonly retryAfterMs?: number | undefined
}> {}

/** No answer: the request did not reach the service or its answer was lost (network, timeout). */
export class ApiUnreachable extends Data.TaggedError("ApiUnreachable")<{ readonly reason: string }> {}

export type ApiFailure = ApiError | ApiUnreachable

const Envelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    request_id: Schema.optional(Schema.String),
    retryable: Schema.optional(Schema.Boolean),
  }),
})

/** Retry-After (delta seconds or an HTTP date) in milliseconds, at most an hour; undefined when absent or invalid. */
export const retryAfterMs = (header: string | undefined, nowMs: number): number | undefined => {
  if (header === undefined || header.trim() === "") return undefined
  const seconds = Number(header)
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 3_600_000) : undefined
}

/** What every status means when the body carries no envelope (a proxy's page, an empty 502). */
const transient = (status: number) => status >= 500 || status === 408 || status === 429

/** Any failure of a client call as an ApiError or ApiUnreachable. */
export const toApiFailure = (e: unknown): Effect.Effect<never, ApiFailure> => {
  if (e instanceof ApiError || e instanceof ApiUnreachable) return Effect.fail(e)
  if (HttpClientError.isHttpClientError(e)) {
    if (e._tag === "RequestError") return Effect.fail(new ApiUnreachable({ reason: e.reason }))
    const response = e.response
    const headers = response.headers
    return response.json.pipe(
      Effect.flatMap(Schema.decodeUnknown(Envelope)),
      Effect.option,
      Effect.zip(Clock.currentTimeMillis),
      Effect.flatMap(([envelope, now]) =>
        Effect.fail(
          new ApiError({
            status: response.status,
            code: Option.match(envelope, {
              onNone: () => (transient(response.status) ? ServiceUnavailable.code : `HTTP_${response.status}`),
              onSome: (x) => x.error.code,
            }),
            message: Option.match(envelope, {
              onNone: () => `HTTP ${response.status}`,
              onSome: (x) => x.error.message,
            }),
            retryable: Option.match(envelope, {
              onNone: () => transient(response.status),
              onSome: (x) => x.error.retryable ?? transient(response.status),
            }),
            requestId: Option.match(envelope, {
              onNone: () => headers["x-request-id"],
              onSome: (x) => x.error.request_id ?? headers["x-request-id"],
            }),
            retryAfterMs: retryAfterMs(headers["retry-after"], now),
          }),
        ),
      ),
    )
  }
  if (ParseResult.isParseError(e)) {
    return Effect.fail(new ApiError({ status: 0, code: "DECODE", message: e.message, retryable: false }))
  }
  // A catalogue error the contract declared for this status, decoded from the envelope by its wire schema.
  const ctor = (e as { constructor?: { code?: unknown; status?: unknown } } | null)?.constructor
  if (typeof ctor?.code === "string" && typeof ctor.status === "number") {
    const err = e as { message: string; retryable?: boolean }
    return Effect.fail(
      new ApiError({
        status: ctor.status,
        code: ctor.code,
        message: err.message,
        retryable: err.retryable ?? transient(ctor.status),
      }),
    )
  }
  return Effect.fail(new ApiUnreachable({ reason: e instanceof Error ? e.name : "error" }))
}

export interface ApiClientOptions {
  /** A session token (`st_…`) or maker credential (`mk_…`) sent as the bearer. */
  readonly bearer?: string | undefined
  /** How often a 429 or 503 is sent again after its Retry-After (default 3; 0: never). */
  readonly retries?: number | undefined
  /** Per request (default 15 s). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Wraps the HTTP client under everything else (a proxy, a header, a fault injected by a test). */
  readonly transport?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/**
 * Every answer of status ≥ 400 as a ResponseError (decoded into an ApiError by `toApiFailure`), a 429 or 503 sent
 * again after its Retry-After first.
 */
const transformClient = (options: ApiClientOptions) => (base: HttpClient.HttpClient) => {
  const retries = options.retries ?? 3
  const client = options.transport === undefined ? base : options.transport(base)
  const authorized =
    options.bearer === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(options.bearer))
  return HttpClient.transform(authorized, (effect, request) => {
    const attempt = (n: number): typeof effect =>
      Effect.flatMap(effect, (response) => {
        if ((response.status === 429 || response.status === 503) && n < retries) {
          return Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const wait = retryAfterMs(response.headers["retry-after"], now) ?? 250 * 2 ** n
            return Effect.zipRight(Effect.sleep(Duration.millis(Math.min(wait, 30_000))), attempt(n + 1))
          })
        }
        return response.status >= 400
          ? Effect.fail(new HttpClientError.ResponseError({ request, response, reason: "StatusCode" }))
          : Effect.succeed(response)
      })
    return attempt(0).pipe(
      Effect.timeoutFail({
        duration: options.timeout ?? "15 seconds",
        onTimeout: () => new HttpClientError.RequestError({ request, reason: "Transport", description: "timeout" }),
      }),
    )
  })
}

/**
 * The raw typed client (errors as the contract declares them). Most callers want `makeApiClient`, whose calls fail
 * with ApiFailure only.
 */
export const makeRawClient = (baseUrl: string, options: ApiClientOptions = {}) =>
  HttpApiClient.make(Api, { baseUrl, transformClient: transformClient(options) })

export type RawClient = Effect.Effect.Success<ReturnType<typeof makeRawClient>>

/** Runs one client call with every failure as an ApiFailure. */
export const request = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, ApiFailure, R> =>
  Effect.catchAll(call, toApiFailure)

/**
 * A typed client for `baseUrl` (fetch underneath): `yield* makeApiClient(url, { bearer })`, then
 * `yield* request(client.info.venues())`.
 */
export const makeApiClient = (baseUrl: string, options: ApiClientOptions = {}) =>
  makeRawClient(baseUrl.replace(/\/$/, ""), options).pipe(Effect.provide(FetchHttpClient.layer))

/**
 * Spec "Recovery": a request that carries the client's own id (`client_transfer_id`, `client_order_id`,
 * `client_take_id`) is sent again, unchanged, when its answer was lost (ApiUnreachable) or the service answered a
 * retryable failure: the same id and parameters answer the resource the lost attempt made (a transfer's repeat
 * 200), or make it once. Only for such calls: a request without a client id must not be repeated blindly. At most
 * `attempts` sends (default 5), 0.5 s doubling up to 8 s between them; a refusal (409 for other parameters, 422, …)
 * ends it at once.
 */
export const recoverable = <A, R>(
  send: Effect.Effect<A, ApiFailure, R>,
  options: { readonly attempts?: number | undefined } = {},
): Effect.Effect<A, ApiFailure, R> =>
  Effect.retry(send, {
    times: Math.max(0, (options.attempts ?? 5) - 1),
    schedule: Schedule.exponential("500 millis").pipe(Schedule.union(Schedule.spaced("8 seconds"))),
    while: (e) => e._tag === "ApiUnreachable" || e.retryable,
  })

/** An order by the client's own id (spec "Recovery": after a lost answer to POST /v1/orders), if it exists. */
export const orderByClientId = (client: RawClient, clientOrderId: string) =>
  Effect.map(request(client.orders.list({ urlParams: { client_order_id: clientOrderId } })), (page) =>
    Option.fromNullable(page.data[0]),
  )

/** Anything that signs like a viem account or wallet client's account. */
export interface MessageSigner {
  readonly address: `0x${string}`
  readonly signMessage: (args: { readonly message: string }) => Promise<`0x${string}`>
  // biome-ignore lint/suspicious/noExplicitAny: typed data travels as JSON
  readonly signTypedData?: (typed: any) => Promise<`0x${string}`>
}

/** What the sign-in and link helpers check the service's challenge against (src/Client/SignChecks.ts). */
export interface SignInOptions {
  /** The application origin the service signs users in for (the SIWE domain and URI); unchecked when omitted. */
  readonly appOrigin?: string | undefined
}

/** A challenge the wallet must not sign: refused here, nothing signed. */
const unsafe = (what: string, why: string) =>
  new ApiError({ status: 0, code: "UNSAFE_TO_SIGN", message: `refusing to sign the ${what}: ${why}`, retryable: false })

/**
 * Sign-in with Ethereum: the challenge's message, checked (an EIP-4361 message for this address, not expired, and
 * for `appOrigin` when given), personal_signed exactly as given, then verify.
 */
export const signIn = (baseUrl: string, account: MessageSigner, options: SignInOptions = {}) =>
  Effect.gen(function* () {
    const client = yield* makeApiClient(baseUrl)
    const challenge = yield* request(client.auth.challenge({ payload: { address: account.address } }))
    const nowMs = yield* Clock.currentTimeMillis
    const problem = signInProblem(challenge.message, { address: account.address, appOrigin: options.appOrigin, nowMs })
    if (problem !== undefined) return yield* unsafe("sign-in message", problem)
    const signature = yield* Effect.tryPromise({
      try: () => account.signMessage({ message: challenge.message }),
      catch: () => new ApiError({ status: 0, code: "SIGNER", message: "the wallet did not sign", retryable: false }),
    })
    return yield* request(client.auth.verify({ payload: { nonce: challenge.nonce, signature } }))
  })

/**
 * Links `account` on `venue` for the session: its link message (personal_sign), or the venue's agent approval
 * (typed data), each checked first (src/Client/SignChecks.ts linkProblem). An account the session has already
 * linked answers "already linked".
 */
export const linkAccount = (
  baseUrl: string,
  token: string,
  account: MessageSigner,
  venue: string,
  options: SignInOptions = {},
) =>
  Effect.gen(function* () {
    const client = yield* makeApiClient(baseUrl, { bearer: token })
    const me = yield* request(client.account.me())
    const mine = (me.accounts as ReadonlyArray<{ venue: string; address: string }>).some(
      (a) => a.venue === venue && a.address.toLowerCase() === account.address.toLowerCase(),
    )
    if (mine) return "already linked" as const
    const challenge = yield* request(
      client.account.linkChallenge({ payload: { venue, address: account.address } as never }),
    )
    const typed = (challenge as { typed_data?: unknown }).typed_data
    const problem = linkProblem(challenge as { message: string; typed_data?: unknown }, {
      address: account.address,
      appOrigin: options.appOrigin,
      nowMs: yield* Clock.currentTimeMillis,
      venue,
      master: me.master_address,
    })
    if (problem !== undefined) return yield* unsafe(typed === undefined ? "link message" : "agent approval", problem)
    const signature = yield* Effect.tryPromise({
      try: () =>
        typed === undefined || account.signTypedData === undefined
          ? account.signMessage({ message: (challenge as { message: string }).message })
          : account.signTypedData(typed),
      catch: () => new ApiError({ status: 0, code: "SIGNER", message: "the wallet did not sign", retryable: false }),
    })
    const linked = yield* request(
      client.account.link({
        payload: { venue, address: account.address, nonce: (challenge as { nonce: string }).nonce, signature } as never,
      }),
    ).pipe(
      Effect.as(typed === undefined ? ("linked" as const) : ("linked (agent approval registered)" as const)),
      Effect.catchIf(
        (e) => e._tag === "ApiError" && e.status === 409,
        () => Effect.succeed("already linked" as const),
      ),
    )
    return linked
  })
