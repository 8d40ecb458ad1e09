/**
 * One error path (issue 22 item 5): the catalogue (src/Domain/Errors.ts) is the only place a wire code is
 * written, and the one encoder (src/Http/Errors.ts) the only place an envelope is. Everything else fails with
 * the catalogue's classes. The encoder itself is checked here too: the envelope carries the request id of the
 * fiber that encodes it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { CATALOGUE, NotFound, RateLimited, VenueUnavailable } from "../../src/Domain/Errors.ts"
import { CurrentRequestId } from "../../src/Domain/RequestId.ts"
import { ALL_ERRORS, encodeEnvelope, NotFound as NotFoundWire } from "../../src/Http/Errors.ts"

const root = new URL("../..", import.meta.url).pathname
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

const CATALOGUE_FILE = "src/Domain/Errors.ts"
const ENCODER_FILE = "src/Http/Errors.ts"

/** The source without comments (a code named in prose is not a code written). */
const code = (text: string) => text.replace(/\/\*[\s*][\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

const scan = (test: (line: string) => boolean, allowed: ReadonlyArray<string>) =>
  files(join(root, "src")).flatMap((path) => {
    const name = relative(root, path)
    if (allowed.includes(name)) return []
    return code(readFileSync(path, "utf8"))
      .split("\n")
      .flatMap((line, i) => (test(line) ? [`${name}:${i + 1}: ${line.trim()}`] : []))
  })

describe("error catalogue", () => {
  it("no code of the catalogue is written as a string outside src/Domain/Errors.ts", () => {
    const literal = new RegExp(`["'\`](${CATALOGUE.map((C) => C.code).join("|")})["'\`]`)
    expect(scan((line) => literal.test(line), [CATALOGUE_FILE])).toEqual([])
  })

  it("no envelope literal ({ error: { … }) outside the encoder", () => {
    expect(scan((line) => /\{\s*error\s*:\s*\{/.test(line), [ENCODER_FILE])).toEqual([])
  })

  it("every class has a wire schema, and codes are unique", () => {
    expect(ALL_ERRORS.length).toBe(CATALOGUE.length)
    expect(ALL_ERRORS.filter((schema) => schema === undefined)).toEqual([])
    expect(new Set(CATALOGUE.map((C) => C.code)).size).toBe(CATALOGUE.length)
    expect(new Set(CATALOGUE.map((C) => C._tag)).size).toBe(CATALOGUE.length)
  })

  it("the encoder writes the request id of the encoding fiber and the code's retryable unless overridden", () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const id = "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c"
        const encode = (e: NotFound | RateLimited | VenueUnavailable) =>
          Effect.locally(encodeEnvelope(e), CurrentRequestId, id)
        expect(yield* encode(new NotFound({ message: "no such order" }))).toEqual({
          error: { code: "NOT_FOUND", message: "no such order", request_id: id, retryable: false },
        })
        expect(yield* encode(new RateLimited({ message: "wait" }))).toMatchObject({ error: { retryable: true } })
        expect(yield* encode(new VenueUnavailable({ message: "down", retryable: true }))).toMatchObject({
          error: { code: "VENUE_UNAVAILABLE", retryable: true },
        })
        // The HttpApi declaration decodes back to the class (what a client of the contract gets).
        const decoded = yield* Schema.decodeUnknown(NotFoundWire)({
          error: { code: "NOT_FOUND", message: "x", request_id: id, retryable: false },
        })
        expect(decoded).toBeInstanceOf(NotFound)
      }),
    ))
})
