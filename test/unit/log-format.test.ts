import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, FiberId, FiberRef, HashSet, Logger, LogLevel } from "effect"
import { routeTemplates } from "../../src/Observability/HttpObserver.ts"
import { loggingLayer, maskText, REDACTED, redactFields } from "../../src/Observability/Log.ts"

const capture = (format: "json" | "logfmt" | "pretty", level = LogLevel.Debug) => {
  const lines: Array<string> = []
  return { lines, layer: loggingLayer({ format, level, sink: (l) => lines.push(l) }) }
}

const SIGNATURE = `0x${"ab".repeat(65)}`
const TOKEN = "st_Qm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg"
const CREDENTIAL = "mk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_"

describe("log format", () => {
  it.effect("json: one object per line, level, time, annotations and object fields, bigints as text", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("json")
      yield* Effect.logInfo("relayer submitted", { tx_key: "k1", nonce: 7n, chain_id: 999 }).pipe(
        Effect.annotateLogs({ request_id: "r-1", actor: "tx-relayer:hyperliquid" }),
        Effect.provide(layer),
      )
      expect(lines).toHaveLength(1)
      const o = JSON.parse(lines[0]!)
      expect(o).toMatchObject({
        level: "info",
        message: "relayer submitted",
        request_id: "r-1",
        actor: "tx-relayer:hyperliquid",
        tx_key: "k1",
        nonce: "7",
        chain_id: 999,
      })
      expect(Number.isNaN(Date.parse(o.time))).toBe(false)
      expect(lines[0]).not.toContain("[object Object]")
    }),
  )

  it.effect("a class instance in the message (a library's Runner) is its redacted JSON, never [object Object]", () =>
    Effect.gen(function* () {
      class Runner {
        constructor(
          readonly address: { readonly host: string; readonly port: number },
          readonly api_key: string,
        ) {}
      }
      const { lines, layer } = capture("json")
      yield* Effect.logDebug("Registering runner", new Runner({ host: "127.0.0.1", port: 34431 }, "k-123")).pipe(
        Effect.provide(layer),
      )
      expect(lines).toHaveLength(1)
      expect(lines[0]).not.toContain("[object Object]")
      expect(lines[0]).not.toContain("k-123")
      expect(JSON.parse(lines[0]!).message).toBe(
        `Registering runner {"address":{"host":"127.0.0.1","port":34431},"api_key":"${REDACTED}"}`,
      )
    }),
  )

  it.effect("secrets are masked by key and by shape, in messages, annotations, nested fields and causes", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("json")
      yield* Effect.logWarning(
        `verify failed for ${TOKEN} with Bearer ${CREDENTIAL}`,
        { nested: { signature: SIGNATURE, calldata: `0x1234${"cd".repeat(200)}`, list: [{ password: "hunter2" }] } },
        Cause.fail(new Error(`rpc https://user:pw@rpc.example/v2/APIKEY123 said ${SIGNATURE}`)),
      ).pipe(
        Effect.annotateLogs({ token: "plain-token-value", private_key: "0x01", authorization: "x", ok: TOKEN }),
        Effect.provide(layer),
      )
      const line = lines.join("\n")
      for (const secret of [
        TOKEN,
        CREDENTIAL,
        SIGNATURE,
        "hunter2",
        "plain-token-value",
        "APIKEY123",
        "user:pw",
        "cd".repeat(100),
      ])
        expect(line).not.toContain(secret)
      const o = JSON.parse(lines[0]!)
      expect(o.token).toBe(REDACTED)
      expect(o.private_key).toBe(REDACTED)
      expect(o.authorization).toBe(REDACTED)
      expect(o.ok).toBe(`st_${REDACTED}`)
      expect(o.nested.signature).toBe(REDACTED)
      expect(o.nested.calldata).toMatch(/^0x1234cdcd….*bytes\]$/)
      expect(o.nested.list[0].password).toBe(REDACTED)
      expect(o.cause).toContain("https://rpc.example")
    }),
  )

  it.effect("a cause is logged as its errors and what they wrap, never a stack trace", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("json")
      const sqlError = new Error("duplicate key value violates unique constraint")
      const wrapped = new Error("Failed to execute statement", { cause: sqlError })
      yield* Effect.logError(
        "actor failed",
        Cause.parallel(Cause.die(new TypeError("x is undefined")), Cause.fail(wrapped)),
      ).pipe(Effect.provide(layer))
      yield* Effect.logError("stopped", Cause.interrupt(FiberId.none)).pipe(Effect.provide(layer))
      const first = JSON.parse(lines[0]!)
      expect(first.cause.split("\n").sort()).toEqual([
        "Error: Failed to execute statement ← Error: duplicate key value violates unique constraint",
        "TypeError: x is undefined",
      ])
      expect(lines.join("\n")).not.toMatch(/\bat .*\.(ts|js):\d+|node:internal|\s{4}at /)
      expect(JSON.parse(lines[1]!).cause).toBe("interrupted")
    }),
  )

  it("masking keeps ordinary values (hashes, addresses, ids) intact", () => {
    const hash = `0x${"12".repeat(32)}`
    const address = "0x00000000000000000000000000000000000000aa"
    expect(maskText(`tx ${hash} to ${address}`)).toBe(`tx ${hash} to ${address}`)
    expect(redactFields({ tx_hash: hash, fill_id: "5f0c", venue: "aster" })).toEqual({
      tx_hash: hash,
      fill_id: "5f0c",
      venue: "aster",
    })
  })

  it.effect("logfmt quotes values and encodes objects as JSON; the level filters", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("logfmt", LogLevel.Info)
      yield* Effect.logDebug("hidden").pipe(Effect.provide(layer))
      yield* Effect.logInfo("close final", { close_id: "c 1", refused: ["a"] }).pipe(Effect.provide(layer))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^time=\S+ level=info msg="close final" close_id="c 1" refused="\[\\"a\\"\]"$/)
    }),
  )

  it.effect("pretty is one readable line with the fields", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("pretty")
      yield* Effect.logError("watcher fault", { venue: "hyperliquid" }).pipe(Effect.provide(layer))
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colours
      const plain = lines[0]!.replace(/\x1b\[[0-9;]*m/g, "")
      expect(plain).toMatch(/^\d\d:\d\d:\d\d\.\d{3} ERROR watcher fault venue=hyperliquid$/)
    }),
  )

  it.effect("replaces Effect's default logger (the only one that prints)", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture("json")
      const loggers = yield* FiberRef.get(FiberRef.currentLoggers).pipe(Effect.provide(layer))
      expect(HashSet.has(loggers, Logger.defaultLogger)).toBe(false)
      yield* Effect.logInfo("once").pipe(Effect.provide(layer))
      expect(lines).toHaveLength(1)
    }),
  )
})

describe("route templates", () => {
  const templateOf = routeTemplates([
    { method: "GET", path: "/v1/orders/:id" },
    { method: "GET", path: "/v1/orders/:id/preparation" },
    { method: "PUT", path: "/v1/orders/:id/quotes" },
    { method: "GET", path: "/v1/orders" },
    { method: "GET", path: "/v1/info" },
  ])
  it("maps raw paths to the declared template, never the ids", () => {
    expect(templateOf("/v1/orders/0xabc?x=1")).toBe("/v1/orders/{id}")
    expect(templateOf("/v1/orders/0xabc/quotes")).toBe("/v1/orders/{id}/quotes")
    expect(templateOf("/v1/orders/0xabc/preparation")).toBe("/v1/orders/{id}/preparation")
    expect(templateOf("/v1/orders?client_order_id=7")).toBe("/v1/orders")
    expect(templateOf("/v1/info")).toBe("/v1/info")
    expect(templateOf("/v1/nope/123")).toBe("unmatched")
  })
})
