import { createServer, type Server } from "node:net"
import { Effect } from "effect"

const listenAny = Effect.async<{ readonly server: Server; readonly port: number }, Error>((resume) => {
  const server = createServer()
  server.unref()
  server.on("error", (e) => resume(Effect.fail(e)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    if (port > 0) resume(Effect.succeed({ server, port }))
    else server.close(() => resume(Effect.fail(new Error("no port assigned"))))
  })
})

/** A tuple of `N` port numbers. */
type Ports<N extends number, Acc extends ReadonlyArray<number> = []> = Acc["length"] extends N
  ? Acc
  : Ports<N, readonly [...Acc, number]>

const close = (server: Server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))

/**
 * Asks the kernel for `n` distinct unused loopback ports. Every listener stays open until all `n` are assigned,
 * so the kernel cannot hand the same port out twice (two `freePort` calls in a row can). Still racy against other
 * processes once closed; callers bind them right away.
 */
export const freePorts = <N extends 1 | 2 | 3 | 4>(n: N): Effect.Effect<Ports<N>, Error> =>
  Effect.acquireUseRelease(
    Effect.forEach(Array.from({ length: n }), () => listenAny),
    (held) => Effect.succeed(held.map((h) => h.port) as unknown as Ports<N>),
    (held) => Effect.forEach(held, (h) => close(h.server), { discard: true }),
  )

/** Asks the kernel for one unused loopback port. Racy by nature; callers bind it right away. */
export const freePort: Effect.Effect<number, Error> = Effect.map(freePorts(1), ([port]) => port)
