/**
 * What every keyed entity's protocol shares (behaviour in actors/Keyed.ts): the volatile `Wake`, the persisted
 * backstop `Tick`, waking a key from outside, and the request id an HTTP handler's call carries to the entity.
 */
import { ClusterSchema, DeliverAt, type Entity, type Sharding } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { DateTime, Effect, PrimaryKey, Schema } from "effect"

/** The backstop's payload: when to deliver it (epoch ms, a multiple of BACKSTOP); one message per instant. */
export class TickAt extends Schema.Class<TickAt>("Keyed/TickAt")({ at: Schema.Number }) {
  [PrimaryKey.symbol]() {
    return String(this.at)
  }
  [DeliverAt.symbol]() {
    return DateTime.unsafeMake(this.at)
  }
}

/** "Your rows may have changed: look now." Volatile: adds no row; a lost wake only costs the cadence. */
export const Wake = Rpc.make("Wake")
/** The crash backstop (persisted, delivered at `at`). */
export const Tick = Rpc.make("Tick", { payload: TickAt }).annotate(ClusterSchema.Persisted, true)

/** The entity type's client seen as the two messages every keyed entity has. */
type KeyedClient = (id: string) => {
  readonly Wake: (payload: undefined, options: { readonly discard: true }) => Effect.Effect<void, unknown>
  readonly Tick: (payload: TickAt, options: { readonly discard: true }) => Effect.Effect<void, unknown>
}
export const keyedClient = <T extends string, R extends Rpc.Any>(entity: Entity.Entity<T, R>) =>
  entity.client as unknown as Effect.Effect<KeyedClient, never, Sharding.Sharding>

/**
 * Wakes the entity `id` of a keyed kind from outside (a relayer outcome, a watcher, another actor): volatile,
 * bounded (a send to a shard nobody owns retries forever), and never failing: a lost wake only costs the
 * cadence, and the backstop tick covers a dead owner.
 */
export const wakeKeyed = <T extends string, Rpcs extends Rpc.Any>(entity: Entity.Entity<T, Rpcs>, id: string) =>
  Effect.flatMap(keyedClient(entity), (client) => client(id).Wake(undefined, { discard: true })).pipe(
    Effect.timeout("2 seconds"),
    Effect.ignore,
  )

/** The header an HTTP handler's entity call carries its request id in (set with RpcClient.withHeaders). */
export const REQUEST_ID_HEADER = "x-request-id"

/** The intent's handling is part of the request that sent it: its spans and log lines carry the request id. */
export const withRequestIdOf =
  (headers: Readonly<Record<string, string>>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) => {
    const id = headers[REQUEST_ID_HEADER]
    return id === undefined
      ? effect
      : effect.pipe(Effect.annotateSpans("request_id", id), Effect.annotateLogs("request_id", id))
  }
