import { createServer } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, freePorts } from "../../src/FreePort.ts"

const bindable = (port: number) =>
  Effect.async<boolean>((resume) => {
    const server = createServer()
    server.on("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

describe("freePorts", () => {
  // Two freePort calls in a row may get the same port back (the first listener is closed before the second asks);
  // a service started on PORT = RUNNER_PORT then fails "already in use". freePorts holds every listener until all
  // are assigned, so one draw never repeats a port.
  it.effect("one draw never repeats a port, and every port is released for the caller to bind", () =>
    Effect.gen(function* () {
      for (let draw = 0; draw < 200; draw++) {
        const ports = yield* freePorts(4)
        expect(new Set(ports).size).toBe(4)
        for (const port of ports) expect(port).toBeGreaterThan(0)
      }
      const [a, b] = yield* freePorts(2)
      expect(yield* bindable(a)).toBe(true)
      expect(yield* bindable(b)).toBe(true)
      expect(yield* bindable(yield* freePort)).toBe(true)
    }),
  )
})
