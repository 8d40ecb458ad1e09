import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = new URL("../..", import.meta.url).pathname
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** The option objects of every `<call>({ … })` in a source text (balanced braces). */
const optionsOf = (text: string, call: "Effect.repeat" | "Effect.retry"): string[] => {
  const found: string[] = []
  for (let at = text.indexOf(`${call}({`); at >= 0; at = text.indexOf(`${call}({`, at + 1)) {
    let depth = 0
    const start = at + call.length + 1
    for (let i = start; i < text.length; i++) {
      if (text[i] === "{") depth++
      if (text[i] === "}" && --depth === 0) {
        found.push(text.slice(start, i + 1))
        break
      }
    }
  }
  return found
}

describe("test hygiene", () => {
  // An unpaced repeat polls as fast as the server answers: it spends the session's 60/s request
  // budget (the next request gets a 429) and starves the 2-core CI machine. Poll with pollUntil.
  // The same for retries: `times` without a schedule spends every attempt within milliseconds of a refused
  // connection, long before a starting service could answer.
  it("every Effect.repeat and Effect.retry in the tests is paced by a schedule", () => {
    const unpaced = files(join(root, "test"))
      .filter((path) => !path.endsWith("test-hygiene.test.ts"))
      .flatMap((path) =>
        (["Effect.repeat", "Effect.retry"] as const).flatMap((call) =>
          optionsOf(readFileSync(path, "utf8"), call)
            .filter((options) => /\buntil\b|\bwhile\b|\btimes\b/.test(options) && !/\bschedule\b/.test(options))
            .map((options) => `${relative(root, path)}: ${call}(${options})`),
        ),
      )
    expect(unpaced).toEqual([])
  })

  it("finds an unpaced repeat or retry", () => {
    expect(optionsOf("x.pipe(Effect.repeat({ until: (o) => o.ok }))", "Effect.repeat")).toEqual([
      "{ until: (o) => o.ok }",
    ])
    expect(optionsOf("x.pipe(Effect.retry({ times: 3 }))", "Effect.retry")).toEqual(["{ times: 3 }"])
  })
})
