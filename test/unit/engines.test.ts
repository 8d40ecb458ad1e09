import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"

/**
 * Honest requirements (issue 15, item 6): every package `npm ci` installs here runs on the oldest Node that
 * package.json's `engines` admits, so `npm ci` prints no EBADENGINE warning on a Node the README allows
 * (testcontainers 12.2.0 and its undici 8 wanted Node 22 while we declared 20). semver is npm's own range
 * logic (a dependency of several of ours).
 */
const semver = createRequire(import.meta.url)("semver") as {
  minVersion: (range: string) => { version: string } | null
  satisfies: (version: string, range: string, options?: { includePrerelease?: boolean }) => boolean
}
const root = new URL("../../", import.meta.url)
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { engines: { node: string } }
const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
  packages: Record<
    string,
    {
      version?: string
      optional?: boolean
      os?: ReadonlyArray<string>
      engines?: { node?: string } | ReadonlyArray<string>
    }
  >
}

describe("engines", () => {
  const oldest = semver.minVersion(pkg.engines.node)!.version

  it("the Node running the tests is one package.json admits", () => {
    expect(semver.satisfies(process.versions.node, pkg.engines.node)).toBe(true)
  })

  it(`every locked package installed on this platform supports Node ${oldest} (the oldest admitted)`, () => {
    const unsupported: Array<string> = []
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === "") continue
      // Other platforms' optional binaries are never installed here (npm ci skips them).
      if (entry.optional && entry.os !== undefined && !entry.os.includes(process.platform)) continue
      const range = Array.isArray(entry.engines) ? undefined : (entry.engines as { node?: string } | undefined)?.node
      if (range !== undefined && !semver.satisfies(oldest, range, { includePrerelease: true })) {
        unsupported.push(`${path.replace(/^.*node_modules\//, "")}@${entry.version} needs node ${range}`)
      }
    }
    expect(unsupported).toEqual([])
  })

  it("testcontainers and @testcontainers/postgresql are pinned to one exact version", () => {
    const dev = (
      JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as {
        devDependencies: Record<string, string>
      }
    ).devDependencies
    expect(dev.testcontainers).toMatch(/^\d+\.\d+\.\d+$/)
    expect(dev["@testcontainers/postgresql"]).toBe(dev.testcontainers)
  })
})
