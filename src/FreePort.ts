import { createServer } from "node:net"
import { Effect } from "effect"

/** Asks the kernel for an unused loopback port. Racy by nature; callers bind it right away. */
export const freePort = Effect.async<number, Error>((resume) => {
  const server = createServer()
  server.unref()
  server.on("error", (e) => resume(Effect.fail(e)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(port > 0 ? Effect.succeed(port) : Effect.fail(new Error("no port assigned"))))
  })
})
