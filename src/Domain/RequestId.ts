import { FiberRef } from "effect"

/** The request id of the request being served; set by the global middleware, read by error helpers. */
export const CurrentRequestId = FiberRef.unsafeMake<string>("00000000-0000-0000-0000-000000000000")

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A client may correlate with its own id, but only a well-formed UUID is echoed. */
export const acceptRequestId = (incoming: string | undefined): string | undefined =>
  incoming !== undefined && UUID.test(incoming) ? incoming.toLowerCase() : undefined
