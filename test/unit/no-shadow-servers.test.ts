/**
 * Every public route is answered by the framework (issue 22, "No shadow servers"): nothing in src patches a
 * server's `emit` to answer ahead of it or writes a raw response head beside it. The operator listener
 * (src/Observability/OperatorListener.ts) is a separate node:http server on its own port serving only the
 * operators' GET /metrics, /health, /status and /status/data, not the API: the Prometheus exporter answers
 * on the raw node response itself, so that file's own answers (200, 404, 405, 500) are one writeHead allowed.
 * The other is src/Http/StartingServer.ts: the API's server answers the catalogue's 503 (through the one envelope
 * encoder) only to requests that arrive before the framework's app is attached, and removes its listener when the
 * app's is added (test/unit/starting-server.test.ts), so it answers no route beside the framework.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = new URL("../..", import.meta.url).pathname
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

const OPERATOR_LISTENER = "src/Observability/OperatorListener.ts"
const STARTING_SERVER = "src/Http/StartingServer.ts"

describe("no shadow servers", () => {
  it("no server.emit patching and no raw writeHead in src (but the operator listener's and the start-up 503's)", () => {
    const found = files(join(root, "src")).flatMap((path) => {
      const name = relative(root, path)
      return readFileSync(path, "utf8")
        .split("\n")
        .flatMap((line, i) =>
          /\bserver\.emit\b|\.emit\s*=[^=]/.test(line) ||
          (/\bwriteHead\s*\(/.test(line) && name !== OPERATOR_LISTENER && name !== STARTING_SERVER)
            ? [`${name}:${i + 1}: ${line.trim()}`]
            : [],
        )
    })
    expect(found).toEqual([])
  })
})
