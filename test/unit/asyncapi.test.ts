/**
 * The AsyncAPI 3 document of /v1/stream (src/Stream/AsyncApi.ts) parses and validates with @asyncapi/parser (no
 * error diagnostics; warnings are the parser's style hints), and names every event kind with the operation that
 * emits it and every control code.
 */
import { Parser } from "@asyncapi/parser"
import { describe, expect, it } from "vitest"
import { asyncApiDocument, EVENT_KINDS } from "../../src/Stream/AsyncApi.ts"
import { CONTROL_CODES } from "../../src/Stream/StreamProtocol.ts"

describe("AsyncAPI document of /v1/stream", () => {
  it("parses with @asyncapi/parser without errors and names every kind, emitter and control code", async () => {
    const doc = asyncApiDocument()
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc))
    const errors = diagnostics.filter((d) => d.severity === 0)
    expect(errors.map((d) => `${d.code} ${d.path.join(".")}: ${d.message}`)).toEqual([])
    expect(document).toBeDefined()
    expect(document!.channels().get("stream")?.address()).toBe("/v1/stream")
    expect(
      document!
        .operations()
        .all()
        .map((o) => o.id())
        .sort(),
    ).toEqual(["receiveControl", "receiveEvents", "subscribe"])
    expect(EVENT_KINDS.length).toBeGreaterThan(10)
    const text = JSON.stringify(doc)
    for (const k of EVENT_KINDS) {
      expect(k.emittedBy, k.kind).not.toBe("")
      expect(doc.components.schemas[k.kind], k.kind).toBeDefined()
    }
    for (const code of Object.keys(CONTROL_CODES)) expect(text).toContain(code)
    expect(text).not.toContain("#/$defs/")
  }, 60_000)
})
