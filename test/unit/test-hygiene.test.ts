import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = new URL("../..", import.meta.url).pathname
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** The option objects of every `Effect.repeat({ … })` in a source text (balanced braces). */
const repeatOptions = (text: string): string[] => {
  const found: string[] = []
  for (let at = text.indexOf("Effect.repeat({"); at >= 0; at = text.indexOf("Effect.repeat({", at + 1)) {
    let depth = 0
    const start = at + "Effect.repeat(".length
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
  it("every Effect.repeat in the tests is paced by a schedule", () => {
    const unpaced = files(join(root, "test"))
      .filter((path) => !path.endsWith("test-hygiene.test.ts"))
      .flatMap((path) =>
        repeatOptions(readFileSync(path, "utf8"))
          .filter((options) => /\buntil\b|\bwhile\b/.test(options) && !/\bschedule\b/.test(options))
          .map((options) => `${relative(root, path)}: Effect.repeat(${options})`),
      )
    expect(unpaced).toEqual([])
  })

  it("finds an unpaced repeat", () => {
    expect(repeatOptions("x.pipe(Effect.repeat({ until: (o) => o.ok }))")).toEqual(["{ until: (o) => o.ok }"])
  })
})
