import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, type Scope } from "effect"

/**
 * `config` as `config.json` in a fresh directory under the system's temp dir (`prefix` names it), for a service
 * process's SETTLEMENT_CONFIG; the directory is removed when the scope closes (before, every run left one behind).
 */
export const scopedConfigFile = (prefix: string, config: unknown): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
      (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })),
    )
    const file = join(dir, "config.json")
    writeFileSync(file, JSON.stringify(config))
    return file
  })
