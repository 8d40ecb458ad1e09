import { ClusterError } from "@effect/cluster"
import { RpcClient } from "@effect/rpc"
import { Duration, Effect, FiberRef } from "effect"
import { ServiceUnavailable } from "../Domain/Errors.ts"
import { CurrentRequestId } from "../Domain/RequestId.ts"
import { REQUEST_ID_HEADER } from "./Keyed.ts"

/** The bound of an HTTP → entity call unless the caller says otherwise (leases pass ~2 s). */
export const DEFAULT_ENTITY_CALL_TIMEOUT = Duration.seconds(10)

/** The cluster's own failures of a call: the mailbox is full, the message is being processed, storage failed. */
type Infrastructure = ClusterError.MailboxFull | ClusterError.AlreadyProcessingMessage | ClusterError.PersistenceError

const isInfrastructure = (u: unknown): u is Infrastructure =>
  ClusterError.MailboxFull.is(u) ||
  ClusterError.AlreadyProcessingMessage.is(u) ||
  (typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "PersistenceError")

/**
 * Bounds one HTTP → entity call: a volatile send to a shard nobody owns retries forever, so every
 * handler's call goes through here. A timeout, MailboxFull, AlreadyProcessingMessage or
 * PersistenceError becomes `ServiceUnavailable` (503, retryable: the client retries the same request;
 * its idempotency key makes the retry safe), logged once here with its kind; catalogue errors and
 * every other failure pass through unchanged. The call carries the request id as the RPC header
 * `REQUEST_ID_HEADER`, so the entity's spans and log lines can name the request (`withRequestIdOf`).
 *
 * `callEntity(client(id).Renew({ ttl }), { timeout: "2 seconds", what: "lease renewal" })`
 */
export const callEntity = <A, E, R>(
  call: Effect.Effect<A, E, R>,
  options: { readonly timeout?: Duration.DurationInput; readonly what?: string } = {},
): Effect.Effect<A, Exclude<E, Infrastructure> | ServiceUnavailable, R> => {
  const timeout = Duration.decode(options.timeout ?? DEFAULT_ENTITY_CALL_TIMEOUT)
  const what = options.what ?? "entity call"
  const unavailable = (kind: string) =>
    Effect.zipRight(
      Effect.logWarning("entity call unavailable", { what, kind }),
      Effect.fail(new ServiceUnavailable({ message: `the service could not complete the ${what} in time; retry` })),
    )
  const withRequestId = Effect.flatMap(FiberRef.get(CurrentRequestId), (requestId) =>
    RpcClient.withHeaders(call, { [REQUEST_ID_HEADER]: requestId }),
  )
  return withRequestId.pipe(
    Effect.timeoutFail({ duration: timeout, onTimeout: () => "timeout" as const }),
    Effect.catchAll((e: unknown) =>
      e === "timeout"
        ? unavailable(`timeout after ${Duration.format(timeout)}`)
        : isInfrastructure(e)
          ? unavailable(e._tag)
          : Effect.fail(e),
    ),
  ) as Effect.Effect<A, Exclude<E, Infrastructure> | ServiceUnavailable, R>
}
